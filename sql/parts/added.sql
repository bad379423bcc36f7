
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

------------------------------------------------------------------------
-- The columns of the database that still take their ids from a sequence
-- (serial and identity columns): what flake.serial_default left to them,
-- 16- and 32-bit keys an ORM declared by default above all, and tables
-- made before it.  Its WARNING does not reach an ORM's user; this list
-- does, after the migrations.  Read from the catalogs, which every role
-- may read; other extensions' tables and other sessions' temporary tables
-- are left out.
------------------------------------------------------------------------

CREATE FUNCTION flake_sequence_keys(OUT table_name regclass, OUT column_name name,
									OUT type regtype, OUT sequence regclass)
	RETURNS SETOF record
	LANGUAGE sql STABLE PARALLEL SAFE
	BEGIN ATOMIC
		SELECT c.oid::pg_catalog.regclass, a.attname, a.atttypid::pg_catalog.regtype,
			   s.oid::pg_catalog.regclass
		  FROM pg_catalog.pg_depend d
		  JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		  JOIN pg_catalog.pg_class c ON c.oid = d.refobjid
		  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.refobjsubid
		 WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0 AND NOT a.attisdropped
		   AND c.relnamespace <> 'pg_catalog'::pg_catalog.regnamespace
		   AND c.relnamespace <> 'information_schema'::pg_catalog.regnamespace
		   AND NOT pg_catalog.pg_is_other_temp_schema(c.relnamespace)
		   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e
						   WHERE e.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
							 AND e.objid = c.oid AND e.deptype = 'e')
		 ORDER BY c.oid::pg_catalog.regclass::pg_catalog.text, a.attnum;
	END;
COMMENT ON FUNCTION flake_sequence_keys() IS
	'the columns that take their ids from a sequence: serial and identity columns, those flake.serial_default left';
