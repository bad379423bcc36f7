------------------------------------------------------------------------
-- flake 1.2 to 1.3
--
-- The migration functions and the Citus check are replaced whole, as in
-- every upgrade: they are dropped here, and sql/parts/citus.sql,
-- migrate/*.sql and online/*.sql, appended by make, create them again.
-- The helpers in flake_internal are dropped by a loop over the extension's
-- members, so that a helper renamed or removed in 1.3 needs no line here.
-- Two are kept: the online migration's trigger functions, which the
-- triggers of a migration left unfinished by 1.2 still use (dropping them
-- would take those triggers with them).  1.3 names the helpers without the
-- prefix flake_migrate_ (the schema says whose they are): the two are
-- renamed, which keeps the triggers, and online/1-copies.sql replaces
-- them with CREATE OR REPLACE.
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
ALTER FUNCTION flake_internal.flake_migrate_online_log() RENAME TO online_log;
ALTER FUNCTION flake_internal.flake_migrate_online_no_truncate() RENAME TO online_no_truncate;

-- flake_origin: every role reads it (privileges.sql grants SELECT to
-- PUBLIC), so that pg_dump by any role that may dump the database works;
-- none but the extension's owner writes it, and none but the owner
-- creates objects in flake_internal.  1.2 installed by a role with
-- default privileges for others gave them more: revoked here.
DO $$
DECLARE
	extra record;
BEGIN
	FOR extra IN
		SELECT 'TABLE flake_origin' AS object, a.privilege_type, a.grantee
		FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
		WHERE c.oid = 'flake_origin'::pg_catalog.regclass AND a.grantee <> c.relowner
		  AND a.privilege_type <> 'SELECT'
		UNION ALL
		SELECT 'SCHEMA flake_internal', a.privilege_type, a.grantee
		FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
		WHERE n.nspname = 'flake_internal' AND a.grantee <> n.nspowner
		  AND a.privilege_type <> 'USAGE'
	LOOP
		EXECUTE pg_catalog.format('REVOKE %s ON %s FROM %s CASCADE',
								  extra.privilege_type, extra.object,
								  CASE WHEN extra.grantee = 0 THEN 'PUBLIC'
									   ELSE pg_catalog.quote_ident(
										   pg_catalog.pg_get_userbyid(extra.grantee)) END);
	END LOOP;
END
$$;

-- randflake_decode(bigint, bytea) becomes STABLE (it was IMMUTABLE), so
-- that no index, generated column, partition key or statistics object
-- keeps a key written in its expression, which pg_indexes and pg_dump
-- --schema-only show every role.  Such an object made before could not be
-- restored from a dump after this change (its expression would be
-- refused): the update refuses first, naming it.
DO $$
DECLARE
	uses text;
BEGIN
	SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid),
								 ', ')
	  INTO uses
	  FROM pg_catalog.pg_depend d
	 WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND d.refobjid = 'randflake_decode(bigint, bytea)'::pg_catalog.regprocedure
	   AND (d.classid = 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass
			OR (d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
				AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid)
					IN ('i', 'I', 'p'))
			OR (d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
				AND (SELECT a.attgenerated FROM pg_catalog.pg_attrdef ad
					   JOIN pg_catalog.pg_attribute a
						 ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
					  WHERE ad.oid = d.objid) <> ''));
	IF uses IS NOT NULL THEN
		RAISE EXCEPTION 'randflake_decode(bigint, bytea) is used '
						'where only immutable functions may be: %', uses
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'flake 1.3 makes it stable, so that no such expression keeps a key, '
						   'which pg_indexes and pg_dump --schema-only show every role; '
						   'a dump with it could not be restored.',
				  HINT = 'Drop these objects (keep the decoded values in a column '
						 'the application fills instead), and update again.';
	END IF;
END
$$;
ALTER FUNCTION randflake_decode(bigint, bytea) STABLE;

-- flake_origin under logical replication: the rows a subscription's
-- workers write are skipped, and deletes work where publications publish
-- them (see sql/parts/flake.sql)
CREATE FUNCTION flake_internal.origin_local() RETURNS trigger
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
COMMENT ON FUNCTION flake_internal.origin_local() IS
	'trigger of flake_origin: skip the rows a subscription''s workers write, '
	'which are another server''s';
CREATE TRIGGER flake_origin_local BEFORE INSERT OR UPDATE OR DELETE ON flake_origin
	FOR EACH ROW EXECUTE FUNCTION flake_internal.origin_local();
ALTER TABLE flake_origin ENABLE ALWAYS TRIGGER flake_origin_local, REPLICA IDENTITY FULL;

-- flake_take_over() and flake_repair_state(), new in 1.3: make appends
-- sql/parts/state.sql after this part, as to the install script
