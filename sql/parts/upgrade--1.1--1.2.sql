------------------------------------------------------------------------
-- flake 1.1 to 1.2
--
-- The migration functions are replaced whole: the old ones are dropped
-- here and sql/parts/migrate.sql, appended by make, creates the new ones.
------------------------------------------------------------------------

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
