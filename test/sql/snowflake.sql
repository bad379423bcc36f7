--
-- flake_next(): Snowflake ids, decoding, settings, leases
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE FUNCTION sqlstate_of_query(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	RETURN 'OK';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE;
END $$;

-- the default layout: 41-bit ms since 2015-01-01, 10-bit node, 12-bit sequence
SHOW flake.epoch;
SHOW flake.node_bits;
SHOW flake.sequence_bits;
SHOW flake.nodes;
SHOW flake.max_borrow;

-- Discord's documentation example: worker 1, process 0 = node 32, increment 7
SELECT * FROM flake_decode(175928847299117063);
SELECT flake_timestamp(175928847299117063), flake_node(175928847299117063),
       flake_sequence(175928847299117063);
SELECT flake_decode(0), flake_decode(9223372036854775807);
SELECT flake_timestamp(-1);
SELECT flake_decode(-175928847299117063);

-- flake_from_timestamp: the smallest id of the millisecond
SELECT flake_from_timestamp('2015-01-01 00:00:00+00');
SELECT flake_from_timestamp('2016-04-30 11:18:25.796+00') <= 175928847299117063 AS lower_bound,
       flake_from_timestamp('2016-04-30 11:18:25.797+00') > 175928847299117063 AS upper_bound;
SELECT flake_from_timestamp('2015-01-01 00:00:00.0019+00') >> 22 AS ms;
SELECT flake_from_timestamp('2084-09-06 15:47:35.551+00'),
       flake_timestamp(flake_from_timestamp('2084-09-06 15:47:35.551+00'));
SELECT flake_from_timestamp('2084-09-06 15:47:35.552+00');
SELECT flake_from_timestamp('2014-12-31 23:59:59.999+00');
SELECT flake_from_timestamp('infinity');

-- generation on the leased node
SELECT flake_node() IS NULL AS no_lease_yet;
CREATE TABLE ids AS SELECT n, flake_next() AS id FROM generate_series(1, 100000) n;
SELECT flake_node() IS NOT NULL AS leased;
SELECT count(*) AS ids,
       count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE flake_node(id) <> flake_node()) AS other_node,
       max(flake_sequence(id)) < 4096 AS sequence_in_range,
       bool_and(flake_from_timestamp(flake_timestamp(id)) = id >> 22 << 22) AS from_timestamp_round_trips
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s;
SELECT abs(extract(epoch FROM flake_timestamp(flake_next()) - clock_timestamp())) < 5 AS near_now;
SELECT (flake_decode(flake_next())).node = flake_node() AS decode_node;

-- the view shows this backend's lease
SELECT generator, node = flake_node() AS my_node, pid = pg_backend_pid() AS my_pid,
       issued >= 100000 AS issued, last_issued <= clock_timestamp() + interval '1 s' AS last_issued
FROM flake_leases WHERE pid = pg_backend_pid();

-- monitoring roles read the view; other roles are refused (42501)
CREATE ROLE regress_flake_watcher IN ROLE pg_monitor;
CREATE ROLE regress_flake_nobody;
SET ROLE regress_flake_nobody;
SELECT q, sqlstate_of_query(q) FROM (VALUES
	('SELECT count(*) FROM flake_leases'),
	('SELECT count(*) FROM flake_lease_info()')) v(q);
SET ROLE regress_flake_watcher;
SELECT generator, pid = pg_backend_pid() AS my_pid, issued >= 100000 AS issued
FROM flake_leases WHERE node = flake_node() AND generator = 'flake_next';
-- flake_origin, the servers this database's ids come from: every role
-- reads it (pg_dump by a database's owner does), none but the extension's
-- owner writes it; the functions revoked from PUBLIC refuse a plain role
SET ROLE regress_flake_nobody;
SELECT count(*) > 0 AS origin_readable FROM flake_internal.flake_origin;
SELECT q, sqlstate_of_query(q) FROM (VALUES
	('INSERT INTO flake_internal.flake_origin VALUES (1)'),
	('UPDATE flake_internal.flake_origin SET system_identifier = 1'),
	('DELETE FROM flake_internal.flake_origin'),
	('TRUNCATE flake_internal.flake_origin'),
	('SELECT count(*) FROM flake_citus_check()'),
	($$SELECT flake_rekey_claim('pg_class', 'relname')$$),
	('SELECT randflake_decode(1)'),
	('SELECT randflake_key_fingerprint()')) v(q);
RESET ROLE;
DROP ROLE regress_flake_watcher, regress_flake_nobody;

-- A hostile session changes nothing flake reads: look-alikes of
-- flake_origin (naming a server this one is not: a temporary table, and
-- one in the extension's schema, where 1.3 kept it) and of Citus's catalog
-- (a group) first in search_path, a serializable read-only transaction, a
-- statement_timeout, session_replication_role = replica.  A new backend,
-- whose first ids check the origin and the Citus group: every generator
-- works, on this server's nodes, and ulidflake_next() carries no sid.
\c
CREATE TEMPORARY TABLE flake_origin (system_identifier bigint);
INSERT INTO flake_origin VALUES (42);
CREATE TABLE public.flake_origin (system_identifier bigint);
INSERT INTO public.flake_origin VALUES (42);
CREATE TEMPORARY TABLE pg_dist_local_group (groupid integer);
INSERT INTO pg_dist_local_group VALUES (5);
CREATE TEMPORARY TABLE pg_dist_node (nodeid integer);
INSERT INTO pg_dist_node VALUES (1);
SET search_path = pg_temp, public;
SET default_transaction_isolation = serializable;
SET default_transaction_read_only = on;
SET statement_timeout = '60s';
SET session_replication_role = replica;
SELECT flake_node(flake_next()) BETWEEN 0 AND 1015 AS flake_next,
	   (randflake_decode(randflake_next())).node BETWEEN 0 AND 131071 AS randflake_next,
	   (SELECT count(DISTINCT ulidflake_sid(ulidflake_next())) > 1 FROM generate_series(1, 100)) AS ulidflake_next;
\c
DROP TABLE public.flake_origin;

-- explicit nodes: any node of flake.nodes, increasing per node
CREATE TABLE explicit_ids AS
SELECT n, n % 3 * 505 AS node, flake_next(n % 3 * 505) AS id FROM generate_series(1, 30000) n;
SELECT node, count(*), count(*) FILTER (WHERE id <= prev) AS not_increasing,
       bool_and(flake_node(id) = node) AS right_node
FROM (SELECT node, id, lag(id) OVER (PARTITION BY node ORDER BY n) AS prev FROM explicit_ids) s
GROUP BY node ORDER BY node;
SELECT count(*) AS collisions FROM explicit_ids JOIN ids USING (id);
SELECT flake_next(1024);
SELECT flake_next(-1);
-- a node of flake.rekey_nodes ('1016-1023'): this server's, kept for the
-- ids of rekeys
SELECT flake_next(1020);

-- settings are fixed at server start; bad values are refused with the reason
SET flake.node_bits = 8;
ALTER SYSTEM SET flake.epoch = 'yesterday';
ALTER SYSTEM SET flake.epoch = '2015-02-30';
ALTER SYSTEM SET flake.epoch = '1969-12-31 23:59:59+00';
ALTER SYSTEM SET flake.node_bits = 17;
ALTER SYSTEM SET flake.sequence_bits = 0;
ALTER SYSTEM SET flake.nodes = '0-1024';
ALTER SYSTEM SET flake.nodes = '5-3';
ALTER SYSTEM SET flake.nodes = '3,8-';
ALTER SYSTEM SET flake.nodes = 'all';
-- (the range's wording changes with the major: only its SQLSTATE is shown)
\set VERBOSITY sqlstate
ALTER SYSTEM SET flake.max_borrow = -1;
\set VERBOSITY default
-- and good ones are taken
ALTER SYSTEM SET flake.epoch = '2020-06-01T12:00:00.250Z';
ALTER SYSTEM SET flake.epoch = '2020-06-01 14:00:00+02:00';
ALTER SYSTEM SET flake.nodes = '3, 8-15,1023';
ALTER SYSTEM SET flake.max_borrow = '250ms';
ALTER SYSTEM RESET ALL;

-- errors carry their SQLSTATE
SELECT q, sqlstate_of_query(q) FROM (VALUES
	('SELECT flake_next(1024)'),
	('SELECT flake_next(1020)'),
	('SELECT flake_timestamp(-1)'),
	($$SELECT flake_from_timestamp('2000-01-01')$$)) v(q);
\set VERBOSITY sqlstate
ALTER SYSTEM SET flake.nodes = '0-1024';
ALTER SYSTEM SET flake.epoch = 'yesterday';
ALTER SYSTEM SET flake.node_bits = 17;
SELECT flake_next(-1);
\set VERBOSITY default

-- generators are volatile and parallel unsafe; decoders stable and safe
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel
FROM pg_proc p
WHERE p.proname IN ('flake_next', 'flake_node', 'flake_timestamp', 'flake_sequence',
                    'flake_decode', 'flake_from_timestamp', 'flake_lease_info')
ORDER BY p.oid::regprocedure::text;
