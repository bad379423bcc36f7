--
-- ulidflake: index support and binary COPY
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE TABLE t (id ulidflake NOT NULL);
INSERT INTO t SELECT ulidflake_from_timestamp('2025-01-01 00:00+00'::timestamptz + g * interval '1 second')
FROM generate_series(1, 20000) g;
ANALYZE t;
SET enable_seqscan = off;

-- btree: equality, ranges and ordering
CREATE INDEX t_btree ON t (id);
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = '01A3XN8RD0000';
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id >= ulidflake_from_timestamp('2025-01-01 01:00+00')
                                   AND id < ulidflake_from_timestamp('2025-01-01 02:00+00');
SELECT count(*) FROM t WHERE id >= ulidflake_from_timestamp('2025-01-01 01:00+00')
                       AND id < ulidflake_from_timestamp('2025-01-01 02:00+00');
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY id DESC LIMIT 3;
SELECT id, flake_timestamp(id) FROM t ORDER BY id DESC LIMIT 3;
DROP INDEX t_btree;

-- hash: equality
CREATE INDEX t_hash ON t USING hash (id);
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = ulidflake_from_timestamp('2025-01-01 00:00:10+00');
SELECT flake_timestamp(id) FROM t WHERE id = ulidflake_from_timestamp('2025-01-01 00:00:10+00');
DROP INDEX t_hash;

-- BRIN minmax: equality and ranges
CREATE INDEX t_brin ON t USING brin (id);
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = ulidflake_from_timestamp('2025-01-01 00:00:10+00');
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id BETWEEN ulidflake_from_timestamp('2025-01-01 01:00+00')
                                                 AND ulidflake_from_timestamp('2025-01-01 02:00+00');
SELECT count(*) FROM t WHERE id BETWEEN ulidflake_from_timestamp('2025-01-01 01:00+00')
                                   AND ulidflake_from_timestamp('2025-01-01 02:00+00');
DROP INDEX t_brin;

-- a unique index catches duplicates; hash joins and merge joins work
CREATE UNIQUE INDEX t_unique ON t (id);
INSERT INTO t SELECT id FROM t LIMIT 1;
RESET enable_seqscan;
SET enable_mergejoin = off;
SELECT count(*) FROM t a JOIN t b USING (id);
SET enable_mergejoin = on;
SET enable_hashjoin = off;
SELECT count(*) FROM t a JOIN t b USING (id);
RESET enable_hashjoin;
SELECT count(DISTINCT id) FROM t;

-- binary COPY round-trips
\copy t TO 'results/ulidflake.bin' WITH (FORMAT binary)
CREATE TABLE t2 (LIKE t);
\copy t2 FROM 'results/ulidflake.bin' WITH (FORMAT binary)
SELECT count(*) AS copied, count(*) FILTER (WHERE t.id IS NULL) AS lost
FROM t2 LEFT JOIN t USING (id);

-- binary input rejects what the type cannot hold
\copy (SELECT (-5)::bigint) TO 'results/negative.bin' WITH (FORMAT binary)
\copy t2 FROM 'results/negative.bin' WITH (FORMAT binary)
SELECT ulidflake_send('7ZZZZZZZZZZZZ');
