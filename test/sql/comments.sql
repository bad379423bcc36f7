--
-- Every object of the extension says what it is, for psql's \df+, \dv+,
-- \dT+, \do+ and \dC+: a member (pg_depend deptype 'e') without a comment
-- is listed here, and so is every column of its views, tables and
-- composite types without one (\d+).  test/t/030_upgrade.pl checks that
-- an install updated from 1.0 has the same comments.  Array types and the
-- row types of the view and the table, which PostgreSQL 17 and later
-- record as members too, are made by PostgreSQL along with their object
-- and are described by it.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;

SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS without_comment
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake')
  AND NOT EXISTS (SELECT FROM pg_description c
				  WHERE c.classoid = d.classid AND c.objoid = d.objid AND c.objsubid = 0)
  AND NOT EXISTS (SELECT FROM pg_type t
				  WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
					AND (EXISTS (SELECT FROM pg_type e WHERE e.typarray = t.oid)
						 OR EXISTS (SELECT FROM pg_class r
									WHERE r.oid = t.typrelid AND r.relkind IN ('v', 'r'))))
ORDER BY 1;

SELECT format('column %s.%I', c.oid::regclass, a.attname) AS column_without_comment
FROM pg_depend d
JOIN pg_class c ON c.oid = COALESCE((SELECT t.typrelid FROM pg_type t
									 WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid),
									CASE WHEN d.classid = 'pg_class'::regclass THEN d.objid END)
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake')
  AND c.relkind IN ('r', 'v', 'm', 'c')
  AND col_description(c.oid, a.attnum) IS NULL
ORDER BY 1;

-- and the queries above see the members and their columns
SELECT count(*) > 0 AS has_members
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake');
SELECT count(DISTINCT c.oid) AS relations_with_columns
FROM pg_depend d
JOIN pg_class c ON c.oid = COALESCE((SELECT t.typrelid FROM pg_type t
									 WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid),
									CASE WHEN d.classid = 'pg_class'::regclass THEN d.objid END)
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake')
  AND c.relkind IN ('r', 'v', 'm', 'c');
