------------------------------------------------------------------------
-- flake 1.1 to 1.2
--
-- The migration functions are replaced whole: the old ones are dropped
-- here and sql/parts/migrate.sql, appended by make, creates the new ones,
-- the helpers among them in the new schema flake_internal (an upgrade part
-- after 1.2 drops them there).
------------------------------------------------------------------------

-- flake_leases: for pg_monitor, not only superusers
REVOKE EXECUTE ON FUNCTION flake_lease_info() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION flake_lease_info() TO pg_monitor;
GRANT SELECT ON flake_leases TO pg_monitor;
COMMENT ON COLUMN flake_leases.generator IS 'the family whose node this is: flake_next or randflake_next';
COMMENT ON COLUMN flake_leases.node IS 'the node number';
COMMENT ON COLUMN flake_leases.pid IS 'the backend that leased the node while it was free; NULL once it has exited';
COMMENT ON COLUMN flake_leases.leased_at IS 'when that backend leased the node';
COMMENT ON COLUMN flake_leases.last_issued IS 'the time of the last id issued on the node';
COMMENT ON COLUMN flake_leases.issued IS 'ids issued on the node by all its holders since it was leased (a Randflake holder adds 256 at each reservation)';
COMMENT ON COLUMN flake_leases.holders IS 'the number of backends that share the node';

-- ulidflake in the string category (1.2), as CREATE TYPE ... CATEGORY = 'S'
-- in sql/parts/flake.sql: flake_timestamp('02N1X2KCSDK1S') resolves to the
-- ulidflake overload.  ALTER TYPE cannot change the category.
UPDATE pg_catalog.pg_type SET typcategory = 'S' WHERE oid = '@extschema@.ulidflake'::pg_catalog.regtype;

-- flake_guard() checks only ids new to the table (1.2)
COMMENT ON FUNCTION flake_guard() IS 'trigger: refuse ids that replication brings new into the table (inserted, or set by an update) when they were made on this server''s own nodes; arguments: the key columns';

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean, text[], text);
DROP FUNCTION flake_migrate_tables(regclass[], name, text, name, boolean, text[], text);
DROP FUNCTION flake_migrate_also(regclass, name, smallint, text[]);
DROP FUNCTION flake_migrate_blocked(text, text, text);
DROP FUNCTION flake_migrate_blockers(regclass, name, flake_migrate_column[], oid[], boolean);
DROP FUNCTION flake_migrate_candidates(regclass, name, flake_migrate_column[]);
DROP FUNCTION flake_migrate_closure(regclass, name, smallint, flake_migrate_column[], boolean, boolean, boolean);
DROP FUNCTION flake_migrate_detach(regclass, name, smallint, oid, oid, oid[]);
DROP FUNCTION flake_migrate_foreign_keys(regclass, name, flake_migrate_column[]);
DROP FUNCTION flake_migrate_holds_ids(oid, integer);
DROP FUNCTION flake_migrate_key(regclass, name);
DROP FUNCTION flake_migrate_lock(regclass, text, boolean);
DROP FUNCTION flake_migrate_lookup(regclass, bigint);
DROP FUNCTION flake_migrate_map_name(regclass, name, text, name);
DROP FUNCTION flake_migrate_probe(regclass, name, flake_migrate_column[], text, bigint, boolean);
DROP FUNCTION flake_migrate_rekey_query(regclass, name, text, name, bigint, text);
DROP FUNCTION flake_rekey_claim(bigint, bigint, boolean);
DROP TYPE flake_migrate_step;
DROP TYPE flake_migrate_column;

-- the helpers go to a schema of their own (sql/parts/flake.sql)
CREATE SCHEMA flake_internal;
COMMENT ON SCHEMA flake_internal IS 'internal helpers of flake_migrate() and the online migration; not for direct use';
GRANT USAGE ON SCHEMA flake_internal TO PUBLIC;

-- The servers (system identifiers) this database was created on: pg_dump
-- dumps the rows and pg_upgrade keeps the table, so a database carried to
-- another server names the server whose flake.hwm and flake.rekeys (which
-- stay in its data directory) hold the state of the ids in it; flake
-- refuses to generate until the new server has taken them over.
CREATE TABLE flake_origin (system_identifier bigint NOT NULL);
COMMENT ON TABLE flake_origin IS 'the servers (system identifiers) whose ids this database may hold: flake generates only where flake.hwm covers them all';
COMMENT ON COLUMN flake_origin.system_identifier IS 'the system identifier of a server (pg_control_system()) whose ids this database may hold';
INSERT INTO flake_origin SELECT system_identifier FROM pg_control_system();
SELECT pg_catalog.pg_extension_config_dump('flake_origin', '');
