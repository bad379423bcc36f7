-- flake_migrate(), 4: the expressions on the columns and the data, probed

--
-- CHECK constraints, index expressions and index predicates on the columns
-- that get the new ids (ALTER TABLE parses them again for the new type)
-- must take those ids.  Each is tried on a row of its table (or on NULLs)
-- with those columns cast to the new type; one that uses only one of them
-- is tried with the next id there (randflake ids: either end of the bigint
-- range) and blamed when it holds for the row as it is but not with the
-- new id.  Relations between two such columns (src <> dst) are left to the
-- data.  Each table's expressions are tried as its owner, in a
-- security-restricted operation, as ALTER TABLE and REINDEX run them.
--
CREATE FUNCTION flake_internal.migrate_probe_expressions(cols flake_internal.migrate_column[],
														 generator text, first_id bigint)
	RETURNS void
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	target		text := CASE WHEN to_ulid THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	r			record;
	list		text;
	probe		bigint;			-- an id tried on constraints and indexes
	fails		boolean;
	problems	text[] := '{}';	-- constraints and indexes that fail, and why
BEGIN
	FOR r IN
		WITH u AS (
			SELECT x.relid, array_agg(x.attnum) AS atts
			FROM unnest(cols) x JOIN pg_class c ON c.oid = x.relid
			-- tried as the owner: a dry run shows the tables whose owner
			-- the caller is not as blocked already (migrate_lock)
			WHERE pg_has_role(c.relowner, 'USAGE')
			GROUP BY x.relid
		)
		SELECT u.relid, u.atts, o.what, o.expr, o.is_check,
			   (SELECT CASE WHEN count(*) = 1 THEN min(x) END FROM unnest(o.uses) x
				WHERE x = ANY (u.atts)) AS att
		FROM u
		CROSS JOIN LATERAL (
			SELECT format('check constraint %I on %s', c.conname, c.conrelid::regclass) AS what,
				   pg_get_expr(c.conbin, c.conrelid) AS expr, true AS is_check, c.conkey AS uses
			FROM pg_constraint c WHERE c.contype = 'c' AND c.conrelid = u.relid
			UNION ALL
			SELECT format('index %s', x.indexrelid::regclass),
				   concat_ws(', ',
							 (SELECT string_agg(format('(%s)',
													   pg_get_indexdef(x.indexrelid, n, false)),
												', ' ORDER BY n)
							  FROM generate_series(1, x.indnatts) n WHERE x.indkey[n - 1] = 0),
							 '(' || pg_get_expr(x.indpred, x.indrelid) || ')'),
				   false,
				   (SELECT array_agg(d.refobjsubid::int2) FROM pg_depend d
					WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
					  AND d.refclassid = 'pg_class'::regclass AND d.refobjid = x.indrelid)
			FROM pg_index x
			WHERE x.indrelid = u.relid AND (x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
		) o
		WHERE o.uses && u.atts
		ORDER BY u.relid, o.what
	LOOP
		FOREACH probe IN ARRAY CASE WHEN generator = 'randflake_next'
							   THEN ARRAY[-9223372036854775808, 9223372036854775807]
							   ELSE ARRAY[first_id] END LOOP
			SELECT string_agg(CASE WHEN a.attnum = r.att
							  THEN format('CAST(CAST(%L AS bigint) AS %s) AS %I',
										  probe, target, a.attname)
							  WHEN a.attnum = ANY (r.atts)
							  THEN format('CAST(CAST(%1$I AS bigint) AS %2$s) AS %1$I',
										  a.attname, target)
							  ELSE format('%I', a.attname) END, ', ' ORDER BY a.attnum)
			INTO list
			FROM pg_attribute a WHERE a.attrelid = r.relid AND a.attnum > 0 AND NOT a.attisdropped;
			BEGIN
				-- as the table's owner; with ulidflake, the search_path
				-- finds its operators, as ALTER TABLE needs them
				SELECT * INTO fails
				FROM flake_internal.migrate_read_as_owner(
					r.relid::regclass,
					format('WITH o AS (SELECT t.* FROM (SELECT) AS one '
						   'LEFT JOIN (SELECT * FROM %s LIMIT 1) AS t ON true), '
						   'n AS (SELECT %s FROM o) ',
						   r.relid::regclass, list)
					|| CASE WHEN r.is_check
					   THEN format('SELECT coalesce((SELECT %1$s FROM o), true) '
								   'AND NOT coalesce((SELECT %1$s FROM n), true)', r.expr)
					   ELSE format('SELECT (SELECT ROW(%s, true)::text FROM n) IS NULL',
								   r.expr) END,
					to_ulid) AS p(fails boolean);
				IF r.is_check AND fails THEN
					problems := problems || format('%s is false for them in column %I', r.what,
												   (SELECT a.attname FROM pg_attribute a
													WHERE a.attrelid = r.relid
													  AND a.attnum = r.att));
					EXIT;
				END IF;
			EXCEPTION WHEN OTHERS THEN
				problems := problems || format('%s fails for them: %s', r.what, SQLERRM);
				EXIT;
			END;
		END LOOP;
	END LOOP;
	IF cardinality(problems) > 0 THEN
		RAISE EXCEPTION 'the ids of % would not pass constraints or indexes', gen_call
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('%s.', array_to_string(problems, '; ')),
				  HINT = 'Drop or change them in the same transaction before flake_migrate'
						 || CASE WHEN generator = 'randflake_next'
								 THEN ' (randflake ids take any bigint value, negative ones too)'
								 ELSE '' END
						 || ', and create them again after it in a form that takes the new ids.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_probe_expressions(flake_internal.migrate_column[],
															 text, bigint) IS
	'flake_migrate() helper: check the generator''s ids against the constraints '
	'and index expressions on the columns that get them';

--
-- The generator's ids against the data: the next id must sort above every
-- key that stays, a ulidflake cannot be negative, and the constraints and
-- indexes on the columns that get the ids must take them (above).  Returns
-- the notes for the plan.
--
CREATE FUNCTION flake_internal.migrate_probe(tbl regclass, col name,
											 cols flake_internal.migrate_column[],
											 generator text, first_id bigint, rekey boolean)
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	notes		flake_internal.migrate_step[] := '{}';
	cnt			bigint;
	max_old		bigint;
BEGIN
	IF generator = 'randflake_next' THEN
		notes := notes || ROW('note',
							  'randflake_next() ids are encrypted: they do not sort by time, '
							  'nor above the existing keys; they are unique among themselves '
							  'on this server, and the primary key refuses the rare one '
							  'equal to an old key',
							  false, false, NULL)::flake_internal.migrate_step;
	ELSIF NOT rekey THEN
		SELECT * INTO max_old
		FROM flake_internal.migrate_read_as_owner(tbl,
												  format('SELECT max(CAST(%I AS bigint)) FROM %s',
														 col, tbl),
												  false)
			 AS m(max_old bigint);
		IF max_old >= first_id THEN
			RAISE EXCEPTION '%.% holds keys above the ids % would issue',
					tbl, quote_ident(col), gen_call
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('The largest key is %s; the next generated id is %s.',
									  max_old, first_id),
					  HINT = 'New ids would not sort after existing rows; '
							 'rekey the rows (rekey_from) or keep the sequence.';
		END IF;
	END IF;
	IF to_ulid THEN
		SELECT * INTO cnt
		FROM flake_internal.migrate_read_as_owner(tbl,
												  format('SELECT count(*) FROM %s WHERE %I < 0',
														 tbl, col),
												  false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION '%.% has negative keys', tbl, quote_ident(col)
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('Rows with a key below 0: %s. '
									  'A ulidflake is a non-negative 63-bit number.', cnt),
					  HINT = 'Migrate to flake_next instead, or renumber those rows first.';
		END IF;
	END IF;

	PERFORM flake_internal.migrate_probe_expressions(cols, generator, first_id);
	RETURN notes;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_probe(regclass, name, flake_internal.migrate_column[],
												 text, bigint, boolean) IS
	'flake_migrate() helper: check the generator''s ids against the keys that stay, '
	'constraints and indexes';
