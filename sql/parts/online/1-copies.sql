------------------------------------------------------------------------
-- The online migration: flake_migrate()'s work while the application
-- keeps writing
--
-- flake_migrate() changes the types of the key and its referencing
-- columns with ALTER TABLE, which rewrites each table under ACCESS
-- EXCLUSIVE.  The online path instead copies each table whose columns
-- change type into a new table of the final shape (the shadow, named
-- TABLE__flake_new), as pg_repack does: the trigger
-- online_log() logs the key of every row the application
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
-- its dry run, and those of online_blockers().
------------------------------------------------------------------------

-- appends the key of each row written to the log; arguments: the log's
-- qualified name, the key column.  This and the next are replaced, not
-- dropped, by an upgrade: the triggers of an unfinished migration use them.
CREATE OR REPLACE FUNCTION flake_internal.online_log() RETURNS trigger
	AS 'MODULE_PATHNAME', 'flake_migrate_online_log' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.online_log() IS
	'trigger of an online migration: log the key of every row the application writes '
	'while the table is copied';

-- a TRUNCATE would not be logged: refused while the table is copied
CREATE OR REPLACE FUNCTION flake_internal.online_no_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'cannot truncate % while flake_migrate_online copies it', TG_TABLE_NAME
		USING ERRCODE = 'object_in_use',
			  HINT = 'Let the migration finish, or undo it with flake_migrate_online --undo.';
END
$$;
COMMENT ON FUNCTION flake_internal.online_no_truncate() IS
	'trigger of an online migration: refuse TRUNCATE of a table while it is copied';

--
-- A name made of base and suffix that fits in a name (63 bytes).  When it
-- does not fit, base is cut, whole characters at a time, and a hash of the
-- whole base goes between: two bases that begin alike (a table and its
-- primary key's index, TABLE_pkey) still give two names.  The checks
-- refuse a name that another object has, or that two of the names the
-- migration needs share (online_check_names).
--
CREATE FUNCTION flake_internal.online_name(base name, suffix text)
	RETURNS name
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CAST(left(base, n) || m.mark || suffix AS name)
	FROM (SELECT CASE WHEN octet_length(base || suffix) <= 63 THEN ''
					  ELSE '_' || lpad(to_hex(hashtextextended(base, 0) & 4294967295), 8, '0')
				 END) m(mark),
		 generate_series(length(base), 0, -1) n
	WHERE octet_length(left(base, n) || m.mark || suffix) <= 63
	ORDER BY n DESC
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.online_name(name, text) IS
	'online migration helper: base with suffix, cut to fit a name';

--
-- The copy or the log (what) of a table: the table of its owner whose
-- comment, set by the create step, records the table's oid, wherever it
-- is and whatever its name (the table may have been renamed meanwhile).
-- Only the owner of a table (or a superuser) may comment on it, so no
-- other role can make one.  The C trigger online_log()
-- checks its log the same way.  After the swap, the list of foreign keys
-- to validate is found so too (what: 'foreign keys to validate').
--
CREATE FUNCTION flake_internal.online_marked(rel oid, what text)
	RETURNS oid
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.oid
	FROM pg_description d
	JOIN pg_class m ON m.oid = d.objoid
	JOIN pg_class c ON c.oid = rel
	WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0
	  -- the text made once, not for each comment of the database
	  AND d.description = (SELECT format('flake_migrate_online: the %s of %s', what, rel))
	  AND m.relkind = 'r' AND m.relowner = c.relowner
	ORDER BY m.oid
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.online_marked(oid, text) IS
	'online migration helper: the copy or the log of a table, '
	'found by the oid their comment records';

--
-- Take back from a table the migration made (a copy, a log, the list of
-- foreign keys to validate) what ALTER DEFAULT PRIVILEGES gave other roles
-- when it was created, and give its owner every privilege (default
-- privileges may have taken some from it): only the owner may use it.  The
-- swap then grants exactly the table's own privileges.
--
CREATE FUNCTION flake_internal.online_private(rel regclass)
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
	SELECT string_agg(DISTINCT CASE WHEN g.grantee = 0 THEN 'PUBLIC'
									ELSE g.grantee::regrole::text END, ', ')
	INTO grantees
	FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) g
	WHERE c.oid = rel;
	IF grantees IS NOT NULL THEN
		EXECUTE format('REVOKE ALL ON %s FROM %s', rel, grantees);
	END IF;
	EXECUTE format('GRANT ALL ON %s TO %s', rel, owner);
END
$$;
COMMENT ON FUNCTION flake_internal.online_private(regclass) IS
	'online migration helper: take back the default privileges of a table the migration made';

--
-- The key's column and those that reference it, transitively (with the
-- columns named in also), and the tables the migration changes: what the
-- plan, the swap and undoing start from, as flake_migrate() finds them
-- (migrate_key(), migrate_also(), migrate_closure()).  Unless dry_run,
-- each table found besides the key's is locked as flake_migrate() locks
-- it, and the catalogs are read again until no new one appears.  to_ulid
-- counts every referencing column as changing, so that every table that
-- may have been copied is found.
--
CREATE FUNCTION flake_internal.online_closure(tbl regclass, col name, also text[],
											  to_ulid boolean, dry_run boolean,
											  OUT cols flake_internal.migrate_column[],
											  OUT touched oid[])
	LANGUAGE sql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT c.cols, c.touched
	FROM flake_internal.migrate_key(tbl, col) k,
		 flake_internal.migrate_closure(tbl, col, k.key_attnum,
										flake_internal.migrate_also(tbl, col, k.key_attnum, also),
										to_ulid, false, dry_run) c
$$;
COMMENT ON FUNCTION flake_internal.online_closure(regclass, name, text[], boolean, boolean) IS
	'online migration helper: the columns that reference the key, transitively, '
	'and the tables the migration changes (locked unless dry_run)';

--
-- The tables to copy (those with a column that changes type), each with
-- its shadow and log (their names, and their oids once they exist), the
-- column its batches go by (its primary key, or else a unique index on one
-- NOT NULL column), and the pieces of the statements that copy its rows:
-- the columns to insert (not the generated ones) and the values, the
-- changing columns cast to their new type.
--
CREATE FUNCTION flake_internal.online_tables(cols flake_internal.migrate_column[], target text)
	RETURNS TABLE(relid oid, rel text, shadow_name name, shadow text, shadow_oid oid,
				  log text, log_oid oid, batch_key name, batch_type text, batch_index oid,
				  key_cast text, inserts text, copies text, alters text, apply text[])
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	-- apply: the statements that apply the table's log: the logged keys'
	-- rows are deleted from the shadow and copied anew, then the entries
	-- read are deleted.  In one REPEATABLE READ transaction (or under the
	-- swap's locks) they leave the shadow equal to the table as of its
	-- snapshot, and running them again changes nothing more.  The log is
	-- analyzed first: its statistics are otherwise those of another pass
	-- (tens of thousands of entries after the copy, a few hundred later),
	-- and the planner would join it to the table and the shadow by
	-- scanning them whole, a second or more a pass for a few million rows,
	-- under the swap's locks too, instead of by their keys' indexes.
	SELECT t.*,
		   CASE WHEN t.batch_key IS NOT NULL
		   THEN ARRAY[format('ANALYZE %s', t.log),
					  format('DELETE FROM %s s USING %s l WHERE s.%I %s %s',
							 t.shadow, t.log, t.batch_key,
							 CASE WHEN t.key_cast <> '%s' AND target <> 'bigint'
								  THEN 'OPERATOR(@extschema@.=)' ELSE '=' END,
							 format(t.key_cast, 'l.k')),
					  format('INSERT INTO %s (%s) SELECT %s FROM %s '
							 'WHERE %I IN (SELECT l.k FROM %s l)',
							 t.shadow, t.inserts, t.copies, t.rel, t.batch_key, t.log),
					  format('DELETE FROM %s', t.log)] END
	FROM (
	SELECT c.oid AS relid, c.oid::regclass::text AS rel,
		   coalesce(sc.relname, s.shadow_name) AS shadow_name,
		   coalesce(sc.oid::regclass::text,
					format('%s.%I', c.relnamespace::regnamespace, s.shadow_name)) AS shadow,
		   sc.oid AS shadow_oid,
		   coalesce(lc.oid::regclass::text,
					format('%s.%I', c.relnamespace::regnamespace, s.log_name)) AS log,
		   lc.oid AS log_oid,
		   k.attname AS batch_key, format_type(k.atttypid, k.atttypmod) AS batch_type,
		   k.indexrelid AS batch_index,
		   CASE WHEN EXISTS (SELECT FROM unnest(cols) u
							 WHERE u.relid = c.oid AND u.attnum = k.attnum AND u.changes)
				THEN format('CAST(CAST(%%s AS bigint) AS %s)', target) ELSE '%s' END AS key_cast,
		   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
			FROM pg_attribute a
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			  AND a.attgenerated = '') AS inserts,
		   (SELECT string_agg(CASE WHEN u.changes
								   THEN format('CAST(CAST(%I AS bigint) AS %s)', a.attname, target)
								   ELSE quote_ident(a.attname) END, ', ' ORDER BY a.attnum)
			FROM pg_attribute a
			LEFT JOIN unnest(cols) u ON u.relid = a.attrelid AND u.attnum = a.attnum
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			  AND a.attgenerated = '') AS copies,
		   concat_ws(', ',
					 (SELECT string_agg(format('ALTER COLUMN %I TYPE %s '
											   'USING CAST(CAST(%1$I AS bigint) AS %2$s)',
											   a.attname, target)
										-- the key's sequence is the table's alone
										|| CASE WHEN u.relid = cols[1].relid
													 AND u.attnum = cols[1].attnum
												THEN format(', ALTER COLUMN %I DROP DEFAULT',
															a.attname)
												ELSE '' END,
										', ' ORDER BY a.attnum)
					  FROM unnest(cols) u
					  JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
					  WHERE u.relid = c.oid AND u.changes),
					 -- the columns' statistics targets and options, which LIKE leaves
					 (SELECT string_agg(concat_ws(', ',
												  CASE WHEN a.attstattarget >= 0
												  THEN format('ALTER COLUMN %I SET STATISTICS %s',
															  a.attname, a.attstattarget) END,
												  CASE WHEN cardinality(a.attoptions) > 0
												  THEN format('ALTER COLUMN %I SET (%s)', a.attname,
															  array_to_string(a.attoptions, ', '))
												  END),
										', ' ORDER BY a.attnum)
					  FROM pg_attribute a
					  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
						AND (a.attstattarget >= 0 OR cardinality(a.attoptions) > 0))) AS alters
	FROM pg_class c
	CROSS JOIN LATERAL (SELECT flake_internal.online_name(c.relname, '__flake_new') AS shadow_name,
							   flake_internal.online_name(c.relname, '__flake_log') AS log_name) s
	LEFT JOIN pg_class sc ON sc.oid = flake_internal.online_marked(c.oid, 'copy')
	LEFT JOIN pg_class lc ON lc.oid = flake_internal.online_marked(c.oid, 'log')
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
COMMENT ON FUNCTION flake_internal.online_tables(flake_internal.migrate_column[], text) IS
	'online migration helper: the tables to copy, their shadows and logs, '
	'and how to copy their rows';
