--
-- flake_migrate(): serial, bigserial and identity keys to generator ids
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- Everything about the tables of a schema that a migration may change:
-- columns, defaults, constraints, indexes, relations, comments and data.
CREATE FUNCTION schema_state(nsp regnamespace) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT format('column %s.%I %s default %s identity %s', c.oid::regclass, a.attname,
				  format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid), a.attidentity)
	FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
	LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'v') AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT format('constraint %s %I %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid),
				  obj_description(oid, 'pg_constraint'))
	FROM pg_constraint WHERE connamespace = nsp
	  -- NOT NULL constraints are catalogued only from PostgreSQL 18 on; that
	  -- migrations keep their names is checked by test/t/020_migrate.pl
	  AND contype <> 'n'
	UNION ALL
	SELECT format('relation %s %s', c.oid::regclass, c.relkind)
	FROM pg_class c WHERE c.relnamespace = nsp
	UNION ALL
	SELECT format('index %s', pg_get_indexdef(x.indexrelid))
	FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid WHERE c.relnamespace = nsp
	UNION ALL
	SELECT format('view %s %s', c.oid::regclass, pg_get_viewdef(c.oid))
	FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind = 'v'
	UNION ALL
	SELECT format('data %s %s', c.oid::regclass,
				  (xpath('/row/md5/text()',
						 query_to_xml(format('SELECT md5(string_agg(t::text, %L ORDER BY t::text)) FROM %s t', ',', c.oid::regclass),
									  false, false, '')))[1])
	FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind = 'r'
$$;

------------------------------------------------------------------------
-- An integer serial key referenced from two tables: one in another schema
-- (mixed-case names), one with a composite key that a third table
-- references; and a view on the key.
------------------------------------------------------------------------
CREATE SCHEMA shop;
CREATE SCHEMA "Billing";
CREATE TABLE shop.orders (
	id serial PRIMARY KEY,
	created_at timestamptz NOT NULL,
	customer text
);
CREATE TABLE "Billing"."Invoices" (
	"Id" serial PRIMARY KEY,
	"Order" integer NOT NULL CONSTRAINT "Invoice order" REFERENCES shop.orders ON DELETE CASCADE,
	amount numeric
);
CREATE INDEX "Invoices by order" ON "Billing"."Invoices" ("Order");
COMMENT ON CONSTRAINT "Invoice order" ON "Billing"."Invoices" IS 'every invoice bills one order';
CREATE TABLE shop.order_lines (
	order_id integer REFERENCES shop.orders,
	line_no integer,
	item text,
	PRIMARY KEY (order_id, line_no)
);
CREATE TABLE shop.line_notes (
	order_id integer,
	line_no integer,
	note text,
	FOREIGN KEY (order_id, line_no) REFERENCES shop.order_lines
);

INSERT INTO shop.orders (created_at, customer)
SELECT '2023-05-01 12:00:00+00'::timestamptz + n * interval '1 hour', 'customer ' || n
FROM generate_series(1, 5) n;
INSERT INTO "Billing"."Invoices" ("Order", amount) SELECT id, id * 10 FROM shop.orders;
INSERT INTO shop.order_lines SELECT id, l, 'item ' || l FROM shop.orders, generate_series(1, 2) l;
INSERT INTO shop.line_notes SELECT order_id, line_no, 'note' FROM shop.order_lines WHERE line_no = 2;

CREATE TEMP TABLE before AS
SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"');

-- a dry run shows the plan and changes nothing
SELECT * FROM flake_migrate('shop.orders', dry_run => true);
SELECT count(*) AS changed FROM (
	(SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"') EXCEPT SELECT * FROM before)
	UNION ALL
	(SELECT * FROM before EXCEPT (SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"')))) d;

-- the key changes type, and a view depends on it: refused, naming the view
CREATE VIEW shop.order_ids AS SELECT id, customer FROM shop.orders;
TRUNCATE before;
INSERT INTO before SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"');
SELECT * FROM flake_migrate('shop.orders');
SELECT count(*) AS changed FROM (
	(SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"') EXCEPT SELECT * FROM before)
	UNION ALL
	(SELECT * FROM before EXCEPT (SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"')))) d;

-- as for ALTER COLUMN TYPE, the view is dropped and created again around it
BEGIN;
DROP VIEW shop.order_ids;
SELECT * FROM flake_migrate('shop.orders');
CREATE VIEW shop.order_ids AS SELECT id, customer FROM shop.orders;
COMMIT;

-- what changed: the key and the columns referencing it are bigint, the
-- sequence is gone, constraint and index names and comments are kept
SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"')
EXCEPT SELECT * FROM before ORDER BY 1;
SELECT * FROM before
EXCEPT (SELECT * FROM schema_state('shop') UNION ALL SELECT * FROM schema_state('"Billing"')) ORDER BY 1;

-- old rows keep their ids and their children; new rows get flake ids
INSERT INTO shop.orders (created_at, customer) VALUES (now(), 'new customer') RETURNING id > 1 << 40 AS flake_id;
INSERT INTO "Billing"."Invoices" ("Order", amount)
SELECT id, 99 FROM shop.orders WHERE customer = 'new customer';
SELECT o.id < 100 AS old_id, o.customer, i.amount, count(l.*) AS lines
FROM shop.orders o JOIN "Billing"."Invoices" i ON i."Order" = o.id
LEFT JOIN shop.order_lines l ON l.order_id = o.id
GROUP BY o.id, o.customer, i.amount ORDER BY o.id;
SELECT flake_node(id) = flake_node() AS this_backends_node,
       abs(extract(epoch FROM flake_timestamp(id) - now())) < 60 AS recent
FROM shop.orders WHERE customer = 'new customer';
SELECT * FROM shop.order_ids WHERE id = 3;
SELECT count(*) FROM shop.line_notes JOIN shop.order_lines USING (order_id, line_no)
JOIN shop.orders o ON o.id = order_id;

-- a second run finds the key already migrated
SELECT * FROM flake_migrate('shop.orders');

------------------------------------------------------------------------
-- bigserial: no type change, so a view on the key is no obstacle
------------------------------------------------------------------------
CREATE TABLE shop.events (id bigserial PRIMARY KEY, what text);
CREATE VIEW shop.event_ids AS SELECT id FROM shop.events;
INSERT INTO shop.events (what) VALUES ('a'), ('b');
SELECT * FROM flake_migrate('shop.events');
INSERT INTO shop.events (what) VALUES ('c');
SELECT id < 100 AS old_id, what FROM shop.events ORDER BY id;
SELECT pg_get_serial_sequence('shop.events', 'id') IS NULL AS sequence_gone,
       to_regclass('shop.events_id_seq') IS NULL AS sequence_dropped;

-- a sequence the column does not own is detached and kept
CREATE SEQUENCE shop.shared_seq;
CREATE TABLE shop.a (id bigint PRIMARY KEY DEFAULT nextval('shop.shared_seq'));
CREATE TABLE shop.b (id bigint PRIMARY KEY DEFAULT nextval('shop.shared_seq'));
SELECT * FROM flake_migrate('shop.a');
-- an owned sequence that another column also draws from is kept too
ALTER SEQUENCE shop.shared_seq OWNED BY shop.b.id;
CREATE TABLE shop.c (id bigint PRIMARY KEY DEFAULT nextval('shop.shared_seq'));
SELECT * FROM flake_migrate('shop.b');
SELECT nextval('shop.shared_seq') > 0 AS sequence_kept;

------------------------------------------------------------------------
-- identity ALWAYS, integer, rekeyed from a timestamp column: existing rows
-- get ids of their own time, ties in id order, and a mapping table
------------------------------------------------------------------------
CREATE TABLE shop.tickets (
	id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	opened timestamp NOT NULL,
	title text
);
CREATE TABLE shop.replies (
	id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	ticket integer REFERENCES shop.tickets,
	body text
);
INSERT INTO shop.tickets (opened, title) VALUES
	('2022-03-04 05:06:07.008', 'third'),
	('2021-01-01 00:00:00', 'first'),
	('2022-03-04 05:06:07.008', 'fourth'),
	('2021-06-01 00:00:00.5', 'second');
INSERT INTO shop.replies (ticket, body) SELECT id, 'reply to ' || title FROM shop.tickets;
SELECT step, action, CASE WHEN action = 'fill map' THEN left(detail, 55) || ' ...' ELSE detail END AS detail
FROM flake_migrate('shop.tickets', rekey_from => 'opened', dry_run => true);
SELECT to_regclass('shop.tickets_flake_map') IS NULL AS no_map_yet;
SELECT step, action FROM flake_migrate('shop.tickets', rekey_from => 'opened');
SELECT title, t.opened, flake_timestamp(t.id) AT TIME ZONE 'UTC' AS id_time, flake_sequence(t.id),
       flake_node(t.id) BETWEEN 1016 AND 1023 AS rekey_node, m.old_id, r.body
FROM shop.tickets t JOIN shop.tickets_flake_map m ON m.new_id = t.id
JOIN shop.replies r ON r.ticket = t.id ORDER BY t.id;
SELECT obj_description('shop.tickets_flake_map'::regclass);
-- explicit ids are allowed now that the identity is gone; defaults are flake ids
INSERT INTO shop.tickets (opened, title) VALUES (now(), 'new') RETURNING id > (SELECT max(new_id) FROM shop.tickets_flake_map) AS above_old;
SELECT attidentity = '' AS no_identity, format_type(atttypid, NULL), pg_get_expr(adbin, adrelid)
FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
WHERE attrelid = 'shop.tickets'::regclass AND attname = 'id';
-- old ids from outside reach the rows through the mapping table
SELECT t.title FROM shop.tickets t JOIN shop.tickets_flake_map m ON m.new_id = t.id WHERE m.old_id = 2;

------------------------------------------------------------------------
-- identity BY DEFAULT, bigint, to ulidflake, rekeyed from a date column
------------------------------------------------------------------------
CREATE TABLE shop.visits (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, day date NOT NULL);
CREATE TABLE shop.visit_pages (visit bigint REFERENCES shop.visits, page text);
INSERT INTO shop.visits (day) VALUES ('2024-02-03'), ('2024-02-01'), ('2024-02-03');
INSERT INTO shop.visit_pages SELECT id, 'page ' || id FROM shop.visits;
SELECT step, action FROM flake_migrate('shop.visits', generator => 'ulidflake_next', rekey_from => 'day');
SELECT v.id, flake_timestamp(v.id), v.day, ulidflake_entropy(v.id), m.old_id, p.page
FROM shop.visits v JOIN shop.visits_flake_map m ON m.new_id = v.id
JOIN shop.visit_pages p ON p.visit = v.id ORDER BY v.id;
SELECT attrelid::regclass, attname, format_type(atttypid, NULL) FROM pg_attribute
WHERE (attrelid, attname) IN (('shop.visits'::regclass, 'id'), ('shop.visit_pages'::regclass, 'visit'),
							  ('shop.visits_flake_map'::regclass, 'new_id'))
ORDER BY 1;
INSERT INTO shop.visits (day) VALUES (current_date) RETURNING id > '0000000000000'::ulidflake AS ulid_id;

-- a serial key to ulidflake without rekeying: existing values are cast
CREATE TABLE shop.tags (id serial PRIMARY KEY, name text);
INSERT INTO shop.tags (name) VALUES ('x'), ('y');
SELECT step, action, detail FROM flake_migrate('shop.tags', generator => 'ulidflake_next');
INSERT INTO shop.tags (name) VALUES ('z');
SELECT id::bigint < 100 AS old_id, name FROM shop.tags ORDER BY id;

------------------------------------------------------------------------
-- foreign key options, names, comments, CLUSTER and REPLICA IDENTITY
-- survive a rekey: a self-reference, a NOT VALID key with a row it does
-- not hold for, MATCH FULL through a composite key, actions and
-- DEFERRABLE, all under quoted names
------------------------------------------------------------------------
CREATE SCHEMA "Org ""x""";
CREATE TABLE "Org ""x"""."Staff" (
	"Staff Id" serial PRIMARY KEY,
	boss integer CONSTRAINT "Boss" REFERENCES "Org ""x"""."Staff" ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
	hired date NOT NULL
);
CREATE TABLE "Org ""x""".desks (staff integer, floor integer, UNIQUE (staff, floor),
	FOREIGN KEY (staff) REFERENCES "Org ""x"""."Staff" ON UPDATE CASCADE);
CREATE TABLE "Org ""x""".lamps (staff integer, floor integer,
	CONSTRAINT "lamp's desk" FOREIGN KEY (staff, floor) REFERENCES "Org ""x""".desks (staff, floor) MATCH FULL);
CREATE TABLE "Org ""x""".badges (staff integer);
INSERT INTO "Org ""x"""."Staff" (boss, hired) VALUES (NULL, '2019-01-01'), (1, '2019-02-01'), (1, '2018-03-01');
INSERT INTO "Org ""x""".desks VALUES (1, 1), (2, 1), (3, 2);
INSERT INTO "Org ""x""".lamps VALUES (2, 1), (NULL, NULL);
INSERT INTO "Org ""x""".badges VALUES (3), (99);
ALTER TABLE "Org ""x""".badges ADD CONSTRAINT badge_staff FOREIGN KEY (staff) REFERENCES "Org ""x"""."Staff" NOT VALID;
COMMENT ON CONSTRAINT "Boss" ON "Org ""x"""."Staff" IS 'who they report to';
ALTER TABLE "Org ""x"""."Staff" CLUSTER ON "Staff_pkey", REPLICA IDENTITY USING INDEX "Staff_pkey";
TRUNCATE before;
INSERT INTO before SELECT * FROM schema_state('"Org ""x"""') s WHERE s NOT LIKE 'data %';
SELECT step, action, detail FROM flake_migrate('"Org ""x"""."Staff"', 'Staff Id', rekey_from => 'hired')
WHERE action IN ('drop constraint', 'add constraint', 'comment');
-- only the types changed, and the mapping table is new
SELECT * FROM schema_state('"Org ""x"""') s WHERE s NOT LIKE 'data %'
EXCEPT SELECT * FROM before ORDER BY 1;
SELECT * FROM before EXCEPT SELECT * FROM schema_state('"Org ""x"""') ORDER BY 1;
SELECT indexrelid::regclass, indisclustered, indisreplident
FROM pg_index WHERE indrelid = '"Org ""x"""."Staff"'::regclass;
-- the rows follow their new ids; the row the NOT VALID key does not hold
-- for is left alone
SELECT m.old_id, s.boss = b."Staff Id" AS boss_followed, d.floor, l.floor AS lamp_floor
FROM "Org ""x"""."Staff" s JOIN "Org ""x"""."Staff_flake_map" m ON m.new_id = s."Staff Id"
LEFT JOIN "Org ""x"""."Staff" b ON b."Staff Id" = s.boss
LEFT JOIN "Org ""x""".desks d ON d.staff = s."Staff Id"
LEFT JOIN "Org ""x""".lamps l ON l.staff = s."Staff Id" ORDER BY s."Staff Id";
SELECT staff = 99 AS orphan_kept, staff IN (SELECT new_id FROM "Org ""x"""."Staff_flake_map") AS rekeyed
FROM "Org ""x""".badges ORDER BY 1;
DROP SCHEMA "Org ""x""" CASCADE;

------------------------------------------------------------------------
-- CHECK constraints and index expressions on the columns that change
-- are parsed again for the new type, with the ulidflake operators; and a
-- sequence the key owns but does not draw from is no obstacle
------------------------------------------------------------------------
CREATE TABLE shop.nodes (id serial PRIMARY KEY CHECK (id IS NOT NULL), name text NOT NULL);
CREATE TABLE shop.edges (src integer REFERENCES shop.nodes, dst integer REFERENCES shop.nodes,
						 CHECK (src <> dst));
CREATE INDEX edges_loops ON shop.edges (src) WHERE src <> dst;
CREATE SEQUENCE shop.nodes_spare OWNED BY shop.nodes.id;
INSERT INTO shop.nodes (name) VALUES ('a'), ('b');
INSERT INTO shop.edges VALUES (1, 2), (2, 1);
SELECT step, action FROM flake_migrate('shop.nodes', generator => 'ulidflake_next');
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'shop.edges'::regclass AND contype = 'c';
SELECT pg_get_indexdef('shop.edges_loops'::regclass);
INSERT INTO shop.edges SELECT min(id), min(id) FROM shop.nodes;
SELECT to_regclass('shop.nodes_spare') IS NOT NULL AS spare_kept;
DROP TABLE shop.edges, shop.nodes;

------------------------------------------------------------------------
-- refusals: each before anything changes
------------------------------------------------------------------------
CREATE TABLE shop.r (id serial PRIMARY KEY, at timestamptz, n numeric, g int GENERATED ALWAYS AS (id * 2) STORED);
INSERT INTO shop.r (at) VALUES (NULL), ('2014-12-31 23:59:59+00'), ('2014-06-01'), (now() + interval '1 day'), ('2020-01-01');

SELECT * FROM flake_migrate('shop.r', generator => 'uuid');
SELECT * FROM flake_migrate('shop.r', col => 'nope');
SELECT * FROM flake_migrate('shop.r', col => 'n');
SELECT * FROM flake_migrate('shop.r', col => 'g');
ALTER TABLE shop.r DROP COLUMN g;
SELECT * FROM flake_migrate('shop.order_ids');
SELECT * FROM flake_migrate('shop.r', rekey_from => 'nope');
SELECT * FROM flake_migrate('shop.r', rekey_from => 'n');
-- rows without a time the ids can carry are counted
SELECT * FROM flake_migrate('shop.r', rekey_from => 'at');
SELECT * FROM flake_migrate('shop.r', generator => 'ulidflake_next', rekey_from => 'at', dry_run => true);
-- randflake ids are not time-ordered: no rekeying with them
SELECT * FROM flake_migrate('shop.r', generator => 'randflake_next', rekey_from => 'at');
-- a leftover mapping table is not overwritten
DELETE FROM shop.r WHERE at IS NULL OR at < '2015-01-01' OR at > now();
CREATE TABLE shop.r_flake_map (old_id bigint);
SELECT * FROM flake_migrate('shop.r', rekey_from => 'at');
DROP TABLE shop.r_flake_map;
-- triggers and rules on updates are no obstacle: a rekey rewrites the
-- tables with ALTER TABLE, it updates no row
CREATE FUNCTION shop.touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE 'fired'; END $$;
CREATE TRIGGER r_touch BEFORE UPDATE ON shop.r FOR EACH ROW EXECUTE FUNCTION shop.touch();
CREATE RULE r_log AS ON UPDATE TO shop.r DO INSTEAD NOTHING;
BEGIN;
SELECT action FROM flake_migrate('shop.r', rekey_from => 'at') WHERE action = 'rekey';
SELECT count(*) FROM shop.r JOIN shop.r_flake_map ON new_id = id;
ROLLBACK;
-- ... and a trigger on the key column stops its type change
DROP TRIGGER r_touch ON shop.r;
DROP RULE r_log ON shop.r;
CREATE TRIGGER r_key BEFORE UPDATE OF id ON shop.r FOR EACH ROW EXECUTE FUNCTION shop.touch();
SELECT * FROM flake_migrate('shop.r');
DROP TRIGGER r_key ON shop.r;
-- keys already above the generator's ids
CREATE TABLE shop.high (id bigserial PRIMARY KEY);
INSERT INTO shop.high VALUES (DEFAULT), (8000000000000000000);
\set VERBOSITY terse
SELECT * FROM flake_migrate('shop.high');
\set VERBOSITY default
-- negative keys do not fit a ulidflake
INSERT INTO shop.r (id, at) VALUES (-5, now());
SELECT * FROM flake_migrate('shop.r', generator => 'ulidflake_next');
DELETE FROM shop.r WHERE id = -5;
-- rows at the very start of the epoch would get ids equal to old keys
CREATE TABLE shop.early (id serial PRIMARY KEY, day date NOT NULL);
INSERT INTO shop.early (day) SELECT '2024-01-01' FROM generate_series(1, 3);
SELECT * FROM flake_migrate('shop.early', generator => 'ulidflake_next', rekey_from => 'day');
-- a default that is not a sequence
CREATE TABLE shop.d (id integer PRIMARY KEY DEFAULT 7);
SELECT * FROM flake_migrate('shop.d');
-- no default at all: a plain column, not a key
CREATE TABLE shop.film (id serial PRIMARY KEY, length smallint);
SELECT * FROM flake_migrate('shop.film', 'length');
DROP TABLE shop.film;
-- rekeying needs a unique key
CREATE TABLE shop.nk (id serial, at timestamptz);
SELECT * FROM flake_migrate('shop.nk', rekey_from => 'at');
-- constraints and indexes that would refuse the new ids: a range that
-- only small ids pass, operators an integer has and a ulidflake has not,
-- and a function of integer
CREATE FUNCTION shop.bucket(integer) RETURNS integer IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 16';
CREATE TABLE shop.small (id serial PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647), n integer CHECK (n > 0));
CREATE TABLE shop.small_ref (small_id integer REFERENCES shop.small CHECK (small_id > 0));
CREATE INDEX small_bucket ON shop.small_ref (shop.bucket(small_id));
INSERT INTO shop.small (n) VALUES (1);
SELECT * FROM flake_migrate('shop.small');
SELECT * FROM flake_migrate('shop.small', generator => 'ulidflake_next');
DROP INDEX shop.small_bucket;
-- ... but not a constraint that does not hold for the row as it is
ALTER TABLE shop.small DROP CONSTRAINT small_id_check,
	ADD CONSTRAINT small_id_check CHECK (id < 0) NOT VALID;
SELECT count(*) FROM flake_migrate('shop.small', dry_run => true);
DROP TABLE shop.small_ref, shop.small;
DROP FUNCTION shop.bucket(integer);
-- a column that would get the new ids but also references another key
CREATE TABLE shop.people (id integer PRIMARY KEY);
CREATE TABLE shop.employees (id serial PRIMARY KEY REFERENCES shop.people, hired date);
SELECT * FROM flake_migrate('shop.employees');
DROP TABLE shop.employees;
CREATE TABLE shop.teams (id serial PRIMARY KEY);
CREATE TABLE shop.members (team integer REFERENCES shop.teams REFERENCES shop.people);
SELECT * FROM flake_migrate('shop.teams', dry_run => true);
DROP TABLE shop.members, shop.teams, shop.people;
-- an identity sequence that another default draws from
CREATE TABLE shop.idt (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
CREATE TABLE shop.idt_too (id integer DEFAULT nextval('shop.idt_id_seq'));
SELECT * FROM flake_migrate('shop.idt');
DROP TABLE shop.idt_too, shop.idt;
-- foreign keys whose triggers are disabled would come back enabled
CREATE TABLE shop.quiet (id serial PRIMARY KEY);
CREATE TABLE shop.quiet_ref (quiet_id integer REFERENCES shop.quiet);
ALTER TABLE shop.quiet_ref DISABLE TRIGGER ALL;
SELECT * FROM flake_migrate('shop.quiet');
DROP TABLE shop.quiet_ref, shop.quiet;
-- a unique index that is not valid does not make a key
CREATE TABLE shop.dup (id serial NOT NULL, at timestamptz NOT NULL DEFAULT '2020-01-01');
INSERT INTO shop.dup (id) VALUES (1), (1);
CREATE UNIQUE INDEX CONCURRENTLY dup_id ON shop.dup (id);
SELECT * FROM flake_migrate('shop.dup', rekey_from => 'at');
DROP TABLE shop.dup;
-- partitions
CREATE TABLE shop.part (id serial, k int) PARTITION BY RANGE (k);
CREATE TABLE shop.part_1 PARTITION OF shop.part FOR VALUES FROM (0) TO (10);
SELECT * FROM flake_migrate('shop.part');
SELECT * FROM flake_migrate('shop.part_1');
DROP TABLE shop.nk, shop.part, shop.d, shop.high, shop.early;

-- the caller must own the table and every table it alters
CREATE ROLE regress_flake_owner;
CREATE ROLE regress_flake_other;
GRANT USAGE, CREATE ON SCHEMA shop TO regress_flake_owner, regress_flake_other;
CREATE TABLE shop.parent (id serial PRIMARY KEY);
CREATE TABLE shop.child (parent_id integer REFERENCES shop.parent);
ALTER TABLE shop.parent OWNER TO regress_flake_owner;
ALTER TABLE shop.child OWNER TO regress_flake_other;
GRANT ALL ON shop.parent, shop.child TO regress_flake_other;
SET ROLE regress_flake_other;
SELECT * FROM flake_migrate('shop.parent');
SET ROLE regress_flake_owner;
SELECT * FROM flake_migrate('shop.parent');
RESET ROLE;

-- error codes
\set VERBOSITY sqlstate
SELECT * FROM flake_migrate('shop.r', generator => 'uuid');
SELECT * FROM flake_migrate('shop.r', col => 'n');
SELECT * FROM flake_migrate('shop.r', generator => 'randflake_next', rekey_from => 'at');
CREATE TABLE shop.film (length smallint);
SELECT * FROM flake_migrate('shop.film', 'length');
DROP TABLE shop.film;
CREATE TABLE shop.small (id serial PRIMARY KEY CHECK (id < 100000));
SELECT * FROM flake_migrate('shop.small');
SELECT * FROM flake_migrate('shop.small', generator => 'ulidflake_next');
CREATE TABLE shop.employees (id serial PRIMARY KEY REFERENCES shop.parent);
SELECT * FROM flake_migrate('shop.employees');
DROP TABLE shop.small, shop.employees;
SET ROLE regress_flake_other;
SELECT * FROM flake_migrate('shop.parent');
RESET ROLE;
\set VERBOSITY default

DROP TABLE shop.parent, shop.child;
REVOKE ALL ON SCHEMA shop FROM regress_flake_owner, regress_flake_other;
DROP ROLE regress_flake_owner, regress_flake_other;
DROP SCHEMA shop, "Billing" CASCADE;
