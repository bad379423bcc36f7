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

-- randflake_next(): unpredictable to outsiders (Sparx-64/128 encryption of
-- 30-bit seconds, 17-bit node, 17-bit sequence), readable with the secret
CREATE TABLE invites (id bigint PRIMARY KEY DEFAULT randflake_next(), email text);
INSERT INTO invites (email) VALUES ('ada@example.org'), ('grace@example.org'), ('linus@example.org');
SELECT id, randflake_encode(id) AS in_urls, randflake_parse(randflake_encode(id)) = id AS parses_back
FROM invites;
SELECT i.email, d.* FROM invites i, randflake_decode(i.id) d ORDER BY d.sequence;

-- Migrating a serial table (say, loaded from MySQL AUTO_INCREMENT) and its
-- child table to flake ids: first the plan, then the migration, in one
-- transaction; old rows get ids of their own time, new rows ids of now.
CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL, joined timestamptz NOT NULL);
CREATE TABLE posts (id serial PRIMARY KEY, author_id integer NOT NULL REFERENCES authors, title text);
INSERT INTO authors (name, joined) VALUES
	('ada', '2019-03-01 09:00+00'), ('grace', '2021-07-15 14:30+00'), ('linus', '2023-11-02 08:15+00');
INSERT INTO posts (author_id, title) VALUES (1, 'notes'), (2, 'compilers'), (2, 'debugging'), (3, 'kernels');
SELECT * FROM authors ORDER BY id;
SELECT step, action, left(detail, 100) AS detail
FROM flake_migrate('authors', rekey_from => 'joined', dry_run => true);
BEGIN;
SELECT step, action FROM flake_migrate('authors', rekey_from => 'joined');
COMMIT;
INSERT INTO authors (name, joined) VALUES ('barbara', now());
INSERT INTO posts (author_id, title) SELECT id, 'abstraction' FROM authors WHERE name = 'barbara';
SELECT a.id, a.name, flake_timestamp(a.id), m.old_id
FROM authors a LEFT JOIN authors_flake_map m ON m.new_id = a.id ORDER BY a.id;
SELECT p.id, p.title, p.author_id, a.name FROM posts p JOIN authors a ON a.id = p.author_id ORDER BY p.id;
