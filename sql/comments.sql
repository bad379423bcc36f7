--
-- Every object of the extension says what it is, for psql's \df+, \dv+,
-- \dT+, \do+ and \dC+: a member (pg_depend deptype 'e') without a comment
-- is listed here.  test/t/030_upgrade.pl checks that an install updated from
-- 1.0 has the same comments.
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
ORDER BY 1;

-- and the query above sees the members
SELECT count(*) > 0 AS has_members
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'flake');
