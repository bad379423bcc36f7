-- The online migration, 4: the swap, and the validation after it

--
-- The shape of a table that its copy must have, to compare a table with
-- its copy: its schema, access method, persistence and options, its
-- columns in their order with their types (but for those that change),
-- NOT NULL, defaults (but the key's, which the copy drops) and generation
-- expressions, collations, storage, compression, statistics targets and
-- options, and its checks.  What the swap takes from the table itself
-- (indexes, triggers, grants, comments, foreign keys) is not in it.
--
CREATE FUNCTION flake_internal.online_shape(rel oid, changing name[], key name)
	RETURNS text
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT format('%s %s %s %s; ', c.relnamespace, c.relam, c.relpersistence, c.reloptions)
		   || string_agg(format('%I %s %s %s %s %s %s %s %s', a.attname,
								CASE WHEN a.attname = ANY (changing) THEN ''
									 ELSE format_type(a.atttypid, a.atttypmod) END,
								a.attnotnull, a.attcollation, a.attgenerated,
								CASE WHEN a.attname = ANY (changing) THEN ''
									 ELSE concat(a.attstorage, a.attcompression) END,
								-- (PostgreSQL's minor releases keep a version in the options)
								a.attstattarget,
								ARRAY(SELECT o FROM unnest(a.attoptions) o
									  WHERE o NOT LIKE 'pg\_attver=%' ORDER BY o),
								CASE WHEN a.attname = key THEN ''
									 ELSE pg_get_expr(d.adbin, d.adrelid) END),
						 ', ' ORDER BY a.attnum)
		   || '; '
		   || coalesce((SELECT string_agg(k.conname || ' ' || pg_get_constraintdef(k.oid),
										  ', ' ORDER BY k.conname)
						FROM pg_constraint k WHERE k.conrelid = rel AND k.contype = 'c'), '')
	FROM pg_class c
	JOIN pg_attribute a ON a.attrelid = c.oid
	LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE c.oid = rel AND a.attnum > 0 AND NOT a.attisdropped
	GROUP BY c.oid
$$;
COMMENT ON FUNCTION flake_internal.online_shape(oid, name[], name) IS
	'online migration helper: the shape of a table that its copy must have, '
	'to compare it with its copy';

--
-- The statements of the swap, in order: move the sequences the tables own
-- (but the key's) to their copies; detach the key as flake_migrate() does;
-- drop the foreign keys of other tables into the copied ones; drop the
-- tables and logs (RESTRICT: anything else that depends on them stops the
-- swap); rename the copies, their indexes and constraints to the tables'
-- names; give them the tables' comments, triggers (in the same enabled
-- state) and grants; set the key's default; add the foreign keys again, NOT
-- VALID, and note those to validate in TABLE__flake_validate.
--
CREATE FUNCTION flake_internal.online_swap_sql(tbl regclass, col name, generator text,
											   cols flake_internal.migrate_column[], target text)
	RETURNS text[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key			record;
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.online_tables(cols, target) t);
	stmts		text[] := '{}';
	adds		text[];
	validate	text;
	list		text;
BEGIN
	SELECT * INTO key FROM flake_internal.migrate_key(tbl, col);
	SELECT stmts || coalesce(array_agg(s.stmt ORDER BY s.o), '{}') INTO stmts FROM (
		SELECT d.objid AS o,
			   format('ALTER SEQUENCE %s OWNED BY %s.%I', d.objid::regclass, t.shadow, a.attname)
		FROM flake_internal.online_tables(cols, target) t
		JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
						AND d.refobjid = t.relid AND d.refobjsubid > 0 AND d.deptype = 'a'
		JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum = d.refobjsubid
		WHERE NOT (t.relid = tbl AND a.attnum = key.key_attnum)) s(o, stmt);
	SELECT stmts || coalesce(array_agg(s.detail ORDER BY o), '{}') INTO stmts
	FROM unnest(flake_internal.migrate_detach(tbl, col, key.key_attnum, key.identity_seq,
											  key.default_oid, key.default_seqs))
		WITH ORDINALITY s(action, detail, run, counted, o)
	WHERE s.run;

	-- the foreign keys on and into the copied tables, as they are
	SELECT stmts || coalesce(array_agg(format('ALTER TABLE %s DROP CONSTRAINT %I',
											  f.conrelid::regclass, f.conname) ORDER BY f.oid)
							 FILTER (WHERE f.conrelid <> ALL (copied)), '{}'),
		   coalesce(array_agg(format('ALTER TABLE %s ADD CONSTRAINT %I %s%s', f.conrelid::regclass,
									 f.conname, pg_get_constraintdef(f.oid),
									 CASE WHEN f.convalidated THEN ' NOT VALID' ELSE '' END)
							  || coalesce(format('; COMMENT ON CONSTRAINT %I ON %s IS %L',
												 f.conname, f.conrelid::regclass,
												 obj_description(f.oid, 'pg_constraint')), '')
							  ORDER BY f.oid), '{}'),
		   string_agg(format('(%L::regclass, %L)', f.conrelid::regclass, f.conname),
					  ', ' ORDER BY f.oid) FILTER (WHERE f.convalidated)
	INTO stmts, adds, validate
	FROM pg_constraint f
	WHERE f.contype = 'f' AND (f.conrelid = ANY (copied) OR f.confrelid = ANY (copied));

	IF cardinality(copied) > 0 THEN
		SELECT stmts || format('DROP TABLE %s',
							   string_agg(t.rel || ', ' || t.log, ', ' ORDER BY t.relid DESC))
				  || array_agg(format('ALTER TABLE %s RENAME TO %I; COMMENT ON TABLE %s IS %L',
									  t.shadow,
									  (SELECT c.relname FROM pg_class c WHERE c.oid = t.relid),
									  t.rel, obj_description(t.relid, 'pg_class'))
							   ORDER BY t.relid)
		INTO stmts
		FROM flake_internal.online_tables(cols, target) t;
	END IF;
	-- the columns' comments changed since the copy was made
	SELECT stmts || coalesce(array_agg(format('COMMENT ON COLUMN %s.%I IS %L', t.rel, a.attname,
											  col_description(t.relid, a.attnum))
									   ORDER BY t.relid, a.attnum), '{}')
	INTO stmts
	FROM flake_internal.online_tables(cols, target) t
	JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum > 0 AND NOT a.attisdropped
	JOIN pg_attribute sa ON sa.attrelid = t.shadow_oid AND sa.attname = a.attname
	WHERE col_description(t.relid, a.attnum)
		  IS DISTINCT FROM col_description(t.shadow_oid, sa.attnum);
	SELECT stmts || coalesce(array_agg(x.swap_sql), '{}') INTO stmts
	FROM flake_internal.online_indexes(cols, target) x;
	SELECT stmts
		   || coalesce(array_agg(pg_get_triggerdef(g.oid)
								 || CASE g.tgenabled
									WHEN 'D'
									THEN format('; ALTER TABLE %s DISABLE TRIGGER %I',
												g.tgrelid::regclass, g.tgname)
									WHEN 'R'
									THEN format('; ALTER TABLE %s ENABLE REPLICA TRIGGER %I',
												g.tgrelid::regclass, g.tgname)
									WHEN 'A'
									THEN format('; ALTER TABLE %s ENABLE ALWAYS TRIGGER %I',
												g.tgrelid::regclass, g.tgname)
									ELSE '' END
								 || coalesce(format('; COMMENT ON TRIGGER %I ON %s IS %L',
													g.tgname, g.tgrelid::regclass,
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
		FROM flake_internal.online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		LEFT JOIN pg_class sc ON sc.oid = t.shadow_oid
		WHERE c.relacl IS NOT NULL OR sc.relacl IS NOT NULL
		UNION ALL
		SELECT c.oid, g.o, format('GRANT %s ON %s TO %s%s', g.privilege_type, c.oid::regclass,
								  CASE WHEN g.grantee = 0 THEN 'PUBLIC'
									   ELSE g.grantee::regrole::text END,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
		FROM flake_internal.online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		LEFT JOIN pg_class sc ON sc.oid = t.shadow_oid
		CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner)))
			WITH ORDINALITY g(grantor, grantee, privilege_type, is_grantable, o)
		WHERE c.relacl IS NOT NULL OR sc.relacl IS NOT NULL) s;
	stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT @extschema@.%I()',
							 tbl, col, generator)
			 || adds;
	IF validate IS NOT NULL THEN
		list := format('%s.%I',
					   (SELECT c.relnamespace::regnamespace FROM pg_class c WHERE c.oid = tbl),
					   flake_internal.online_name((SELECT c.relname FROM pg_class c
												   WHERE c.oid = tbl), '__flake_validate'));
		stmts := stmts || format('CREATE TABLE %s (rel regclass, conname name); '
								 'COMMENT ON TABLE %1$s IS %2$L; INSERT INTO %1$s VALUES %3$s; '
								 'SELECT flake_internal.online_private(%1$L)',
								 list,
								 'flake_migrate_online: the foreign keys to validate of '
								 -- the key's table after the swap: its copy, if it has one
								 || coalesce((SELECT t.shadow_oid
											  FROM flake_internal.online_tables(cols, target) t
											  WHERE t.relid = tbl), tbl),
								 validate);
	END IF;
	RETURN stmts;
END
$$;
COMMENT ON FUNCTION flake_internal.online_swap_sql(regclass, name, text,
												   flake_internal.migrate_column[], text) IS
	'online migration helper: the statements of the swap';

--
-- The swap's locks, taken so that no application session waits for one of
-- them while holding a lock the swap waits for.  A session that writes to a
-- referencing table holds its lock while it checks a foreign key into the
-- referenced one (ROW SHARE); one that deletes from a referenced table holds
-- its lock while it checks the referencing one: one order or the other
-- closes a cycle with an ACCESS EXCLUSIVE lock taken a table after another.
-- So first SHARE ROW EXCLUSIVE, which stops the writes but lets those
-- checks through: on the tables with foreign keys into the changed ones,
-- then on the changed ones, each before those it references; then, with
-- no write left, ACCESS EXCLUSIVE on the changed ones in the same order.
-- The tables as found without locks; online_swap() finds them again under
-- them.  The caller's rights: LOCK TABLE checks them.
--
CREATE FUNCTION flake_internal.online_swap_lock(tbl regclass, col name, generator text, also text[])
	RETURNS void
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	closure		record;
	s			text;
BEGIN
	SELECT * INTO closure
	FROM flake_internal.online_closure(tbl, col, also, generator = 'ulidflake_next', true);
	FOR s IN
		SELECT DISTINCT f.conrelid::regclass::text FROM pg_constraint f
		WHERE f.contype = 'f' AND f.confrelid = ANY (closure.touched)
		  AND f.conrelid <> ALL (closure.touched)
	LOOP
		EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', s);
	END LOOP;
	-- the touched tables by their longest chain of foreign keys to tbl
	WITH RECURSIVE chain(relid, depth) AS (
		SELECT tbl::oid, 0
		UNION
		SELECT f.conrelid, c.depth + 1
		FROM chain c JOIN pg_constraint f ON f.contype = 'f' AND f.confrelid = c.relid
		WHERE f.conrelid = ANY (closure.touched) AND c.depth < cardinality(closure.touched))
	SELECT string_agg(t.relid::regclass::text, ', ' ORDER BY coalesce(c.depth, 0) DESC, t.relid)
	INTO s
	FROM unnest(closure.touched) t(relid)
	LEFT JOIN (SELECT chain.relid, max(chain.depth) AS depth FROM chain GROUP BY chain.relid) c
		ON c.relid = t.relid;
	EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', coalesce(s, tbl::text));
	EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', coalesce(s, tbl::text));
END
$$;
COMMENT ON FUNCTION flake_internal.online_swap_lock(regclass, name, text, text[]) IS
	'online migration helper: the swap''s locks, in the order the application takes them';

--
-- The swap, one transaction (the client's, READ COMMITTED, with
-- lock_timeout): lock the tables (ACCESS EXCLUSIVE on the key's table and
-- those the migration changes, SHARE ROW EXCLUSIVE on those with foreign
-- keys into them), check that every index has its copy and that nothing
-- changed since the plan that the copies would lose (the checks of
-- online_blockers() again, under the locks), apply the rest
-- of the logs, and run the statements of online_swap_sql().
--
CREATE FUNCTION flake_internal.online_swap(tbl regclass, col name, generator text, also text[])
	RETURNS integer
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake'
							 ELSE 'bigint' END;
	closure		record;
	copied		oid[];
	blockers	flake_internal.migrate_step[];
	missing		text;
	s			text;
	n			integer := 0;
BEGIN
	-- the logs are applied with the snapshots of the statements below,
	-- taken once the locks have waited out the writers; a REPEATABLE READ
	-- or SERIALIZABLE transaction would keep its first, taken before
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'the swap must run at isolation level read committed, not %',
				current_setting('transaction_isolation')
			USING ERRCODE = 'invalid_transaction_state',
				  HINT = 'Begin its transaction with BEGIN ISOLATION LEVEL READ COMMITTED, '
						 'as flake_migrate_online does.';
	END IF;
	PERFORM flake_internal.online_swap_lock(tbl, col, generator, also);
	-- the tables again, under the locks: they may have changed before them
	SELECT * INTO closure
	FROM flake_internal.online_closure(tbl, col, also, generator = 'ulidflake_next', false);
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
	copied := ARRAY(SELECT t.relid FROM flake_internal.online_tables(closure.cols, target) t);
	FOR s IN
		SELECT DISTINCT f.conrelid::regclass::text FROM pg_constraint f
		WHERE f.contype = 'f' AND f.confrelid = ANY (copied) AND f.conrelid <> ALL (closure.touched)
	LOOP
		EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', s);
	END LOOP;
	-- a subscription, a publication or another owner's foreign key may
	-- have come while the rows were copied
	PERFORM flake_internal.online_check_replication(closure.cols, target);
	PERFORM flake_internal.online_check_owners(closure.cols, target);
	-- every index with its copy, and no other on the copies
	SELECT string_agg(m.what, ', ') INTO missing FROM (
		SELECT coalesce(x.index_name::text, t.rel) AS what
		FROM flake_internal.online_tables(closure.cols, target) t
		LEFT JOIN flake_internal.online_indexes(closure.cols, target) x
			ON x.relid = t.relid AND NOT x.new_exists
		WHERE t.shadow_oid IS NULL OR t.log_oid IS NULL OR x.relid IS NOT NULL
		UNION ALL
		SELECT x.index::text FROM flake_internal.online_stale_indexes(closure.cols, target) x) m;
	-- every write since the copy began must be in the log
	SELECT string_agg(t.rel, ', ') INTO s
	FROM flake_internal.online_tables(closure.cols, target) t
	WHERE NOT EXISTS (SELECT FROM pg_trigger g
					  WHERE g.tgrelid = t.relid AND g.tgname = 'zz_flake_migrate_online_log'
						AND g.tgenabled = 'A');
	IF s IS NOT NULL THEN
		RAISE EXCEPTION 'the log trigger of % was disabled or dropped during the copy', s
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Writes may be missing from the copy: '
						 'undo the migration (flake_migrate_online --undo) and run it again.';
	END IF;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'the copies of %, or their indexes, are not ready', missing
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'An index was added to, dropped from or changed on a table '
						 'while it was copied: run flake_migrate_online again.';
	END IF;
	-- what changed since the plan, under the locks: what the copies lack
	-- (columns, NOT NULL, defaults, checks) would be lost, and what the
	-- online path cannot carry (policies, publications, ...) too
	-- (into a variable first: the planner would run a function in
	-- unnest() once more to estimate its rows, under the locks)
	blockers := flake_internal.online_blockers(closure.cols, target);
	SELECT string_agg(b.detail, '; ') INTO missing
	FROM unnest(blockers) b WHERE b.action = 'blocked';
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'the tables changed while they were copied: %', missing
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Undo the change, '
						 'or undo the migration (flake_migrate_online --undo) and run it again.';
	END IF;
	FOR s IN
		SELECT a FROM flake_internal.online_tables(closure.cols, target) t, unnest(t.apply) a
	LOOP
		EXECUTE s;
	END LOOP;
	FOREACH s IN ARRAY flake_internal.online_swap_sql(tbl, col, generator, closure.cols, target)
	LOOP
		EXECUTE s;
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;
COMMENT ON FUNCTION flake_internal.online_swap(regclass, name, text, text[]) IS
	'online migration helper: the swap, in the caller''s transaction';

--
-- After the swap: validate the foreign keys added NOT VALID, and drop the
-- list of them.  One transaction; a VALIDATE takes SHARE UPDATE EXCLUSIVE
-- on the referencing table and ROW SHARE on the referenced one.
--
CREATE FUNCTION flake_internal.online_validate(list regclass)
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
	IF coalesce(obj_description(list, 'pg_class'), '')
	   !~ '^flake_migrate_online: the foreign keys to validate( of \d+)?$' THEN
		RAISE EXCEPTION '% is not a list of foreign keys of flake_migrate_online', list
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- validating runs the code of the tables at both ends (the planner
	-- folds the functions of their indexes' predicates): only as their
	-- owner, logged in as such, as the swap checks
	EXECUTE format('SELECT string_agg(DISTINCT c.oid::regclass::text, '', '') FROM %s l
					JOIN pg_constraint k
					  ON k.conrelid = l.rel AND k.conname = l.conname AND k.contype = ''f''
					JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid)
					WHERE c.relowner IS DISTINCT FROM (SELECT r.oid FROM pg_roles r
													   WHERE r.rolname = session_user)
					   OR c.relowner IS DISTINCT FROM (SELECT r.oid FROM pg_roles r
													   WHERE r.rolname = current_user)', list)
		INTO others;
	IF others IS NOT NULL THEN
		RAISE EXCEPTION 'must be logged in as the owner of %', others
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Validating a foreign key runs the code of the tables at both ends; '
						 'connect as their owner.';
	END IF;
	FOR r IN EXECUTE format('SELECT rel, conname FROM %s', list) LOOP
		IF EXISTS (SELECT FROM pg_constraint k
				   WHERE k.conrelid = r.rel AND k.conname = r.conname
					 AND NOT k.convalidated) THEN
			EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.rel, r.conname);
			n := n + 1;
		END IF;
	END LOOP;
	EXECUTE format('DROP TABLE %s', list);
	RETURN n;
END
$$;
COMMENT ON FUNCTION flake_internal.online_validate(regclass) IS
	'online migration helper: validate the foreign keys a swap added NOT VALID';

------------------------------------------------------------------------
-- online_plan() and online_undo(): what the client runs
------------------------------------------------------------------------
