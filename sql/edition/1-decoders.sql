------------------------------------------------------------------------
-- The SQL edition of flake (tools/sql-edition): Snowflake ids in SQL and
-- PL/pgSQL only, for servers that load no C library (pg_tle, or plain
-- SQL).  The layout is the C edition's default, fixed: 0 | 41-bit ms since
-- 2015-01-01 | 10-bit node | 12-bit sequence, so that ids of either edition
-- decode with the other's functions.  @extschema@ is the schema of the
-- functions users call; helpers live in flake_internal, as in the C
-- edition.  Bodies name pg_catalog's functions and operators, so that no
-- search_path (the caller's, in a function without SET) changes them.
------------------------------------------------------------------------

CREATE SCHEMA flake_internal;
COMMENT ON SCHEMA flake_internal IS 'helpers of the flake SQL edition: not for direct use';
-- every role calls the helpers and takes values of the nodes' sequences
GRANT USAGE ON SCHEMA flake_internal TO PUBLIC;

-- The decoders: SQL, so that the planner inlines them.  STABLE as the C
-- edition's (whose layout is the server's settings), so that what a dump
-- holds (an index, a view) moves between the editions unchanged.
CREATE FUNCTION flake_internal.checked_id(id bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
	IF id OPERATOR(pg_catalog.<) 0 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = pg_catalog.format('value %s is not a flake id', id),
			HINT = 'flake ids are non-negative.';
	END IF;
	RETURN id;
END
$$;

CREATE FUNCTION @extschema@.flake_timestamp(bigint) RETURNS timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT TIMESTAMPTZ '2015-01-01 00:00:00+00' OPERATOR(pg_catalog.+)
		(INTERVAL '1 millisecond' OPERATOR(pg_catalog.*)
		 (flake_internal.checked_id($1) OPERATOR(pg_catalog.>>) 22)::float8)
$$;
COMMENT ON FUNCTION @extschema@.flake_timestamp(bigint) IS 'the millisecond of a Snowflake id';

CREATE FUNCTION @extschema@.flake_node(bigint) RETURNS integer
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT ((flake_internal.checked_id($1) OPERATOR(pg_catalog.>>) 12)
		OPERATOR(pg_catalog.&) 1023)::integer
$$;
COMMENT ON FUNCTION @extschema@.flake_node(bigint) IS 'the node of a Snowflake id';

CREATE FUNCTION @extschema@.flake_sequence(bigint) RETURNS integer
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT (flake_internal.checked_id($1) OPERATOR(pg_catalog.&) 4095)::integer
$$;
COMMENT ON FUNCTION @extschema@.flake_sequence(bigint) IS
	'the sequence number of a Snowflake id within its millisecond and node';

CREATE FUNCTION @extschema@.flake_decode(id bigint, OUT ts timestamptz, OUT node integer, OUT sequence integer)
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT @extschema@.flake_timestamp(id), @extschema@.flake_node(id), @extschema@.flake_sequence(id)
$$;
COMMENT ON FUNCTION @extschema@.flake_decode(bigint) IS 'time, node and sequence of a Snowflake id';

-- A timestamp's millisecond since the epoch, refused outside the layout.
CREATE FUNCTION flake_internal.timestamp_ms(ts timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
	ms bigint;
BEGIN
	IF pg_catalog.isfinite(ts) THEN
		ms := pg_catalog.floor(EXTRACT(epoch FROM ts) OPERATOR(pg_catalog.*) 1000)::bigint
			OPERATOR(pg_catalog.-) 1420070400000;
	END IF;
	IF ms IS NULL OR ms OPERATOR(pg_catalog.<) 0 OR ms OPERATOR(pg_catalog.>) 2199023255551 THEN
		RAISE EXCEPTION USING ERRCODE = '22003',
			MESSAGE = pg_catalog.format('timestamp "%s" is out of range for flake ids', ts),
			HINT = 'flake ids cover 2015-01-01 00:00:00+00 to 2084-09-06 15:47:35.551+00.';
	END IF;
	RETURN ms;
END
$$;

CREATE FUNCTION @extschema@.flake_from_timestamp(timestamptz) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT flake_internal.timestamp_ms($1) OPERATOR(pg_catalog.<<) 22
$$;
COMMENT ON FUNCTION @extschema@.flake_from_timestamp(timestamptz) IS
	'the smallest Snowflake id of a millisecond, for range predicates';

CREATE FUNCTION @extschema@.flake_upper_bound(timestamptz) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
	SELECT (flake_internal.timestamp_ms($1) OPERATOR(pg_catalog.<<) 22) OPERATOR(pg_catalog.|) 4194303
$$;
COMMENT ON FUNCTION @extschema@.flake_upper_bound(timestamptz) IS
	'the largest Snowflake id of a millisecond, for range predicates';
