------------------------------------------------------------------------
-- flake 1.0 to 1.1
--
-- The migration functions are replaced whole: the old ones are dropped
-- here and sql/parts/migrate.sql, appended by make, creates the new ones.
------------------------------------------------------------------------

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean);

