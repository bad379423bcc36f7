------------------------------------------------------------------------
-- flake 1.2 to 1.3
--
-- The migration functions and the Citus check are replaced whole, as in
-- every upgrade: they are dropped here, and sql/parts/citus.sql,
-- migrate.sql and migrate_online.sql, appended by make, create them again.
-- The helpers in flake_internal are dropped by a loop over the extension's
-- members, so that a helper renamed or removed in 1.3 needs no line here.
-- Two are kept: the online migration's trigger functions, which the
-- triggers of a migration left unfinished by 1.2 still use (dropping them
-- would take those triggers with them); migrate_online.sql replaces them
-- with CREATE OR REPLACE.
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
		   AND p.proname NOT IN ('flake_migrate_online_log', 'flake_migrate_online_no_truncate')
	LOOP
		EXECUTE pg_catalog.format('DROP FUNCTION %s', helper);
	END LOOP;
END
$$;
DROP TYPE flake_internal.flake_migrate_step;
DROP TYPE flake_internal.flake_migrate_column;

-- flake_origin under logical replication: the rows a subscription's
-- workers write are skipped, and deletes work where publications publish
-- them (see sql/parts/flake.sql)
CREATE FUNCTION flake_internal.flake_origin_local() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_stat_subscription s WHERE s.pid = pg_backend_pid()) THEN
		RETURN NULL;
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_origin_local() IS
	'trigger of flake_origin: skip the rows a subscription''s workers write, which are another server''s';
CREATE TRIGGER flake_origin_local BEFORE INSERT OR UPDATE OR DELETE ON flake_origin
	FOR EACH ROW EXECUTE FUNCTION flake_internal.flake_origin_local();
ALTER TABLE flake_origin ENABLE ALWAYS TRIGGER flake_origin_local, REPLICA IDENTITY FULL;
