
------------------------------------------------------------------------
-- Privileges: the grants of the extension, after every object exists
--
-- Appended by make last, to the install script and to every upgrade
-- script.  The objects a script creates get the default privileges of the
-- role that runs it (ALTER DEFAULT PRIVILEGES ... GRANT ALL ON TABLES,
-- FUNCTIONS, SCHEMAS, TYPES TO a role): that role could then write
-- flake_origin, create functions in flake_internal beside the helpers, or
-- call the functions revoked from PUBLIC (randflake_decode(bigint), ...).
-- What those default privileges added is revoked here: on the objects
-- this transaction made members of the extension, and on older members
-- where the item is one of those an install or upgrade script left them
-- (pg_init_privs), not one the database's administrator granted since.
-- Then the extension's grants, which would otherwise be revoked with them
-- where they coincide.
------------------------------------------------------------------------

DO $$
DECLARE
	added record;
BEGIN
	FOR added IN
		WITH member AS (
			SELECT d.classid, d.objid, d.xmin = pg_catalog.pg_current_xact_id()::xid AS new
			FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
			WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
			  AND e.extname = 'flake'
		), acl AS (
			SELECT m.*, 'ROUTINE' AS kind, p.oid::pg_catalog.regprocedure::text AS name,
				   p.proowner AS owner, p.pronamespace AS nsp, 'f' AS objtype, p.proacl AS acl
			FROM member m JOIN pg_catalog.pg_proc p ON p.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'TABLE', c.oid::pg_catalog.regclass::text,
				   c.relowner, c.relnamespace, 'r', c.relacl
			FROM member m JOIN pg_catalog.pg_class c ON c.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'TYPE', t.oid::pg_catalog.regtype::text,
				   t.typowner, t.typnamespace, 'T', t.typacl
			FROM member m JOIN pg_catalog.pg_type t ON t.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'SCHEMA', pg_catalog.quote_ident(n.nspname), n.nspowner, 0, 'n', n.nspacl
			FROM member m JOIN pg_catalog.pg_namespace n ON n.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
		)
		-- an item of the object's privileges that a default privilege of its
		-- owner (for every schema, or for the object's) gives and the
		-- built-in default does not, on a new member or left by a script
		SELECT o.kind, o.name, a.privilege_type,
			   CASE WHEN a.grantee = 0 THEN 'PUBLIC'
					ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee))
			   END AS grantee
		FROM acl o, pg_catalog.aclexplode(o.acl) a
		WHERE (o.new
			   OR EXISTS (SELECT FROM pg_catalog.pg_init_privs i,
									  pg_catalog.aclexplode(i.initprivs) ia
						  WHERE i.classoid = o.classid AND i.objoid = o.objid AND i.objsubid = 0
							AND i.privtype = 'e'
							AND ia.grantee = a.grantee AND ia.privilege_type = a.privilege_type))
		  AND EXISTS (SELECT FROM pg_catalog.pg_default_acl x, pg_catalog.aclexplode(x.defaclacl) xa
					  WHERE x.defaclrole = o.owner AND x.defaclobjtype = o.objtype
						AND x.defaclnamespace IN (0, o.nsp)
						AND xa.grantee = a.grantee AND xa.privilege_type = a.privilege_type)
		  AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(
										  pg_catalog.acldefault(o.objtype::"char", o.owner)) b
						  WHERE b.grantee = a.grantee AND b.privilege_type = a.privilege_type)
	LOOP
		EXECUTE pg_catalog.format('REVOKE %s ON %s %s FROM %s CASCADE',
								  added.privilege_type, added.kind, added.name, added.grantee);
	END LOOP;
END
$$;

GRANT USAGE ON SCHEMA flake_internal TO PUBLIC;
GRANT SELECT ON flake_internal.flake_origin TO PUBLIC;
GRANT EXECUTE ON FUNCTION flake_lease_info() TO pg_monitor;
GRANT SELECT ON flake_leases TO pg_monitor;
