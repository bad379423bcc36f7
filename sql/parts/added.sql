
------------------------------------------------------------------------
-- The objects new in this version (1.5)
--
-- Appended by make to the install script, after the install parts, and
-- to the upgrade script, after the upgrade part: each is written once,
-- so that both create it alike.  When the next version opens, each
-- section moves into the install part it names, and this file keeps only
-- this header.
------------------------------------------------------------------------

------------------------------------------------------------------------
-- Ids as text: the decoders of a bigint id take its decimal text too, as
-- drivers send an id kept as a string (node-postgres, Prisma's $queryRaw,
-- Sequelize's replacements), untyped or as text.  An untyped literal or
-- parameter resolves to text, the preferred type of the string category,
-- where flake_timestamp would otherwise take it for a ulidflake.  A text
-- of 13 characters is a ulidflake's Base32 to flake_timestamp, as before
-- (a ulidflake's text is always 13 characters; a Snowflake id has 13
-- digits only within 40 minutes of flake.epoch); any other, decimal digits.
-- randflake_decode has no text overload: an untyped literal already
-- resolves to its bigint, and a new overload would need grants of its own
-- that the roles granted randflake_decode(bigint) do not have.
-- SQL-standard bodies: the functions they call are bound when created, so
-- no search_path plays a part.
------------------------------------------------------------------------

CREATE FUNCTION flake_timestamp(id text) RETURNS timestamptz
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	RETURN CASE WHEN pg_catalog.length(id) = 13 THEN flake_timestamp(id::ulidflake)
		   ELSE flake_timestamp(id::bigint) END;
COMMENT ON FUNCTION flake_timestamp(text) IS
	'the millisecond of an id as text: 13 characters a ulidflake''s, else a Snowflake id''s decimal digits';
CREATE FUNCTION flake_node(id text) RETURNS integer
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	RETURN flake_node(id::bigint);
COMMENT ON FUNCTION flake_node(text) IS 'the node of a Snowflake id given as decimal text';
CREATE FUNCTION flake_sequence(id text) RETURNS integer
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	RETURN flake_sequence(id::bigint);
COMMENT ON FUNCTION flake_sequence(text) IS
	'the sequence number of a Snowflake id given as decimal text';
CREATE FUNCTION flake_decode(id text, OUT ts timestamptz, OUT node integer, OUT sequence integer)
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	BEGIN ATOMIC
		SELECT * FROM flake_decode(id::bigint);
	END;
COMMENT ON FUNCTION flake_decode(text) IS 'time, node and sequence of a Snowflake id given as decimal text';
