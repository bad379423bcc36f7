------------------------------------------------------------------------
-- flake 1.3 to 1.4
--
-- The migration functions and the Citus check are replaced whole, as in
-- every upgrade: they are dropped here, and sql/parts/citus.sql,
-- migrate/*.sql and online/*.sql, appended by make, create them again.
-- The helpers in flake_internal are dropped by a loop over the extension's
-- members, so that a helper renamed or removed in 1.4 needs no line here.
-- Kept: the trigger functions of flake_origin, of subscribed tables
-- (raise_marks, new in 1.4) and of an online migration left unfinished
-- (dropping them would take the triggers with them);
-- online/1-copies.sql replaces the latter with CREATE OR REPLACE.
------------------------------------------------------------------------

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean, text[], text);
DROP FUNCTION flake_migrate_tables(regclass[], name, text, name, boolean, text[], text);
DROP FUNCTION flake_citus_check();

DO $$
DECLARE
	helper pg_catalog.regprocedure;
BEGIN
	FOR helper IN
		SELECT p.oid
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
			ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
		   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'flake'
		 WHERE p.pronamespace = 'flake_internal'::pg_catalog.regnamespace
		   AND p.proname NOT IN ('origin_local', 'online_log', 'online_no_truncate', 'raise_marks')
	LOOP
		EXECUTE pg_catalog.format('DROP FUNCTION %s', helper);
	END LOOP;
END
$$;
DROP TYPE flake_internal.migrate_step;
DROP TYPE flake_internal.migrate_column;

-- flake_origin moves to flake_internal, out of the schema applications'
-- tools dump and introspect (Rails' schema.rb took it for a table of the
-- application, and db:schema:load then failed dropping it).  Its rows,
-- trigger, privileges and its place among the tables pg_dump dumps the
-- rows of (pg_extension.extconfig, by oid) go with it.
ALTER TABLE @extschema@.flake_origin SET SCHEMA flake_internal;
COMMENT ON SCHEMA flake_internal IS
	'internal helpers of flake_migrate() and the online migration, and flake_origin; not for direct use';

-- flake_repair_state() takes two arguments more (ahead_of_clock, again),
-- with defaults, so that callers of 1.3's form are unchanged.
DROP FUNCTION flake_repair_state(timestamptz);
CREATE FUNCTION flake_repair_state(newest timestamptz, ahead_of_clock boolean DEFAULT false,
								   again boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) IS
	'replace a damaged flake.hwm or flake.rekeys, taking newest as the time no id of this '
	'server, nor any row a rekey gave an id, is later than; ahead_of_clock: newest may be '
	'more than a day ahead of the clock; again: correct a repair made with a wrong time';

-- Ids that arrive from another server (receive.c): a blue/green cutover
-- through logical replication and its rollback, a restore of a running
-- server's dump.  The trigger is added by flake to the tables of this
-- database's subscriptions (after CREATE or ALTER SUBSCRIPTION), enabled
-- for replica sessions only: the subscription's workers.  An upgrade
-- replaces the function, never drops it: the triggers use it.
CREATE FUNCTION flake_internal.raise_marks() RETURNS trigger
	AS 'MODULE_PATHNAME', 'flake_raise_marks' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.raise_marks() IS
	'trigger flake_raise_marks of subscribed tables: raise this server''s high-water marks '
	'above the ids of the columns whose default is a flake generator';
-- superusers only (also checked in C): it reads every table of the
-- database and raises the state every database's ids depend on
CREATE FUNCTION flake_take_over_ids(OUT servers bigint[],
									OUT flake_next_mark timestamptz, OUT ulidflake_mark timestamptz,
									OUT randflake_mark timestamptz, OUT ids bigint)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_take_over_ids() FROM PUBLIC;
COMMENT ON FUNCTION flake_take_over_ids() IS
	'take over the servers flake_origin names from the ids this database holds, '
	'with no access to them: after restoring a dump of a running server';
