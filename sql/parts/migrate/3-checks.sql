-- flake_migrate(), 3: what would stop the migration, as errors or blocked steps

--
-- Objects that would stop the migration: columns that cannot hold the new
-- ids, foreign keys to other keys, table hierarchies, and objects that
-- depend on a column whose type changes.  Each is an error, or with
-- collect (a dry run) a blocked step in the result.
--
CREATE FUNCTION flake_internal.migrate_check_types(tbl regclass, col name,
												   cols flake_internal.migrate_column[],
												   touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	-- a referencing column must hold the new ids too
	SELECT string_agg(format('%s.%I (%s)', a.attrelid::regclass, a.attname,
							 format_type(a.atttypid, a.atttypmod)), ', ')
	INTO list
	FROM unnest(cols) u
	JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
	WHERE NOT flake_internal.migrate_holds_ids(a.atttypid, a.atttypmod);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'columns referencing %.% are not integers', tbl, quote_ident(col)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('Referencing columns: %s.', list);
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_types(regclass, name,
													   flake_internal.migrate_column[], oid[]) IS
	'flake_migrate() check: every column that references the key holds integers, or an error';

CREATE FUNCTION flake_internal.migrate_check_numeric(tbl regclass, col name,
													 cols flake_internal.migrate_column[],
													 touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	cnt			bigint;
BEGIN
	-- numeric columns become bigint: their values must be whole and fit
	FOR r IN
		SELECT a.attrelid::regclass AS rel, a.attname
		FROM unnest(cols) u
		JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
		JOIN pg_class c ON c.oid = u.relid
		WHERE a.atttypid = 'numeric'::regtype
		  -- read as the owner: a dry run shows the tables whose owner
		  -- the caller is not as blocked already (migrate_lock)
		  AND pg_has_role(c.relowner, 'USAGE')
	LOOP
		SELECT * INTO cnt
		FROM flake_internal.migrate_read_as_owner(r.rel,
												  format('SELECT count(*) FROM %s '
														 'WHERE %I <> trunc(%2$I) '
														 'OR %2$I NOT BETWEEN -9223372036854775808 '
														 'AND 9223372036854775807',
														 r.rel, r.attname),
												  false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION 'column %.% holds values that are not ids',
					r.rel, quote_ident(r.attname)
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('Rows with a fraction or a value beyond bigint: %s. '
									  'The column becomes bigint.', cnt);
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_numeric(regclass, name,
														 flake_internal.migrate_column[], oid[]) IS
	'flake_migrate() check: the values of numeric columns that become bigint '
	'are whole and fit, or an error';

CREATE FUNCTION flake_internal.migrate_check_foreign_keys(tbl regclass, col name,
														  cols flake_internal.migrate_column[],
														  touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	-- a foreign key from one of the columns to a column that keeps its
	-- values would stop the new ids
	SELECT string_agg(format('%s (%s.%I) references %s.%I', c.conname, c.conrelid::regclass,
							 a.attname, c.confrelid::regclass, fa.attname),
					  ', ' ORDER BY c.conrelid, c.conname, k)
	INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.conrelid = u.relid
	CROSS JOIN LATERAL generate_subscripts(c.conkey, 1) k
	JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[k]
	JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = c.confkey[k]
	WHERE c.conkey[k] = u.attnum
	  AND (c.confrelid, c.confkey[k]) NOT IN (SELECT x.relid, x.attnum FROM unnest(cols) x);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'columns that would get ids of %.% also reference other keys',
				tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Foreign keys: %s; their values must exist there too.', list),
				  HINT = 'Migrate the table they reference instead (the columns referencing '
						 'its key follow), or drop those foreign keys first.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_foreign_keys(regclass, name,
															  flake_internal.migrate_column[],
															  oid[]) IS
	'flake_migrate() check: the columns to change reference no key that keeps its values, '
	'or an error';

CREATE FUNCTION flake_internal.migrate_check_citus(tbl regclass, col name,
												   cols flake_internal.migrate_column[],
												   touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	-- Citus changes neither the default nor the type of a distributed
	-- table's distribution column (looked up only where Citus is)
	IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
		EXECUTE $q$
			SELECT string_agg(format('%s.%I', p.logicalrelid::regclass, a.attname), ', ' ORDER BY 1)
			FROM pg_dist_partition p
			JOIN pg_attribute a ON a.attrelid = p.logicalrelid
				AND a.attnum = substring(p.partkey FROM ':varattno (\d+)')::int2
			WHERE (p.logicalrelid = $2 AND a.attname = $3)
			   OR (a.attrelid, a.attnum) IN (SELECT u.relid, u.attnum FROM unnest($1) u
											 WHERE u.changes)
		$q$ INTO list USING cols, tbl, col;
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'cannot migrate %.%: '
							'Citus distributes tables by the columns it would change',
					tbl, quote_ident(col)
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Distribution columns: %s. '
									  'Citus changes neither the default nor the type '
									  'of a distribution column.', list),
					  HINT = format('Give the key its default before distributing the table '
									'(ALTER TABLE ... SET DEFAULT, then create_distributed_table), '
									'or: SELECT undistribute_table(%L); then flake_migrate, '
									'then create_distributed_table again '
									'with the same distribution column and co-location.',
									tbl::text);
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_citus(regclass, name,
													   flake_internal.migrate_column[], oid[]) IS
	'flake_migrate() check: no column to change distributes a Citus table, or an error';

CREATE FUNCTION flake_internal.migrate_check_hierarchy(tbl regclass, col name,
													   cols flake_internal.migrate_column[],
													   touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	-- the tables, each on its own
	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format(CASE WHEN c.relispartition THEN '%s is a partition of %s'
						   ELSE '%s inherits from %s' END,
					  h.inhrelid::regclass, h.inhparent::regclass) AS x
		FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
		WHERE h.inhrelid = ANY (touched) OR h.inhparent = ANY (touched)
		UNION
		SELECT format('%s is partitioned', c.oid::regclass)
		FROM pg_class c
		WHERE c.oid = ANY (touched) AND c.relkind = 'p'
		  AND NOT EXISTS (SELECT FROM pg_inherits h WHERE h.inhparent = c.oid)) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate tables of a partitioned or inheritance hierarchy'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s.', list),
				  HINT = 'flake_migrate changes single tables; '
						 'migrate the key of a partitioned table by hand.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_hierarchy(regclass, name,
														   flake_internal.migrate_column[],
														   oid[]) IS
	'flake_migrate() check: no table to alter is in a partitioned or inheritance hierarchy, '
	'or an error';

CREATE FUNCTION flake_internal.migrate_check_dependents(tbl regclass, col name,
														cols flake_internal.migrate_column[],
														touched oid[])
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
BEGIN
	-- objects that would stop a column's type change
	SELECT string_agg(DISTINCT x, ', ' ORDER BY x) INTO list FROM (
		SELECT CASE
			WHEN d.classid = 'pg_rewrite'::regclass AND w.rulename = '_RETURN'
				THEN format('%s %s',
							CASE v.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END,
							w.ev_class::regclass)
			ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS x
		FROM unnest(cols) u
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
		RAISE EXCEPTION 'cannot change the type of %.% and the columns referencing it',
				tbl, quote_ident(col)
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('These objects depend on the columns: %s.', list),
				  HINT = 'Drop them in the same transaction before flake_migrate '
						 'and create them again after it '
						 '(pg_get_viewdef() and pg_get_triggerdef() show their definitions; '
						 'grant their privileges again).';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_check_dependents(regclass, name,
															flake_internal.migrate_column[],
															oid[]) IS
	'flake_migrate() check: no object depends on a column whose type changes, or an error';

--
-- The checks above, each an error; with collect (a dry run) each error is a
-- blocked step of the result instead, so that all are shown at once.  Every
-- check takes the same arguments, so that they can be run from one list.
--
CREATE FUNCTION flake_internal.migrate_blockers(tbl regclass, col name,
												cols flake_internal.migrate_column[],
												touched oid[], collect boolean)
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	check_name	text;
	found		flake_internal.migrate_step[] := '{}';
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	FOREACH check_name IN ARRAY ARRAY['types', 'numeric', 'foreign_keys', 'citus', 'hierarchy',
									  'dependents']
	LOOP
		BEGIN
			EXECUTE format('SELECT flake_internal.migrate_check_%s($1, $2, $3, $4)', check_name)
				USING tbl, col, cols, touched;
		EXCEPTION WHEN OTHERS THEN
			IF NOT collect THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
									det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			found := found || flake_internal.migrate_blocked(msg, state, det, hint);
		END;
	END LOOP;
	RETURN found;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_blockers(regclass, name, flake_internal.migrate_column[],
													oid[], boolean) IS
	'flake_migrate() helper: objects that would stop the migration, '
	'as errors or as a dry run''s blocked steps';
