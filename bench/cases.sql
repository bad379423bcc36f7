-- What make bench measures (the harness is bench/bench.sql).  Labels
-- name cases in ratios, so add a case before the ratios that compare to it.
-- A generator is one line: its cost against the loop floor (with a
-- target) and against other cases, e.g.
--   SELECT bench.add_generator('randflake_next()', target => 1.5, versus => '{flake_next()}');
-- A peer names the extension it needs (requires) and is skipped, with the
-- reason in the report, where that extension is not installed.
-- The server runs with test/flake.conf, so keys the suite sets are set here.

\set ON_ERROR_STOP 1

-- Fixtures ---------------------------------------------------------------

-- nextval() as most tables use it: a sequence that caches nothing.
CREATE SEQUENCE bench_seq CACHE 1;

-- An Instagram-style id, the usual way to get sharded 64-bit time-ordered
-- ids out of PL/pgSQL: milliseconds since an epoch, above a shard id, above
-- a per-shard sequence modulo 1024.
CREATE SEQUENCE instagram_seq;
CREATE FUNCTION instagram_id(shard int DEFAULT 5) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	epoch_ms constant bigint := 1420070400000;	-- 2015-01-01
	now_ms bigint;
	seq bigint;
BEGIN
	now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000);
	seq := nextval('instagram_seq') % 1024;
	RETURN (now_ms - epoch_ms) << 23 | shard::bigint << 10 | seq;
END
$$;

-- Text in/out: the same N values as ulidflake and as int8 (so both text
-- forms encode the same numbers), and their text forms, each pair in one
-- table so that both sides of a comparison scan the same rows.
CREATE TABLE bench_val AS
	SELECT u, u::bigint AS i
	FROM (SELECT ulidflake_next() AS u FROM generate_series(1, :N)) s;
CREATE TABLE bench_txt AS
	SELECT u::text AS ut, i::text AS it FROM bench_val;
VACUUM (FREEZE, ANALYZE) bench_val, bench_txt;

-- Per-row cost ------------------------------------------------------------

-- The loop every generator runs in, with nothing generated.
SELECT bench.add_case('loop floor', 'SELECT count(g) FROM generate_series(1, {N}) g');

-- Snowflake ids, against the usual ways to get ids in PostgreSQL.
SELECT bench.add_generator('nextval(''bench_seq'')', label => 'nextval()');
SELECT bench.add_generator('instagram_id()', scale => 0.1);
SELECT bench.add_generator('flake_next()', target => 1.25,
						   versus => '{nextval(), instagram_id()}');
SELECT bench.add_generator('flake_next(7)');
-- The SQL edition's flake_next() (bench/run installs its plain script into
-- the schema flake_sql): PL/pgSQL, as instagram_id() is, with what that
-- lacks (no repeats across sessions, clock steps and crashes).
SELECT bench.add_generator('flake_sql.flake_next()', label => 'flake_next(), SQL edition', scale => 0.1,
						   versus => '{flake_next()}');
SELECT bench.add_ratio('flake_next(), SQL edition / instagram_id()', 'flake_next(), SQL edition',
					   'instagram_id()', 1.0, 'net');

-- Ulid-Flake ids, against UUIDs.
SELECT bench.add_generator('gen_random_uuid()', scale => 0.2);
SELECT bench.add_generator('ulidflake_next()', target => 1.5,
						   versus => '{gen_random_uuid(), flake_next()}');

-- What users pick instead: PostgreSQL 18's uuidv7(), and two extensions
-- built from their own repositories when present: pgEdge's snowflake
-- (Snowflake ids from a sequence; it needs snowflake.node) and pg_uuidv7.
SELECT bench.add_generator('uuidv7()', scale => 0.2, min_version => 180000,
						   versus => '{gen_random_uuid(), flake_next()}');
SELECT bench.setting('snowflake.node', '1');
SELECT bench.add_generator('snowflake.nextval()', requires => 'snowflake',
						   versus => '{flake_next()}');
SELECT bench.add_generator('uuid_generate_v7()', scale => 0.2, requires => 'pg_uuidv7',
						   versus => '{gen_random_uuid(), flake_next()}');

-- Randflake ids: a counter and one Sparx-64/128 block encryption.  200000
-- ids in well under a second use up a node's second, so runs include
-- moving on to further nodes.
SELECT bench.add_generator('randflake_next()', target => 1.5,
						   versus => '{flake_next()}');

-- Text output and input: ulidflake against int8, on the same scan.  The
-- targets are judged net of the scan, on the conversions alone.
SELECT bench.add_case('scan bench_val', 'SELECT count(u) FROM bench_val');
SELECT bench.add_case('int8 out', 'SELECT count(i::text) FROM bench_val', 'scan bench_val');
SELECT bench.add_case('ulidflake out', 'SELECT count(u::text) FROM bench_val', 'scan bench_val');
SELECT bench.add_ratio('ulidflake out / int8 out', 'ulidflake out', 'int8 out', 1.2, 'net');

SELECT bench.add_case('scan bench_txt', 'SELECT count(ut) FROM bench_txt');
SELECT bench.add_case('int8 in', 'SELECT count(it::int8) FROM bench_txt', 'scan bench_txt');
SELECT bench.add_case('ulidflake in', 'SELECT count(ut::ulidflake) FROM bench_txt', 'scan bench_txt');
SELECT bench.add_ratio('ulidflake in / int8 in', 'ulidflake in', 'int8 in', 1.2, 'net');

-- Throughput ----------------------------------------------------------------

-- One statement per transaction from pgbench clients, at each client count
-- bench/run uses (1, 2 and 4).  SELECT 1 is the ceiling: the round
-- trip and transaction that every statement pays.
SELECT bench.add_pgbench('SELECT 1', 'SELECT 1;');
SELECT bench.add_pgbench('nextval()', 'SELECT nextval(''bench_seq'');');
SELECT bench.add_pgbench('flake_next()', 'SELECT flake_next();');
SELECT bench.add_tps_ratio('flake_next()', 'nextval()', clients => 4, target => 1.5);
SELECT bench.add_tps_ratio('flake_next()', 'SELECT 1');
-- The ceiling of the first ratio: what a statement that costs nothing
-- beyond its round trip would get against nextval().
SELECT bench.add_tps_ratio('SELECT 1', 'nextval()');

-- Bulk inserts ----------------------------------------------------------------

-- Each key kind as a primary key default; the first is the reference.
SELECT bench.add_bulk('bigserial', 'bigserial');
SELECT bench.add_bulk('identity', 'bigint GENERATED ALWAYS AS IDENTITY');
SELECT bench.add_bulk('flake_next()', 'bigint DEFAULT flake_next()');
SELECT bench.add_bulk('flake_next(), SQL edition', 'bigint DEFAULT flake_sql.flake_next()');
SELECT bench.add_bulk('instagram_id()', 'bigint DEFAULT instagram_id()');
SELECT bench.add_bulk('ulidflake_next()', 'ulidflake DEFAULT ulidflake_next()');
SELECT bench.add_bulk('randflake_next()', 'bigint DEFAULT randflake_next()');
SELECT bench.add_bulk('gen_random_uuid()', 'uuid DEFAULT gen_random_uuid()');
SELECT bench.add_bulk('uuidv7()', 'uuid DEFAULT uuidv7()', min_version => 180000);
SELECT bench.add_bulk('snowflake.nextval()', 'bigint DEFAULT snowflake.nextval()',
					  requires => 'snowflake');
SELECT bench.add_bulk('uuid_generate_v7()', 'uuid DEFAULT uuid_generate_v7()',
					  requires => 'pg_uuidv7');
