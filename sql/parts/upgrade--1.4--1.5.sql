------------------------------------------------------------------------
-- flake 1.4 to 1.5
--
-- The objects new in 1.5 are created by sql/parts/added.sql, which make
-- appends after this part, as to the install script: this part changes
-- only what 1.4 has.  The migration functions and the Citus check are
-- replaced whole, as in every upgrade: they are dropped here, and
-- sql/parts/citus.sql, migrate/*.sql and online/*.sql, appended by make
-- after those, create them again.
-- The helpers in flake_internal are dropped by a loop over the extension's
-- members, so that a helper renamed or removed in 1.5 needs no line here.
-- Kept: the trigger functions of flake_origin, of subscribed tables
-- (raise_marks) and of an online migration left unfinished (dropping them
-- would take the triggers with them); online/1-copies.sql replaces the
-- latter with CREATE OR REPLACE.
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

-- A take-over by flake_take_over_ids() is the database's, recorded in it
-- (1.4 named the servers in flake.hwm, for every database of the server)
ALTER TABLE flake_internal.flake_origin ADD COLUMN taken_over_by bigint;
COMMENT ON COLUMN flake_internal.flake_origin.taken_over_by IS
	'the server that took over these ids in this database (flake_take_over_ids()), or NULL';
COMMENT ON FUNCTION flake_take_over_ids() IS
	'take over, in this database only, the servers flake_origin names from the ids '
	'this database holds, with no access to them: after restoring a dump of a running server';
