------------------------------------------------------------------------
-- flake 1.3 to 1.4
--
-- The objects new in 1.4 are created by sql/parts/added.sql, which make
-- appends after this part, as to the install script: this part changes
-- only what 1.3 has.  The migration functions and the Citus check are
-- replaced whole, as in every upgrade: they are dropped here, and
-- sql/parts/citus.sql, migrate/*.sql and online/*.sql, appended by make
-- after those, create them again.
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
-- with defaults, so that callers of 1.3's form are unchanged: 1.3's form
-- goes, and sql/parts/added.sql creates the new one.
DROP FUNCTION flake_repair_state(timestamptz);
