------------------------------------------------------------------------
-- The online migration: flake_migrate()'s work while the application
-- keeps writing
--
-- flake_migrate() changes the types of the key and its referencing
-- columns with ALTER TABLE, which rewrites each table under ACCESS
-- EXCLUSIVE.  The online path instead adds a column of the new type next
-- to each column that changes, keeps it equal to the old one with the
-- flake_migrate_sync() trigger, fills it in batches that commit, builds
-- its indexes CONCURRENTLY, adds its foreign keys and NOT NULL checks NOT
-- VALID and validates them, and swaps the new columns in with one short
-- transaction.  CREATE INDEX CONCURRENTLY cannot run in a function, so the
-- functions here only plan: the client program flake_migrate_online
-- (client/) runs the steps, with lock_timeout and retries.
--
-- The plan is made again from the catalogs at every run: a step whose
-- object is there already is left out, so a run that stopped anywhere is
-- continued by running the command again, and the migration's state is the
-- schema itself (the new columns, named COLUMN__flake, and the trigger
-- zz_flake_migrate_sync).  Until the swap the old columns stay the key, so
-- the application works at every point.  The checks are flake_migrate()'s
-- own, through its dry run, and those of flake_migrate_online_blockers().
------------------------------------------------------------------------

-- copies every old column into its new one; arguments: 'old:new', ...
CREATE FUNCTION flake_internal.flake_migrate_sync() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.flake_migrate_sync() IS
	'trigger of an online migration: keep each new column (arguments old:new) equal to the old one while the application writes';

--
-- A name made of base and suffix that fits in a name (63 bytes): base is
-- cut, whole characters at a time.
--
CREATE FUNCTION flake_internal.flake_migrate_online_name(base name, suffix text)
	RETURNS name
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CAST(left(base, n) || suffix AS name)
	FROM generate_series(length(base), 0, -1) n
	WHERE octet_length(left(base, n) || suffix) <= 63
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_name(name, text) IS
	'online migration helper: base with suffix, cut to fit a name';

--
-- The columns that change, each with the name of its new column, and the
-- column each table's batches go by: its primary key, or else a unique
-- index, if it is on one NOT NULL column.
--
CREATE FUNCTION flake_internal.flake_migrate_online_columns(cols flake_internal.flake_migrate_column[])
	RETURNS TABLE(relid oid, attnum int2, old_name name, new_name name, notnull boolean,
				  batch_key name, batch_type text)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT u.relid, u.attnum, a.attname, flake_internal.flake_migrate_online_name(a.attname, '__flake'),
		   a.attnotnull, k.attname, format_type(k.atttypid, k.atttypmod)
	FROM unnest(cols) u
	JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
	LEFT JOIN LATERAL (
		SELECT ka.attname, ka.atttypid, ka.atttypmod
		FROM pg_index x
		JOIN pg_attribute ka ON ka.attrelid = x.indrelid AND ka.attnum = x.indkey[0]
		WHERE x.indrelid = u.relid AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
		  AND x.indkey[0] <> 0 AND x.indpred IS NULL AND ka.attnotnull
		ORDER BY x.indisprimary DESC, x.indexrelid
		LIMIT 1) k ON true
	WHERE u.changes
	ORDER BY u.relid, u.attnum
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_columns(flake_internal.flake_migrate_column[]) IS
	'online migration helper: the columns that change, their new columns, and the column each table is batched by';

--
-- What the online path cannot do, beyond flake_migrate()'s own checks:
-- tables it cannot batch, backfill updates that would run triggers or
-- rules or miss rows to row security, and objects on a changing column
-- that cannot be carried to the new column (CHECK constraints, index
-- expressions and predicates, exclusion constraints, column privileges,
-- statistics, deferrable keys, SET NULL column lists, other operator
-- classes).  Each is a blocked step.
--
CREATE FUNCTION flake_internal.flake_migrate_online_blockers(cols flake_internal.flake_migrate_column[])
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	found		flake_internal.flake_migrate_step[] := '{}';
	list		text;
BEGIN
	SELECT string_agg(DISTINCT c.relid::regclass::text, ', ') INTO list
	FROM flake_internal.flake_migrate_online_columns(cols) c WHERE c.batch_key IS NULL;
	IF list IS NOT NULL THEN
		found := found || flake_internal.flake_migrate_blocked(
			'tables without a key to fill them in batches', '55000',
			format('Tables: %s. The online path fills the new columns in batches by a primary key or unique index on one NOT NULL column.', list));
	END IF;

	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format('trigger %I on %s', g.tgname, g.tgrelid::regclass) AS x
		FROM pg_trigger g
		WHERE g.tgrelid IN (SELECT c.relid FROM unnest(cols) c WHERE c.changes)
		  AND NOT g.tgisinternal AND g.tgenabled <> 'D' AND g.tgtype & 1 = 1 AND g.tgtype & 16 = 16
		  AND g.tgattr = '' AND g.tgname <> 'zz_flake_migrate_sync'
		UNION
		SELECT format('rule %I on %s', w.rulename, w.ev_class::regclass)
		FROM pg_rewrite w
		WHERE w.ev_class IN (SELECT c.relid FROM unnest(cols) c WHERE c.changes) AND w.ev_type = '2'
		UNION
		SELECT format('%s forces row level security', r.oid::regclass)
		FROM pg_class r
		WHERE r.oid IN (SELECT c.relid FROM unnest(cols) c WHERE c.changes) AND r.relforcerowsecurity) s;
	IF list IS NOT NULL THEN
		found := found || flake_internal.flake_migrate_blocked(
			'the batches that fill the new columns would run triggers or rules, or miss rows', '55000',
			format('%s. Each batch updates its rows; row triggers on UPDATE (without a column list) and rules would act on them.', list));
	END IF;

	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format('%s %I on %s', CASE k.contype WHEN 'c' THEN 'check constraint' WHEN 'x' THEN 'exclusion constraint'
									 ELSE 'deferrable key' END, k.conname, k.conrelid::regclass) AS x
		FROM unnest(cols) u
		JOIN pg_constraint k ON k.conrelid = u.relid AND u.attnum = ANY (k.conkey)
		WHERE u.changes AND (k.contype IN ('c', 'x') OR (k.contype IN ('p', 'u') AND k.condeferrable))
		UNION
		SELECT format('foreign key %I on %s (ON DELETE SET NULL or SET DEFAULT of some columns)', k.conname, k.conrelid::regclass)
		FROM unnest(cols) u
		JOIN pg_constraint k ON k.contype = 'f' AND ((k.conrelid = u.relid AND u.attnum = ANY (k.conkey))
													 OR (k.confrelid = u.relid AND u.attnum = ANY (k.confkey)))
		WHERE u.changes AND k.confdelsetcols IS NOT NULL AND cardinality(k.confdelsetcols) > 0
		UNION
		SELECT format('index %s (an expression, a predicate or an operator class on the column)', x.indexrelid::regclass)
		FROM unnest(cols) u
		JOIN pg_index x ON x.indrelid = u.relid
		WHERE u.changes AND (
			(u.attnum = ANY (x.indkey) AND EXISTS (SELECT FROM generate_series(0, x.indnkeyatts - 1) n
												   JOIN pg_opclass o ON o.oid = x.indclass[n]
												   WHERE x.indkey[n] = u.attnum AND NOT o.opcdefault))
			OR ((x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
				AND EXISTS (SELECT FROM pg_depend d
							WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
							  AND d.refobjid = u.relid AND d.refobjsubid = u.attnum)))
		UNION
		SELECT format('privileges on column %s.%I', a.attrelid::regclass, a.attname)
		FROM unnest(cols) u JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
		WHERE u.changes AND a.attacl IS NOT NULL
		UNION
		SELECT format('statistics object %I', s.stxname)
		FROM unnest(cols) u JOIN pg_statistic_ext s ON s.stxrelid = u.relid AND u.attnum = ANY (s.stxkeys)
		WHERE u.changes
		UNION
		SELECT format('column %s.%I exists already', c.relid::regclass, c.new_name)
		FROM flake_internal.flake_migrate_online_columns(cols) c
		JOIN pg_attribute a ON a.attrelid = c.relid AND a.attname = c.new_name AND NOT a.attisdropped
		WHERE NOT EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = c.relid AND g.tgname = 'zz_flake_migrate_sync')) s;
	IF list IS NOT NULL THEN
		found := found || flake_internal.flake_migrate_blocked(
			'objects on the changing columns that the online path cannot carry to the new columns', '0A000',
			format('%s.', list));
	END IF;
	IF cardinality(found) > 0 THEN
		found := found || ROW('note', 'flake_migrate() (offline) may still migrate these tables; or change the objects above first', false, false, NULL)::flake_internal.flake_migrate_step;
	END IF;
	RETURN found;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_blockers(flake_internal.flake_migrate_column[]) IS
	'online migration helper: what the online path cannot do, as blocked steps';

--
-- The indexes on changing columns, each with the CREATE INDEX CONCURRENTLY
-- of its copy on the new columns (same method, order, INCLUDE, storage and
-- uniqueness) and the statements that put the copy in its place at the
-- swap: a primary key or unique constraint added USING INDEX under the old
-- name, or the index renamed.
--
CREATE FUNCTION flake_internal.flake_migrate_online_indexes(cols flake_internal.flake_migrate_column[])
	RETURNS TABLE(relid oid, new_index name, new_valid boolean, create_sql text, swap_sql text)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH m AS (
		SELECT c.relid, c.attnum, c.new_name FROM flake_internal.flake_migrate_online_columns(cols) c
	), ix AS (
		SELECT DISTINCT x.indexrelid, x.indrelid, ic.relname, ic.relnamespace
		FROM m JOIN pg_index x ON x.indrelid = m.relid AND m.attnum = ANY (x.indkey)
		JOIN pg_class ic ON ic.oid = x.indexrelid
	)
	SELECT ix.indrelid, n.new_index, nx.indisvalid,
		   format('CREATE %sINDEX CONCURRENTLY %I ON %s USING %I (%s)%s%s%s%s%s',
				  CASE WHEN x.indisunique THEN 'UNIQUE ' END, n.new_index, ix.indrelid::regclass, am.amname,
				  (SELECT string_agg(coalesce(quote_ident(m.new_name), pg_get_indexdef(x.indexrelid, k + 1, false))
									 || CASE WHEN x.indcollation[k] <> 0 AND x.indcollation[k] <> coalesce(a.attcollation, 0)
										THEN ' COLLATE ' || x.indcollation[k]::regcollation::text ELSE '' END
									 || CASE WHEN NOT o.opcdefault
										THEN format(' %I.%I', o.opcnamespace::regnamespace, o.opcname) ELSE '' END
									 || CASE WHEN x.indoption[k] & 1 = 1 THEN ' DESC' ELSE '' END
									 || CASE WHEN x.indoption[k] & 3 = 2 THEN ' NULLS FIRST'
											 WHEN x.indoption[k] & 3 = 1 THEN ' NULLS LAST' ELSE '' END,
									 ', ' ORDER BY k)
				   FROM generate_series(0, x.indnkeyatts - 1) k
				   JOIN pg_opclass o ON o.oid = x.indclass[k]
				   LEFT JOIN m ON m.relid = x.indrelid AND m.attnum = x.indkey[k]
				   LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[k]),
				  (SELECT ' INCLUDE (' || string_agg(coalesce(quote_ident(m.new_name), quote_ident(a.attname)), ', ' ORDER BY k) || ')'
				   FROM generate_series(x.indnkeyatts, x.indnatts - 1) k
				   JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[k]
				   LEFT JOIN m ON m.relid = x.indrelid AND m.attnum = x.indkey[k]),
				  CASE WHEN x.indnullsnotdistinct THEN ' NULLS NOT DISTINCT' END,
				  ' WITH (' || array_to_string(ic.reloptions, ', ') || ')',
				  ' TABLESPACE ' || quote_ident((SELECT t.spcname FROM pg_tablespace t WHERE t.oid = ic.reltablespace)),
				  ' WHERE ' || pg_get_expr(x.indpred, x.indrelid)),
		   CASE WHEN k.contype IN ('p', 'u')
				THEN format('ALTER TABLE %s ADD CONSTRAINT %I %s USING INDEX %I',
							ix.indrelid::regclass, k.conname,
							CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END, n.new_index)
				ELSE format('ALTER INDEX %I.%I RENAME TO %I', ix.relnamespace::regnamespace, n.new_index, ix.relname) END
		   || coalesce('; COMMENT ON CONSTRAINT ' || quote_ident(k.conname) || ' ON ' || ix.indrelid::regclass::text || ' IS '
					   || quote_literal(obj_description(k.oid, 'pg_constraint')), '')
		   || coalesce(format('; COMMENT ON INDEX %I.%I IS ', ix.relnamespace::regnamespace, ix.relname)
					   || quote_literal(obj_description(ix.indexrelid, 'pg_class')), '')
	FROM ix
	JOIN pg_index x ON x.indexrelid = ix.indexrelid
	JOIN pg_class ic ON ic.oid = ix.indexrelid
	JOIN pg_am am ON am.oid = ic.relam
	CROSS JOIN LATERAL (SELECT flake_internal.flake_migrate_online_name(ix.relname, '__flake') AS new_index) n
	LEFT JOIN pg_class nc ON nc.relname = n.new_index AND nc.relnamespace = ix.relnamespace
	LEFT JOIN pg_index nx ON nx.indexrelid = nc.oid
	LEFT JOIN pg_constraint k ON k.conindid = ix.indexrelid AND k.conrelid = ix.indrelid AND k.contype IN ('p', 'u')
	ORDER BY ix.indrelid, ix.relname
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_indexes(flake_internal.flake_migrate_column[]) IS
	'online migration helper: the indexes on the changing columns, how to copy them concurrently and swap the copies in';

--
-- The foreign keys on or into changing columns, each with the definition
-- of its copy on the new columns (same match, actions and deferral), added
-- NOT VALID and validated if the old one is, and renamed at the swap.
--
CREATE FUNCTION flake_internal.flake_migrate_online_foreign_keys(cols flake_internal.flake_migrate_column[])
	RETURNS TABLE(conrelid oid, old_name name, new_name name, new_exists boolean, new_valid boolean,
				  validate boolean, add_sql text, swap_sql text)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH m AS (
		SELECT c.relid, c.attnum, c.new_name FROM flake_internal.flake_migrate_online_columns(cols) c
	)
	SELECT f.conrelid, f.conname, n.new_name, nf.oid IS NOT NULL, coalesce(nf.convalidated, false), f.convalidated,
		   format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s)%s ON UPDATE %s ON DELETE %s%s NOT VALID',
				  f.conrelid::regclass, n.new_name,
				  (SELECT string_agg(coalesce(quote_ident(m.new_name), quote_ident(a.attname)), ', ' ORDER BY k)
				   FROM generate_subscripts(f.conkey, 1) k
				   JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = f.conkey[k]
				   LEFT JOIN m ON m.relid = f.conrelid AND m.attnum = f.conkey[k]),
				  f.confrelid::regclass,
				  (SELECT string_agg(coalesce(quote_ident(m.new_name), quote_ident(a.attname)), ', ' ORDER BY k)
				   FROM generate_subscripts(f.confkey, 1) k
				   JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = f.confkey[k]
				   LEFT JOIN m ON m.relid = f.confrelid AND m.attnum = f.confkey[k]),
				  CASE f.confmatchtype WHEN 'f' THEN ' MATCH FULL' ELSE '' END,
				  CASE f.confupdtype WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
									 WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END,
				  CASE f.confdeltype WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
									 WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END,
				  CASE WHEN f.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED'
					   WHEN f.condeferrable THEN ' DEFERRABLE' ELSE '' END),
		   format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', f.conrelid::regclass, n.new_name, f.conname)
		   || coalesce(format('; COMMENT ON CONSTRAINT %I ON %s IS ', f.conname, f.conrelid::regclass)
					   || quote_literal(obj_description(f.oid, 'pg_constraint')), '')
	FROM pg_constraint f
	CROSS JOIN LATERAL (SELECT flake_internal.flake_migrate_online_name(f.conname, '__flake') AS new_name) n
	LEFT JOIN pg_constraint nf ON nf.conrelid = f.conrelid AND nf.conname = n.new_name
	WHERE f.contype = 'f'
	  AND (EXISTS (SELECT FROM m WHERE m.relid = f.conrelid AND m.attnum = ANY (f.conkey))
		   OR EXISTS (SELECT FROM m WHERE m.relid = f.confrelid AND m.attnum = ANY (f.confkey)))
	ORDER BY f.conrelid, f.conname
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_foreign_keys(flake_internal.flake_migrate_column[]) IS
	'online migration helper: the foreign keys on or into the changing columns, how to copy them and swap the copies in';

--
-- The steps before the swap that are not done yet, in order: add the new
-- columns and the trigger, fill them, analyze them, copy the indexes, add
-- the NOT NULL checks and foreign keys NOT VALID, validate them.  Each
-- step says the strongest lock it takes.
--
CREATE FUNCTION flake_internal.flake_migrate_online_prepare(cols flake_internal.flake_migrate_column[], target text)
	RETURNS TABLE(phase text, rel regclass, action text, lock text, statement text, batch text, total bigint)
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	r			record;
	valid		boolean;		-- a NOT NULL check: NULL while it is not there
BEGIN
	FOR t IN
		SELECT c.relid, min(c.batch_key) AS batch_key, min(c.batch_type) AS batch_type,
			   string_agg(format('ADD COLUMN IF NOT EXISTS %I %s', c.new_name, target), ', ' ORDER BY c.attnum) AS adds,
			   string_agg(quote_literal(c.old_name || ':' || c.new_name), ', ' ORDER BY c.attnum) AS args,
			   string_agg(format('%I = CAST(CAST(%I AS bigint) AS %s)', c.new_name, c.old_name, target), ', ' ORDER BY c.attnum) AS sets,
			   string_agg(format('CAST(%I AS bigint) IS DISTINCT FROM CAST(%I AS bigint)', c.new_name, c.old_name), ' OR ' ORDER BY c.attnum) AS differ,
			   string_agg(quote_ident(c.new_name), ', ' ORDER BY c.attnum) AS news,
			   bool_and(EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.relid AND a.attname = c.new_name AND NOT a.attisdropped)
						AND EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = c.relid AND g.tgname = 'zz_flake_migrate_sync')) AS expanded
		FROM flake_internal.flake_migrate_online_columns(cols) c
		GROUP BY c.relid ORDER BY c.relid
	LOOP
		rel := t.relid;
		IF NOT t.expanded THEN
			phase := 'expand'; action := 'add columns and trigger'; lock := 'ACCESS EXCLUSIVE, a moment';
			statement := format('ALTER TABLE %s %s; CREATE OR REPLACE TRIGGER zz_flake_migrate_sync BEFORE INSERT OR UPDATE ON %1$s FOR EACH ROW EXECUTE FUNCTION flake_internal.flake_migrate_sync(%3$s)',
								t.relid::regclass, t.adds, t.args);
			batch := NULL; total := NULL;
			RETURN NEXT;
		END IF;
		-- $1: the last key of the previous batch (NULL at first), $2 the
		-- last of this one; batch gives $2 from $1 and the batch size
		phase := 'backfill'; action := 'fill the new columns in batches'; lock := 'ROW EXCLUSIVE, the rows of one batch';
		statement := format('UPDATE %s SET %s WHERE (CAST($1 AS text) IS NULL OR %I > CAST(CAST($1 AS text) AS %s)) AND %3$I <= CAST(CAST($2 AS text) AS %4$s) AND (%s)',
							t.relid::regclass, t.sets, t.batch_key, t.batch_type, t.differ);
		batch := format('SELECT CAST(max(%1$I) AS text) FROM (SELECT %1$I FROM %2$s WHERE CAST($1 AS text) IS NULL OR %1$I > CAST(CAST($1 AS text) AS %3$s) ORDER BY %1$I LIMIT CAST(CAST($2 AS text) AS bigint)) s',
						t.batch_key, t.relid::regclass, t.batch_type);
		total := (SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c WHERE c.oid = t.relid);
		RETURN NEXT;
		batch := NULL; total := NULL;
		phase := 'analyze'; action := 'statistics of the new columns'; lock := 'SHARE UPDATE EXCLUSIVE';
		statement := format('ANALYZE %s (%s)', t.relid::regclass, t.news);
		RETURN NEXT;
	END LOOP;

	FOR r IN SELECT * FROM flake_internal.flake_migrate_online_indexes(cols) x WHERE x.new_valid IS NOT TRUE LOOP
		rel := r.relid; phase := 'index'; lock := 'SHARE UPDATE EXCLUSIVE (CONCURRENTLY)';
		IF r.new_valid IS NOT NULL THEN
			-- an index build that stopped leaves an invalid index
			action := 'drop an unfinished index';
			statement := format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', (SELECT c.relnamespace::regnamespace FROM pg_class c WHERE c.oid = r.relid), r.new_index);
			RETURN NEXT;
		END IF;
		action := 'copy an index'; statement := r.create_sql;
		RETURN NEXT;
	END LOOP;

	FOR r IN
		SELECT c.relid, c.new_name, flake_internal.flake_migrate_online_name(c.new_name, '_not_null') AS check_name
		FROM flake_internal.flake_migrate_online_columns(cols) c WHERE c.notnull
	LOOP
		rel := r.relid; phase := 'constrain';
		valid := (SELECT k.convalidated FROM pg_constraint k WHERE k.conrelid = r.relid AND k.conname = r.check_name);
		IF valid IS NULL THEN
			action := 'add a NOT NULL check'; lock := 'ACCESS EXCLUSIVE, a moment';
			statement := format('ALTER TABLE %s ADD CONSTRAINT %I CHECK (%I IS NOT NULL) NOT VALID', r.relid::regclass, r.check_name, r.new_name);
			RETURN NEXT;
		END IF;
		IF valid IS NOT TRUE THEN
			phase := 'validate'; action := 'validate a NOT NULL check'; lock := 'SHARE UPDATE EXCLUSIVE';
			statement := format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.relid::regclass, r.check_name);
			RETURN NEXT;
		END IF;
	END LOOP;
	FOR r IN SELECT * FROM flake_internal.flake_migrate_online_foreign_keys(cols) LOOP
		rel := r.conrelid;
		IF NOT r.new_exists THEN
			phase := 'constrain'; action := 'add a foreign key'; lock := 'SHARE ROW EXCLUSIVE on both tables, a moment';
			statement := r.add_sql;
			RETURN NEXT;
		END IF;
		IF r.validate AND NOT r.new_valid THEN
			phase := 'validate'; action := 'validate a foreign key'; lock := 'SHARE UPDATE EXCLUSIVE, ROW SHARE on the referenced table';
			statement := format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.conrelid::regclass, r.new_name);
			RETURN NEXT;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_prepare(flake_internal.flake_migrate_column[], text) IS
	'online migration helper: the steps before the swap that are not done yet';

--
-- The swap, one transaction: lock the tables, drop the old foreign keys,
-- detach the key from its sequence or identity, drop the old columns (with
-- their indexes and constraints) and the trigger, give the new columns the
-- old names, NOT NULL (the validated check spares the scan), the indexes
-- and constraints their old names, and the key the generator's default.
--
CREATE FUNCTION flake_internal.flake_migrate_online_swap(tbl regclass, col name, generator text,
										  cols flake_internal.flake_migrate_column[], touched oid[])
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key			record;
	stmts		text[];
	r			record;
BEGIN
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	stmts := ARRAY[format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE',
						  (SELECT string_agg(t::regclass::text, ', ' ORDER BY o) FROM unnest(touched) WITH ORDINALITY u(t, o)))];
	SELECT stmts || coalesce(array_agg(format('ALTER TABLE %s DROP CONSTRAINT %I', f.conrelid::regclass, f.old_name)), '{}')
	INTO stmts FROM flake_internal.flake_migrate_online_foreign_keys(cols) f;
	SELECT stmts || coalesce(array_agg(s.detail ORDER BY o), '{}') INTO stmts
	FROM unnest(flake_internal.flake_migrate_detach(tbl, col, key.key_attnum, key.identity_seq,
												 key.default_oid, key.default_seqs)) WITH ORDINALITY s(action, detail, run, counted, o)
	WHERE s.run;
	FOR r IN
		SELECT c.relid, string_agg(format('DROP COLUMN %I', c.old_name), ', ' ORDER BY c.attnum) AS drops,
			   array_agg(format('ALTER TABLE %s RENAME COLUMN %I TO %I', c.relid::regclass, c.new_name, c.old_name)
						 || CASE WHEN c.notnull
							THEN format('; ALTER TABLE %s ALTER COLUMN %I SET NOT NULL; ALTER TABLE %1$s DROP CONSTRAINT %3$I',
										c.relid::regclass, c.old_name,
										flake_internal.flake_migrate_online_name(c.new_name, '_not_null')) ELSE '' END
						 || coalesce(format('; COMMENT ON COLUMN %s.%I IS ', c.relid::regclass, c.old_name)
									 || quote_literal(col_description(c.relid, c.attnum)), '')
						 ORDER BY c.attnum) AS renames
		FROM flake_internal.flake_migrate_online_columns(cols) c
		GROUP BY c.relid ORDER BY c.relid
	LOOP
		stmts := stmts || format('DROP TRIGGER zz_flake_migrate_sync ON %s', r.relid::regclass)
					   || format('ALTER TABLE %s %s', r.relid::regclass, r.drops) || r.renames;
	END LOOP;
	SELECT stmts || coalesce(array_agg(x.swap_sql), '{}') INTO stmts FROM flake_internal.flake_migrate_online_indexes(cols) x;
	SELECT stmts || coalesce(array_agg(f.swap_sql), '{}') INTO stmts FROM flake_internal.flake_migrate_online_foreign_keys(cols) f;
	stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT @extschema@.%I()', tbl, col, generator);
	RETURN array_to_string(stmts, '; ');
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_swap(regclass, name, text, flake_internal.flake_migrate_column[], oid[]) IS
	'online migration helper: the statements of the swap, run in one short transaction';

------------------------------------------------------------------------
-- flake_migrate_online_plan() and flake_migrate_online_undo(): what the
-- client runs
------------------------------------------------------------------------

--
-- The steps of an online migration that are left to do, after the checks:
-- blocked steps (flake_migrate()'s dry run, then the online path's own)
-- and nothing else when something is in the way; a single done step when
-- the key has its generator already and no new column is left.
--
CREATE FUNCTION flake_internal.flake_migrate_online_plan(tbl regclass, col name DEFAULT 'id',
										  generator text DEFAULT 'flake_next',
										  also text[] DEFAULT NULL)
	RETURNS TABLE(step integer, phase text, rel regclass, action text, lock text,
				  statement text, batch text, total bigint)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key			record;
	closure		record;
	blocked		text[];
	r			record;
BEGIN
	PERFORM flake_internal.flake_migrate_arguments(tbl, col, generator, false, NULL);
	step := 0;
	IF EXISTS (SELECT FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			   WHERE a.attrelid = tbl AND a.attname = col
				 AND pg_get_expr(d.adbin, d.adrelid) ~ ('^(.*\.)?' || generator || '\(\)$'))
	   AND NOT EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = tbl AND g.tgname = 'zz_flake_migrate_sync') THEN
		step := 1; phase := 'done'; rel := tbl; action := 'note';
		statement := format('%s.%I takes its ids from %s() already', tbl, col, generator);
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
		FROM unnest(flake_internal.flake_migrate_online_blockers(closure.cols)) b WHERE b.action = 'blocked';
	END IF;
	IF blocked IS NOT NULL THEN
		FOREACH statement IN ARRAY blocked LOOP
			step := step + 1; phase := 'check'; rel := tbl; action := 'blocked';
			RETURN NEXT;
		END LOOP;
		RETURN;
	END IF;

	FOR r IN
		SELECT * FROM flake_internal.flake_migrate_online_prepare(
			closure.cols, CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END)
	LOOP
		step := step + 1;
		SELECT r.phase, r.rel, r.action, r.lock, r.statement, r.batch, r.total
		INTO phase, rel, action, lock, statement, batch, total;
		RETURN NEXT;
	END LOOP;
	step := step + 1; phase := 'swap'; rel := tbl; action := 'swap the new columns in';
	lock := 'ACCESS EXCLUSIVE on every table, a moment'; batch := NULL; total := NULL;
	statement := flake_internal.flake_migrate_online_swap(tbl, col, generator, closure.cols, closure.touched);
	RETURN NEXT;

	-- the backfill gave every row a new version, with an entry in each
	-- index that stays: rebuild those, and vacuum the tables fully
	lock := 'SHARE UPDATE EXCLUSIVE (CONCURRENTLY)';
	FOR rel, statement IN
		SELECT x.indrelid::regclass, format('REINDEX INDEX CONCURRENTLY %s', x.indexrelid::regclass)
		FROM pg_index x
		WHERE x.indrelid IN (SELECT c.relid FROM flake_internal.flake_migrate_online_columns(closure.cols) c)
		  AND NOT EXISTS (SELECT FROM flake_internal.flake_migrate_online_columns(closure.cols) c
						  LEFT JOIN pg_attribute n ON n.attrelid = c.relid AND n.attname = c.new_name
						  WHERE c.relid = x.indrelid AND (c.attnum = ANY (x.indkey) OR n.attnum = ANY (x.indkey)))
		ORDER BY x.indrelid, x.indexrelid
	LOOP
		step := step + 1; phase := 'cleanup'; action := 'rebuild an index';
		RETURN NEXT;
	END LOOP;
	FOR rel IN SELECT DISTINCT c.relid::regclass FROM flake_internal.flake_migrate_online_columns(closure.cols) c LOOP
		step := step + 1; phase := 'cleanup'; action := 'vacuum'; lock := 'SHARE UPDATE EXCLUSIVE';
		statement := format('VACUUM (ANALYZE) %s', rel);
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_plan(regclass, name, text, text[]) IS
	'the steps left of an online migration to flake ids (run by the flake_migrate_online program), or what blocks it';

--
-- Undo an online migration that has not swapped yet: per table, one short
-- transaction drops the trigger and the new columns, with the indexes and
-- constraints on them (CASCADE: also the foreign keys of other tables into
-- them).  The old columns were never changed.
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
		SELECT c.relid::regclass,
			   format('DROP TRIGGER IF EXISTS zz_flake_migrate_sync ON %s; ALTER TABLE %1$s %s', c.relid::regclass,
					  string_agg(format('DROP COLUMN IF EXISTS %I CASCADE', c.new_name), ', ' ORDER BY c.attnum))
		FROM flake_internal.flake_migrate_online_columns(closure.cols) c
		WHERE EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = c.relid AND g.tgname = 'zz_flake_migrate_sync')
		   OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.relid AND a.attname = c.new_name AND NOT a.attisdropped)
		GROUP BY c.relid ORDER BY c.relid DESC
	LOOP
		step := step + 1; phase := 'undo'; action := 'drop the new columns and trigger';
		lock := 'ACCESS EXCLUSIVE on the table and the tables of foreign keys into its new columns, a moment';
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_online_undo(regclass, name, text[]) IS
	'the steps that undo an online migration to flake ids that has not swapped yet';
