------------------------------------------------------------------------
-- Ulid-Flake ids, as bigint: the C edition's ulidflake is a type, which
-- trusted code cannot make (pg_tle's base types would be one, at a cost
-- per call), so here they are bigint, with the C edition's layout: 0 |
-- 43-bit ms since 2024-01-01 | 20 bits of entropy, the low 5 of them the
-- sid in the scalable form.  A value casts to ulidflake in the C edition
-- (value::ulidflake) and back; ulidflake_text() and ulidflake_parse() are
-- its text form (the C edition's type output and input), 13 characters of
-- Crockford Base32.  Names the C edition's type I/O does not use.
------------------------------------------------------------------------

CREATE FUNCTION flake_internal.checked_ulidflake(value bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
	IF value OPERATOR(pg_catalog.<) 0 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = pg_catalog.format('value %s is out of range for a ulidflake', value),
			HINT = 'A ulidflake is a non-negative bigint.';
	END IF;
	RETURN value;
END
$$;

CREATE FUNCTION @extschema@.ulidflake_text(bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rest bigint := flake_internal.checked_ulidflake($1);
	result text := '';
BEGIN
	FOR i IN 1 .. 13 LOOP
		result := substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', (rest & 31)::integer + 1, 1) || result;
		rest := rest >> 5;
	END LOOP;
	RETURN result;
END
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_text(bigint) IS
	'text form of a ulidflake: 13 Crockford Base32 characters, as the C edition''s type prints it';

-- Case-insensitive, none of Crockford's aliases (I, L, O, U), no
-- separators, as the C edition's input: one value, one spelling up to case.
CREATE FUNCTION @extschema@.ulidflake_parse(text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	digits text := upper($1);
	value bigint := 0;
BEGIN
	IF $1 !~ '^[0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz]{13}$' THEN
		RAISE EXCEPTION USING ERRCODE = '22P02',
			MESSAGE = format('invalid input syntax for a ulidflake: "%s"', $1),
			HINT = 'A ulidflake is 13 characters of Crockford Base32: 0-9 and A-Z without I, L, O and U.';
	END IF;
	-- 13 digits hold 65 bits: the top two and the sign bit must be clear
	IF strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(digits, 1, 1)) > 8 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = format('value "%s" is out of range for a ulidflake', $1),
			HINT = 'The first character of a ulidflake is 0 to 7.';
	END IF;
	FOR i IN 1 .. 13 LOOP
		value := (value << 5) | (strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(digits, i, 1)) - 1);
	END LOOP;
	RETURN value;
END
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_parse(text) IS
	'the ulidflake of its text form, the inverse of ulidflake_text()';

-- The accessors.  ulidflake_timestamp, as flake_timestamp(bigint) is the
-- Snowflake id's: the C edition's flake_timestamp(ulidflake).
CREATE FUNCTION @extschema@.ulidflake_timestamp(bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' OPERATOR(pg_catalog.+)
		(INTERVAL '1 millisecond' OPERATOR(pg_catalog.*)
		 (flake_internal.checked_ulidflake($1) OPERATOR(pg_catalog.>>) 20)::float8)
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_timestamp(bigint) IS
	'the millisecond of a ulidflake (flake_timestamp(ulidflake) of the C edition)';

CREATE FUNCTION @extschema@.ulidflake_entropy(bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT (flake_internal.checked_ulidflake($1) OPERATOR(pg_catalog.&) 1048575)::integer
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_entropy(bigint) IS
	'the low 20 bits of a ulidflake: its entropy (and sid, in the scalable form)';

CREATE FUNCTION @extschema@.ulidflake_sid(bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT (flake_internal.checked_ulidflake($1) OPERATOR(pg_catalog.&) 31)::integer
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_sid(bigint) IS
	'the low 5 bits of a ulidflake: the sid of the scalable form';

-- A timestamp's millisecond of ulidflake time, refused outside it.
CREATE FUNCTION flake_internal.ulidflake_ms(ts timestamptz) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	ms bigint;
BEGIN
	IF isfinite(ts) THEN
		ms := floor(EXTRACT(epoch FROM ts) * 1000)::bigint - 1704067200000;
	END IF;
	IF ms IS NULL OR ms < 0 OR ms > 8796093022207 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = format('timestamp "%s" is out of range for a ulidflake', ts),
			HINT = 'ulidflake timestamps run from 2024-01-01 00:00:00+00 to 2302-09-27 15:10:22.207+00.';
	END IF;
	RETURN ms;
END
$$;

CREATE FUNCTION @extschema@.ulidflake_from_timestamp(timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT flake_internal.ulidflake_ms($1) OPERATOR(pg_catalog.<<) 20
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_from_timestamp(timestamptz) IS
	'the smallest ulidflake of a millisecond, for range predicates';

CREATE FUNCTION @extschema@.ulidflake_upper_bound(timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT (flake_internal.ulidflake_ms($1) OPERATOR(pg_catalog.<<) 20) OPERATOR(pg_catalog.|) 1048575
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_upper_bound(timestamptz) IS
	'the largest ulidflake of a millisecond, for range predicates';

------------------------------------------------------------------------
-- ulidflake_next(): one sequence for the server's values, whose value is
-- a value's top 58 bits, ms << 15 | counter, as flake_next()'s node
-- sequences are (2-generator.sql says why it never repeats).  Each
-- sequence value is handed out once, as one ulidflake: the scalable form
-- puts the sid into the low 5 bits, the stand-alone form 5 random bits,
-- so that neither form repeats a value of the other.  A new millisecond
-- starts at a random counter, as the C edition's starts at random
-- entropy; within a millisecond the counter grows by one (the C edition:
-- a random step of 1 to 255).
------------------------------------------------------------------------

CREATE SEQUENCE flake_internal.ulidflake AS bigint;
GRANT USAGE ON SEQUENCE flake_internal.ulidflake TO PUBLIC;

-- The clock's millisecond of ulidflake time, refused outside it.
CREATE FUNCTION flake_internal.ulidflake_clock_ms() RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1704067200000;
BEGIN
	IF now_ms < 0 OR now_ms > 8796093022207 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = 'the system clock is outside the ulidflake time range',
			DETAIL = 'ulidflake timestamps run from 2024-01-01 00:00:00+00 to 2302-09-27 15:10:22.207+00.';
	END IF;
	RETURN now_ms;
END
$$;

-- The slow path, as flake_internal.advance() is flake_next()'s, under the
-- advisory lock (lock_key(), 1024): it returns the sequence value it
-- settles on.  A new millisecond's random start is set only where it lies
-- more than 1024 values above the last one taken, so that no value taken
-- since that read (one per session at most) lies above it.
CREATE FUNCTION flake_internal.ulidflake_advance(v bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	seq regclass := 'flake_internal.ulidflake'::regclass;
	max_borrow integer := (SELECT max_borrow_ms FROM flake_internal.settings);
	now_ms bigint;
	last bigint;
	start bigint;
	ahead bigint;
BEGIN
	PERFORM pg_advisory_lock(flake_internal.lock_key(), 1024);
	BEGIN
		LOOP
			now_ms := flake_internal.ulidflake_clock_ms();
			last := coalesce(pg_sequence_last_value(seq), v);
			IF (last >> 15) < now_ms THEN
				-- the clock moved on: v is of an earlier millisecond
				start := (now_ms << 15) | floor(random() * 32768)::bigint;
				IF start - last > 1024 THEN
					PERFORM setval(seq, start - 1);
				END IF;
				v := nextval(seq);
				CONTINUE WHEN (v >> 15) < now_ms;
			ELSIF (v >> 15) < (last >> 15) AND (v >> 15) < now_ms THEN
				-- v's millisecond is over, and so is the sequence's: take a newer one
				v := nextval(seq);
			END IF;
			IF v >> 15 > 8796093022207 THEN
				RAISE EXCEPTION USING ERRCODE = '22003',
					MESSAGE = 'ulidflake timestamp overflow',
					DETAIL = 'ulidflake timestamps end at 2302-09-27 15:10:22.207+00.';
			END IF;
			ahead := (v >> 15) - now_ms;
			EXIT WHEN ahead <= max_borrow OR (v >> 15) = ((v - 1) >> 15);
			IF ahead > max_borrow + 1000 THEN
				RAISE EXCEPTION USING ERRCODE = '55000',
					MESSAGE = format('the system clock is %s ms behind the last ulidflake issued', ahead),
					DETAIL = format('The clock went back (or the server restarted with an earlier clock). '
									'Values continue from the last one issued, but at most max_borrow_ms (%s ms) ahead of the clock.',
									max_borrow),
					HINT = 'Check the server''s time synchronization. Generation resumes when the clock catches up.';
			END IF;
			-- used up by load: wait for the clock
			PERFORM pg_sleep(0.001);
		END LOOP;
	EXCEPTION WHEN OTHERS THEN
		PERFORM pg_advisory_unlock(flake_internal.lock_key(), 1024);
		RAISE;
	END;
	PERFORM pg_advisory_unlock(flake_internal.lock_key(), 1024);
	RETURN v;
END
$$;

-- The hot paths: no SET clause (it would cost more than the rest), every
-- name qualified.
CREATE FUNCTION @extschema@.ulidflake_next() RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
	v bigint := pg_catalog.nextval('flake_internal.ulidflake'::regclass);
BEGIN
	IF (v OPERATOR(pg_catalog.>>) 15) OPERATOR(pg_catalog.<>)
		(pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
						  OPERATOR(pg_catalog.*) 1000)::bigint OPERATOR(pg_catalog.-) 1704067200000) THEN
		v := flake_internal.ulidflake_advance(v);
	END IF;
	RETURN (v OPERATOR(pg_catalog.<<) 5) OPERATOR(pg_catalog.|)
		pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) 32)::bigint;
END
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_next() IS
	'next Ulid-Flake id as bigint, stand-alone form: 15 bits of counter from a random start, 5 random bits';

CREATE FUNCTION @extschema@.ulidflake_next(sid integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
	v bigint;
BEGIN
	IF sid OPERATOR(pg_catalog.<) 0 OR sid OPERATOR(pg_catalog.>) 31 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = pg_catalog.format('scalability id %s is out of range for ulidflake', sid),
			HINT = 'A scalability id is 0 to 31.';
	END IF;
	v := pg_catalog.nextval('flake_internal.ulidflake'::regclass);
	IF (v OPERATOR(pg_catalog.>>) 15) OPERATOR(pg_catalog.<>)
		(pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
						  OPERATOR(pg_catalog.*) 1000)::bigint OPERATOR(pg_catalog.-) 1704067200000) THEN
		v := flake_internal.ulidflake_advance(v);
	END IF;
	RETURN (v OPERATOR(pg_catalog.<<) 5) OPERATOR(pg_catalog.|) sid::bigint;
END
$$;
COMMENT ON FUNCTION @extschema@.ulidflake_next(integer) IS
	'next Ulid-Flake id as bigint, scalable form: 15 bits of counter, then the sid (0-31)';
