--
-- The helpers of flake_migrate() and of the online migration live in the
-- schema flake_internal, out of the user's way: the extension's schema
-- holds what users call.  They stay callable by every table owner (whose
-- session calls them through flake_migrate(), SECURITY INVOKER), and none
-- lets a role act on a table it does not own.  A dry run's blocked rows
-- say what to do, as the real run's errors do.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;

-- what \df flake* lists: the functions users call, no helper
SELECT p.oid::regprocedure AS visible
FROM pg_proc p
WHERE p.proname LIKE 'flake%' AND pg_function_is_visible(p.oid)
ORDER BY p.oid::regprocedure::text;

-- every other function and type of the extension is in flake_internal
SELECT DISTINCT n.nspname AS schema, count(*) OVER (PARTITION BY n.nspname) > 0 AS has_members
FROM pg_depend d
JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake')
ORDER BY 1;
SELECT t.oid::regtype AS internal_type
FROM pg_type t
WHERE t.typnamespace = 'flake_internal'::regnamespace AND t.typtype = 'c'
ORDER BY t.oid::regtype::text;
-- the relations of the extension: the view users read in its schema, the
-- table flake_origin in flake_internal, out of the way of applications'
-- schema dumps (Rails' schema.rb) and introspection
SELECT c.oid::regclass AS relation, c.relkind
FROM pg_depend d
JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake')
ORDER BY c.oid::regclass::text;

-- the schema: a member of the extension, USAGE for every role, CREATE for
-- its owner alone
SELECT pg_describe_object(d.classid, d.objid, 0) AS member
FROM pg_depend d
WHERE d.classid = 'pg_namespace'::regclass AND d.objid = 'flake_internal'::regnamespace
  AND d.deptype = 'e';
SELECT has_schema_privilege('public', 'flake_internal', 'USAGE') AS public_usage,
	   has_schema_privilege('public', 'flake_internal', 'CREATE') AS public_create;

-- A role that owns nothing, against a table of another role: every helper
-- that reads or alters a table, runs a statement as its owner or claims a
-- node refuses it (42501), and it cannot put a function in flake_internal.
CREATE ROLE regress_flake_owner;
CREATE ROLE regress_flake_nobody;
CREATE SCHEMA own AUTHORIZATION regress_flake_owner;
GRANT USAGE ON SCHEMA own TO regress_flake_nobody;
GRANT EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) TO regress_flake_owner;
SET ROLE regress_flake_owner;
CREATE TABLE own.secrets (id serial PRIMARY KEY, at timestamptz NOT NULL, secret text);
INSERT INTO own.secrets (at, secret) SELECT '2016-07-01'::timestamptz + n * interval '1 s', 'secret ' || n
FROM generate_series(1, 3) n;
CREATE TABLE own.map (old_id bigint, new_id bigint);
INSERT INTO own.map VALUES (1, 42);
RESET ROLE;

SET ROLE regress_flake_nobody;
\set VERBOSITY sqlstate
CREATE FUNCTION flake_internal.migrate_key(tbl regclass, col text) RETURNS void LANGUAGE sql AS '';
SELECT flake_internal.migrate_as_owner('own.secrets', 'DROP TABLE own.secrets', false);
SELECT * FROM flake_internal.migrate_read_as_owner('own.secrets', 'SELECT secret FROM own.secrets', false) AS s(secret text);
SELECT * FROM flake_internal.migrate_run(
	ARRAY[ROW('drop', 'DROP TABLE own.secrets', true, false, 'own.secrets')::flake_internal.migrate_step], false, false);
SELECT * FROM flake_internal.migrate_run(
	ARRAY[ROW('drop', 'DROP TABLE own.secrets', true, false, NULL)::flake_internal.migrate_step], false, false);
SELECT flake_internal.migrate_lock('own.secrets', NULL, false);
SELECT flake_internal.migrate_lookup('own.map', 1);
SELECT flake_rekey_claim('own.secrets', 'at');
SELECT * FROM flake_migrate('own.secrets', dry_run => true);
SELECT * FROM flake_migrate('own.secrets', rekey_from => 'at');
SELECT * FROM flake_internal.online_plan('own.secrets');
SELECT flake_internal.online_swap('own.secrets', 'id', 'flake_next', NULL);
SELECT flake_internal.online_swap_lock('own.secrets', 'id', 'flake_next', NULL);
SELECT flake_internal.online_validate('own.secrets');
SELECT flake_internal.online_private('own.secrets');
\set VERBOSITY default
RESET ROLE;
SELECT count(*) AS secrets_left FROM own.secrets;
DROP TABLE own.map;

-- The owner, an ordinary role, migrates its tables itself: a dry run, a
-- rekey, and a change to ulidflake whose CHECK constraint ALTER TABLE
-- parses again with the type's operators (found in the extension's
-- schema, not in flake_internal where the helper that runs it is).
SET ROLE regress_flake_owner;
SELECT action FROM flake_migrate('own.secrets', rekey_from => 'at', dry_run => true) ORDER BY step;
SELECT action FROM flake_migrate('own.secrets', rekey_from => 'at') ORDER BY step;
SELECT count(*) AS rows, count(*) FILTER (WHERE flake_timestamp(id) = at) AS rekeyed FROM own.secrets;
CREATE TABLE own.tree (id serial PRIMARY KEY, parent integer REFERENCES own.tree, CHECK (id <> parent));
INSERT INTO own.tree (parent) VALUES (NULL), (1), (1);
SELECT action FROM flake_migrate('own.tree', generator => 'ulidflake_next') ORDER BY step;
SELECT pg_typeof(id) AS id, pg_typeof(parent) AS parent, pg_get_constraintdef(c.oid) AS "check"
FROM own.tree, pg_constraint c WHERE c.conrelid = 'own.tree'::regclass AND c.contype = 'c' LIMIT 1;
RESET ROLE;

--
-- Each error of a real run is a blocked row of the dry run, with its
-- detail and its hint: what to do.  real_error() runs a call both ways:
-- the real run's error, and whether the dry run shows it as it is.
--
CREATE FUNCTION real_error(call text, OUT error text, OUT in_dry_run boolean)
LANGUAGE plpgsql AS $$
DECLARE
	msg		text;
	state	text;
	det		text;
	hint	text;
BEGIN
	BEGIN
		EXECUTE format('SELECT count(*) FROM %s', format(call, 'false'));
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL,
								hint = PG_EXCEPTION_HINT;
	END;
	error := format('%s (SQLSTATE %s). %s Hint: %s', msg, state, det, hint);
	EXECUTE format('SELECT EXISTS (SELECT FROM %s WHERE action = %L AND detail = %L)', format(call, 'true'),
				   'blocked', error)
		INTO in_dry_run;
END $$;

-- rows before the epoch: the hint names flake.epoch and undatable
CREATE TABLE own.old (id serial PRIMARY KEY, at timestamptz);
INSERT INTO own.old (at) VALUES ('2001-01-01'), ('2020-01-01');
SELECT * FROM real_error($$flake_migrate('own.old', rekey_from => 'at', dry_run => %s)$$);
SELECT * FROM real_error($$flake_migrate('own.old', generator => 'ulidflake_next', rekey_from => 'at', dry_run => %s)$$);
-- a possible reference without a foreign key: the hint names also
CREATE TABLE own.old_notes (old_id integer);
INSERT INTO own.old_notes VALUES (1);
SELECT * FROM real_error($$flake_migrate('own.old', dry_run => %s)$$);
DROP TABLE own.old_notes;
-- not a key, a view on the key, no time: each with its hint
CREATE TABLE own.loose (id serial, at timestamptz);
INSERT INTO own.loose (at) VALUES (NULL);
SELECT * FROM real_error($$flake_migrate('own.loose', rekey_from => 'at', dry_run => %s)$$);
CREATE TABLE own.viewed (id serial PRIMARY KEY);
CREATE VIEW own.viewed_ids AS SELECT id FROM own.viewed;
SELECT * FROM real_error($$flake_migrate('own.viewed', generator => 'ulidflake_next', dry_run => %s)$$);
-- another role's table that references the key: the hint says who may run it
CREATE TABLE own.parent (id serial PRIMARY KEY);
ALTER TABLE own.parent OWNER TO regress_flake_owner;
CREATE TABLE own.child (parent_id integer REFERENCES own.parent);
ALTER TABLE own.child OWNER TO regress_flake_nobody;
GRANT USAGE ON SCHEMA own TO regress_flake_owner;
SET ROLE regress_flake_owner;
SELECT * FROM real_error($$flake_migrate('own.parent', dry_run => %s)$$);
RESET ROLE;

DROP FUNCTION real_error(text);
SET client_min_messages = warning;
DROP SCHEMA own CASCADE;
RESET client_min_messages;
REVOKE EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) FROM regress_flake_owner;
DROP ROLE regress_flake_owner, regress_flake_nobody;
