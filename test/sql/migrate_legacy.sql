--
-- flake_migrate() on legacy schemas: references kept by convention
-- (no foreign keys), numeric referencing columns as pgloader loads them
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

------------------------------------------------------------------------
-- A blog engine's core tables without a single foreign key: posts, their
-- meta rows (post_id, numeric as pgloader loads bigint unsigned), comments
-- (comment_post_id, a name no convention finds) and options that hold a
-- post id in text and in JSON.
------------------------------------------------------------------------
CREATE SCHEMA blog;
CREATE TABLE blog.wp_posts (id bigserial PRIMARY KEY, post_date timestamptz NOT NULL, title text);
CREATE TABLE blog.wp_postmeta (meta_id bigserial PRIMARY KEY, post_id numeric(20, 0) NOT NULL,
							   meta_key text, meta_value text);
CREATE TABLE blog.wp_comments (comment_id bigserial PRIMARY KEY, comment_post_id numeric(20, 0),
							   body text);
CREATE TABLE blog.wp_options (option_name text PRIMARY KEY, option_value text);
-- an integer column named like a reference whose values are out of the
-- key's range is not a candidate
CREATE TABLE blog.wp_stats (post_id integer);
INSERT INTO blog.wp_posts (post_date, title) VALUES
	('2019-05-01 10:00:00+00', 'hello'), ('2020-06-02 11:00:00+00', 'again'), ('2021-07-03 12:00:00+00', 'last');
INSERT INTO blog.wp_postmeta (post_id, meta_key, meta_value) VALUES (1, 'views', '10'), (3, 'views', '30'), (3, 'likes', '5');
INSERT INTO blog.wp_comments (comment_post_id, body) VALUES (2, 'nice'), (3, 'great'), (NULL, 'orphan');
INSERT INTO blog.wp_options VALUES ('page_on_front', '2'), ('featured', '{"post": 3, "title": "last"}');
INSERT INTO blog.wp_stats VALUES (999);

CREATE TABLE before AS
SELECT p.id, p.title, m.meta_key, c.body
FROM blog.wp_posts p LEFT JOIN blog.wp_postmeta m ON m.post_id = p.id
LEFT JOIN blog.wp_comments c ON c.comment_post_id = p.id;

-- the candidate is found; without also, a rekey that would leave it on
-- old ids is refused (also in a dry run)
SELECT step, action, left(detail, 100) AS detail
FROM flake_migrate('blog.wp_posts', rekey_from => 'post_date', dry_run => true) WHERE step < 6;
SELECT * FROM flake_migrate('blog.wp_posts', rekey_from => 'post_date');
-- also => '{}' leaves it, and says so
SELECT action, detail FROM flake_migrate('blog.wp_posts', rekey_from => 'post_date', dry_run => true, also => '{}')
WHERE action = 'note';

-- naming the columns: they are locked, converted to bigint and rekeyed
-- with the key, in the same transaction
SELECT step, action, CASE WHEN action = 'fill map' THEN left(detail, 40) || ' ...' ELSE detail END AS detail
FROM flake_migrate('blog.wp_posts', rekey_from => 'post_date',
				   also => '{wp_postmeta.post_id, blog.wp_comments.comment_post_id}');
SELECT attrelid::regclass, attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE (attrelid, attname) IN (('blog.wp_postmeta'::regclass, 'post_id'), ('blog.wp_comments'::regclass, 'comment_post_id'))
ORDER BY 1;
-- every meta row and comment follows its post
SELECT count(*) AS rows_as_before FROM (
	SELECT m.old_id AS id, p.title, pm.meta_key, c.body
	FROM blog.wp_posts p JOIN blog.wp_posts_flake_map m ON m.new_id = p.id
	LEFT JOIN blog.wp_postmeta pm ON pm.post_id = p.id
	LEFT JOIN blog.wp_comments c ON c.comment_post_id = p.id
	INTERSECT SELECT * FROM before) s;
SELECT count(*) FROM before;
SELECT body, comment_post_id IS NULL AS no_post FROM blog.wp_comments ORDER BY comment_id;

-- ids inside text and JSON are out of reach of flake_migrate; the mapping
-- table fixes them (the README's recipe)
UPDATE blog.wp_options o SET option_value = m.new_id::text
FROM blog.wp_posts_flake_map m
WHERE o.option_name = 'page_on_front' AND o.option_value = m.old_id::text;
UPDATE blog.wp_options o SET option_value = jsonb_set(o.option_value::jsonb, '{post}', to_jsonb(m.new_id::text))::text
FROM blog.wp_posts_flake_map m
WHERE o.option_name = 'featured' AND (o.option_value::jsonb ->> 'post')::bigint = m.old_id;
SELECT o.option_name, p.title FROM blog.wp_options o
JOIN blog.wp_posts p ON p.id = coalesce((o.option_value::jsonb ->> 'post')::bigint, o.option_value::bigint)
WHERE o.option_name IN ('page_on_front', 'featured') ORDER BY 1;

------------------------------------------------------------------------
-- an integer key: a conventional integer reference must widen with it even
-- without rekeying; named in also it does
------------------------------------------------------------------------
CREATE TABLE blog.authors (id serial PRIMARY KEY, name text);
CREATE TABLE blog.books (id serial PRIMARY KEY, authorid integer);
INSERT INTO blog.authors (name) VALUES ('a'), ('b');
INSERT INTO blog.books (authorid) VALUES (1), (2), (2);
SELECT * FROM flake_migrate('blog.authors', dry_run => true);
SELECT step, action, detail FROM flake_migrate('blog.authors', also => '{books.authorid}');
INSERT INTO blog.authors (name) VALUES ('c');
INSERT INTO blog.books (authorid) SELECT id FROM blog.authors WHERE name = 'c';
SELECT a.name, count(*) FROM blog.books b JOIN blog.authors a ON a.id = b.authorid GROUP BY 1 ORDER BY 1;

------------------------------------------------------------------------
-- refusals of also
------------------------------------------------------------------------
CREATE TABLE blog.tags (id serial PRIMARY KEY, added date NOT NULL DEFAULT '2020-01-01');
CREATE TABLE blog.tag_refs (tag_id numeric, label text, tag_note numeric(10, 2));
INSERT INTO blog.tags DEFAULT VALUES;
INSERT INTO blog.tag_refs VALUES (1, 'x', 1.5);
SELECT * FROM flake_migrate('blog.tags', also => '{"no such.thing.at.all"}');
SELECT * FROM flake_migrate('blog.tags', also => '{tag_refs}');
SELECT * FROM flake_migrate('blog.tags', also => '{nope.tag_id}');
SELECT * FROM flake_migrate('blog.tags', also => '{tag_refs.nope}');
SELECT * FROM flake_migrate('blog.tags', also => '{tags.id}');
SELECT * FROM flake_migrate('blog.tags', also => '{tag_refs.label}');
SELECT * FROM flake_migrate('blog.tags', also => '{tag_refs.tag_note}');
-- a numeric column with a fraction cannot become bigint
INSERT INTO blog.tag_refs VALUES (1.5, 'y');
SELECT * FROM flake_migrate('blog.tags', also => '{tag_refs.tag_id}');
DELETE FROM blog.tag_refs WHERE label = 'y';
SELECT action, detail FROM flake_migrate('blog.tags', rekey_from => 'added', also => '{tag_refs.tag_id}')
WHERE action IN ('alter type', 'rekey');
SELECT t.added, r.label FROM blog.tags t JOIN blog.tag_refs r ON r.tag_id = t.id;

------------------------------------------------------------------------
-- rekeyed ids are unique across tables: payments made at the moments of
-- their rentals (two to a millisecond) get ids no rental has, on another
-- node of flake.rekey_nodes; live ids never use those nodes
------------------------------------------------------------------------
CREATE TABLE blog.rentals (id serial PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE blog.payments (id serial PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO blog.rentals (at) SELECT '2022-01-01'::timestamptz + (n / 2) * interval '1 ms' FROM generate_series(1, 5000) n;
INSERT INTO blog.payments (at) SELECT at FROM blog.rentals ORDER BY id;
SELECT count(*) FROM flake_migrate('blog.rentals', rekey_from => 'at');
SELECT count(*) FROM flake_migrate('blog.payments', rekey_from => 'at');
SELECT count(*) AS ids_in_common FROM blog.rentals r JOIN blog.payments p ON p.id = r.id;
SELECT count(*) AS same_times FROM blog.rentals r JOIN blog.payments p
	ON flake_timestamp(p.id) = flake_timestamp(r.id) AND flake_sequence(p.id) = flake_sequence(r.id);
SELECT (SELECT array_agg(DISTINCT flake_node(id)) FROM blog.rentals) <> (SELECT array_agg(DISTINCT flake_node(id)) FROM blog.payments) AS other_node,
	   (SELECT bool_and(flake_node(id) BETWEEN 1016 AND 1023) FROM blog.rentals) AS rekey_nodes,
	   flake_node(flake_next()) < 1016 AS live_node;

------------------------------------------------------------------------
-- rows the ids cannot date: NULL, before the epoch, in the future
------------------------------------------------------------------------
CREATE TABLE blog.events (id serial PRIMARY KEY, at timestamptz, what text);
CREATE TABLE blog.event_refs (event_id integer REFERENCES blog.events);
INSERT INTO blog.events (at, what) VALUES ('2020-01-01', 'dated'), (NULL, 'null'), ('2010-05-05', 'pre-epoch'),
	(now() + interval '1 day', 'future'), ('2021-01-01', 'dated too');
INSERT INTO blog.event_refs SELECT id FROM blog.events;
-- refused by default, with the counts; the hint names flake.epoch
SELECT * FROM flake_migrate('blog.events', rekey_from => 'at', dry_run => true);
SELECT * FROM flake_migrate('blog.events', rekey_from => 'at', undatable => 'maybe');
-- keep: they keep their old ids, counted in the plan
BEGIN;
SELECT action, detail FROM flake_migrate('blog.events', rekey_from => 'at', undatable => 'keep')
WHERE action IN ('note', 'rekey');
SELECT e.what, e.id < 100 AS old_id, m.old_id IS NOT NULL AS mapped, r.event_id = e.id AS ref_follows
FROM blog.events e LEFT JOIN blog.events_flake_map m ON m.new_id = e.id
JOIN blog.event_refs r ON r.event_id = e.id ORDER BY e.id;
ROLLBACK;
-- now: they get ids of now, after the dated ones
SELECT action, detail FROM flake_migrate('blog.events', rekey_from => 'at', undatable => 'now')
WHERE action IN ('note', 'rekey');
SELECT e.what, m.old_id, flake_timestamp(e.id) > now() - interval '1 hour' AS id_of_now,
	   flake_timestamp(e.id) = e.at AS id_of_its_time, r.event_id = e.id AS ref_follows
FROM blog.events e JOIN blog.events_flake_map m ON m.new_id = e.id
JOIN blog.event_refs r ON r.event_id = e.id ORDER BY e.id;
-- ulidflake: its epoch (2024-01-01) is fixed, and the hint says so
CREATE TABLE blog.old_visits (id serial PRIMARY KEY, day date NOT NULL);
INSERT INTO blog.old_visits (day) VALUES ('2023-12-31'), ('2024-06-01');
SELECT * FROM flake_migrate('blog.old_visits', generator => 'ulidflake_next', rekey_from => 'day');

------------------------------------------------------------------------
-- a trigger that rewrites updated rows, as pgloader emulates MySQL's
-- ON UPDATE CURRENT_TIMESTAMP: no obstacle, and it does not fire, since a
-- rekey rewrites the table with ALTER TABLE instead of updating its rows
------------------------------------------------------------------------
CREATE TABLE blog.notes (id bigserial PRIMARY KEY, created timestamptz NOT NULL,
						 updated timestamptz NOT NULL DEFAULT '2001-01-01');
CREATE FUNCTION blog.on_update_current_timestamp_notes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.updated = now();
	RETURN NEW;
END $$;
CREATE TRIGGER on_update_current_timestamp BEFORE UPDATE ON blog.notes
	FOR EACH ROW EXECUTE FUNCTION blog.on_update_current_timestamp_notes();
CREATE TRIGGER audit_always BEFORE UPDATE ON blog.notes
	FOR EACH ROW EXECUTE FUNCTION blog.on_update_current_timestamp_notes();
ALTER TABLE blog.notes ENABLE ALWAYS TRIGGER audit_always;
INSERT INTO blog.notes (created) VALUES ('2022-02-02'), ('2022-03-03');
SELECT step, action, CASE WHEN action = 'fill map' THEN left(detail, 40) || ' ...' ELSE detail END AS detail
FROM flake_migrate('blog.notes', rekey_from => 'created');
SELECT updated, flake_timestamp(id) = created AS rekeyed FROM blog.notes ORDER BY id;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'blog.notes'::regclass ORDER BY 1;

------------------------------------------------------------------------
-- a dry run lists every blocker it finds, then the plan; the real run
-- refuses at the first, before anything changes
------------------------------------------------------------------------
CREATE TABLE blog.users (id serial, joined timestamptz, name text);
CREATE VIEW blog.user_names AS SELECT id, name FROM blog.users;
CREATE TABLE blog.user_roles (user_id integer, role text);
CREATE TRIGGER users_touch BEFORE UPDATE ON blog.users
	FOR EACH ROW EXECUTE FUNCTION blog.on_update_current_timestamp_notes();
INSERT INTO blog.users (joined, name) VALUES (NULL, 'x'), ('2020-01-01', 'y');
INSERT INTO blog.user_roles VALUES (1, 'admin');
SELECT step, action, detail FROM flake_migrate('blog.users', rekey_from => 'joined', dry_run => true)
WHERE action IN ('blocked', 'lock');
SELECT * FROM flake_migrate('blog.users', rekey_from => 'joined');
SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'blog.users'::regclass AND attname = 'id';

-- ... and so are ulidflake ids: each rekey takes a band of their entropy
CREATE TABLE blog.rentals_u (id serial PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE blog.payments_u (id serial PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO blog.rentals_u (at) SELECT '2024-03-01'::timestamptz + (n / 3) * interval '1 ms' FROM generate_series(1, 5000) n;
INSERT INTO blog.payments_u (at) SELECT at FROM blog.rentals_u ORDER BY id;
SELECT count(*) FROM flake_migrate('blog.rentals_u', generator => 'ulidflake_next', rekey_from => 'at');
SELECT count(*) FROM flake_migrate('blog.payments_u', generator => 'ulidflake_next', rekey_from => 'at');
SELECT count(*) AS ids_in_common FROM blog.rentals_u r JOIN blog.payments_u p ON p.id = r.id;
SELECT count(*) AS same_times FROM blog.rentals_u r JOIN blog.payments_u p
	ON flake_timestamp(p.id) = flake_timestamp(r.id) AND ulidflake_entropy(p.id) >> 5 = ulidflake_entropy(r.id) >> 5;
SELECT bool_and(flake_timestamp(id) = at) AS ids_of_their_time FROM blog.payments_u;

\set VERBOSITY sqlstate
CREATE TABLE blog.cats (id serial PRIMARY KEY);
CREATE TABLE blog.cat_refs (cat_id integer, name text);
SELECT * FROM flake_migrate('blog.cats');
SELECT * FROM flake_migrate('blog.cats', also => '{cat_refs.name}');
SELECT * FROM flake_migrate('blog.cats', also => '{cat_refs.nope}');
SELECT * FROM flake_migrate('blog.cats', also => '{nope.cat_id}');
SELECT * FROM flake_migrate('blog.cats', also => '{cat_id}');
SELECT * FROM flake_migrate('blog.cats', rekey_from => 'id', undatable => 'maybe');
\set VERBOSITY default
ALTER TABLE blog.old_visits ALTER COLUMN day DROP NOT NULL;
INSERT INTO blog.old_visits (day) VALUES (NULL);
SELECT * FROM flake_migrate('blog.old_visits', rekey_from => 'day');
\set VERBOSITY default

DROP TABLE before;
SET client_min_messages = warning;
DROP SCHEMA blog CASCADE;
RESET client_min_messages;

------------------------------------------------------------------------
-- a set of tables in one call: referenced tables first, each reference
-- handled once by the migration of the key it references
------------------------------------------------------------------------
CREATE SCHEMA shop2;
CREATE TABLE shop2.orders (id serial PRIMARY KEY, customer_id integer, at timestamptz NOT NULL);
CREATE TABLE shop2.customers (id serial PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE shop2.lines (id serial PRIMARY KEY, order_id integer REFERENCES shop2.orders, at timestamptz NOT NULL);
CREATE TABLE shop2.notes (id serial PRIMARY KEY, about integer, at timestamptz NOT NULL);
INSERT INTO shop2.customers (at) VALUES ('2020-01-01'), ('2020-02-01');
INSERT INTO shop2.orders (customer_id, at) VALUES (1, '2021-01-01'), (2, '2021-01-02'), (2, '2021-01-03');
INSERT INTO shop2.lines (order_id, at) SELECT id, at FROM shop2.orders;
INSERT INTO shop2.notes (about, at) VALUES (1, '2021-05-05');
CREATE TABLE before2 AS
SELECT c.id AS c, o.id AS o, l.id AS l, n.id AS n, c.at AS cat, o.at AS oat, l.at AS lat
FROM shop2.customers c JOIN shop2.orders o ON o.customer_id = c.id
JOIN shop2.lines l ON l.order_id = o.id LEFT JOIN shop2.notes n ON n.about = o.id;
-- orders.customer_id is found as a candidate of customers; notes.about
-- needs its key named
SELECT * FROM flake_migrate_tables('{shop2.lines, shop2.orders, shop2.customers, shop2.notes}',
								   rekey_from => 'at', also => '{orders.customer_id, notes.about}', dry_run => true);
SELECT tbl, step, action, CASE WHEN action = 'fill map' THEN left(detail, 40) || ' ...' ELSE detail END AS detail
FROM flake_migrate_tables('{shop2.lines, shop2.orders, shop2.customers, shop2.notes}',
						  rekey_from => 'at', also => '{orders.customer_id, notes.about:shop2.orders}')
WHERE action NOT IN ('comment', 'create map');
SELECT count(*) AS rows_as_before FROM (
	SELECT mc.old_id AS c, mo.old_id AS o, ml.old_id AS l, mn.old_id AS n, c.at AS cat, o.at AS oat, l.at AS lat
	FROM shop2.customers c JOIN shop2.orders o ON o.customer_id = c.id
	JOIN shop2.lines l ON l.order_id = o.id LEFT JOIN shop2.notes n ON n.about = o.id
	JOIN shop2.customers_flake_map mc ON mc.new_id = c.id JOIN shop2.orders_flake_map mo ON mo.new_id = o.id
	JOIN shop2.lines_flake_map ml ON ml.new_id = l.id LEFT JOIN shop2.notes_flake_map mn ON mn.new_id = n.id
	INTERSECT SELECT * FROM before2) s;
-- ids in common between the tables' rekeys: none
SELECT count(*) FROM (SELECT id FROM shop2.customers UNION ALL SELECT id FROM shop2.orders
					  UNION ALL SELECT id FROM shop2.lines UNION ALL SELECT id FROM shop2.notes) s
GROUP BY id HAVING count(*) > 1;
SELECT * FROM flake_migrate_tables('{}');
SELECT * FROM flake_migrate_tables('{shop2.lines}', also => '{nothing.here}');
DROP TABLE before2;
SET client_min_messages = warning;
DROP SCHEMA shop2 CASCADE;
RESET client_min_messages;
