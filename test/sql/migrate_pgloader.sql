--
-- The README's worked example: a MySQL blog loaded by pgloader with its
-- defaults, migrated to flake ids end to end.  The schema is what pgloader
-- leaves: bigint keys on sequences, referencing columns of bigint unsigned
-- as numeric and no foreign keys, lower-cased column names, an ON UPDATE
-- CURRENT_TIMESTAMP trigger, and a zero date turned NULL.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE SCHEMA blog;
CREATE TABLE blog.users (id bigserial PRIMARY KEY, login text NOT NULL, created_at timestamptz);
CREATE TABLE blog.posts (id bigserial PRIMARY KEY, userid numeric NOT NULL, title text NOT NULL,
						 created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
CREATE TABLE blog.comments (id bigserial PRIMARY KEY, postid numeric NOT NULL, user_id numeric,
							body text NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX idx_16390_postid ON blog.comments (postid);
CREATE FUNCTION blog.on_update_current_timestamp_posts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.updated_at = now();
	RETURN NEW;
END;
$$;
CREATE TRIGGER on_update_current_timestamp BEFORE UPDATE ON blog.posts
	FOR EACH ROW EXECUTE PROCEDURE blog.on_update_current_timestamp_posts();

INSERT INTO blog.users (login, created_at) VALUES
	('admin', NULL),				-- 0000-00-00 00:00:00 in MySQL
	('ada', '2016-03-01 09:00:00+00'), ('grace', '2018-07-15 14:30:00+00');
INSERT INTO blog.posts (userid, title, created_at, updated_at) VALUES
	(2, 'Hello', '2016-03-02 10:00:00+00', '2016-03-02 10:00:00+00'),
	(3, 'Again', '2018-08-01 08:00:00+00', '2019-01-01 00:00:00+00'),
	(1, 'About', '2015-06-01 00:00:00+00', '2015-06-01 00:00:00+00');
INSERT INTO blog.comments (postid, user_id, body, created_at) VALUES
	(1, 3, 'Welcome', '2016-03-02 11:00:00+00'), (1, NULL, 'Anonymous', '2016-03-03 12:00:00+00'),
	(2, 2, 'Nice', '2018-08-01 09:00:00+00');

CREATE TABLE before AS
SELECT u.login, p.title, p.updated_at, c.body, cu.login AS commenter
FROM blog.posts p JOIN blog.users u ON u.id = p.userid
LEFT JOIN blog.comments c ON c.postid = p.id LEFT JOIN blog.users cu ON cu.id = c.user_id;

-- 1. the dry run lists what stands in the way: the conventional
-- references, and the user without a time
SELECT tbl, action, detail FROM flake_migrate_tables('{blog.users, blog.posts, blog.comments}',
													 rekey_from => 'created_at', dry_run => true)
WHERE action IN ('blocked', 'note');

-- 2. the migration, in one transaction
BEGIN;
SELECT tbl, step, action FROM flake_migrate_tables('{blog.users, blog.posts, blog.comments}',
												   rekey_from => 'created_at', undatable => 'keep',
												   also => '{posts.userid, comments.user_id, comments.postid}');
-- the foreign keys pgloader could not create
ALTER TABLE blog.posts ADD FOREIGN KEY (userid) REFERENCES blog.users;
ALTER TABLE blog.comments ADD FOREIGN KEY (postid) REFERENCES blog.posts,
	ADD FOREIGN KEY (user_id) REFERENCES blog.users;
COMMIT;
ANALYZE blog.users, blog.posts, blog.comments;

-- every row joins as before, updated_at untouched by the trigger
SELECT count(*) AS rows_as_before FROM (
	SELECT u.login, p.title, p.updated_at, c.body, cu.login AS commenter
	FROM blog.posts p JOIN blog.users u ON u.id = p.userid
	LEFT JOIN blog.comments c ON c.postid = p.id LEFT JOIN blog.users cu ON cu.id = c.user_id
	INTERSECT SELECT * FROM before) s;
SELECT count(*) FROM before;
SELECT attrelid::regclass, attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid IN ('blog.posts'::regclass, 'blog.comments'::regclass) AND attname IN ('id', 'userid', 'postid', 'user_id')
ORDER BY 1, 2;
-- ids carry the rows' times; the undated admin keeps id 1
SELECT u.login, u.id = 1 AS old_id, flake_timestamp(u.id) = u.created_at AS id_of_its_time
FROM blog.users u WHERE u.id = 1 OR u.id > 1000 ORDER BY u.id;
SELECT bool_and(flake_timestamp(id) = created_at) AS ids_of_their_time FROM blog.posts;
-- new rows get flake ids; the trigger works as before
INSERT INTO blog.posts (userid, title, created_at, updated_at)
SELECT id, 'New', now(), now() FROM blog.users WHERE login = 'ada' RETURNING id > 1 << 60 AS flake_id;
UPDATE blog.posts SET title = 'Hello!' WHERE title = 'Hello' RETURNING updated_at > '2020-01-01' AS trigger_fired;
-- old ids from links and other systems go through the mapping tables
SELECT p.title FROM blog.posts p JOIN blog.posts_flake_map m ON m.new_id = p.id WHERE m.old_id = 2;

DROP TABLE before;
SET client_min_messages = warning;
DROP SCHEMA blog CASCADE;
RESET client_min_messages;
