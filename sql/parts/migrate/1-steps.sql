------------------------------------------------------------------------
-- Migration: serial, bigserial and identity keys to generator ids
--
-- flake_migrate() switches a key column's default to a flake generator,
-- detaches it from its sequence or identity, widens it (and every column
-- that references it through foreign keys, transitively, or by convention
-- when named in also) to bigint or ulidflake, and optionally gives existing
-- rows ids made from a time column: a mapping table of old and new ids,
-- then one ALTER TABLE a table that changes type and ids together.
-- Everything is checked before anything changes (a dry run lists every
-- problem); the changes run in the caller's transaction, so an error
-- anywhere undoes all of them.
--
-- The work is split along its phases into the flake_migrate_* helpers
-- below, in the schema flake_internal (out of the way of the user's
-- functions and of \df); flake_migrate() puts their steps into one plan and
-- runs it.  All are SECURITY INVOKER, and the caller must own each table
-- it changes (or be a member of its owner).  Every statement that reads or
-- alters a table runs as that table's owner, in a security-restricted
-- operation (migrate_as_owner, migrate_read_as_owner): index
-- expressions, CHECK constraints and policies are the owner's code, and
-- must not run with the caller's rights, which may be a superuser's.  The
-- caller runs only statements that run no such code: locks, and creating,
-- filling and granting the mapping table.
------------------------------------------------------------------------

-- One step of a migration plan: a statement to run, a lock or a note.
CREATE TYPE flake_internal.migrate_step AS (
	action text,
	detail text,
	run boolean,
	counted boolean,
	as_owner_of regclass
);
COMMENT ON TYPE flake_internal.migrate_step IS 'a step of a flake_migrate() plan';
COMMENT ON COLUMN flake_internal.migrate_step.action IS
	'what kind of step: lock, alter type, rekey, note, blocked, ...';
COMMENT ON COLUMN flake_internal.migrate_step.detail IS
	'the statement, or the text of a note or of a blocked step';
COMMENT ON COLUMN flake_internal.migrate_step.run IS
	'false: a note, a blocked step, or a lock already taken';
COMMENT ON COLUMN flake_internal.migrate_step.counted IS 'report the rows the statement touched';
COMMENT ON COLUMN flake_internal.migrate_step.as_owner_of IS
	'run the statement as the owner of this table; NULL: as the caller';

-- A column that holds the key's values: the key or a referencing column.
CREATE TYPE flake_internal.migrate_column AS (
	relid oid,
	attnum int2,
	changes boolean
);
COMMENT ON TYPE flake_internal.migrate_column IS 'a column whose values flake_migrate() changes';
COMMENT ON COLUMN flake_internal.migrate_column.relid IS 'the column''s table';
COMMENT ON COLUMN flake_internal.migrate_column.attnum IS 'the column''s number in its table';
COMMENT ON COLUMN flake_internal.migrate_column.changes IS
	'its type changes, or its table is rewritten with new ids';

--
-- A statement or query on a table, run as the table's owner inside a
-- security-restricted operation with search_path pg_catalog, pg_temp (and
-- the extension's schema between them with flake_types, for ALTER TABLE
-- ... TYPE ulidflake), as PostgreSQL runs REINDEX (src/migrate_owner.c).
-- Open to PUBLIC, as the other helpers are (see the end of this file):
-- only a role that may SET ROLE to the owner may use them, which gives it
-- nothing it does not have.
--
CREATE FUNCTION flake_internal.migrate_as_owner(tbl regclass, statement text, flake_types boolean)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'flake_migrate_as_owner' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: run a statement as the owner of a table, in a security-restricted '
	'operation; returns the rows it processed';
CREATE FUNCTION flake_internal.migrate_read_as_owner(tbl regclass, query text, flake_types boolean)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'flake_migrate_read_as_owner' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_read_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: the rows of a query run as the owner of a table, in a '
	'security-restricted operation';

--
-- A blocker found by a dry run, as a plan step: the error it would raise,
-- then its hint and its detail, so that the dry run leads with what stops
-- it and what to do, as the real run's error says them.
--
CREATE FUNCTION flake_internal.migrate_blocked(message text, sqlstate text, detail text,
													 hint text DEFAULT NULL)
	RETURNS flake_internal.migrate_step
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT ROW('blocked',
			   format('%s (SQLSTATE %s)', message, sqlstate)
			   || coalesce('. ' || nullif(concat_ws(' ', 'Hint: ' || hint, 'Detail: ' || detail), ''),
						   ''),
			   false, false, NULL)::flake_internal.migrate_step
$$;
COMMENT ON FUNCTION flake_internal.migrate_blocked(text, text, text, text) IS
	'flake_migrate() helper: the step a dry run shows for an error that a real run would raise, '
	'with its detail and hint';

--
-- Check that the caller owns a table, and lock it unless this is a dry run.
-- The lock comes before anything of the table is read, so that nothing
-- changes between check and change.  referenced names the key column that
-- a referencing table's column points to (NULL for the key's own table).
--
CREATE FUNCTION flake_internal.migrate_lock(tbl regclass, referenced text, dry_run boolean)
	RETURNS flake_internal.migrate_step
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	owner		regrole := (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = tbl);
BEGIN
	IF NOT pg_has_role(owner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = CASE WHEN referenced IS NULL
						   THEN format('flake_migrate alters %s; only its owner %s '
									   '(or a member of that role) can.',
									   tbl, owner)
						   ELSE format('%s references %s, so flake_migrate alters it too; '
									   'only its owner %s (or a member of that role) can.',
									   tbl, referenced, owner) END,
				  HINT = 'Run flake_migrate as the owner of the tables.';
	END IF;
	IF NOT dry_run THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	RETURN ROW('lock', format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl), false, false,
			   NULL)::flake_internal.migrate_step;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_lock(regclass, text, boolean) IS
	'flake_migrate() helper: check that the caller owns a table, '
	'and lock it unless this is a dry run';
