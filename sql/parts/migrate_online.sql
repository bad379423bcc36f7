------------------------------------------------------------------------
-- The online migration: flake_migrate()'s work while the application
-- keeps writing
--
-- flake_migrate() changes the types of the key and its referencing
-- columns with ALTER TABLE, which rewrites each table under ACCESS
-- EXCLUSIVE.  The online path instead copies each table whose columns
-- change type into a new table of the final shape (the shadow, named
-- TABLE__flake_new), as pg_repack does: the trigger
-- flake_migrate_online_log() logs the key of every row the application
-- writes meanwhile, the rows are copied in batches that commit, the
-- indexes are built on the shadow (which only the migration writes, so
-- plainly, one scan each), the log is applied again and again (the logged
-- keys' rows are deleted from the shadow and copied anew, in one
-- snapshot), and one short transaction applies the rest of the log and
-- puts the shadows in the place of the tables.  The foreign keys come back
-- NOT VALID in that transaction and are validated after it.  Committed
-- batches cannot run in a function, so the functions here plan: the client
-- program flake_migrate_online (client/) runs the steps, with lock_timeout
-- and retries.
--
-- The plan is made again from the catalogs at every run, so a run that
-- stopped anywhere is continued by running the command again: the state is
-- in the catalogs (the shadows, their indexes, the logs, the table
-- TABLE__flake_validate of the foreign keys left to validate after the
-- swap; each found by the oid of its table that its comment records,
-- never by its name) and in the shadows' rows.  Until the swap the
-- tables are not changed (but for the trigger), so undoing is dropping
-- what the migration added.  The checks are flake_migrate()'s own, through
-- its dry run, and those of flake_migrate_online_blockers().
------------------------------------------------------------------------

-- appends the key of each row written to the log; arguments: the log's
-- qualified name, the key column.  This and the next are replaced, not
-- dropped, by an upgrade: the triggers of an unfinished migration use them.
CREATE OR REPLACE FUNCTION flake_internal.flake_migrate_online_log() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_log() IS
	'trigger of an online migration: log the key of every row the application writes while the table is copied';

-- a TRUNCATE would not be logged: refused while the table is copied
CREATE OR REPLACE FUNCTION flake_internal.flake_migrate_online_no_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'cannot truncate % while flake_migrate_online copies it', TG_TABLE_NAME
		USING ERRCODE = 'object_in_use',
			  HINT = 'Let the migration finish, or undo it with flake_migrate_online --undo.';
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_no_truncate() IS
	'trigger of an online migration: refuse TRUNCATE of a table while it is copied';

--
-- A name made of base and suffix that fits in a name (63 bytes).  When it
-- does not fit, base is cut, whole characters at a time, and a hash of the
-- whole base goes between: two bases that begin alike (a table and its
-- primary key's index, TABLE_pkey) still give two names.  The checks
-- refuse a name that another object has, or that two of the names the
-- migration needs share (flake_migrate_online_check_names).
--
CREATE FUNCTION flake_internal.flake_migrate_online_name(base name, suffix text)
	RETURNS name
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CAST(left(base, n) || m.mark || suffix AS name)
	FROM (SELECT CASE WHEN octet_length(base || suffix) <= 63 THEN ''
					  ELSE '_' || lpad(to_hex(hashtextextended(base, 0) & 4294967295), 8, '0') END) m(mark),
		 generate_series(length(base), 0, -1) n
	WHERE octet_length(left(base, n) || m.mark || suffix) <= 63
	ORDER BY n DESC
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_name(name, text) IS
	'online migration helper: base with suffix, cut to fit a name';

--
-- The copy or the log (what) of a table: the table of its owner whose
-- comment, set by the create step, records the table's oid, wherever it
-- is and whatever its name (the table may have been renamed meanwhile).
-- Only the owner of a table (or a superuser) may comment on it, so no
-- other role can make one.  The C trigger flake_migrate_online_log()
-- checks its log the same way.  After the swap, the list of foreign keys
-- to validate is found so too (what: 'foreign keys to validate').
--
CREATE FUNCTION flake_internal.flake_migrate_online_marked(rel oid, what text)
	RETURNS oid
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.oid
	FROM pg_description d
	JOIN pg_class m ON m.oid = d.objoid
	JOIN pg_class c ON c.oid = rel
	WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0
	  AND d.description = format('flake_migrate_online: the %s of %s', what, rel)
	  AND m.relkind = 'r' AND m.relowner = c.relowner
	ORDER BY m.oid
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_marked(oid, text) IS
	'online migration helper: the copy or the log of a table, found by the oid their comment records';

--
-- Take back from a table the migration made (a copy, a log, the list of
-- foreign keys to validate) what ALTER DEFAULT PRIVILEGES gave other roles
-- when it was created, and give its owner every privilege (default
-- privileges may have taken some from it): only the owner may use it.  The
-- swap then grants exactly the table's own privileges.
--
CREATE FUNCTION flake_internal.flake_migrate_online_private(rel regclass)
	RETURNS void
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	owner		regrole := (SELECT c.relowner FROM pg_class c WHERE c.oid = rel);
	grantees	text;
BEGIN
	IF NOT pg_has_role(owner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', rel
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF (SELECT c.relacl FROM pg_class c WHERE c.oid = rel) IS NULL THEN
		RETURN;
	END IF;
	SELECT string_agg(DISTINCT CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END, ', ') INTO grantees
	FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) g
	WHERE c.oid = rel;
	IF grantees IS NOT NULL THEN
		EXECUTE format('REVOKE ALL ON %s FROM %s', rel, grantees);
	END IF;
	EXECUTE format('GRANT ALL ON %s TO %s', rel, owner);
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_private(regclass) IS
	'online migration helper: take back the default privileges of a table the migration made';

--
-- The tables to copy (those with a column that changes type), each with
-- its shadow and log (their names, and their oids once they exist), the
-- column its batches go by (its primary key, or else a unique index on one
-- NOT NULL column), and the pieces of the statements that copy its rows:
-- the columns to insert (not the generated ones) and the values, the
-- changing columns cast to their new type.
--
CREATE FUNCTION flake_internal.flake_migrate_online_tables(cols flake_internal.flake_migrate_column[], target text)
	RETURNS TABLE(relid oid, rel text, shadow_name name, shadow text, shadow_oid oid, log text, log_oid oid,
				  batch_key name, batch_type text, batch_index oid, key_cast text, inserts text, copies text, alters text,
				  apply text[])
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	-- apply: the statements that apply the table's log: the logged keys'
	-- rows are deleted from the shadow and copied anew, then the entries
	-- read are deleted.  In one REPEATABLE READ transaction (or under the
	-- swap's locks) they leave the shadow equal to the table as of its
	-- snapshot, and running them again changes nothing more.
	SELECT t.*, CASE WHEN t.batch_key IS NOT NULL THEN ARRAY[format('DELETE FROM %s s USING %s l WHERE s.%I %s %s', t.shadow, t.log, t.batch_key,
							 CASE WHEN t.key_cast <> '%s' AND target <> 'bigint' THEN 'OPERATOR(@extschema@.=)' ELSE '=' END,
							 format(t.key_cast, 'l.k')),
					  format('INSERT INTO %s (%s) SELECT %s FROM %s WHERE %I IN (SELECT l.k FROM %s l)',
							 t.shadow, t.inserts, t.copies, t.rel, t.batch_key, t.log),
					  format('DELETE FROM %s', t.log)] END
	FROM (
	SELECT c.oid AS relid, c.oid::regclass::text AS rel, coalesce(sc.relname, s.shadow_name) AS shadow_name,
		   coalesce(sc.oid::regclass::text, format('%s.%I', c.relnamespace::regnamespace, s.shadow_name)) AS shadow,
		   sc.oid AS shadow_oid,
		   coalesce(lc.oid::regclass::text, format('%s.%I', c.relnamespace::regnamespace, s.log_name)) AS log,
		   lc.oid AS log_oid,
		   k.attname AS batch_key, format_type(k.atttypid, k.atttypmod) AS batch_type, k.indexrelid AS batch_index,
		   CASE WHEN EXISTS (SELECT FROM unnest(cols) u WHERE u.relid = c.oid AND u.attnum = k.attnum AND u.changes)
				THEN format('CAST(CAST(%%s AS bigint) AS %s)', target) ELSE '%s' END AS key_cast,
		   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
			FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '') AS inserts,
		   (SELECT string_agg(CASE WHEN u.changes THEN format('CAST(CAST(%I AS bigint) AS %s)', a.attname, target)
								   ELSE quote_ident(a.attname) END, ', ' ORDER BY a.attnum)
			FROM pg_attribute a LEFT JOIN unnest(cols) u ON u.relid = a.attrelid AND u.attnum = a.attnum
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '') AS copies,
		   concat_ws(', ',
					 (SELECT string_agg(format('ALTER COLUMN %I TYPE %s USING CAST(CAST(%1$I AS bigint) AS %2$s)', a.attname, target)
										-- the key's sequence is the table's alone
										|| CASE WHEN u.relid = cols[1].relid AND u.attnum = cols[1].attnum
										   THEN format(', ALTER COLUMN %I DROP DEFAULT', a.attname) ELSE '' END,
										', ' ORDER BY a.attnum)
					  FROM unnest(cols) u JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
					  WHERE u.relid = c.oid AND u.changes),
					 -- the columns' statistics targets and options, which LIKE leaves
					 (SELECT string_agg(concat_ws(', ', CASE WHEN a.attstattarget >= 0
														THEN format('ALTER COLUMN %I SET STATISTICS %s', a.attname, a.attstattarget) END,
												  CASE WHEN cardinality(a.attoptions) > 0
												  THEN format('ALTER COLUMN %I SET (%s)', a.attname, array_to_string(a.attoptions, ', ')) END),
										', ' ORDER BY a.attnum)
					  FROM pg_attribute a
					  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
						AND (a.attstattarget >= 0 OR cardinality(a.attoptions) > 0))) AS alters
	FROM pg_class c
	CROSS JOIN LATERAL (SELECT flake_internal.flake_migrate_online_name(c.relname, '__flake_new') AS shadow_name,
							   flake_internal.flake_migrate_online_name(c.relname, '__flake_log') AS log_name) s
	LEFT JOIN pg_class sc ON sc.oid = flake_internal.flake_migrate_online_marked(c.oid, 'copy')
	LEFT JOIN pg_class lc ON lc.oid = flake_internal.flake_migrate_online_marked(c.oid, 'log')
	LEFT JOIN LATERAL (
		SELECT x.indexrelid, ka.attnum, ka.attname, ka.atttypid, ka.atttypmod
		FROM pg_index x
		JOIN pg_attribute ka ON ka.attrelid = x.indrelid AND ka.attnum = x.indkey[0]
		WHERE x.indrelid = c.oid AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
		  AND x.indkey[0] <> 0 AND x.indpred IS NULL AND ka.attnotnull
		ORDER BY x.indisprimary DESC, x.indexrelid
		LIMIT 1) k ON true
	WHERE c.oid IN (SELECT u.relid FROM unnest(cols) u WHERE u.changes)) t
	ORDER BY t.relid
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_tables(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the tables to copy, their shadows and logs, and how to copy their rows';

--
-- Logical replication on the tables to copy, which the swap would break:
-- it drops each table and renames its copy into its place.  A
-- subscription keeps its state for a table (pg_subscription_rel) by the
-- table's oid: the entry would go with the table, and the apply worker
-- would skip the table's changes from then on, silently.  Carrying the
-- entry over is not safe: only ALTER SUBSCRIPTION ... REFRESH PUBLICATION
-- writes it, outside any transaction (so not with the swap: changes
-- applied in between are lost), as the subscription's owner, and for every
-- table of the subscription at once.  A publication of all tables, or of
-- the table's schema (where the copy, its log and the list of foreign keys
-- to validate are created), would publish those too, which no subscriber
-- has: its apply worker would fail on them again and again, for every
-- table; and a copy is not in the publications that list its table.  So
-- each is refused, before anything changes, and again by the swap (a
-- subscription or a publication may come while the rows are copied).
--
CREATE FUNCTION flake_internal.flake_migrate_online_check_replication(cols flake_internal.flake_migrate_column[],
																	  target text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.flake_migrate_online_tables(cols, target) t);
	schemas		oid[];
	list		text;
	whole		boolean;
	listed		boolean;
BEGIN
	SELECT string_agg(format('%s (subscription %s)', r.srrelid::regclass, quote_ident(s.subname)), ', '
					  ORDER BY r.srrelid::regclass::text, s.subname)
	INTO list
	FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
	WHERE r.srrelid = ANY (copied);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate tables online that a subscription writes into'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s. The swap puts a copy in the place of each table, and the subscription''s state for a table '
								  '(pg_subscription_rel) goes with the table: the subscription would skip its changes from then on.', list),
				  HINT = 'Migrate them with flake_migrate() (offline), which changes the tables in place (the subscription''s '
						 'writes wait for it), or migrate the tables on the publisher.';
	END IF;

	-- the copies' schemas, and the key's table's (the list of foreign keys)
	schemas := ARRAY(SELECT c.relnamespace FROM pg_class c
					 WHERE c.oid = ANY (copied) OR (c.oid = cols[1].relid AND cardinality(copied) > 0));
	SELECT string_agg(DISTINCT x, ', '), bool_or(NOT s.listed), bool_or(s.listed) INTO list, whole, listed FROM (
		SELECT format('publication %s (FOR ALL TABLES)', quote_ident(p.pubname)) AS x, false AS listed
		FROM pg_publication p
		WHERE p.puballtables AND cardinality(copied) > 0
		UNION ALL
		SELECT format('publication %s (FOR TABLES IN SCHEMA %s)', quote_ident(p.pubname), n.pnnspid::regnamespace), false
		FROM pg_publication_namespace n JOIN pg_publication p ON p.oid = n.pnpubid
		WHERE n.pnnspid = ANY (schemas)
		UNION ALL
		SELECT format('publication %s (FOR TABLE %s)', quote_ident(p.pubname), r.prrelid::regclass), true
		FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
		WHERE r.prrelid = ANY (copied)) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate tables online that a publication publishes'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s.', list)
						   || CASE WHEN whole THEN ' The copies of the tables and their logs, made in the tables'' schemas, would be '
								   'published too, which no subscriber has: its apply worker would stop, for every table.' ELSE '' END
						   || CASE WHEN listed THEN ' The copy put in the place of a table would not be in the publications '
								   'that list the table.' ELSE '' END,
				  HINT = 'Migrate the tables with flake_migrate() (offline), which changes them in place and keeps them in '
						 'their publications.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_check_replication(flake_internal.flake_migrate_column[], text) IS
	'online migration check: no subscription writes into a table to copy and no publication publishes it or its copy, or an error';

--
-- The tables whose code the migration runs, and the owner of each: the
-- tables it copies, and every table at either end of a foreign key on or
-- into them, which the swap adds again (ALTER TABLE, which needs the
-- owner of both) and the validate step validates (a query on both, which
-- runs their code: the planner folds the functions in their indexes'
-- predicates, a CHECK runs, with the rights of the role migrating).  The
-- migration connects as the owner of the key's table (the client and the
-- swap check it): every one of those tables must have that owner, or a
-- role holding only REFERENCES on a table could have the migrating role
-- run its code, and another owner's table would stop the swap after the
-- whole copy.
--
CREATE FUNCTION flake_internal.flake_migrate_online_check_owners(cols flake_internal.flake_migrate_column[],
																 target text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.flake_migrate_online_tables(cols, target) t);
	owner		oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = cols[1].relid);
	list		text;
BEGIN
	SELECT string_agg(format('%s (owner %s)', c.oid::regclass, quote_ident(pg_get_userbyid(c.relowner))), ', '
					  ORDER BY c.oid::regclass::text)
	INTO list
	FROM pg_class c
	WHERE c.relowner <> owner
	  AND (c.oid = ANY (copied)
		   OR c.oid IN (SELECT unnest(ARRAY[f.conrelid, f.confrelid]) FROM pg_constraint f
						WHERE f.contype = 'f' AND (f.conrelid = ANY (copied) OR f.confrelid = ANY (copied))));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate %.% online: tables of other owners are copied or at an end of a foreign key it adds again',
						cols[1].relid::regclass, quote_ident((SELECT a.attname FROM pg_attribute a
															   WHERE a.attrelid = cols[1].relid AND a.attnum = cols[1].attnum))
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('%s. The swap adds every foreign key on and into the copied tables again, and validates them: '
								  'statements that need the owner of both tables and run their code, with the rights of the '
								  'role migrating, %s.', list, quote_ident(pg_get_userbyid(owner))),
				  HINT = 'Migrate with flake_migrate() (offline), which changes the tables in place and leaves those foreign '
						 'keys alone; or have their owners drop those foreign keys for the time of the migration and add them again after.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_check_owners(flake_internal.flake_migrate_column[], text) IS
	'online migration check: the key''s table''s owner owns every table copied or at an end of a foreign key the swap adds again, or an error';

--
-- The names the migration gives (the copies, the logs, the list of foreign
-- keys to validate, the indexes of the copies; flake_migrate_online_name()
-- makes them from the tables' and indexes' names) must be free in their
-- schema, as relations and as types (a table has a row type of its name),
-- but for the migration's own objects of an earlier run, and differ from
-- each other.
--
CREATE FUNCTION flake_internal.flake_migrate_online_check_names(cols flake_internal.flake_migrate_column[],
																target text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	WITH needed(nsp, name, own, typed, what) AS (
		SELECT c.relnamespace, t.shadow_name, t.shadow_oid, true, format('the copy of %s', t.rel)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		UNION ALL
		SELECT c.relnamespace, flake_internal.flake_migrate_online_name(c.relname, '__flake_log'), t.log_oid, true,
			   format('the log of %s', t.rel)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		UNION ALL
		SELECT c.relnamespace, flake_internal.flake_migrate_online_name(c.relname, '__flake_validate'), NULL, true,
			   format('the list of foreign keys to validate of %s', c.oid::regclass)
		FROM pg_class c
		WHERE c.oid = cols[1].relid AND EXISTS (SELECT FROM flake_internal.flake_migrate_online_tables(cols, target))
		UNION ALL
		SELECT c.relnamespace, flake_internal.flake_migrate_online_name(x.index_name, '__flake_new'),
			   (SELECT y.indexrelid FROM pg_index y JOIN pg_class yc ON yc.oid = y.indexrelid
				WHERE y.indrelid = t.shadow_oid AND yc.relname = flake_internal.flake_migrate_online_name(x.index_name, '__flake_new')),
			   false, format('the copy of index %s', quote_ident(x.index_name))
		FROM flake_internal.flake_migrate_online_indexes(cols, target) x
		JOIN flake_internal.flake_migrate_online_tables(cols, target) t ON t.relid = x.relid
		JOIN pg_class c ON c.oid = x.relid)
	SELECT string_agg(s.x, ', ' ORDER BY s.x) INTO list FROM (
		SELECT format('%s (%s): taken by %s', quote_ident(n.name), n.what, pg_describe_object('pg_class'::regclass, o.oid, 0)) AS x
		FROM needed n JOIN pg_class o ON o.relnamespace = n.nsp AND o.relname = n.name
		WHERE o.oid IS DISTINCT FROM n.own
		UNION ALL
		SELECT format('%s (%s): taken by %s', quote_ident(n.name), n.what, pg_describe_object('pg_type'::regclass, y.oid, 0))
		FROM needed n JOIN pg_type y ON y.typnamespace = n.nsp AND y.typname = n.name
		-- a relation's row type is the relation's name; an array type moves aside
		WHERE n.typed AND y.typrelid = 0 AND y.typcategory <> 'A'
		UNION ALL
		SELECT format('%s: %s', quote_ident(n.name), string_agg(n.what, ' and ' ORDER BY n.what))
		FROM needed n GROUP BY n.nsp, n.name HAVING count(*) > 1) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'names that the online migration of %.% needs are taken', cols[1].relid::regclass,
						quote_ident((SELECT a.attname FROM pg_attribute a WHERE a.attrelid = cols[1].relid AND a.attnum = cols[1].attnum))
			USING ERRCODE = 'duplicate_object',
				  DETAIL = format('%s.', list),
				  HINT = 'Rename or drop the objects that have them, or migrate with flake_migrate() (offline), which makes no copies.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_check_names(flake_internal.flake_migrate_column[], text) IS
	'online migration check: the names of the copies, logs, list and index copies are free and distinct, or an error';

--
-- Where the log trigger of a table writes: the log its first argument
-- names and the column its second names (pg_trigger.tgargs holds them
-- ended by NUL bytes, in the database's encoding); no row without one.
--
CREATE FUNCTION flake_internal.flake_migrate_online_logged(rel oid)
	RETURNS TABLE(log oid, key text)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN g.tgnargs = 2
				THEN to_regclass(convert_from(substring(g.tgargs FROM 1 FOR p.n - 1), getdatabaseencoding())) END,
		   CASE WHEN g.tgnargs = 2
				THEN convert_from(substring(g.tgargs FROM p.n + 1 FOR length(g.tgargs) - p.n - 1), getdatabaseencoding()) END
	FROM pg_trigger g
	CROSS JOIN LATERAL (SELECT position('\x00'::bytea IN g.tgargs) AS n) p
	WHERE g.tgrelid = rel AND g.tgname = 'zz_flake_migrate_online_log'
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_logged(oid) IS
	'online migration helper: the log and the key column the log trigger of a table writes';

--
-- What the online path cannot do, beyond flake_migrate()'s own checks:
-- tables it cannot copy in batches, and what a copy cannot carry over
-- (views and rules on the table, row security, a replica identity other
-- than the primary key, tablespaces, other identity columns, extended
-- statistics, column privileges, grants by other roles, NOT VALID checks,
-- exclusion and deferrable constraints, indexes it cannot copy); then the
-- checks above (replication, owners, names).  Each is a blocked step.
--
CREATE FUNCTION flake_internal.flake_migrate_online_blockers(cols flake_internal.flake_migrate_column[], target text)
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	found		flake_internal.flake_migrate_step[] := '{}';
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.flake_migrate_online_tables(cols, target) t);
	list		text;
	check_name	text;
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	SELECT string_agg(t.rel, ', ') INTO list
	FROM flake_internal.flake_migrate_online_tables(cols, target) t WHERE t.batch_key IS NULL;
	IF list IS NOT NULL THEN
		found := found || flake_internal.flake_migrate_blocked(
			'tables without a key to copy them in batches', '55000',
			format('Tables: %s. The online path copies a table in batches by its primary key or a unique index on one NOT NULL column.', list));
	END IF;

	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format('%s on %s', pg_describe_object(d.classid, d.objid, d.objsubid), c.oid::regclass) AS x
		FROM pg_class c JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid
		WHERE c.oid = ANY (copied) AND d.classid IN ('pg_rewrite'::regclass, 'pg_policy'::regclass, 'pg_statistic_ext'::regclass)
		UNION
		SELECT format('%s uses the row type of %s', pg_describe_object(d.classid, d.objid, d.objsubid), c.oid::regclass)
		FROM pg_class c JOIN pg_depend d ON d.refclassid = 'pg_type'::regclass AND d.refobjid = c.reltype
		WHERE c.oid = ANY (copied) AND d.deptype = 'n'
		UNION
		SELECT format('%s: %s', c.oid::regclass, r.what)
		FROM pg_class c CROSS JOIN LATERAL (VALUES
			(c.relrowsecurity OR c.relforcerowsecurity, 'row level security'),
			(c.relreplident NOT IN ('d'), 'a replica identity other than the primary key'),
			(c.reltablespace <> 0, 'a tablespace of its own'),
			(c.reloftype <> 0, 'a typed table'),
			(EXISTS (SELECT FROM pg_class t WHERE t.oid = c.reltoastrelid AND t.reloptions IS NOT NULL), 'storage parameters of its TOAST table'),
			(NOT has_schema_privilege(c.relnamespace, 'CREATE'), 'no CREATE privilege on its schema, for the copy'),
			(EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attacl IS NOT NULL), 'column privileges'),
			(EXISTS (SELECT FROM aclexplode(c.relacl) g WHERE g.grantor <> c.relowner), 'privileges granted by another role'),
			(EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attidentity <> ''
					 AND NOT (a.attrelid = cols[1].relid AND a.attnum = cols[1].attnum)),
			 'an identity column other than the key'),
			(EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = c.oid
					 AND ((k.contype = 'c' AND NOT k.convalidated) OR k.contype = 'x' OR (k.contype IN ('p', 'u') AND k.condeferrable))),
			 'a NOT VALID check, an exclusion constraint or a deferrable key'),
			(EXISTS (SELECT FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
					 WHERE x.indrelid = c.oid AND (NOT x.indisvalid OR ic.reltablespace <> 0)), 'an invalid index or one in a tablespace of its own'),
			(EXISTS (SELECT FROM pg_description d JOIN pg_class m ON m.oid = d.objoid
					 WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0 AND m.relowner <> c.relowner
					   AND d.description IN ('flake_migrate_online: the copy of ' || c.oid, 'flake_migrate_online: the log of ' || c.oid)),
			 'a copy or log of it belongs to another role (its owner changed during the migration, or another role made it)')) r(blocks, what)
		WHERE c.oid = ANY (copied) AND r.blocks
		UNION
		SELECT format('%s: its columns or checks changed while it was copied (a type, NOT NULL, a default, a collation, storage, '
					  'table options or its schema; undo, then run again)', t.rel)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t
		CROSS JOIN LATERAL (SELECT array_agg(a.attname) AS names,
								   (array_agg(a.attname) FILTER (WHERE u.relid = cols[1].relid AND u.attnum = cols[1].attnum))[1] AS key
							FROM unnest(cols) u
							JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
							WHERE u.relid = t.relid AND u.changes) n
		WHERE t.shadow_oid IS NOT NULL
		  AND flake_internal.flake_migrate_online_shape(t.relid, n.names, n.key)
			  IS DISTINCT FROM flake_internal.flake_migrate_online_shape(t.shadow_oid, n.names, n.key)
		UNION
		-- the log trigger must log the key the copy goes by into the log:
		-- a primary key dropped meanwhile may have made another the key
		SELECT format('%s: its log trigger logs another column or into another table than the copy goes by (undo, then run again)', t.rel)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t
		CROSS JOIN LATERAL flake_internal.flake_migrate_online_logged(t.relid) g
		WHERE t.log_oid IS NOT NULL AND (g.log IS DISTINCT FROM t.log_oid OR g.key IS DISTINCT FROM t.batch_key)
		UNION
		SELECT format('index %s (an expression, a predicate or an operator class on a changing column)', x.indexrelid::regclass)
		FROM unnest(cols) u
		JOIN pg_index x ON x.indrelid = u.relid
		WHERE u.changes AND (
			(u.attnum = ANY (x.indkey) AND EXISTS (SELECT FROM generate_series(0, x.indnkeyatts - 1) n
												   JOIN pg_opclass o ON o.oid = x.indclass[n]
												   WHERE x.indkey[n] = u.attnum AND NOT o.opcdefault))
			OR ((x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
				AND EXISTS (SELECT FROM pg_depend d
							WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
							  AND d.refobjid = u.relid AND d.refobjsubid = u.attnum)))) s;
	IF list IS NOT NULL THEN
		found := found || flake_internal.flake_migrate_blocked(
			'objects that the online path cannot carry to the copies of the tables', '0A000',
			format('%s.', list));
		found := found || ROW('note', 'flake_migrate() (offline) may still migrate these tables; or change the objects above first', false, false, NULL)::flake_internal.flake_migrate_step;
	END IF;
	-- the checks that are errors of the swap too
	FOREACH check_name IN ARRAY ARRAY['replication', 'owners', 'names'] LOOP
		BEGIN
			EXECUTE format('SELECT flake_internal.flake_migrate_online_check_%s($1, $2)', check_name) USING cols, target;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			found := found || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		END;
	END LOOP;
	RETURN found;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_blockers(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: what the online path cannot do, as blocked steps';

--
-- The indexes of the copied tables, each with the CREATE INDEX of its copy
-- on the shadow (pg_get_indexdef()'s definition on the shadow, under a
-- name of its own), whether the copy exists with that definition (and the
-- copy's oid: one of another definition, the table's index having been
-- dropped and made again meanwhile, is dropped before the CREATE INDEX),
-- and the statements that put it in its place at the swap: a primary key
-- or unique constraint added USING INDEX under the old name, or the index
-- renamed; and its comment and CLUSTER mark.
--
CREATE FUNCTION flake_internal.flake_migrate_online_indexes(cols flake_internal.flake_migrate_column[], target text)
	RETURNS TABLE(relid oid, index_name name, new_index text, new_exists boolean, batch boolean, create_sql text, swap_sql text,
				  new_oid oid)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.relid, ic.relname, format('%s.%I', ic.relnamespace::regnamespace, n.new_index),
		   coalesce(pg_get_indexdef(nc.oid) = q.create_sql, false),
		   x.indexrelid = t.batch_index,
		   CASE WHEN pg_get_indexdef(nc.oid) <> q.create_sql THEN format('DROP INDEX %s; ', nc.oid::regclass) ELSE '' END
		   || q.create_sql,
		   CASE WHEN k.contype IN ('p', 'u')
				THEN format('ALTER TABLE %s ADD CONSTRAINT %I %s USING INDEX %I', t.rel, k.conname,
							CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END, n.new_index)
					 || coalesce(format('; COMMENT ON CONSTRAINT %I ON %s IS %L', k.conname, t.rel, obj_description(k.oid, 'pg_constraint')), '')
				ELSE format('ALTER INDEX %s.%I RENAME TO %I', ic.relnamespace::regnamespace, n.new_index, ic.relname) END
		   || coalesce(format('; COMMENT ON INDEX %s.%I IS %L', ic.relnamespace::regnamespace, ic.relname,
							  obj_description(ic.oid, 'pg_class')), '')
		   || CASE WHEN x.indisclustered THEN format('; ALTER TABLE %s CLUSTER ON %I', t.rel, ic.relname) ELSE '' END,
		   nc.oid
	FROM flake_internal.flake_migrate_online_tables(cols, target) t
	JOIN pg_index x ON x.indrelid = t.relid
	JOIN pg_class ic ON ic.oid = x.indexrelid
	CROSS JOIN LATERAL (SELECT flake_internal.flake_migrate_online_name(ic.relname, '__flake_new') AS new_index) n
	CROSS JOIN LATERAL (SELECT pg_get_indexdef(x.indexrelid) AS def,
							   format('CREATE %sINDEX %I ON %s.%I USING ', CASE WHEN x.indisunique THEN 'UNIQUE ' END,
									  ic.relname, ic.relnamespace::regnamespace, (SELECT c.relname FROM pg_class c WHERE c.oid = t.relid)) AS prefix) d
	CROSS JOIN LATERAL (SELECT format('CREATE %sINDEX %I ON %s USING ', CASE WHEN x.indisunique THEN 'UNIQUE ' END, n.new_index, t.shadow)
							   || substr(d.def, length(d.prefix) + 1) AS create_sql) q
	-- the copy exists: an index of that name on the shadow (another object of
	-- that name is refused by the checks)
	LEFT JOIN (pg_class nc JOIN pg_index nx ON nx.indexrelid = nc.oid) ON nc.relname = n.new_index AND nx.indrelid = t.shadow_oid
	LEFT JOIN pg_constraint k ON k.conindid = x.indexrelid AND k.conrelid = x.indrelid AND k.contype IN ('p', 'u')
	ORDER BY t.relid, x.indisprimary DESC, ic.relname
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_indexes(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the indexes of the copied tables, how to copy them and swap the copies in';

--
-- The indexes of the copies that are no copy of an index of their table:
-- the table's index was dropped, or renamed, while it was copied.
--
CREATE FUNCTION flake_internal.flake_migrate_online_stale_indexes(cols flake_internal.flake_migrate_column[], target text)
	RETURNS TABLE(relid oid, index regclass)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.relid, nx.indexrelid::regclass
	FROM flake_internal.flake_migrate_online_tables(cols, target) t
	JOIN pg_index nx ON nx.indrelid = t.shadow_oid
	WHERE nx.indexrelid NOT IN (SELECT x.new_oid FROM flake_internal.flake_migrate_online_indexes(cols, target) x
								WHERE x.new_oid IS NOT NULL)
	ORDER BY t.relid, nx.indexrelid
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_stale_indexes(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the indexes of the copies whose tables no longer have them';

--
-- The steps before the swap that are not done yet, in order, each with
-- the strongest lock it takes: create the shadows, logs and triggers; copy
-- the rows; apply the logs; build the indexes; analyze; apply the logs
-- until they are short.
--
CREATE FUNCTION flake_internal.flake_migrate_online_prepare(cols flake_internal.flake_migrate_column[], target text)
	RETURNS TABLE(phase text, rel regclass, action text, lock text, statement text, batch text, total bigint, resume text)
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	r			record;
	indexed		boolean;
	applied		boolean;
BEGIN
	FOR t IN SELECT * FROM flake_internal.flake_migrate_online_tables(cols, target) LOOP
		rel := t.relid;
		batch := NULL; total := NULL; resume := NULL;
		IF t.shadow_oid IS NULL OR t.log_oid IS NULL THEN
			phase := 'create'; action := 'create the copy, the log and the triggers';
			lock := 'SHARE ROW EXCLUSIVE, a moment (CREATE TRIGGER)';
			statement := format('DROP TABLE IF EXISTS %s, %s; ', t.shadow, t.log)
				-- the table's access method, not the session's default
				|| format('CREATE %sTABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) USING %I%s; ',
						  CASE WHEN (SELECT c.relpersistence FROM pg_class c WHERE c.oid = t.relid) = 'u' THEN 'UNLOGGED ' ELSE '' END,
						  t.shadow, t.rel,
						  (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = t.relid),
						  (SELECT ' WITH (' || array_to_string(c.reloptions, ', ') || ')' FROM pg_class c WHERE c.oid = t.relid))
				|| format('ALTER TABLE %s %s; ', t.shadow, t.alters)
				-- the trigger writes the log as a heap
				|| format('CREATE TABLE %s (k %s) USING heap; ', t.log, t.batch_type)
				|| format('COMMENT ON TABLE %s IS %L; COMMENT ON TABLE %s IS %L; ', t.shadow, 'flake_migrate_online: the copy of ' || t.relid,
						  t.log, 'flake_migrate_online: the log of ' || t.relid)
				-- OR REPLACE: the triggers stay when the copy or log was dropped
				|| format('CREATE OR REPLACE TRIGGER zz_flake_migrate_online_log AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION flake_internal.flake_migrate_online_log(%L, %L); ',
						  t.rel, t.log, t.batch_key)
				|| format('CREATE OR REPLACE TRIGGER zz_flake_migrate_online_no_truncate BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION flake_internal.flake_migrate_online_no_truncate(); ', t.rel)
				-- also for a subscription's writes (session_replication_role)
				|| format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_flake_migrate_online_log, ENABLE ALWAYS TRIGGER zz_flake_migrate_online_no_truncate; ', t.rel)
				-- no privileges that ALTER DEFAULT PRIVILEGES gave
				|| format('SELECT flake_internal.flake_migrate_online_private(%L), flake_internal.flake_migrate_online_private(%L)',
						  t.shadow, t.log);
			RETURN NEXT;
		END IF;
		indexed := EXISTS (SELECT FROM pg_index x WHERE x.indrelid = t.shadow_oid);
		IF NOT indexed THEN
			-- $1: the last key copied (NULL at first), $2 the last of this
			-- batch; batch gives $2 from $1, the batch size and $3, the
			-- last key to copy; resume gives the last key copied by a run
			-- that stopped, and the last to copy: the table's largest key
			-- now (later rows are in the log).  The keys go by their own
			-- type's order (a uuid, say, has no max() nor a cast to bigint),
			-- the copy's key of a new type by the bigint it was made from.
			phase := 'copy'; action := 'copy the rows in batches'; lock := 'ACCESS SHARE, the rows of one batch';
			statement := format('INSERT INTO %s (%s) SELECT %s FROM %s WHERE (CAST($1 AS text) IS NULL OR %I > CAST(CAST($1 AS text) AS %s)) AND %5$I <= CAST(CAST($2 AS text) AS %6$s) ORDER BY %5$I',
								t.shadow, t.inserts, t.copies, t.rel, t.batch_key, t.batch_type);
			batch := format('SELECT CAST((SELECT %1$I FROM (SELECT %1$I FROM %2$s WHERE (CAST($1 AS text) IS NULL OR %1$I > CAST(CAST($1 AS text) AS %3$s)) AND %1$I <= CAST(CAST($3 AS text) AS %3$s) ORDER BY %1$I LIMIT CAST(CAST($2 AS text) AS bigint)) s ORDER BY 1 DESC LIMIT 1) AS text)',
							t.batch_key, t.rel, t.batch_type);
			resume := format('SELECT CAST((SELECT %1$s FROM %2$s ORDER BY 1 DESC LIMIT 1) AS text), CAST((SELECT %3$I FROM %4$s ORDER BY 1 DESC LIMIT 1) AS text)',
							 CASE WHEN t.key_cast <> '%s' THEN format('CAST(%I AS bigint)', t.batch_key) ELSE quote_ident(t.batch_key) END,
							 t.shadow, t.batch_key, t.rel);
			total := (SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c WHERE c.oid = t.relid);
			RETURN NEXT;
			batch := NULL; total := NULL; resume := NULL;
		END IF;
		-- before any apply (a unique one would make it fail)
		statement := (SELECT 'DROP INDEX ' || string_agg(x.index::text, ', ')
					  FROM flake_internal.flake_migrate_online_stale_indexes(cols, target) x WHERE x.relid = t.relid);
		IF statement IS NOT NULL THEN
			phase := 'index'; action := 'drop the indexes of the copy that the table no longer has';
			lock := 'ACCESS EXCLUSIVE on the copy only';
			RETURN NEXT;
		END IF;
		IF EXISTS (SELECT FROM flake_internal.flake_migrate_online_indexes(cols, target) x WHERE x.relid = t.relid AND NOT x.new_exists) THEN
			-- first the index of the key the batches went by, unique in
			-- the copy as in each batch; then, since the copy is of many
			-- snapshots, the log applied (which makes it the table of one)
			-- before any other index, which may be unique
			applied := false;
			FOR r IN
				SELECT * FROM flake_internal.flake_migrate_online_indexes(cols, target) x
				WHERE x.relid = t.relid AND NOT x.new_exists ORDER BY x.batch DESC
			LOOP
				IF NOT r.batch AND NOT applied THEN
					phase := 'apply'; action := 'apply the log'; lock := 'ACCESS SHARE (REPEATABLE READ)';
					statement := array_to_string(t.apply, '; ');
					RETURN NEXT;
					applied := true;
				END IF;
				phase := 'index'; action := 'build an index of the copy'; lock := 'SHARE on the copy only';
				statement := r.create_sql;
				RETURN NEXT;
			END LOOP;
		END IF;
		IF NOT EXISTS (SELECT FROM pg_stats p WHERE p.schemaname = (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
																  WHERE c.oid = t.relid)
					   AND p.tablename = t.shadow_name) THEN
			phase := 'analyze'; action := 'statistics of the copy'; lock := 'SHARE UPDATE EXCLUSIVE on the copy only';
			statement := format('ANALYZE %s', t.shadow);
			RETURN NEXT;
		END IF;
	END LOOP;
	-- last, the logs of all, written meanwhile
	FOR t IN SELECT * FROM flake_internal.flake_migrate_online_tables(cols, target) LOOP
		rel := t.relid; batch := NULL; total := NULL; resume := NULL;
		phase := 'apply'; action := 'apply the log until it is short'; lock := 'ACCESS SHARE (REPEATABLE READ)';
		statement := array_to_string(t.apply, '; ');
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_prepare(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the steps before the swap that are not done yet';

--
-- The shape of a table that its copy must have, to compare a table with
-- its copy: its schema, access method, persistence and options, its
-- columns in their order with their types (but for those that change),
-- NOT NULL, defaults (but the key's, which the copy drops) and generation
-- expressions, collations, storage, compression, statistics targets and
-- options, and its checks.  What the swap takes from the table itself
-- (indexes, triggers, grants, comments, foreign keys) is not in it.
--
CREATE FUNCTION flake_internal.flake_migrate_online_shape(rel oid, changing name[], key name)
	RETURNS text
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT format('%s %s %s %s; ', c.relnamespace, c.relam, c.relpersistence, c.reloptions)
		   || string_agg(format('%I %s %s %s %s %s %s %s %s', a.attname,
								CASE WHEN a.attname = ANY (changing) THEN '' ELSE format_type(a.atttypid, a.atttypmod) END,
								a.attnotnull, a.attcollation, a.attgenerated,
								CASE WHEN a.attname = ANY (changing) THEN '' ELSE concat(a.attstorage, a.attcompression) END,
								-- (PostgreSQL's minor releases keep a version in the options)
								a.attstattarget, ARRAY(SELECT o FROM unnest(a.attoptions) o WHERE o NOT LIKE 'pg\_attver=%' ORDER BY o),
								CASE WHEN a.attname = key THEN '' ELSE pg_get_expr(d.adbin, d.adrelid) END),
						 ', ' ORDER BY a.attnum)
		   || '; ' || coalesce((SELECT string_agg(k.conname || ' ' || pg_get_constraintdef(k.oid), ', ' ORDER BY k.conname)
								FROM pg_constraint k WHERE k.conrelid = rel AND k.contype = 'c'), '')
	FROM pg_class c
	JOIN pg_attribute a ON a.attrelid = c.oid
	LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE c.oid = rel AND a.attnum > 0 AND NOT a.attisdropped
	GROUP BY c.oid
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_shape(oid, name[], name) IS
	'online migration helper: the shape of a table that its copy must have, to compare it with its copy';

--
-- The statements of the swap, in order: move the sequences the tables own
-- (but the key's) to their copies; detach the key as flake_migrate() does; drop the foreign keys of
-- other tables into the copied ones; drop the tables and logs (RESTRICT:
-- anything else that depends on them stops the swap); rename the copies,
-- their indexes and constraints to the tables' names; give them the
-- tables' comments, triggers (in the same enabled state) and grants; set
-- the key's default; add the foreign keys again, NOT VALID, and note those
-- to validate in TABLE__flake_validate.
--
CREATE FUNCTION flake_internal.flake_migrate_online_swap_sql(tbl regclass, col name, generator text,
											  cols flake_internal.flake_migrate_column[], target text)
	RETURNS text[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key			record;
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.flake_migrate_online_tables(cols, target) t);
	stmts		text[] := '{}';
	adds		text[];
	validate	text;
	list		text;
BEGIN
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	SELECT stmts || coalesce(array_agg(s.stmt ORDER BY s.o), '{}') INTO stmts FROM (
		SELECT d.objid AS o, format('ALTER SEQUENCE %s OWNED BY %s.%I', d.objid::regclass, t.shadow, a.attname)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t
		JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
						AND d.refobjid = t.relid AND d.refobjsubid > 0 AND d.deptype = 'a'
		JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum = d.refobjsubid
		WHERE NOT (t.relid = tbl AND a.attnum = key.key_attnum)) s(o, stmt);
	SELECT stmts || coalesce(array_agg(s.detail ORDER BY o), '{}') INTO stmts
	FROM unnest(flake_internal.flake_migrate_detach(tbl, col, key.key_attnum, key.identity_seq,
												 key.default_oid, key.default_seqs)) WITH ORDINALITY s(action, detail, run, counted, o)
	WHERE s.run;

	-- the foreign keys on and into the copied tables, as they are
	SELECT stmts || coalesce(array_agg(format('ALTER TABLE %s DROP CONSTRAINT %I', f.conrelid::regclass, f.conname) ORDER BY f.oid)
							 FILTER (WHERE f.conrelid <> ALL (copied)), '{}'),
		   coalesce(array_agg(format('ALTER TABLE %s ADD CONSTRAINT %I %s%s', f.conrelid::regclass, f.conname, pg_get_constraintdef(f.oid),
									 CASE WHEN f.convalidated THEN ' NOT VALID' ELSE '' END)
							  || coalesce(format('; COMMENT ON CONSTRAINT %I ON %s IS %L', f.conname, f.conrelid::regclass,
												 obj_description(f.oid, 'pg_constraint')), '')
							  ORDER BY f.oid), '{}'),
		   string_agg(format('(%L::regclass, %L)', f.conrelid::regclass, f.conname), ', ' ORDER BY f.oid) FILTER (WHERE f.convalidated)
	INTO stmts, adds, validate
	FROM pg_constraint f
	WHERE f.contype = 'f' AND (f.conrelid = ANY (copied) OR f.confrelid = ANY (copied));

	IF cardinality(copied) > 0 THEN
		SELECT stmts || format('DROP TABLE %s', string_agg(t.rel || ', ' || t.log, ', ' ORDER BY t.relid DESC))
				  || array_agg(format('ALTER TABLE %s RENAME TO %I; COMMENT ON TABLE %s IS %L', t.shadow,
									  (SELECT c.relname FROM pg_class c WHERE c.oid = t.relid), t.rel, obj_description(t.relid, 'pg_class'))
							   ORDER BY t.relid)
		INTO stmts
		FROM flake_internal.flake_migrate_online_tables(cols, target) t;
	END IF;
	-- the columns' comments changed since the copy was made
	SELECT stmts || coalesce(array_agg(format('COMMENT ON COLUMN %s.%I IS %L', t.rel, a.attname, col_description(t.relid, a.attnum))
									   ORDER BY t.relid, a.attnum), '{}')
	INTO stmts
	FROM flake_internal.flake_migrate_online_tables(cols, target) t
	JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum > 0 AND NOT a.attisdropped
	JOIN pg_attribute sa ON sa.attrelid = t.shadow_oid AND sa.attname = a.attname
	WHERE col_description(t.relid, a.attnum) IS DISTINCT FROM col_description(t.shadow_oid, sa.attnum);
	SELECT stmts || coalesce(array_agg(x.swap_sql), '{}') INTO stmts FROM flake_internal.flake_migrate_online_indexes(cols, target) x;
	SELECT stmts || coalesce(array_agg(pg_get_triggerdef(g.oid)
									   || CASE g.tgenabled WHEN 'D' THEN format('; ALTER TABLE %s DISABLE TRIGGER %I', g.tgrelid::regclass, g.tgname)
											WHEN 'R' THEN format('; ALTER TABLE %s ENABLE REPLICA TRIGGER %I', g.tgrelid::regclass, g.tgname)
											WHEN 'A' THEN format('; ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', g.tgrelid::regclass, g.tgname)
											ELSE '' END
									   || coalesce(format('; COMMENT ON TRIGGER %I ON %s IS %L', g.tgname, g.tgrelid::regclass,
														  obj_description(g.oid, 'pg_trigger')), '')
									   ORDER BY g.tgrelid, g.tgname), '{}')
	INTO stmts
	FROM pg_trigger g
	WHERE g.tgrelid = ANY (copied) AND NOT g.tgisinternal
	  AND g.tgname NOT IN ('zz_flake_migrate_online_log', 'zz_flake_migrate_online_no_truncate');
	-- the grants, in their order, after taking back all of the copy's:
	-- exactly the table's (its owner's alone where it has none of its own)
	SELECT stmts || coalesce(array_agg(s.stmt ORDER BY s.relid, s.o), '{}') INTO stmts FROM (
		SELECT c.oid AS relid, 0::bigint AS o,
			   format('REVOKE ALL ON %s FROM PUBLIC, %s', c.oid::regclass,
					  (SELECT string_agg(DISTINCT r.grantee::regrole::text, ', ')
					   FROM (SELECT c.relowner UNION SELECT g.grantee FROM aclexplode(sc.relacl) g
							 WHERE g.grantee <> 0) r(grantee))) AS stmt
		FROM flake_internal.flake_migrate_online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		LEFT JOIN pg_class sc ON sc.oid = t.shadow_oid
		WHERE c.relacl IS NOT NULL OR sc.relacl IS NOT NULL
		UNION ALL
		SELECT c.oid, g.o, format('GRANT %s ON %s TO %s%s', g.privilege_type, c.oid::regclass,
								  CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
		FROM flake_internal.flake_migrate_online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		LEFT JOIN pg_class sc ON sc.oid = t.shadow_oid
		CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner)))
			WITH ORDINALITY g(grantor, grantee, privilege_type, is_grantable, o)
		WHERE c.relacl IS NOT NULL OR sc.relacl IS NOT NULL) s;
	stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT @extschema@.%I()', tbl, col, generator) || adds;
	IF validate IS NOT NULL THEN
		list := format('%s.%I', (SELECT c.relnamespace::regnamespace FROM pg_class c WHERE c.oid = tbl),
					   flake_internal.flake_migrate_online_name((SELECT c.relname FROM pg_class c WHERE c.oid = tbl), '__flake_validate'));
		stmts := stmts || format('CREATE TABLE %s (rel regclass, conname name); COMMENT ON TABLE %1$s IS %2$L; INSERT INTO %1$s VALUES %3$s; '
								 'SELECT flake_internal.flake_migrate_online_private(%1$L)',
								 list, 'flake_migrate_online: the foreign keys to validate of '
									   -- the key's table after the swap: its copy, if it has one
									   || coalesce((SELECT t.shadow_oid FROM flake_internal.flake_migrate_online_tables(cols, target) t
													WHERE t.relid = tbl), tbl),
								 validate);
	END IF;
	RETURN stmts;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_swap_sql(regclass, name, text, flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the statements of the swap';

--
-- The swap, one transaction (the client's, READ COMMITTED, with
-- lock_timeout): lock the tables (ACCESS EXCLUSIVE on the key's table and
-- those the migration changes, SHARE ROW EXCLUSIVE on those with foreign
-- keys into them), check that every index has its copy and that nothing
-- changed since the plan that the copies would lose (the checks of
-- flake_migrate_online_blockers() again, under the locks), apply the rest
-- of the logs, and run the statements of flake_migrate_online_swap_sql().
--
CREATE FUNCTION flake_internal.flake_migrate_online_swap(tbl regclass, col name, generator text, also text[])
	RETURNS integer
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	key			record;
	closure		record;
	copied		oid[];
	missing		text;
	s			text;
	n			integer := 0;
BEGIN
	-- the logs are applied with the snapshots of the statements below,
	-- taken once the locks have waited out the writers; a REPEATABLE READ
	-- or SERIALIZABLE transaction would keep its first, taken before
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'the swap must run at isolation level read committed, not %', current_setting('transaction_isolation')
			USING ERRCODE = 'invalid_transaction_state',
				  HINT = 'Begin its transaction with BEGIN ISOLATION LEVEL READ COMMITTED, as flake_migrate_online does.';
	END IF;
	EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	SELECT * INTO closure
	FROM flake_internal.flake_migrate_closure(tbl, col, key.key_attnum,
										   flake_internal.flake_migrate_also(tbl, col, key.key_attnum, also),
										   generator = 'ulidflake_next', false, false);
	-- applying the logs runs the tables' code (checks, generated columns):
	-- only as their owner, logged in as such (as the client checks)
	SELECT string_agg(c.oid::regclass::text, ', ') INTO missing
	FROM pg_class c
	WHERE c.oid = ANY (closure.touched)
	  AND (c.relowner <> (SELECT r.oid FROM pg_roles r WHERE r.rolname = session_user)
		   OR c.relowner <> (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user));
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'must be logged in as the owner of %', missing
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'The swap runs the code of the tables; connect as their owner.';
	END IF;
	copied := ARRAY(SELECT t.relid FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t);
	FOR s IN
		SELECT DISTINCT f.conrelid::regclass::text FROM pg_constraint f
		WHERE f.contype = 'f' AND f.confrelid = ANY (copied) AND f.conrelid <> ALL (closure.touched)
	LOOP
		EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', s);
	END LOOP;
	-- a subscription, a publication or another owner's foreign key may
	-- have come while the rows were copied
	PERFORM flake_internal.flake_migrate_online_check_replication(closure.cols, target);
	PERFORM flake_internal.flake_migrate_online_check_owners(closure.cols, target);
	-- every index with its copy, and no other on the copies
	SELECT string_agg(m.what, ', ') INTO missing FROM (
		SELECT coalesce(x.index_name::text, t.rel) AS what
		FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t
		LEFT JOIN flake_internal.flake_migrate_online_indexes(closure.cols, target) x ON x.relid = t.relid AND NOT x.new_exists
		WHERE t.shadow_oid IS NULL OR t.log_oid IS NULL OR x.relid IS NOT NULL
		UNION ALL
		SELECT x.index::text FROM flake_internal.flake_migrate_online_stale_indexes(closure.cols, target) x) m;
	-- every write since the copy began must be in the log
	SELECT string_agg(t.rel, ', ') INTO s
	FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t
	WHERE NOT EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = t.relid AND g.tgname = 'zz_flake_migrate_online_log' AND g.tgenabled = 'A');
	IF s IS NOT NULL THEN
		RAISE EXCEPTION 'the log trigger of % was disabled or dropped during the copy', s
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Writes may be missing from the copy: undo the migration (flake_migrate_online --undo) and run it again.';
	END IF;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'the copies of %, or their indexes, are not ready', missing
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'An index was added to, dropped from or changed on a table while it was copied: run flake_migrate_online again.';
	END IF;
	-- what changed since the plan, under the locks: what the copies lack
	-- (columns, NOT NULL, defaults, checks) would be lost, and what the
	-- online path cannot carry (policies, publications, ...) too
	SELECT string_agg(b.detail, '; ') INTO missing
	FROM unnest(flake_internal.flake_migrate_online_blockers(closure.cols, target)) b WHERE b.action = 'blocked';
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'the tables changed while they were copied: %', missing
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Undo the change, or undo the migration (flake_migrate_online --undo) and run it again.';
	END IF;
	FOR s IN SELECT a FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t, unnest(t.apply) a LOOP
		EXECUTE s;
	END LOOP;
	FOREACH s IN ARRAY flake_internal.flake_migrate_online_swap_sql(tbl, col, generator, closure.cols, target) LOOP
		EXECUTE s;
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_swap(regclass, name, text, text[]) IS
	'online migration helper: the swap, in the caller''s transaction';

--
-- After the swap: validate the foreign keys added NOT VALID, and drop the
-- list of them.  One transaction; a VALIDATE takes SHARE UPDATE EXCLUSIVE
-- on the referencing table and ROW SHARE on the referenced one.
--
CREATE FUNCTION flake_internal.flake_migrate_online_validate(list regclass)
	RETURNS integer
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	n			integer := 0;
	others		text;
BEGIN
	-- (1.2 made lists without the table's oid)
	IF coalesce(obj_description(list, 'pg_class'), '') !~ '^flake_migrate_online: the foreign keys to validate( of \d+)?$' THEN
		RAISE EXCEPTION '% is not a list of foreign keys of flake_migrate_online', list
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- validating runs the code of the tables at both ends (the planner
	-- folds the functions of their indexes' predicates): only as their
	-- owner, logged in as such, as the swap checks
	EXECUTE format('SELECT string_agg(DISTINCT c.oid::regclass::text, '', '') FROM %s l
					JOIN pg_constraint k ON k.conrelid = l.rel AND k.conname = l.conname AND k.contype = ''f''
					JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid)
					WHERE c.relowner IS DISTINCT FROM (SELECT r.oid FROM pg_roles r WHERE r.rolname = session_user)
					   OR c.relowner IS DISTINCT FROM (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)', list)
		INTO others;
	IF others IS NOT NULL THEN
		RAISE EXCEPTION 'must be logged in as the owner of %', others
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Validating a foreign key runs the code of the tables at both ends; connect as their owner.';
	END IF;
	FOR r IN EXECUTE format('SELECT rel, conname FROM %s', list) LOOP
		IF EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = r.rel AND k.conname = r.conname AND NOT k.convalidated) THEN
			EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.rel, r.conname);
			n := n + 1;
		END IF;
	END LOOP;
	EXECUTE format('DROP TABLE %s', list);
	RETURN n;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_validate(regclass) IS
	'online migration helper: validate the foreign keys a swap added NOT VALID';

------------------------------------------------------------------------
-- flake_migrate_online_plan() and flake_migrate_online_undo(): what the
-- client runs
------------------------------------------------------------------------

--
-- The steps of an online migration that are left to do, after the checks:
-- blocked steps (flake_migrate()'s dry run, then the online path's own)
-- and nothing else when something is in the way; the validation alone
-- after a swap; a single done step when nothing is left.
--
CREATE FUNCTION flake_internal.flake_migrate_online_plan(tbl regclass, col name DEFAULT 'id',
										  generator text DEFAULT 'flake_next',
										  also text[] DEFAULT NULL)
	RETURNS TABLE(step integer, phase text, rel regclass, action text, lock text,
				  statement text, batch text, total bigint, resume text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	-- found by the oid it records (by its name if 1.2 made it)
	list		regclass := coalesce(flake_internal.flake_migrate_online_marked(tbl, 'foreign keys to validate'),
									 to_regclass(format('%s.%I', (SELECT c.relnamespace::regnamespace FROM pg_class c WHERE c.oid = tbl),
														flake_internal.flake_migrate_online_name((SELECT c.relname FROM pg_class c WHERE c.oid = tbl), '__flake_validate'))));
	key			record;
	closure		record;
	blocked		text[];
BEGIN
	PERFORM flake_internal.flake_migrate_arguments(tbl, col, generator, false, NULL);
	step := 0; rel := tbl;
	IF EXISTS (SELECT FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			   WHERE a.attrelid = tbl AND a.attname = col
				 AND pg_get_expr(d.adbin, d.adrelid) ~ ('^(.*\.)?' || generator || '\(\)$')) THEN
		IF list IS NOT NULL THEN
			step := 1; phase := 'validate'; action := 'validate the foreign keys added NOT VALID';
			lock := 'SHARE UPDATE EXCLUSIVE on the referencing tables, ROW SHARE on the referenced ones';
			statement := format('SELECT flake_internal.flake_migrate_online_validate(%L)', list);
		ELSE
			step := 1; phase := 'done'; action := 'note';
			statement := format('%s.%I takes its ids from %s() already', tbl, col, generator);
		END IF;
		RETURN NEXT;
		RETURN;
	END IF;
	-- the same checks as flake_migrate(), through its dry run
	SELECT array_agg(m.detail ORDER BY m.step) INTO blocked
	FROM @extschema@.flake_migrate(tbl, col, generator, NULL, true, also) m WHERE m.action = 'blocked';
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	IF blocked IS NULL THEN
		SELECT * INTO closure
		FROM flake_internal.flake_migrate_closure(tbl, col, key.key_attnum,
											   flake_internal.flake_migrate_also(tbl, col, key.key_attnum, also),
											   generator = 'ulidflake_next', false, true);
		SELECT array_agg(b.detail) INTO blocked
		FROM unnest(flake_internal.flake_migrate_online_blockers(closure.cols, target)) b WHERE b.action = 'blocked';
	END IF;
	IF blocked IS NOT NULL THEN
		FOREACH statement IN ARRAY blocked LOOP
			step := step + 1; phase := 'check'; action := 'blocked';
			RETURN NEXT;
		END LOOP;
		RETURN;
	END IF;

	FOR phase, rel, action, lock, statement, batch, total, resume IN
		SELECT * FROM flake_internal.flake_migrate_online_prepare(closure.cols, target)
	LOOP
		step := step + 1;
		RETURN NEXT;
	END LOOP;
	step := step + 1; phase := 'swap'; rel := tbl; action := 'put the copies in the tables'' place';
	lock := 'ACCESS EXCLUSIVE on every table changed, SHARE ROW EXCLUSIVE on those referencing them, a moment';
	statement := format('SELECT flake_internal.flake_migrate_online_swap(%L, %L, %L, %L)', tbl, col, generator, also);
	-- what it runs, for the dry run
	batch := array_to_string(flake_internal.flake_migrate_online_swap_sql(tbl, col, generator, closure.cols, target), E';\n  ');
	total := NULL; resume := NULL;
	RETURN NEXT;
	IF EXISTS (SELECT FROM pg_constraint f
			   WHERE f.contype = 'f' AND f.convalidated
				 AND (f.conrelid IN (SELECT t.relid FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t)
					  OR f.confrelid IN (SELECT t.relid FROM flake_internal.flake_migrate_online_tables(closure.cols, target) t))) THEN
		step := step + 1; phase := 'validate'; action := 'validate the foreign keys added NOT VALID';
		lock := 'SHARE UPDATE EXCLUSIVE on the referencing tables, ROW SHARE on the referenced ones';
		statement := format('SELECT flake_internal.flake_migrate_online_validate(%L)',
							format('%s.%I', (SELECT c.relnamespace::regnamespace FROM pg_class c WHERE c.oid = tbl),
								   flake_internal.flake_migrate_online_name((SELECT c.relname FROM pg_class c WHERE c.oid = tbl), '__flake_validate')));
		batch := NULL;
		RETURN NEXT;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_plan(regclass, name, text, text[]) IS
	'the steps left of an online migration to flake ids (run by the flake_migrate_online program), or what blocks it';

--
-- Undo an online migration that has not swapped yet: per table, one short
-- transaction drops the triggers, the log and the copy.  The tables were
-- never changed but for the triggers.
--
CREATE FUNCTION flake_internal.flake_migrate_online_undo(tbl regclass, col name DEFAULT 'id', also text[] DEFAULT NULL)
	RETURNS TABLE(step integer, phase text, rel regclass, action text, lock text, statement text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key			record;
	closure		record;
BEGIN
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	SELECT * INTO closure
	FROM flake_internal.flake_migrate_closure(tbl, col, key.key_attnum,
										   flake_internal.flake_migrate_also(tbl, col, key.key_attnum, also),
										   true, false, true);
	step := 0;
	FOR rel, statement IN
		SELECT t.relid::regclass,
			   format('DROP TRIGGER IF EXISTS zz_flake_migrate_online_log ON %s; DROP TRIGGER IF EXISTS zz_flake_migrate_online_no_truncate ON %1$s', t.rel)
			   || coalesce('; DROP TABLE ' || t.log_oid::regclass::text, '') || coalesce('; DROP TABLE ' || t.shadow_oid::regclass::text, '')
		FROM flake_internal.flake_migrate_online_tables(closure.cols, 'bigint') t
		WHERE t.shadow_oid IS NOT NULL OR t.log_oid IS NOT NULL
		   OR EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = t.relid AND g.tgname = 'zz_flake_migrate_online_log')
		ORDER BY t.relid DESC
	LOOP
		step := step + 1; phase := 'undo'; action := 'drop the copy, the log and the triggers';
		lock := 'ACCESS EXCLUSIVE on the table, a moment';
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_undo(regclass, name, text[]) IS
	'the steps that undo an online migration to flake ids that has not swapped yet';
