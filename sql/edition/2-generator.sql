------------------------------------------------------------------------
-- flake_next(): the ids of a node come from that node's sequence, whose
-- value is ms << 12 | sequence.  A sequence is WAL-logged (ahead, in steps
-- of 32 values) and advances atomically, so its values never repeat: not
-- across sessions, crashes, restarts, or a promotion (up to the last
-- record the standby replayed).  Every session of the server shares the
-- node, as the C edition's backends share a node when there are more of
-- them than nodes: 4096 ids a millisecond, borrowing later milliseconds
-- when they run out.
--
-- The hot path takes nextval and compares its millisecond with the
-- clock's.  When they differ (a new millisecond, or the node ahead of the
-- clock), the slow path (advance) decides under the node's advisory lock:
-- it moves the sequence to the clock with setval, only forward.  No value
-- that a session may return without that lock can lie at or above the
-- setval's target (see advance), so that no setval moves the sequence
-- back under a value already returned.
------------------------------------------------------------------------

-- The nodes of this server: flake_next() generates on first_node,
-- flake_next(node) on any of first_node to last_node.  Servers that share
-- keys need disjoint ranges, as flake.nodes in the C edition.  One row;
-- change it with flake_internal.set_nodes(), as the owner.
CREATE TABLE flake_internal.settings (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	first_node integer NOT NULL DEFAULT 0 CHECK (first_node BETWEEN 0 AND 1023),
	last_node integer NOT NULL DEFAULT 1023 CHECK (last_node BETWEEN 0 AND 1023),
	max_borrow_ms integer NOT NULL DEFAULT 1000 CHECK (max_borrow_ms BETWEEN 0 AND 3600000),
	CHECK (first_node <= last_node)
);
INSERT INTO flake_internal.settings DEFAULT VALUES;
COMMENT ON TABLE flake_internal.settings IS
	'the nodes of the flake SQL edition (flake.nodes of the C edition) and flake.max_borrow';

-- The first key of the advisory locks of the nodes: 'flak'.
CREATE FUNCTION flake_internal.lock_key() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT 1718378859';

-- The sequence of a node, created at its first use, as a member of the
-- extension where the edition is one (pg_tle), so that a dump leaves it
-- out as it leaves out the C edition's state.  Every role may take its
-- values (USAGE); only the owner may set it.
CREATE FUNCTION flake_internal.node_sequence(node integer) RETURNS regclass
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	name text := format('flake_internal.node_%s', node);
	seq regclass := to_regclass(name);
	extension name;
BEGIN
	IF node NOT BETWEEN 0 AND 1023 THEN
		RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('flake node %s is out of range 0-1023', node);
	END IF;
	IF seq IS NOT NULL THEN
		RETURN seq;
	END IF;
	BEGIN
		EXECUTE format('CREATE SEQUENCE %s AS bigint', name);
	EXCEPTION WHEN duplicate_table OR unique_violation THEN
		-- created meanwhile by a transaction that has committed since
		RETURN to_regclass(name);
	END;
	EXECUTE format('GRANT USAGE ON SEQUENCE %s TO PUBLIC', name);
	SELECT e.extname INTO extension
	FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
	WHERE d.classid = 'pg_namespace'::regclass AND d.refclassid = 'pg_extension'::regclass
		AND d.objid = 'flake_internal'::regnamespace AND d.deptype = 'e';
	-- (in the extension's script, it is one already)
	IF extension IS NOT NULL AND NOT EXISTS (
		SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
			AND d.objid = to_regclass(name) AND d.deptype = 'e') THEN
		EXECUTE format('ALTER EXTENSION %I ADD SEQUENCE %s', extension, name);
	END IF;
	RETURN to_regclass(name);
END
$$;

-- The clock's millisecond since the epoch, refused outside the layout.
CREATE FUNCTION flake_internal.clock_ms() RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1420070400000;
BEGIN
	IF now_ms < 0 THEN
		RAISE EXCEPTION USING ERRCODE = '55000',
			MESSAGE = 'the system clock is before flake.epoch (2015-01-01 00:00:00+00)';
	END IF;
	IF now_ms > 2199023255551 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = 'flake ids end at 2084-09-06 15:47:35.551+00: the clock is past it';
	END IF;
	RETURN now_ms;
END
$$;

-- The slow path, under the node's advisory lock (a session lock, released
-- before returning: a transaction lock would hold every other session of
-- the node until the caller's transaction ends).  A value it does not
-- return (of a millisecond that is over) is dropped, never reused.
--
-- Why a setval never hands out again a value that was returned: it runs
-- under the lock, after reading the clock and then the sequence's last
-- value, and sets the sequence to the last value of the clock's previous
-- millisecond, above last.  A value taken since that read lies in last's
-- millisecond or an earlier one, below the setval, unless more values
-- were taken meanwhile than are left in that millisecond: so the setval
-- waits (lets nextval get there) while fewer than 1024 are left.  And a
-- session that took such a value read its clock later still, found the
-- value's millisecond over, and came here to drop it.
-- It returns the id of the value it settles on.
CREATE FUNCTION flake_internal.advance(node integer, v bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	seq regclass := flake_internal.node_sequence(node);
	max_borrow integer := (SELECT max_borrow_ms FROM flake_internal.settings);
	now_ms bigint;
	last bigint;
	ahead bigint;
BEGIN
	PERFORM pg_advisory_lock(flake_internal.lock_key(), node);
	BEGIN
		LOOP
			now_ms := flake_internal.clock_ms();
			last := pg_sequence_last_value(seq);
			IF (last >> 12) < now_ms THEN
				-- the clock moved on: v is of an earlier millisecond
				IF (now_ms << 12) - last > 1024 THEN
					PERFORM setval(seq, (now_ms << 12) - 1);
				END IF;
				v := nextval(seq);
				CONTINUE WHEN (v >> 12) < now_ms;
			ELSIF (v >> 12) < (last >> 12) AND (v >> 12) < now_ms THEN
				-- v's millisecond is over, and so is the node's: take a newer one
				v := nextval(seq);
			END IF;
			IF v >> 12 > 2199023255551 THEN
				RAISE EXCEPTION USING ERRCODE = '22003',
					MESSAGE = format('flake node %s has used up the layout, up to 2084-09-06 15:47:35.551+00', node);
			END IF;
			ahead := (v >> 12) - now_ms;
			EXIT WHEN ahead <= max_borrow OR (v >> 12) = ((v - 1) >> 12);
			IF ahead > max_borrow + 1000 THEN
				RAISE EXCEPTION USING ERRCODE = '55000',
					MESSAGE = format('the system clock is %s ms behind the last id of flake node %s', ahead, node),
					DETAIL = format('The clock went back (or the server restarted with an earlier clock). '
									'Ids continue from the last one issued, but at most max_borrow_ms (%s ms) ahead of the clock.',
									max_borrow),
					HINT = 'Check the server''s time synchronization. Generation resumes when the clock catches up.';
			END IF;
			-- used up by load: wait for the clock
			PERFORM pg_sleep(0.001);
		END LOOP;
	EXCEPTION WHEN OTHERS THEN
		PERFORM pg_advisory_unlock(flake_internal.lock_key(), node);
		RAISE;
	END;
	PERFORM pg_advisory_unlock(flake_internal.lock_key(), node);
	RETURN ((v >> 12) << 22) | (node::bigint << 12) | (v & 4095);
END
$$;

-- flake_next(), for the node of the settings: written by set_nodes(), with
-- the node and its sequence as constants.  The hot path: one nextval and
-- one look at the clock, in two PL/pgSQL expressions.  No SET clause (it
-- would cost more than the rest): every name is qualified.
CREATE FUNCTION flake_internal.flake_next_source(node integer) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $source_of$
	SELECT format($source$
CREATE OR REPLACE FUNCTION @extschema@.flake_next() RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $body$
DECLARE
	v bigint := pg_catalog.nextval(%1$L::regclass);
BEGIN
	RETURN CASE WHEN (v OPERATOR(pg_catalog.>>) 12) OPERATOR(pg_catalog.=)
			(pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
							  OPERATOR(pg_catalog.*) 1000)::bigint OPERATOR(pg_catalog.-) 1420070400000)
		THEN ((v OPERATOR(pg_catalog.>>) 12) OPERATOR(pg_catalog.<<) 22) %3$s (v OPERATOR(pg_catalog.&) 4095)
		ELSE flake_internal.advance(%2$s, v) END;
END
$body$
$source$, flake_internal.node_sequence($1)::text, $1,
	CASE WHEN $1 = 0 THEN 'OPERATOR(pg_catalog.|)'
		 ELSE format('OPERATOR(pg_catalog.|) %s OPERATOR(pg_catalog.|)', $1::bigint << 12) END)
$source_of$;

-- Set the nodes of this server (as flake.nodes and a restart do in the C
-- edition): flake_next() on first_node, flake_next(node) on the range.
CREATE FUNCTION flake_internal.set_nodes(first_node integer, last_node integer) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	UPDATE flake_internal.settings s SET first_node = $1, last_node = $2;
	EXECUTE flake_internal.flake_next_source($1);
	EXECUTE format('COMMENT ON FUNCTION @extschema@.flake_next() IS %L',
				   format('next Snowflake id, on node %s', $1));
END
$$;
SELECT flake_internal.set_nodes(0, 1023);

-- An explicit node of this server's, sharing it with every other caller.
CREATE FUNCTION @extschema@.flake_next(node integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	s flake_internal.settings;
	v bigint;
BEGIN
	SELECT * INTO STRICT s FROM flake_internal.settings;
	IF node NOT BETWEEN s.first_node AND s.last_node THEN
		RAISE EXCEPTION USING ERRCODE = '22023',
			MESSAGE = format('flake node %s is not one of this server''s nodes (%s-%s)', node, s.first_node, s.last_node),
			HINT = 'Give a node of first_node to last_node of flake_internal.settings.';
	END IF;
	v := nextval(flake_internal.node_sequence(node));
	IF v >> 12 <> floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1420070400000 THEN
		RETURN flake_internal.advance(node, v);
	END IF;
	RETURN (v >> 12 << 22) | (node::bigint << 12) | (v & 4095);
END
$$;
COMMENT ON FUNCTION @extschema@.flake_next(integer) IS 'next Snowflake id on the given node';

CREATE FUNCTION @extschema@.flake_node() RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
	SELECT first_node FROM flake_internal.settings
$$;
COMMENT ON FUNCTION @extschema@.flake_node() IS 'the node flake_next() generates on';

REVOKE ALL ON TABLE flake_internal.settings FROM PUBLIC;
GRANT SELECT ON TABLE flake_internal.settings TO PUBLIC;
REVOKE EXECUTE ON FUNCTION flake_internal.set_nodes(integer, integer) FROM PUBLIC;
