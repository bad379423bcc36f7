------------------------------------------------------------------------
-- Randflake's text form, the reference codec (gosuda/randflake): base-32
-- digits 0-9a-v of the unsigned 64 bits, no padding.  Randflake ids
-- themselves are not in this edition (docs/sql-edition.md says why); the
-- codec is, for ids that other servers or the application made.
------------------------------------------------------------------------

CREATE FUNCTION @extschema@.randflake_encode(bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	-- the low 5 bits first; the first shift clears the sign's copies
	rest bigint := ($1 >> 5) & 576460752303423487;	-- 2^59 - 1
	result text := substr('0123456789abcdefghijklmnopqrstuv', ($1 & 31)::integer + 1, 1);
BEGIN
	WHILE rest <> 0 LOOP
		result := substr('0123456789abcdefghijklmnopqrstuv', (rest & 31)::integer + 1, 1) || result;
		rest := rest >> 5;
	END LOOP;
	RETURN result;
END
$$;
COMMENT ON FUNCTION @extschema@.randflake_encode(bigint) IS
	'text form of a Randflake id: base-32 digits 0-9a-v of its unsigned 64 bits';

-- Upper case and trailing '=' are accepted, as by the reference; empty
-- text and values above 64 bits are refused, where it reads 0 or wraps.
CREATE FUNCTION @extschema@.randflake_parse(text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	digits text := lower(rtrim($1, '='));
	value numeric := 0;
	digit integer;
BEGIN
	IF digits = '' OR digits !~ '^[0-9a-v]+$' THEN
		RAISE EXCEPTION USING ERRCODE = '22P02',
			MESSAGE = format('invalid input syntax for a randflake id: "%s"', $1),
			HINT = 'A randflake id is 1 to 13 base-32 digits 0-9 and a-v.';
	END IF;
	FOR i IN 1 .. length(digits) LOOP
		digit := strpos('0123456789abcdefghijklmnopqrstuv', substr(digits, i, 1)) - 1;
		value := value * 32 + digit;
		IF value > 18446744073709551615 THEN
			RAISE EXCEPTION USING ERRCODE = '22003',
				MESSAGE = format('randflake id "%s" is out of range: above 64 bits', $1);
		END IF;
	END LOOP;
	IF value > 9223372036854775807 THEN
		value := value - 18446744073709551616;
	END IF;
	RETURN value::bigint;
END
$$;
COMMENT ON FUNCTION @extschema@.randflake_parse(text) IS
	'the Randflake id of its text form, the inverse of randflake_encode()';
