-- The online migration, 3: the copies' indexes and the statements that copy the rows

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
CREATE FUNCTION flake_internal.online_indexes(cols flake_internal.migrate_column[], target text)
	RETURNS TABLE(relid oid, index_name name, new_index text, new_exists boolean, batch boolean,
				  create_sql text, swap_sql text, new_oid oid)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.relid, ic.relname, format('%s.%I', ic.relnamespace::regnamespace, n.new_index),
		   coalesce(pg_get_indexdef(nc.oid) = q.create_sql, false),
		   x.indexrelid = t.batch_index,
		   CASE WHEN pg_get_indexdef(nc.oid) <> q.create_sql
				THEN format('DROP INDEX %s; ', nc.oid::regclass) ELSE '' END
		   || q.create_sql,
		   CASE WHEN k.contype IN ('p', 'u')
				THEN format('ALTER TABLE %s ADD CONSTRAINT %I %s USING INDEX %I', t.rel, k.conname,
							CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
							n.new_index)
					 || coalesce(format('; COMMENT ON CONSTRAINT %I ON %s IS %L', k.conname, t.rel,
										obj_description(k.oid, 'pg_constraint')), '')
				ELSE format('ALTER INDEX %s.%I RENAME TO %I', ic.relnamespace::regnamespace,
							n.new_index, ic.relname) END
		   || coalesce(format('; COMMENT ON INDEX %s.%I IS %L', ic.relnamespace::regnamespace,
							  ic.relname, obj_description(ic.oid, 'pg_class')), '')
		   || CASE WHEN x.indisclustered
				   THEN format('; ALTER TABLE %s CLUSTER ON %I', t.rel, ic.relname) ELSE '' END,
		   nc.oid
	FROM flake_internal.online_tables(cols, target) t
	JOIN pg_index x ON x.indrelid = t.relid
	JOIN pg_class ic ON ic.oid = x.indexrelid
	CROSS JOIN LATERAL (SELECT flake_internal.online_name(ic.relname, '__flake_new') AS new_index) n
	CROSS JOIN LATERAL (SELECT pg_get_indexdef(x.indexrelid) AS def,
							   format('CREATE %sINDEX %I ON %s.%I USING ',
									  CASE WHEN x.indisunique THEN 'UNIQUE ' END,
									  ic.relname, ic.relnamespace::regnamespace,
									  (SELECT c.relname FROM pg_class c WHERE c.oid = t.relid))
							   AS prefix) d
	CROSS JOIN LATERAL (SELECT format('CREATE %sINDEX %I ON %s USING ',
									  CASE WHEN x.indisunique THEN 'UNIQUE ' END,
									  n.new_index, t.shadow)
							   || substr(d.def, length(d.prefix) + 1) AS create_sql) q
	-- the copy exists: an index of that name on the shadow (another object of
	-- that name is refused by the checks)
	LEFT JOIN (pg_class nc JOIN pg_index nx ON nx.indexrelid = nc.oid)
		ON nc.relname = n.new_index AND nx.indrelid = t.shadow_oid
	LEFT JOIN pg_constraint k
		ON k.conindid = x.indexrelid AND k.conrelid = x.indrelid AND k.contype IN ('p', 'u')
	ORDER BY t.relid, x.indisprimary DESC, ic.relname
$$;
COMMENT ON FUNCTION flake_internal.online_indexes(flake_internal.migrate_column[], text) IS
	'online migration helper: the indexes of the copied tables, '
	'how to copy them and swap the copies in';

--
-- The indexes of the copies that are no copy of an index of their table:
-- the table's index was dropped, or renamed, while it was copied.
--
CREATE FUNCTION flake_internal.online_stale_indexes(cols flake_internal.migrate_column[],
													target text)
	RETURNS TABLE(relid oid, index regclass)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.relid, nx.indexrelid::regclass
	FROM flake_internal.online_tables(cols, target) t
	JOIN pg_index nx ON nx.indrelid = t.shadow_oid
	WHERE nx.indexrelid NOT IN (SELECT x.new_oid FROM flake_internal.online_indexes(cols, target) x
								WHERE x.new_oid IS NOT NULL)
	ORDER BY t.relid, nx.indexrelid
$$;
COMMENT ON FUNCTION flake_internal.online_stale_indexes(flake_internal.migrate_column[], text) IS
	'online migration helper: the indexes of the copies whose tables no longer have them';

--
-- The steps before the swap that are not done yet, in order, each with
-- the strongest lock it takes: create the shadows, logs and triggers; copy
-- the rows; apply the logs; build the indexes; analyze; apply the logs
-- until they are short.
--
CREATE FUNCTION flake_internal.online_prepare(cols flake_internal.migrate_column[], target text)
	RETURNS TABLE(phase text, rel regclass, action text, lock text, statement text, batch text,
				  total bigint, resume text)
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	r			record;
	indexed		boolean;
	applied		boolean;
BEGIN
	FOR t IN SELECT * FROM flake_internal.online_tables(cols, target) LOOP
		rel := t.relid;
		batch := NULL; total := NULL; resume := NULL;
		IF t.shadow_oid IS NULL OR t.log_oid IS NULL THEN
			phase := 'create'; action := 'create the copy, the log and the triggers';
			lock := 'SHARE ROW EXCLUSIVE, a moment (CREATE TRIGGER)';
			statement := format('DROP TABLE IF EXISTS %s, %s; ', t.shadow, t.log)
				-- the table's access method, not the session's default
				|| format('CREATE %sTABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
						  'INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION '
						  'INCLUDING COMMENTS) USING %I%s; ',
						  CASE WHEN (SELECT c.relpersistence FROM pg_class c
									 WHERE c.oid = t.relid) = 'u'
							   THEN 'UNLOGGED ' ELSE '' END,
						  t.shadow, t.rel,
						  (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
						   WHERE c.oid = t.relid),
						  (SELECT ' WITH (' || array_to_string(c.reloptions, ', ') || ')'
						   FROM pg_class c WHERE c.oid = t.relid))
				|| format('ALTER TABLE %s %s; ', t.shadow, t.alters)
				-- the trigger writes the log as a heap
				|| format('CREATE TABLE %s (k %s) USING heap; ', t.log, t.batch_type)
				|| format('COMMENT ON TABLE %s IS %L; COMMENT ON TABLE %s IS %L; ',
						  t.shadow, 'flake_migrate_online: the copy of ' || t.relid,
						  t.log, 'flake_migrate_online: the log of ' || t.relid)
				-- OR REPLACE: the triggers stay when the copy or log was dropped
				|| format('CREATE OR REPLACE TRIGGER zz_flake_migrate_online_log '
						  'AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
						  'EXECUTE FUNCTION flake_internal.online_log(%L, %L); ',
						  t.rel, t.log, t.batch_key)
				|| format('CREATE OR REPLACE TRIGGER zz_flake_migrate_online_no_truncate '
						  'BEFORE TRUNCATE ON %s FOR EACH STATEMENT '
						  'EXECUTE FUNCTION flake_internal.online_no_truncate(); ', t.rel)
				-- also for a subscription's writes (session_replication_role)
				|| format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_flake_migrate_online_log, '
						  'ENABLE ALWAYS TRIGGER zz_flake_migrate_online_no_truncate; ', t.rel)
				-- no privileges that ALTER DEFAULT PRIVILEGES gave
				|| format('SELECT flake_internal.online_private(%L), '
						  'flake_internal.online_private(%L)',
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
			phase := 'copy'; action := 'copy the rows in batches';
			lock := 'ACCESS SHARE, the rows of one batch';
			statement := format('INSERT INTO %s (%s) SELECT %s FROM %s '
								'WHERE (CAST($1 AS text) IS NULL '
								'OR %I > CAST(CAST($1 AS text) AS %s)) '
								'AND %5$I <= CAST(CAST($2 AS text) AS %6$s) ORDER BY %5$I',
								t.shadow, t.inserts, t.copies, t.rel, t.batch_key, t.batch_type);
			batch := format('SELECT CAST((SELECT %1$I FROM (SELECT %1$I FROM %2$s '
							'WHERE (CAST($1 AS text) IS NULL '
							'OR %1$I > CAST(CAST($1 AS text) AS %3$s)) '
							'AND %1$I <= CAST(CAST($3 AS text) AS %3$s) '
							'ORDER BY %1$I LIMIT CAST(CAST($2 AS text) AS bigint)) s '
							'ORDER BY 1 DESC LIMIT 1) AS text)',
							t.batch_key, t.rel, t.batch_type);
			resume := format('SELECT CAST((SELECT %1$s FROM %2$s '
							 'ORDER BY 1 DESC LIMIT 1) AS text), '
							 'CAST((SELECT %3$I FROM %4$s ORDER BY 1 DESC LIMIT 1) AS text)',
							 CASE WHEN t.key_cast <> '%s'
								  THEN format('CAST(%I AS bigint)', t.batch_key)
								  ELSE quote_ident(t.batch_key) END,
							 t.shadow, t.batch_key, t.rel);
			total := (SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c
					  WHERE c.oid = t.relid);
			RETURN NEXT;
			batch := NULL; total := NULL; resume := NULL;
		END IF;
		-- before any apply (a unique one would make it fail)
		statement := (SELECT 'DROP INDEX ' || string_agg(x.index::text, ', ')
					  FROM flake_internal.online_stale_indexes(cols, target) x
					  WHERE x.relid = t.relid);
		IF statement IS NOT NULL THEN
			phase := 'index'; action := 'drop the indexes of the copy that the table no longer has';
			lock := 'ACCESS EXCLUSIVE on the copy only';
			RETURN NEXT;
		END IF;
		IF EXISTS (SELECT FROM flake_internal.online_indexes(cols, target) x
				   WHERE x.relid = t.relid AND NOT x.new_exists) THEN
			-- first the index of the key the batches went by, unique in
			-- the copy as in each batch; then, since the copy is of many
			-- snapshots, the log applied (which makes it the table of one)
			-- before any other index, which may be unique
			applied := false;
			FOR r IN
				SELECT * FROM flake_internal.online_indexes(cols, target) x
				WHERE x.relid = t.relid AND NOT x.new_exists ORDER BY x.batch DESC
			LOOP
				IF NOT r.batch AND NOT applied THEN
					phase := 'apply'; action := 'apply the log';
					lock := 'ACCESS SHARE (REPEATABLE READ)';
					statement := array_to_string(t.apply, '; ');
					RETURN NEXT;
					applied := true;
				END IF;
				phase := 'index'; action := 'build an index of the copy';
				lock := 'SHARE on the copy only';
				statement := r.create_sql;
				RETURN NEXT;
			END LOOP;
		END IF;
		IF NOT EXISTS (SELECT FROM pg_stats p
					   WHERE p.schemaname = (SELECT n.nspname
											 FROM pg_class c
											 JOIN pg_namespace n ON n.oid = c.relnamespace
											 WHERE c.oid = t.relid)
						 AND p.tablename = t.shadow_name) THEN
			phase := 'analyze'; action := 'statistics of the copy';
			lock := 'SHARE UPDATE EXCLUSIVE on the copy only';
			statement := format('ANALYZE %s', t.shadow);
			RETURN NEXT;
		END IF;
	END LOOP;
	-- last, the logs of all, written meanwhile
	FOR t IN SELECT * FROM flake_internal.online_tables(cols, target) LOOP
		rel := t.relid; batch := NULL; total := NULL; resume := NULL;
		phase := 'apply'; action := 'apply the log until it is short';
		lock := 'ACCESS SHARE (REPEATABLE READ)';
		statement := array_to_string(t.apply, '; ');
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.online_prepare(flake_internal.migrate_column[], text) IS
	'online migration helper: the steps before the swap that are not done yet';
