------------------------------------------------------------------------
-- Migration: serial, bigserial and identity keys to generator ids
--
-- flake_migrate() switches a key column's default to a flake generator,
-- detaches it from its sequence or identity, widens it (and every column
-- that references it through foreign keys, transitively) to bigint or
-- ulidflake, and optionally gives existing rows ids made from a time
-- column.  Everything is checked before anything changes; the changes run
-- in the caller's transaction, so an error anywhere undoes all of them.
-- SECURITY INVOKER: every statement runs with the caller's rights, and the
-- caller must own each table it changes.
------------------------------------------------------------------------

CREATE FUNCTION flake_migrate(tbl regclass, col name DEFAULT 'id',
							  generator text DEFAULT 'flake_next',
							  rekey_from name DEFAULT NULL,
							  dry_run boolean DEFAULT false)
	RETURNS TABLE(step integer, action text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $migrate$
DECLARE
	ext			text;			-- the extension's schema
	ext_path	text;			-- the search_path for ulidflake's operators
	root		record;			-- the table
	key			record;			-- its key column
	def_oid		oid;			-- the key's pg_attrdef entry, if any
	def_text	text;
	seqs		oid[] := '{}';	-- sequences the key's default draws from
	idseq		oid;			-- the identity's sequence
	target		text;			-- bigint or ulidflake, qualified
	to_ulid		boolean := generator = 'ulidflake_next';
	rekey		boolean := rekey_from IS NOT NULL;
	rekey_type	oid;
	map_name	text;
	map_rel		text;
	cl_rel		oid[];			-- the key and every column referencing it,
	cl_att		int2[];			-- transitively (root first)
	cl_change	boolean[];		-- whose type changes
	any_change	boolean;
	touched		oid[];			-- tables altered: root first, then by oid
	checked		oid[];			-- tables checked and (unless dry run) locked
	fks			record;
	fk_oid		oid[] := '{}';
	fk_rel		oid[] := '{}';
	fk_name		name[] := '{}';
	fk_def		text[] := '{}';
	fk_comment	text[] := '{}';
	r			record;
	t			oid;
	i			integer;
	cnt			bigint;
	map_rows	bigint;
	list		text;
	first_id	bigint;			-- the generator's next id, drawn now
	node		integer;
	nb			integer;
	sb			integer;
	epoch		timestamptz;
	cand		text;			-- SELECT old_id, new_id (bigint) of the rekey
	probe		bigint;			-- an id tried on constraints and indexes
	probe_sql	text;
	fails		boolean;
	problems	text[] := '{}';	-- constraints and indexes that fail, and why
	n_null		bigint;
	n_before	bigint;
	n_after		bigint;
	min_new		bigint;
	max_new		bigint;
	max_old		bigint;
	gen_call	text;
	-- the plan: what to run (or show), in order
	p_action	text[] := '{}';
	p_detail	text[] := '{}';
	p_run		boolean[] := '{}';	-- false: a note, or a lock already taken
	p_count		boolean[] := '{}';	-- report the row count
BEGIN
	IF tbl IS NULL OR col IS NULL OR generator IS NULL OR dry_run IS NULL THEN
		RAISE EXCEPTION 'flake_migrate: tbl, col, generator and dry_run must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF generator NOT IN ('flake_next', 'randflake_next', 'ulidflake_next') THEN
		RAISE EXCEPTION 'flake_migrate: unknown generator "%"', generator
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The generator is one of flake_next, randflake_next and ulidflake_next.';
	END IF;

	SELECT n.nspname INTO ext
	FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	WHERE e.extname = 'flake';
	gen_call := format('%I.%I()', ext, generator);
	ext_path := CASE WHEN to_ulid THEN format('pg_catalog, %I, pg_temp', ext) ELSE 'pg_catalog, pg_temp' END;
	target := CASE WHEN to_ulid THEN format('%I.ulidflake', ext) ELSE 'bigint' END;

	--
	-- The table and its key
	--
	SELECT c.relname, c.relkind, c.relowner, n.nspname INTO root
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE c.oid = tbl;
	IF NOT FOUND OR root.relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION 'flake_migrate: % is not a table', tbl
			USING ERRCODE = 'wrong_object_type';
	END IF;
	IF NOT pg_has_role(root.relowner, 'USAGE') THEN
		RAISE EXCEPTION 'flake_migrate: must be owner of table %', tbl
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('flake_migrate alters %s; only its owner %s (or a member of that role) can.',
								  tbl, root.relowner::regrole),
				  HINT = 'Run flake_migrate as the owner of the tables.';
	END IF;
	-- locked before its definition is read, so that it cannot change under us
	IF NOT dry_run THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	checked := ARRAY[tbl::oid];
	p_action := p_action || 'lock'::text;
	p_detail := p_detail || format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	p_run := p_run || false;
	p_count := p_count || false;

	SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, a.attnotnull INTO key
	FROM pg_attribute a
	WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'flake_migrate: column "%" of table % does not exist', col, tbl
			USING ERRCODE = 'undefined_column',
				  HINT = 'Name the key column with col => ''...'' (the default is id).';
	END IF;
	IF key.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) OR key.attgenerated <> '' THEN
		RAISE EXCEPTION 'flake_migrate: column %.% is not an integer key',
				tbl, quote_ident(col)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('It is %s%s; flake_migrate migrates smallint, integer and bigint keys (serial, bigserial, identity).',
								  CASE WHEN key.attgenerated <> '' THEN 'a generated column of type ' ELSE 'of type ' END,
								  format_type(key.atttypid, NULL));
	END IF;

	-- where the key's values come from now
	IF key.attidentity <> '' THEN
		SELECT d.objid INTO idseq
		FROM pg_depend d
		WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = tbl AND d.refobjsubid = key.attnum AND d.deptype = 'i';
		-- dropping the identity drops its sequence, which must be unused
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1) INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = idseq AND d.deptype = 'n';
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'flake_migrate: the identity sequence % of %.% is used by other objects',
					idseq::regclass, tbl, quote_ident(col)
				USING ERRCODE = 'dependent_objects_still_exist',
					  DETAIL = format('Dropping the identity drops the sequence; these depend on it: %s.', list),
					  HINT = 'Let them draw from another sequence first.';
		END IF;
	ELSE
		SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) INTO def_oid, def_text
		FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = key.attnum;
		IF def_oid IS NOT NULL THEN
			SELECT coalesce(array_agg(d.refobjid ORDER BY d.refobjid), '{}') INTO seqs
			FROM pg_depend d JOIN pg_class s ON s.oid = d.refobjid
			WHERE d.classid = 'pg_attrdef'::regclass AND d.objid = def_oid
			  AND d.refclassid = 'pg_class'::regclass AND s.relkind = 'S';
			IF cardinality(seqs) = 0 AND def_text LIKE '%flake\_next()%' THEN
				RAISE EXCEPTION 'flake_migrate: column %.% already takes its ids from a flake generator',
						tbl, quote_ident(col)
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = format('Its default is %s.', def_text);
			ELSIF cardinality(seqs) = 0 THEN
				RAISE EXCEPTION 'flake_migrate: column %.% has a default that is not a sequence',
						tbl, quote_ident(col)
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = format('Its default is %s.', def_text),
						  HINT = 'Drop the default first if it is meant to be replaced.';
			END IF;
		END IF;
	END IF;

	-- rekeying: arguments and prerequisites
	IF rekey THEN
		IF generator = 'randflake_next' THEN
			RAISE EXCEPTION 'flake_migrate: cannot rekey with randflake_next'
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = 'Randflake ids are encrypted: they do not sort by time, so they cannot carry the time of existing rows.',
					  HINT = 'Rekey with flake_next or ulidflake_next, or migrate without rekey_from so that only new rows get randflake ids.';
		END IF;
		SELECT a.atttypid INTO rekey_type
		FROM pg_attribute a
		WHERE a.attrelid = tbl AND a.attname = rekey_from AND a.attnum > 0 AND NOT a.attisdropped;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'flake_migrate: column "%" of table % does not exist', rekey_from, tbl
				USING ERRCODE = 'undefined_column',
					  HINT = 'rekey_from names the column that holds each row''s time.';
		END IF;
		IF rekey_type NOT IN ('timestamptz'::regtype, 'timestamp'::regtype, 'date'::regtype) THEN
			RAISE EXCEPTION 'flake_migrate: column %.% cannot give the time of rows',
					tbl, quote_ident(rekey_from)
				USING ERRCODE = 'datatype_mismatch',
					  DETAIL = format('It is of type %s; rekey_from needs timestamptz, timestamp or date.',
									  format_type(rekey_type, NULL));
		END IF;
		IF NOT key.attnotnull OR NOT EXISTS (
				SELECT FROM pg_index x
				WHERE x.indrelid = tbl AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
				  AND x.indkey[0] = key.attnum AND x.indpred IS NULL) THEN
			RAISE EXCEPTION 'flake_migrate: column %.% is not a key', tbl, quote_ident(col)
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = 'Rekeying maps each old id to one new id, so the column must be NOT NULL and unique on its own.',
					  HINT = 'Add a primary key or a unique constraint on the column first.';
		END IF;
		map_name := root.relname;
		WHILE octet_length(map_name || '_flake_map') > 63 LOOP
			map_name := left(map_name, -1);
		END LOOP;
		map_name := map_name || '_flake_map';
		map_rel := format('%I.%I', root.nspname, map_name);
		IF to_regclass(map_rel) IS NOT NULL THEN
			RAISE EXCEPTION 'flake_migrate: relation % already exists', map_rel
				USING ERRCODE = 'duplicate_table',
					  DETAIL = 'Rekeying keeps the old and new ids in that table.',
					  HINT = 'Rename or drop it if it is left over from an earlier migration.';
		END IF;
	END IF;

	--
	-- Find the columns that reference the key (through foreign keys, also
	-- composite and in other schemas, transitively) and the tables to alter;
	-- check and lock the tables in oid order after the table itself, and
	-- look again until no new one appears.  The locks come before the checks
	-- that read data, so that nothing changes between check and change.
	--
	LOOP
		WITH RECURSIVE cols(relid, attnum) AS (
			SELECT tbl::oid, key.attnum
			UNION
			SELECT c.conrelid, c.conkey[k]
			FROM cols
			JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = cols.relid
			CROSS JOIN LATERAL generate_subscripts(c.confkey, 1) k
			WHERE c.confkey[k] = cols.attnum
		)
		SELECT array_agg(cols.relid ORDER BY cols.relid <> tbl, cols.attnum <> key.attnum, cols.relid, cols.attnum),
			   array_agg(cols.attnum ORDER BY cols.relid <> tbl, cols.attnum <> key.attnum, cols.relid, cols.attnum),
			   array_agg(a.atttypid IN ('int2'::regtype, 'int4'::regtype) OR to_ulid
						 ORDER BY cols.relid <> tbl, cols.attnum <> key.attnum, cols.relid, cols.attnum)
		INTO cl_rel, cl_att, cl_change
		FROM cols JOIN pg_attribute a ON a.attrelid = cols.relid AND a.attnum = cols.attnum;

		any_change := true = ANY (cl_change);
		IF rekey OR any_change THEN
			SELECT array_agg(u.relid ORDER BY u.relid <> tbl, u.relid) INTO touched
			FROM (SELECT DISTINCT x.relid FROM unnest(cl_rel) x(relid)) u;
		ELSE
			touched := ARRAY[tbl::oid];
		END IF;
		EXIT WHEN touched <@ checked;

		-- each table: owned by the caller
		FOREACH t IN ARRAY touched LOOP
			CONTINUE WHEN t = ANY (checked);
			IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = t), 'USAGE') THEN
				RAISE EXCEPTION 'flake_migrate: must be owner of table %', t::regclass
					USING ERRCODE = 'insufficient_privilege',
						  DETAIL = format('%s references %s.%I, so flake_migrate alters it too; only its owner %s (or a member of that role) can.',
										  t::regclass, tbl, col,
										  (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = t)),
						  HINT = 'Run flake_migrate as the owner of the tables.';
			END IF;
			IF NOT dry_run THEN
				EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', t::regclass);
			END IF;
			checked := checked || t;
			p_action := p_action || 'lock'::text;
			p_detail := p_detail || format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', t::regclass);
			p_run := p_run || false;
			p_count := p_count || false;
		END LOOP;
		-- a dry run takes no locks, so looking again would change nothing
		EXIT WHEN dry_run;
	END LOOP;

	-- a referencing column must hold the new ids too
	SELECT string_agg(format('%s.%I (%s)', a.attrelid::regclass, a.attname,
							 format_type(a.atttypid, a.atttypmod)), ', ')
	INTO list
	FROM unnest(cl_rel, cl_att) u(relid, attnum)
	JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
	WHERE a.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'flake_migrate: columns referencing %.% are not integers', tbl, quote_ident(col)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('Referencing columns: %s.', list);
	END IF;

	-- ... and nothing else: a foreign key from one of the columns to a
	-- column that keeps its values would stop the new ids
	SELECT string_agg(format('%s (%s.%I) references %s.%I', c.conname, c.conrelid::regclass, a.attname,
							 c.confrelid::regclass, fa.attname), ', ' ORDER BY c.conrelid, c.conname, k)
	INTO list
	FROM unnest(cl_rel, cl_att) u(relid, attnum)
	JOIN pg_constraint c ON c.contype = 'f' AND c.conrelid = u.relid
	CROSS JOIN LATERAL generate_subscripts(c.conkey, 1) k
	JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[k]
	JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = c.confkey[k]
	WHERE c.conkey[k] = u.attnum
	  AND (c.confrelid, c.confkey[k]) NOT IN (SELECT * FROM unnest(cl_rel, cl_att));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'flake_migrate: columns that would get ids of %.% also reference other keys', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Foreign keys: %s; their values must exist there too.', list),
				  HINT = 'Migrate the table they reference instead (the columns referencing its key follow), or drop those foreign keys first.';
	END IF;

	-- the tables, each on its own
	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format(CASE WHEN c.relispartition THEN '%s is a partition of %s' ELSE '%s inherits from %s' END,
					  h.inhrelid::regclass, h.inhparent::regclass) AS x
		FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
		WHERE h.inhrelid = ANY (touched) OR h.inhparent = ANY (touched)
		UNION
		SELECT format('%s is partitioned', c.oid::regclass)
		FROM pg_class c
		WHERE c.oid = ANY (touched) AND c.relkind = 'p'
		  AND NOT EXISTS (SELECT FROM pg_inherits h WHERE h.inhparent = c.oid)) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'flake_migrate: cannot migrate tables of a partitioned or inheritance hierarchy'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s.', list),
				  HINT = 'flake_migrate changes single tables; migrate the key of a partitioned table by hand.';
	END IF;

	--
	-- Objects that would stop a column's type change, or a rekey
	--
	IF any_change THEN
		SELECT string_agg(DISTINCT x, ', ' ORDER BY x) INTO list FROM (
			SELECT CASE
				WHEN d.classid = 'pg_rewrite'::regclass AND w.rulename = '_RETURN'
					THEN format('%s %s', CASE v.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END,
								w.ev_class::regclass)
				ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS x
			FROM unnest(cl_rel, cl_att, cl_change) u(relid, attnum, changes)
			JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = u.relid
							AND d.refobjsubid = u.attnum
			LEFT JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND w.oid = d.objid
			LEFT JOIN pg_class v ON v.oid = w.ev_class
			LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
			LEFT JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
			WHERE u.changes
			  -- carried through a type change by ALTER TABLE, or handled here
			  AND d.classid NOT IN ('pg_constraint'::regclass, 'pg_statistic_ext'::regclass)
			  AND NOT (d.classid = 'pg_class'::regclass AND c.relkind IN ('i', 'I', 'S'))
			  AND NOT (d.classid = 'pg_attrdef'::regclass AND ad.adrelid = u.relid
					   AND ad.adnum = u.attnum)) s;
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'flake_migrate: cannot change the type of %.% and the columns referencing it', tbl, quote_ident(col)
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('These objects depend on the columns: %s.', list),
					  HINT = 'Drop them in the same transaction before flake_migrate and create them again after it (pg_get_viewdef() and pg_get_triggerdef() show their definitions; grant their privileges again).';
		END IF;
	END IF;

	IF rekey THEN
		SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
			SELECT format('trigger %I on %s', g.tgname, g.tgrelid::regclass) AS x
			FROM pg_trigger g
			WHERE g.tgrelid = ANY (touched) AND NOT g.tgisinternal AND g.tgenabled <> 'D'
			  AND (g.tgtype & 16) <> 0
			UNION ALL
			SELECT format('rule %I on %s', w.rulename, w.ev_class::regclass)
			FROM pg_rewrite w
			WHERE w.ev_class = ANY (touched) AND w.ev_type = '2' AND w.ev_enabled <> 'D'
			UNION ALL
			SELECT format('row-level security forced on %s', c.oid::regclass)
			FROM pg_class c
			WHERE c.oid = ANY (touched) AND c.relrowsecurity AND c.relforcerowsecurity) s;
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'flake_migrate: cannot rekey %: updates of its rows would be changed by other objects', tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Rekeying updates every row of the tables; in the way: %s.', list),
					  HINT = 'Disable them in the same transaction (ALTER TABLE ... DISABLE TRIGGER / DISABLE RULE / NO FORCE ROW LEVEL SECURITY) and enable them again after flake_migrate.';
		END IF;
	END IF;

	--
	-- The generator: its next id must sort above every key that stays
	--
	EXECUTE format('SELECT CAST(%s AS bigint)', gen_call) INTO first_id;

	IF generator = 'randflake_next' THEN
		p_action := p_action || 'note'::text;
		p_detail := p_detail || 'randflake_next() ids are encrypted: they do not sort by time, nor above the existing keys; they are unique among themselves on this server, and the primary key refuses the rare one equal to an old key'::text;
		p_run := p_run || false;
		p_count := p_count || false;
	ELSIF NOT rekey THEN
		EXECUTE format('SELECT max(CAST(%I AS bigint)) FROM %s', col, tbl) INTO max_old;
		IF max_old >= first_id THEN
			RAISE EXCEPTION 'flake_migrate: %.% holds keys above the ids % would issue', tbl, quote_ident(col), gen_call
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('The largest key is %s; the next generated id is %s.', max_old, first_id),
					  HINT = 'New ids would not sort after existing rows; rekey the rows (rekey_from) or keep the sequence.';
		END IF;
	END IF;
	IF to_ulid THEN
		EXECUTE format('SELECT count(*) FROM %s WHERE %I < 0', tbl, col) INTO cnt;
		IF cnt > 0 THEN
			RAISE EXCEPTION 'flake_migrate: %.% has negative keys', tbl, quote_ident(col)
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('Rows with a key below 0: %s. A ulidflake is a non-negative 63-bit number.', cnt),
					  HINT = 'Migrate to flake_next instead, or renumber those rows first.';
		END IF;
	END IF;

	--
	-- CHECK constraints, index expressions and index predicates on the
	-- columns that get the new ids (ALTER TABLE parses them again for the
	-- new type) must take those ids.  Each is tried on a row of its table
	-- (or on NULLs) with those columns cast to the new type; one that uses
	-- only one of them is tried with the next id there (randflake ids:
	-- either end of the bigint range) and blamed when it holds for the row
	-- as it is but not with the new id.  Relations between two such columns
	-- (src <> dst) are left to the data.
	--
	FOR r IN
		WITH u AS (
			SELECT x.relid, array_agg(x.attnum) AS atts
			FROM unnest(cl_rel, cl_att) x(relid, attnum) GROUP BY x.relid
		)
		SELECT u.relid, u.atts, o.what, o.expr, o.is_check,
			   (SELECT CASE WHEN count(*) = 1 THEN min(x) END FROM unnest(o.uses) x WHERE x = ANY (u.atts)) AS att
		FROM u
		CROSS JOIN LATERAL (
			SELECT format('check constraint %I on %s', c.conname, c.conrelid::regclass) AS what,
				   pg_get_expr(c.conbin, c.conrelid) AS expr, true AS is_check, c.conkey AS uses
			FROM pg_constraint c WHERE c.contype = 'c' AND c.conrelid = u.relid
			UNION ALL
			SELECT format('index %s', x.indexrelid::regclass),
				   concat_ws(', ', (SELECT string_agg(format('(%s)', pg_get_indexdef(x.indexrelid, n, false)), ', ' ORDER BY n)
									FROM generate_series(1, x.indnatts) n WHERE x.indkey[n - 1] = 0),
							 '(' || pg_get_expr(x.indpred, x.indrelid) || ')'),
				   false,
				   (SELECT array_agg(d.refobjsubid::int2) FROM pg_depend d
					WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
					  AND d.refclassid = 'pg_class'::regclass AND d.refobjid = x.indrelid)
			FROM pg_index x WHERE x.indrelid = u.relid AND (x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
		) o
		WHERE o.uses && u.atts
		ORDER BY u.relid, o.what
	LOOP
		SELECT string_agg(CASE WHEN a.attnum = r.att
						  THEN format('CAST($1 AS %s) AS %I', target, a.attname)
						  WHEN a.attnum = ANY (r.atts)
						  THEN format('CAST(CAST(%1$I AS bigint) AS %2$s) AS %1$I', a.attname, target)
						  ELSE format('%I', a.attname) END, ', ' ORDER BY a.attnum)
		INTO list
		FROM pg_attribute a WHERE a.attrelid = r.relid AND a.attnum > 0 AND NOT a.attisdropped;
		probe_sql := format('WITH o AS (SELECT t.* FROM (SELECT) AS one LEFT JOIN (SELECT * FROM %s LIMIT 1) AS t ON true), n AS (SELECT %s FROM o) ',
							r.relid::regclass, list)
			|| CASE WHEN r.is_check
			   THEN format('SELECT coalesce((SELECT %1$s FROM o), true) AND NOT coalesce((SELECT %1$s FROM n), true)', r.expr)
			   ELSE format('SELECT (SELECT ROW(%s, true)::text FROM n) IS NULL', r.expr) END;
		FOREACH probe IN ARRAY CASE WHEN generator = 'randflake_next'
							   THEN ARRAY[-9223372036854775808, 9223372036854775807] ELSE ARRAY[first_id] END LOOP
			BEGIN
				-- as for ALTER TABLE below: the ulidflake operators are found
				PERFORM set_config('search_path', ext_path, true);
				EXECUTE probe_sql USING probe INTO fails;
				PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
				IF r.is_check AND fails THEN
					problems := problems || format('%s is false for them in column %I', r.what,
												   (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = r.relid AND a.attnum = r.att));
					EXIT;
				END IF;
			EXCEPTION WHEN OTHERS THEN
				problems := problems || format('%s fails for them: %s', r.what, SQLERRM);
				EXIT;
			END;
		END LOOP;
	END LOOP;
	IF cardinality(problems) > 0 THEN
		RAISE EXCEPTION 'flake_migrate: the ids of % would not pass constraints or indexes', gen_call
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('%s.', array_to_string(problems, '; ')),
				  HINT = 'Drop or change them in the same transaction before flake_migrate'
						 || CASE WHEN generator = 'randflake_next' THEN ' (randflake ids take any bigint value, negative ones too)' ELSE '' END
						 || ', and create them again after it in a form that takes the new ids.';
	END IF;

	--
	-- Rekey: new ids from each row's time, in (time, old id) order; a
	-- millisecond with more rows than ids spills into the next ones.
	-- Snowflake ids go on this backend's leased node, below the id just
	-- drawn from it, so the generator never issues them again.
	--
	IF rekey THEN
		IF to_ulid THEN
			epoch := @extschema@.flake_timestamp(CAST(0::bigint AS @extschema@.ulidflake));
			cand := format($q$SELECT k AS old_id, slot AS new_id
FROM (SELECT k, rn + max(ms * 1048576 - rn) OVER (ORDER BY rn) AS slot
      FROM (SELECT CAST(%1$I AS bigint) AS k, row_number() OVER (ORDER BY CAST(%2$I AS timestamptz), %1$I) - 1 AS rn,
                   CAST(%3$I.ulidflake_from_timestamp(CAST(%2$I AS timestamptz)) AS bigint) >> 20 AS ms
            FROM %4$s) r) s$q$, col, rekey_from, ext, tbl);
		ELSE
			epoch := @extschema@.flake_timestamp(CAST(0 AS bigint));
			node := @extschema@.flake_node(first_id);
			nb := current_setting('flake.node_bits')::integer;
			sb := current_setting('flake.sequence_bits')::integer;
			cand := format($q$SELECT k AS old_id, ((slot >> %1$s) << %2$s) | %3$s | (slot & %4$s) AS new_id
FROM (SELECT k, rn + max(ms * %5$s - rn) OVER (ORDER BY rn) AS slot
      FROM (SELECT CAST(%6$I AS bigint) AS k, row_number() OVER (ORDER BY CAST(%7$I AS timestamptz), %6$I) - 1 AS rn,
                   %8$I.flake_from_timestamp(CAST(%7$I AS timestamptz)) >> %2$s AS ms
            FROM %9$s) r) s$q$,
						   sb, nb + sb, node::bigint << sb, (1::bigint << sb) - 1, 1::bigint << sb,
						   col, rekey_from, ext, tbl);
		END IF;

		EXECUTE format('SELECT count(*) FILTER (WHERE %1$I IS NULL),
							   count(*) FILTER (WHERE CAST(%1$I AS timestamptz) < $1),
							   count(*) FILTER (WHERE CAST(%1$I AS timestamptz) >= $2)
						FROM %2$s', rekey_from, tbl)
			USING epoch, CASE WHEN to_ulid
						 THEN @extschema@.flake_timestamp(CAST(first_id AS @extschema@.ulidflake))
						 ELSE @extschema@.flake_timestamp(first_id) END + interval '1 ms'
			INTO n_null, n_before, n_after;
		IF n_null + n_before + n_after > 0 THEN
			RAISE EXCEPTION 'flake_migrate: % of % have no time that % can carry',
					CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
					ELSE (n_null + n_before + n_after) || ' rows' END, tbl, gen_call
				USING ERRCODE = CASE WHEN n_null > 0 THEN 'null_value_not_allowed' ELSE 'numeric_value_out_of_range' END,
					  DETAIL = format('In column %I: %s NULL, %s before the epoch %s, %s after the current time.',
									  rekey_from, n_null, n_before,
									  regexp_replace(to_char(epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
													 '\.000$', '') || '+00',
									  n_after),
					  HINT = 'Give those rows a time (or delete them) first, or migrate without rekey_from.';
		END IF;

		EXECUTE format('SELECT min(new_id), max(new_id) FROM (%s) c', cand) INTO min_new, max_new;
		IF max_new >= first_id THEN
			RAISE EXCEPTION 'flake_migrate: too many rows of % in the last milliseconds', tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Rekeyed ids must stay below %s, the id just drawn from %s.', first_id, gen_call),
					  HINT = 'Try again in a moment.';
		END IF;
		EXECUTE format('SELECT max(CAST(%I AS bigint)) FROM %s', col, tbl) INTO max_old;
		IF min_new <= max_old THEN
			EXECUTE format('SELECT count(*) FROM (%s) c JOIN %s o ON o.%I = c.new_id', cand, tbl, col) INTO cnt;
			IF cnt > 0 THEN
				RAISE EXCEPTION 'flake_migrate: % new ids of % would equal old ids of other rows', cnt, tbl
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = format('Rows timed in the first milliseconds after the epoch get ids as small as the old keys (up to %s).', max_old),
						  HINT = 'Migrate without rekey_from, or correct the time of those rows.';
			END IF;
		END IF;

		p_action := p_action || ARRAY['create map', 'comment', 'fill map'];
		p_detail := p_detail || ARRAY[
			format('CREATE TABLE %s (old_id bigint PRIMARY KEY, new_id %s NOT NULL UNIQUE)', map_rel, target),
			format('COMMENT ON TABLE %s IS %L', map_rel,
				   format('old and new ids of %s.%I, rekeyed by flake_migrate from %I', tbl, col, rekey_from)),
			format('INSERT INTO %s (old_id, new_id) SELECT old_id, %s FROM (%s) c', map_rel,
				   CASE WHEN to_ulid THEN format('CAST(new_id AS %s)', target) ELSE 'new_id' END, cand)];
		p_run := p_run || ARRAY[true, true, true];
		p_count := p_count || ARRAY[false, false, true];
	END IF;

	--
	-- Foreign keys into the columns that change are dropped and added back
	-- afterwards under the same names: one validation instead of one per
	-- altered column, and no checks while the ids are rewritten.
	--
	IF rekey OR any_change THEN
		-- a new constraint gets enabled triggers: refuse to lose a state
		-- that only a superuser can set
		SELECT string_agg(DISTINCT format('%I on %s', c.conname, c.conrelid::regclass), ', ') INTO list
		FROM unnest(cl_rel, cl_att) u(relid, attnum)
		JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
		JOIN pg_trigger g ON g.tgconstraint = c.oid
		WHERE g.tgenabled <> 'O';
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'flake_migrate: foreign keys referencing %.% have disabled triggers', tbl, quote_ident(col)
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('flake_migrate drops and adds these foreign keys again, which would enable them: %s.', list),
					  HINT = 'Enable their triggers (ALTER TABLE ... ENABLE TRIGGER ALL), or drop the foreign keys first.';
		END IF;
		FOR fks IN
			SELECT DISTINCT c.oid, c.conrelid, c.conname, pg_get_constraintdef(c.oid) AS def,
				   obj_description(c.oid, 'pg_constraint') AS comment
			FROM unnest(cl_rel, cl_att) u(relid, attnum)
			JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
			ORDER BY c.conrelid, c.conname
		LOOP
			fk_oid := fk_oid || fks.oid;
			fk_rel := fk_rel || fks.conrelid;
			fk_name := fk_name || fks.conname;
			fk_def := fk_def || fks.def;
			fk_comment := fk_comment || fks.comment;
			p_action := p_action || 'drop constraint'::text;
			p_detail := p_detail || format('ALTER TABLE %s DROP CONSTRAINT %I', fks.conrelid::regclass, fks.conname);
			p_run := p_run || true;
			p_count := p_count || false;
		END LOOP;
	END IF;

	-- detach the key from its sequence or identity
	IF idseq IS NOT NULL THEN
		p_action := p_action || 'drop identity'::text;
		p_detail := p_detail || format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
		p_run := p_run || true;
		p_count := p_count || false;
	ELSIF def_oid IS NOT NULL THEN
		p_action := p_action || 'drop default'::text;
		p_detail := p_detail || format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col);
		p_run := p_run || true;
		p_count := p_count || false;
		FOREACH t IN ARRAY seqs LOOP
			SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1) INTO list
			FROM pg_depend d
			WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = t AND d.deptype = 'n'
			  AND NOT (d.classid = 'pg_attrdef'::regclass AND d.objid = def_oid);
			IF NOT EXISTS (SELECT FROM pg_depend d
						   WHERE d.classid = 'pg_class'::regclass AND d.objid = t
							 AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl
							 AND d.refobjsubid = key.attnum AND d.deptype = 'a') THEN
				p_action := p_action || 'note'::text;
				p_detail := p_detail || format('sequence %s is kept: %s.%I does not own it', t::regclass, tbl, col);
				p_run := p_run || false;
				p_count := p_count || false;
			ELSIF list IS NOT NULL THEN
				p_action := p_action || ARRAY['note', 'disown sequence'];
				p_detail := p_detail || ARRAY[
					format('sequence %s is kept: also used by %s', t::regclass, list),
					format('ALTER SEQUENCE %s OWNED BY NONE', t::regclass)];
				p_run := p_run || ARRAY[false, true];
				p_count := p_count || ARRAY[false, false];
			ELSE
				-- an owned sequence has the table's owner
				p_action := p_action || 'drop sequence'::text;
				p_detail := p_detail || format('DROP SEQUENCE %s', t::regclass);
				p_run := p_run || true;
				p_count := p_count || false;
			END IF;
		END LOOP;
	END IF;

	-- widen the key and the columns referencing it, one statement a table
	FOREACH t IN ARRAY touched LOOP
		SELECT string_agg(format('ALTER COLUMN %I TYPE %s%s', a.attname, target,
								 CASE WHEN to_ulid
								 THEN format(' USING CAST(CAST(%I AS bigint) AS %s)', a.attname, target)
								 ELSE '' END), ', ' ORDER BY a.attnum)
		INTO list
		FROM unnest(cl_rel, cl_att, cl_change) u(relid, attnum, changes)
		JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
		WHERE u.relid = t AND u.changes;
		CONTINUE WHEN list IS NULL;
		p_action := p_action || 'alter type'::text;
		p_detail := p_detail || format('ALTER TABLE %s %s', t::regclass, list);
		p_run := p_run || true;
		p_count := p_count || false;
	END LOOP;

	-- rewrite the ids: the key, then every column referencing it
	IF rekey THEN
		FOR i IN 1 .. cardinality(cl_rel) LOOP
			p_action := p_action || 'rekey'::text;
			p_detail := p_detail || format('UPDATE %s AS t SET %I = m.new_id FROM %s AS m WHERE t.%I %s',
										   cl_rel[i]::regclass,
										   (SELECT a.attname FROM pg_attribute a
											WHERE a.attrelid = cl_rel[i] AND a.attnum = cl_att[i]),
										   map_rel,
										   (SELECT a.attname FROM pg_attribute a
											WHERE a.attrelid = cl_rel[i] AND a.attnum = cl_att[i]),
										   CASE WHEN to_ulid
										   THEN format('OPERATOR(%I.=) CAST(m.old_id AS %s)', ext, target)
										   ELSE '= m.old_id' END);
			p_run := p_run || true;
			p_count := p_count || true;
		END LOOP;
	END IF;

	-- the foreign keys again, and their comments
	FOR i IN 1 .. cardinality(fk_oid) LOOP
		p_action := p_action || 'add constraint'::text;
		p_detail := p_detail || format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk_rel[i]::regclass, fk_name[i], fk_def[i]);
		p_run := p_run || true;
		p_count := p_count || false;
		IF fk_comment[i] IS NOT NULL THEN
			p_action := p_action || 'comment'::text;
			p_detail := p_detail || format('COMMENT ON CONSTRAINT %I ON %s IS %L', fk_name[i], fk_rel[i]::regclass, fk_comment[i]);
			p_run := p_run || true;
			p_count := p_count || false;
		END IF;
	END LOOP;

	p_action := p_action || 'set default'::text;
	p_detail := p_detail || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, gen_call);
	p_run := p_run || true;
	p_count := p_count || false;

	--
	-- Run the plan (or only show it)
	--
	FOR i IN 1 .. cardinality(p_action) LOOP
		step := i;
		action := p_action[i];
		detail := p_detail[i];
		IF p_run[i] AND NOT dry_run THEN
			-- ALTER TABLE parses CHECK constraints and index expressions
			-- again for the new type: with ulidflake, they need its operators
			IF action = 'alter type' THEN
				PERFORM set_config('search_path', ext_path, true);
			END IF;
			EXECUTE detail;
			GET DIAGNOSTICS cnt = ROW_COUNT;
			PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
			IF p_count[i] THEN
				IF action = 'fill map' THEN
					map_rows := cnt;
				ELSIF action = 'rekey' AND p_action[i - 1] <> 'rekey' AND cnt <> map_rows THEN
					-- the first rekey step updates the key itself: every row
					RAISE EXCEPTION 'flake_migrate: rekeyed % of % rows of %', cnt, map_rows, tbl
						USING ERRCODE = 'object_not_in_prerequisite_state',
							  DETAIL = 'Something kept the update from reaching every row.';
				END IF;
				detail := format('%s /* %s rows */', detail, cnt);
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$migrate$;

COMMENT ON FUNCTION flake_migrate(regclass, name, text, name, boolean) IS
	'switch a serial or identity key (and the columns referencing it) to flake ids, optionally rekeying existing rows from a time column';
