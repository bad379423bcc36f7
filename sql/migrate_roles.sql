--
-- flake_migrate() run by a superuser on tables of ordinary roles.  The code
-- of a table (index expressions and predicates, CHECK constraints,
-- defaults, triggers, policies) is its owner's: it runs as that owner, in
-- a security-restricted operation, never with the caller's rights, in dry
-- runs and real runs.  Every function below records who ran it, and makes
-- its roles superusers when it runs with a superuser's rights.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;

CREATE ROLE regress_flake_eve;			-- owns the keys' tables
CREATE ROLE regress_flake_mallory;		-- owns a table that references one
CREATE ROLE regress_flake_boss IN ROLE regress_flake_eve;	-- a member of the owner
CREATE SCHEMA evil AUTHORIZATION regress_flake_eve;
GRANT USAGE, CREATE ON SCHEMA evil TO regress_flake_mallory;

SET ROLE regress_flake_eve;
CREATE TABLE evil.ran (who name, what text);
GRANT INSERT ON evil.ran TO PUBLIC;
CREATE FUNCTION evil.escalate(what text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	INSERT INTO evil.ran VALUES (current_user, what);
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		ALTER ROLE regress_flake_eve SUPERUSER;
		ALTER ROLE regress_flake_mallory SUPERUSER;
	END IF;
	RETURN true;
END $$;
-- as the issue found it: an IMMUTABLE function that calls one that does
-- the harm
CREATE FUNCTION evil.key(id bigint, what text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM evil.escalate(what); RETURN id; END $$;
CREATE FUNCTION evil.holds(what text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN evil.escalate(what); END $$;
CREATE FUNCTION evil.one(what text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN PERFORM evil.escalate(what); RETURN 1; END $$;
CREATE FUNCTION evil.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.escalate('trigger ' || TG_NAME); RETURN coalesce(NEW, OLD); END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA evil TO PUBLIC;

-- an index expression on the key (the probe tries it, ALTER TABLE
-- rebuilds it)
CREATE TABLE evil.by_index (id serial PRIMARY KEY, at timestamptz NOT NULL);
CREATE INDEX ON evil.by_index (evil.key(id, 'index expression'));
INSERT INTO evil.by_index (at) SELECT '2017-01-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
-- a partial index whose predicate the planner folds when it plans any
-- query on the table
CREATE TABLE evil.by_predicate (id serial PRIMARY KEY, at timestamptz NOT NULL);
CREATE INDEX ON evil.by_predicate (id) WHERE evil.holds('index predicate');
INSERT INTO evil.by_predicate (at) SELECT '2017-02-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
-- a CHECK constraint on the key (the probe tries it, ALTER TABLE checks
-- every row again)
CREATE TABLE evil.by_check (id serial PRIMARY KEY, at timestamptz NOT NULL,
							CHECK (evil.key(id, 'check constraint') > 0));
INSERT INTO evil.by_check (at) SELECT '2017-03-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
-- defaults, triggers of every kind and a forced policy that hides every
-- row: neither flake_migrate nor the statements it runs call them, and
-- every row is rekeyed
CREATE TABLE evil.by_default (id serial PRIMARY KEY, at timestamptz NOT NULL,
							  n integer DEFAULT evil.one('default'));
CREATE TRIGGER row_before BEFORE INSERT OR UPDATE OR DELETE ON evil.by_default
	FOR EACH ROW EXECUTE FUNCTION evil.stamp();
CREATE TRIGGER row_after AFTER INSERT OR UPDATE OR DELETE ON evil.by_default
	FOR EACH ROW EXECUTE FUNCTION evil.stamp();
CREATE TRIGGER statement AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON evil.by_default
	FOR EACH STATEMENT EXECUTE FUNCTION evil.stamp();
CREATE CONSTRAINT TRIGGER deferred AFTER INSERT OR UPDATE ON evil.by_default
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION evil.stamp();
INSERT INTO evil.by_default (at) SELECT '2017-04-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
CREATE POLICY hide ON evil.by_default USING (evil.holds('policy') AND false);
ALTER TABLE evil.by_default ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
-- a key that a table of another role references, with code of its own
CREATE TABLE evil.orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO evil.orders (at) SELECT '2017-05-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
GRANT REFERENCES ON evil.orders TO regress_flake_mallory;
SET ROLE regress_flake_mallory;
CREATE TABLE evil.lines (order_id integer REFERENCES evil.orders,
						 CHECK (evil.key(order_id, 'check constraint of mallory') > 0));
CREATE INDEX ON evil.lines (evil.key(order_id, 'index expression of mallory'));
INSERT INTO evil.lines VALUES (1), (2), (2);
RESET ROLE;
TRUNCATE evil.ran;

-- Each table: a dry run and a real run by the superuser, each in a new
-- session (so that the planner folds the predicate there, not here).
-- outcome(): who ran the tables' code, and which roles became superusers;
-- then the roles are ordinary again, so that each case counts alone.
CREATE FUNCTION outcome() RETURNS TABLE(what text, who text) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY
		SELECT r.what, string_agg(DISTINCT CASE WHEN r.who IN ('regress_flake_eve', 'regress_flake_mallory')
											 THEN r.who::text ELSE 'the caller' END, ', ')
		FROM evil.ran r GROUP BY r.what
		UNION ALL
		SELECT 'superusers', coalesce(string_agg(a.rolname::text, ', ' ORDER BY a.rolname), 'none')
		FROM pg_roles a WHERE a.rolname IN ('regress_flake_eve', 'regress_flake_mallory') AND a.rolsuper
		ORDER BY 1;
	ALTER ROLE regress_flake_eve NOSUPERUSER;
	ALTER ROLE regress_flake_mallory NOSUPERUSER;
	TRUNCATE evil.ran;
END $$;

\c
SELECT count(*) AS steps FROM flake_migrate('evil.by_index', rekey_from => 'at', dry_run => true);
SELECT * FROM outcome();
\c
SELECT action FROM flake_migrate('evil.by_index', rekey_from => 'at') ORDER BY step;
SELECT * FROM outcome();

\c
SELECT count(*) AS steps FROM flake_migrate('evil.by_predicate', rekey_from => 'at', dry_run => true);
SELECT * FROM outcome();
\c
SELECT count(*) AS steps FROM flake_migrate('evil.by_predicate', rekey_from => 'at');
SELECT * FROM outcome();

-- functions of the same names that take other types, where the owner may
-- create them (the extension's schema; the helpers themselves are in
-- flake_internal, where only the extension's owner creates): flake_migrate
-- calls its own
GRANT CREATE ON SCHEMA public TO regress_flake_eve;
SET ROLE regress_flake_eve;
CREATE FUNCTION public.flake_migrate_read_as_owner(tbl oid, query text, flake_types boolean)
	RETURNS SETOF record LANGUAGE plpgsql AS $$ BEGIN PERFORM evil.escalate('read_as_owner of eve'); END $$;
CREATE FUNCTION public.flake_migrate_read_as_owner(tbl text, query text, flake_types boolean)
	RETURNS SETOF record LANGUAGE plpgsql AS $$ BEGIN PERFORM evil.escalate('read_as_owner of eve'); END $$;
CREATE FUNCTION public.flake_migrate_as_owner(tbl oid, statement text, flake_types boolean)
	RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN PERFORM evil.escalate('as_owner of eve'); RETURN 0; END $$;
RESET ROLE;
\c
SELECT count(*) AS steps FROM flake_migrate('evil.by_check', rekey_from => 'at', dry_run => true);
SELECT * FROM outcome();
\c
SELECT count(*) AS steps FROM flake_migrate('evil.by_check', rekey_from => 'at');
SELECT * FROM outcome();
DROP FUNCTION public.flake_migrate_read_as_owner(oid, text, boolean),
	public.flake_migrate_read_as_owner(text, text, boolean), public.flake_migrate_as_owner(oid, text, boolean);
REVOKE CREATE ON SCHEMA public FROM regress_flake_eve;

-- a member of the owner's role: under FORCE ROW LEVEL SECURITY the
-- policies bind the owner and its members, so reading the table ran them
-- with the member's rights; as the owner, flake_migrate reads every row
-- without them
\c
SET ROLE regress_flake_boss;
SELECT count(*) AS steps FROM flake_migrate('evil.by_default', dry_run => true);
RESET ROLE;
SELECT * FROM outcome();
SELECT count(*) AS steps FROM flake_migrate('evil.by_default', rekey_from => 'at', dry_run => true);
SELECT count(*) AS steps FROM flake_migrate('evil.by_default', rekey_from => 'at');
SELECT * FROM outcome();
SELECT count(*) AS rows, count(*) FILTER (WHERE flake_timestamp(id) = at) AS rekeyed
FROM evil.by_default;

-- the referencing table's code runs as its owner, who reads the mapping
-- table (granted) and adds the foreign key back
\c
SELECT count(*) AS steps FROM flake_migrate('evil.orders', rekey_from => 'at', dry_run => true);
SELECT * FROM outcome();
\c
SELECT action, CASE WHEN action = 'grant' THEN detail END AS detail
FROM flake_migrate('evil.orders', rekey_from => 'at') ORDER BY step;
SELECT * FROM outcome();
SELECT count(*) AS lines, count(*) FILTER (WHERE flake_timestamp(o.id) = o.at) AS rekeyed
FROM evil.lines l JOIN evil.orders o ON o.id = l.order_id;

-- the foreign key is added back as the referencing table's owner, who
-- needs REFERENCES on the key: without it, refused beforehand (42501)
CREATE TABLE evil.accounts (id serial PRIMARY KEY);
CREATE TABLE evil.logins (account_id integer REFERENCES evil.accounts);
ALTER TABLE evil.accounts OWNER TO regress_flake_eve;
ALTER TABLE evil.logins OWNER TO regress_flake_mallory;
SELECT detail FROM flake_migrate('evil.accounts', dry_run => true) WHERE action = 'blocked';
\set VERBOSITY sqlstate
SELECT * FROM flake_migrate('evil.accounts');
\set VERBOSITY default
SET ROLE regress_flake_eve;
GRANT REFERENCES ON evil.accounts TO regress_flake_mallory;
RESET ROLE;
SELECT action FROM flake_migrate('evil.accounts') WHERE action LIKE '%constraint';

-- the functions that run statements as a table's owner refuse a role
-- that may not SET ROLE to it (42501), and the owner's statements run
-- restricted: no temporary table, no SET ROLE (42501); the rows must have
-- the declared types (42804)
SET ROLE regress_flake_mallory;
\set VERBOSITY sqlstate
SELECT flake_internal.flake_migrate_as_owner('evil.orders', 'ALTER TABLE evil.orders OWNER TO regress_flake_mallory', false);
SELECT * FROM flake_internal.flake_migrate_read_as_owner('evil.orders', 'SELECT count(*) FROM evil.orders', false) AS r(n bigint);
SELECT flake_internal.flake_migrate_as_owner('evil.lines', 'CREATE TEMPORARY TABLE escape (n integer)', false);
SELECT flake_internal.flake_migrate_as_owner('evil.lines', 'SET ROLE regress_flake_eve', false);
SELECT * FROM flake_internal.flake_migrate_read_as_owner('evil.lines', 'SELECT count(*) FROM evil.lines', false) AS r(n integer);
\set VERBOSITY default
SELECT * FROM flake_internal.flake_migrate_read_as_owner('evil.lines', 'SELECT count(*) FROM evil.lines', false) AS r(n bigint);
RESET ROLE;

-- A hostile session: functions and operators of the names flake_migrate
-- and its statements use (format, quote_ident, =, <, flake_next, ...)
-- planted in the caller's search_path ahead of pg_catalog,
-- session_replication_role = replica and a statement_timeout.
-- flake_migrate and flake_migrate_tables run their own (their search_path
-- is pinned, their statements name what they call): none of the planted
-- ones runs, and every row is rekeyed.  At REPEATABLE READ or SERIALIZABLE they refuse,
-- dry run or not (0A000): the transaction's snapshot is older than their
-- locks, and would miss rows committed meanwhile.
SET ROLE regress_flake_eve;
CREATE TABLE evil.planted (id serial PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO evil.planted (at) SELECT '2017-06-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 3) n;
CREATE FUNCTION evil.format(text, VARIADIC text[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.escalate('planted format'); RETURN ''; END $$;
CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.escalate('planted quote_ident'); RETURN $1; END $$;
CREATE FUNCTION evil.flake_next() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.escalate('planted flake_next'); RETURN 1; END $$;
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['oid', 'name', 'text', 'smallint', 'integer', 'bigint', 'timestamptz'] LOOP
		EXECUTE format('CREATE FUNCTION evil.same(a %1$s, b %1$s) RETURNS boolean LANGUAGE plpgsql AS '
					   '$f$ BEGIN PERFORM evil.escalate(''planted operator''); RETURN a IS NOT DISTINCT FROM b; END $f$;'
					   'CREATE OPERATOR evil.= (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = evil.same);'
					   'CREATE FUNCTION evil.below(a %1$s, b %1$s) RETURNS boolean LANGUAGE plpgsql AS '
					   '$f$ BEGIN PERFORM evil.escalate(''planted operator''); RETURN false; END $f$;'
					   'CREATE OPERATOR evil.< (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = evil.below)', t);
	END LOOP;
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA evil TO PUBLIC;
RESET ROLE;
\c
SET search_path = evil, pg_catalog, public;
SET session_replication_role = replica;
SET statement_timeout = '60s';
\set VERBOSITY sqlstate
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS steps FROM flake_migrate('evil.planted', rekey_from => 'at', dry_run => true);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) AS steps FROM flake_migrate_tables(ARRAY['evil.planted'::regclass], rekey_from => 'at');
ROLLBACK;
\set VERBOSITY default
SELECT count(*) AS steps FROM flake_migrate('evil.planted', rekey_from => 'at', dry_run => true);
SELECT count(*) AS steps FROM flake_migrate_tables(ARRAY['evil.planted'::regclass], rekey_from => 'at');
RESET session_replication_role;
RESET statement_timeout;
RESET search_path;
SELECT * FROM outcome();
SELECT count(*) AS rows, count(*) FILTER (WHERE flake_timestamp(id) = at) AS rekeyed,
	   pg_get_expr(d.adbin, d.adrelid) AS "default"
FROM evil.planted, pg_attrdef d
WHERE d.adrelid = 'evil.planted'::regclass
GROUP BY 3;

DROP FUNCTION outcome();
SET client_min_messages = warning;
DROP SCHEMA evil CASCADE;
RESET client_min_messages;
DROP ROLE regress_flake_eve, regress_flake_mallory, regress_flake_boss;
