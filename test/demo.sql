-- flake walkthrough (make demo)
CREATE EXTENSION flake;

-- ulidflake: 64-bit, time-ordered, 13 characters of Crockford Base32
CREATE TABLE events (id ulidflake PRIMARY KEY DEFAULT ulidflake_next(), what text);
INSERT INTO events (what) VALUES ('signup'), ('login'), ('purchase');
SELECT id, flake_timestamp(id), ulidflake_entropy(id), what FROM events ORDER BY id;

-- the same ids as bigint, and back
SELECT id, id::bigint AS as_bigint, id::bigint::ulidflake AS and_back FROM events ORDER BY id;

-- scalable form: the low 5 bits carry a scalability id (0-31)
SELECT v, ulidflake_sid(v) FROM (SELECT ulidflake_next(7) AS v FROM generate_series(1, 3)) s;

-- range scans by time
SELECT count(*) FROM events WHERE id >= ulidflake_from_timestamp(now() - interval '1 hour');

-- flake_next(): Snowflake ids (41-bit ms since 2015, 10-bit node, 12-bit
-- sequence), on a node this backend leased from shared memory
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT flake_next(), item text);
INSERT INTO orders (item) VALUES ('coffee'), ('tea'), ('cake');
SELECT id, (flake_decode(id)).*, item FROM orders ORDER BY id;

-- explicit nodes, and range scans by time
SELECT flake_next(7) AS on_node_7, flake_node(flake_next(7));
SELECT count(*) FROM orders WHERE id >= flake_from_timestamp(now() - interval '1 minute');

-- who holds which node
SELECT generator, node, pid = pg_backend_pid() AS this_session, issued, last_issued FROM flake_leases;
