--
-- flake_take_over(data_directory) and flake_repair_state(newest): the SQL
-- steps after pg_upgrade or a restore, and for a damaged state file.  Only
-- their refusals run here (test/t/033_take_over.pl and 043_damaged_files.pl
-- take over and repair): superusers only, with EXECUTE revoked from PUBLIC
-- and checked in C for a role granted it; never in a read-only
-- transaction; a path that is not another server's data directory, a
-- repair with nothing to repair, and a time past a layout's end or far
-- ahead of the clock, are refused.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;

CREATE FUNCTION pg_temp.outcome(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	RETURN 'OK';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '"/[^"]*"', '"…"', 'g');
END $$;

-- a role without EXECUTE, and one granted it: refused either way
CREATE ROLE regress_flake_taker;
CREATE ROLE regress_flake_granted;
GRANT EXECUTE ON FUNCTION flake_take_over(text), flake_repair_state(timestamptz, boolean, boolean)
	TO regress_flake_granted;
SELECT r, q, pg_temp.outcome(format('SET ROLE %s; %s', r, q))
FROM (VALUES ('regress_flake_taker'), ('regress_flake_granted')) roles(r),
	 (VALUES ($$SELECT flake_take_over('/tmp')$$),
			 ($$SELECT flake_repair_state(now())$$)) v(q)
ORDER BY 1, 2;
RESET ROLE;

-- what is not another server's data directory, stopped
SELECT q, pg_temp.outcome(q) FROM (VALUES
	($$SELECT flake_take_over('relative/path')$$),
	($$SELECT flake_take_over('/nonexistent-flake-directory')$$),
	($$SELECT flake_take_over('/')$$),
	($$SELECT flake_take_over(current_setting('data_directory'))$$),
	($$SELECT flake_take_over(current_setting('data_directory') || '/PG_VERSION')$$)) v(q);

-- a read-only transaction changes nothing
BEGIN TRANSACTION READ ONLY;
SELECT pg_temp.outcome($$SELECT flake_take_over('/tmp')$$) AS take_over,
	   pg_temp.outcome($$SELECT flake_repair_state(now())$$) AS repair;
COMMIT;

-- the files are intact: nothing to repair; and a time that is none
SELECT q, pg_temp.outcome(q) FROM (VALUES
	($$SELECT flake_repair_state(now())$$),
	($$SELECT flake_repair_state('infinity')$$),
	($$SELECT flake_repair_state('1969-12-31 23:59:59+00')$$)) v(q);

-- a time past a layout's end (2205 typed for 2025) no id could carry; one
-- more than a day ahead of the clock, unless confirmed
SELECT q, pg_temp.outcome(q) FROM (VALUES
	($$SELECT flake_repair_state('2205-06-01')$$),
	($$SELECT flake_repair_state('2205-06-01', ahead_of_clock => true)$$),
	($$SELECT flake_repair_state('2058-11-06')$$)) v(q);
SELECT q, regexp_replace(pg_temp.outcome(q), '"[0-9][^"]*"', '"…"') FROM (VALUES
	($$SELECT flake_repair_state(now() + interval '2 days')$$),
	($$SELECT flake_repair_state(now() + interval '2 days', ahead_of_clock => true)$$)) v(q);

REVOKE EXECUTE ON FUNCTION flake_take_over(text), flake_repair_state(timestamptz, boolean, boolean)
	FROM regress_flake_granted;
DROP ROLE regress_flake_taker, regress_flake_granted;
