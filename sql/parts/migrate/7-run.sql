-- flake_migrate(), 7: the plan, its run, and the functions users call

--
-- flake_migrate()'s arguments, and the isolation level it runs at, checked.
--
CREATE FUNCTION flake_internal.migrate_arguments(tbl regclass, col name, generator text,
												 dry_run boolean, undatable text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF tbl IS NULL OR col IS NULL OR generator IS NULL OR dry_run IS NULL THEN
		RAISE EXCEPTION 'tbl, col, generator and dry_run must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF generator NOT IN ('flake_next', 'randflake_next', 'ulidflake_next') THEN
		RAISE EXCEPTION 'unknown generator "%"', generator
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The generator is one of flake_next, randflake_next and ulidflake_next.';
	END IF;
	IF undatable NOT IN ('keep', 'now') THEN
		RAISE EXCEPTION 'invalid value for undatable: "%"', undatable
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'undatable is keep (rows without a usable time keep their old ids) '
						 'or now (they get ids of now).';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = tbl AND c.relkind IN ('r', 'p')) THEN
		RAISE EXCEPTION '% is not a table', tbl
			USING ERRCODE = 'wrong_object_type';
	END IF;
	-- the tables are read once they are locked, as a statement at READ
	-- COMMITTED sees them; a transaction snapshot (REPEATABLE READ,
	-- SERIALIZABLE) is older than the locks, and would miss the rows
	-- committed while they were awaited: a rekey left them their old ids
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'flake_migrate runs only at the READ COMMITTED isolation level, not %',
						upper(current_setting('transaction_isolation'))
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'It reads the tables once it holds their locks; '
						   'this transaction''s snapshot is older, '
						   'and rows committed while it waited for them would be missed.',
				  HINT = 'Run it in a transaction at READ COMMITTED: '
						 'BEGIN ISOLATION LEVEL READ COMMITTED, '
						 'or SET default_transaction_isolation = ''read committed'' first.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_arguments(regclass, name, text, boolean, text) IS
	'flake_migrate() helper: check its arguments';

--
-- References by convention that also does not name: notes, and a refusal
-- (a blocked step in a dry run) when they would be left behind without
-- also saying so.  all_change: every column changes (a rekey or
-- ulidflake), so a bigint candidate counts too.
--
CREATE FUNCTION flake_internal.migrate_candidate_steps(tbl regclass, col name,
													   cols flake_internal.migrate_column[],
													   all_change boolean, also text[],
													   dry_run boolean,
													   OUT notes flake_internal.migrate_step[],
													   OUT refused flake_internal.migrate_step[])
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	list		text;
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	refused := '{}';
	SELECT string_agg(c.description, ', '),
		   coalesce(array_agg(ROW('note',
								  'possible reference without a foreign key, left as it is: '
								  || c.description,
								  false, false, NULL)::flake_internal.migrate_step), '{}')
	INTO list, notes
	FROM flake_internal.migrate_candidates(tbl, col, cols) c
	JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
	WHERE all_change OR a.atttypid <> 'int8'::regtype;
	IF list IS NULL OR also IS NOT NULL THEN
		RETURN;
	END IF;
	notes := '{}';
	BEGIN
		RAISE EXCEPTION 'columns of other tables may hold ids of %.%', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Possible references without a foreign key: %s.', list),
				  HINT = 'Name the columns that hold its ids in also => ''{table.column, ...}'' '
						 'so that they change with it, '
						 'or pass also => ''{}'' to leave them as they are.';
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
								det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		refused := refused || flake_internal.migrate_blocked(msg, state, det, hint);
	END;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_candidate_steps(regclass, name,
														   flake_internal.migrate_column[],
														   boolean, text[], boolean) IS
	'flake_migrate() helper: notes on possible references without a foreign key, '
	'or the refusal to leave them behind';

--
-- The steps of a rekey: the mapping table made, filled from
-- migrate_rekey_query(), indexed, and granted to the owners of the
-- touched tables, who read it in their ALTER TABLE.  The mapping table is
-- the caller's own: it holds no code of another role.  A dry run collects
-- what stops it as blocked steps (refused).
--
CREATE FUNCTION flake_internal.migrate_rekey_steps(tbl regclass, col name, generator text,
												   rekey_from name, map_rel text, first_id bigint,
												   undatable text, touched oid[], dry_run boolean,
												   OUT steps flake_internal.migrate_step[],
												   OUT refused flake_internal.migrate_step[])
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake'
							 ELSE 'bigint' END;
	mapping		record;			-- migrate_rekey_query(): old and new ids
	owners		text;
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	steps := '{}';
	refused := '{}';
	BEGIN
		SELECT * INTO mapping
		FROM flake_internal.migrate_rekey_query(tbl, col, generator, rekey_from, first_id,
												undatable);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
								det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		refused := refused || flake_internal.migrate_blocked(msg, state, det, hint);
		SELECT NULL::text AS query, NULL::text AS note INTO mapping;
	END;
	IF mapping.note IS NOT NULL THEN
		steps := steps
			|| ROW('note', mapping.note, false, false, NULL)::flake_internal.migrate_step;
	END IF;
	steps := steps
		|| ROW('create map',
			   format('CREATE TABLE %s (old_id bigint NOT NULL, new_id %s NOT NULL)',
					  coalesce(map_rel, '...'), target),
			   true, false, NULL)::flake_internal.migrate_step
		|| ROW('comment',
			   format('COMMENT ON TABLE %s IS %L', map_rel,
					  format('old and new ids of %s.%I, rekeyed by flake_migrate from %I',
							 tbl, col, rekey_from)),
			   true, false, NULL)::flake_internal.migrate_step
		|| ROW('fill map',
			   format('INSERT INTO %s (old_id, new_id) SELECT old_id, %s FROM (%s) c', map_rel,
					  CASE WHEN to_ulid THEN format('CAST(new_id AS %s)', target) ELSE 'new_id' END,
					  coalesce(mapping.query, '...')),
			   true, true, NULL)::flake_internal.migrate_step
		-- built after the rows are in: one sort each
		|| ROW('index map',
			   format('ALTER TABLE %s ADD PRIMARY KEY (old_id), ADD UNIQUE (new_id)',
					  coalesce(map_rel, '...')),
			   true, false, NULL)::flake_internal.migrate_step;
	SELECT string_agg(DISTINCT c.relowner::regrole::text, ', ') INTO owners
	FROM pg_class c
	WHERE c.oid = ANY (touched) AND c.relowner <> current_user::regrole;
	IF owners IS NOT NULL THEN
		steps := steps || ROW('grant',
							  format('GRANT SELECT ON %s TO %s', coalesce(map_rel, '...'), owners),
							  true, false, NULL)::flake_internal.migrate_step;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_steps(regclass, name, text, name, text, bigint,
													   text, oid[], boolean) IS
	'flake_migrate() helper: the steps that make, fill, index and grant a rekey''s mapping table';

--
-- The steps that widen the key and the columns referencing it, one
-- statement a table; a rekey gives them their new ids in the same
-- statement, through the mapping table, so each table is rewritten once
-- (and no trigger, rule or policy acts on it).
--
CREATE FUNCTION flake_internal.migrate_alter_steps(cols flake_internal.migrate_column[],
												   touched oid[], generator text,
												   rekey boolean, map_rel text)
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake'
							 ELSE 'bigint' END;
	steps		flake_internal.migrate_step[] := '{}';
	t			oid;
	list		text;
BEGIN
	FOREACH t IN ARRAY touched LOOP
		SELECT string_agg(format('ALTER COLUMN %I TYPE %s%s', a.attname, target,
								 CASE WHEN rekey
								 THEN format(' USING %s',
											 format(CASE WHEN to_ulid THEN 'CAST(%s AS %s)'
														 ELSE '%s' END,
													format('flake_internal.migrate_lookup(%L, '
														   'CAST(%I AS bigint))',
														   coalesce(map_rel, '...'), a.attname),
													target))
								 WHEN to_ulid
								 THEN format(' USING CAST(CAST(%I AS bigint) AS %s)',
											 a.attname, target)
								 ELSE '' END), ', ' ORDER BY a.attnum)
		INTO list
		FROM unnest(cols) u
		JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
		WHERE u.relid = t AND u.changes;
		CONTINUE WHEN list IS NULL;
		steps := steps || ROW(CASE WHEN rekey THEN 'rekey' ELSE 'alter type' END,
							  format('ALTER TABLE %s %s', t::regclass, list),
							  true, false, t)::flake_internal.migrate_step;
	END LOOP;
	RETURN steps;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_alter_steps(flake_internal.migrate_column[], oid[], text,
													   boolean, text) IS
	'flake_migrate() helper: the ALTER TABLE of each table whose columns change type '
	'or get new ids';

--
-- Run a plan's steps in order, or with dry_run only list them; counted
-- steps report their rows.  A step on a table runs as the table's owner
-- (migrate_as_owner), so that the table's code never runs with the
-- caller's rights.
--
CREATE FUNCTION flake_internal.migrate_run(plan flake_internal.migrate_step[], dry_run boolean,
										   to_ulid boolean)
	RETURNS TABLE(step integer, action text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	s			flake_internal.migrate_step;
	cnt			bigint;
BEGIN
	FOR i IN 1 .. cardinality(plan) LOOP
		s := plan[i];
		step := i;
		action := s.action;
		detail := s.detail;
		IF s.run AND NOT dry_run THEN
			IF s.as_owner_of IS NULL THEN
				EXECUTE detail;
				GET DIAGNOSTICS cnt = ROW_COUNT;
			ELSE
				-- ALTER TABLE parses CHECK constraints and index expressions
				-- again for the new type: with ulidflake, they need its
				-- operators
				cnt := flake_internal.migrate_as_owner(s.as_owner_of, detail,
													   action IN ('alter type', 'rekey')
													   AND to_ulid);
			END IF;
			IF s.counted THEN
				detail := format('%s /* %s rows */', detail, cnt);
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_run(flake_internal.migrate_step[], boolean, boolean) IS
	'flake_migrate() helper: run the steps of a plan, or list them for a dry run';

-- Who may call the helpers.  flake_migrate() is SECURITY INVOKER: the
-- table owner's session (and the online client, connected as the owner)
-- calls them with its own rights, so they need EXECUTE for every role that
-- may own a table, that is PUBLIC, and the schema's USAGE (granted where
-- the schema is made).  None gives more than its caller has: the catalog
-- readers return what pg_catalog shows everyone; migrate_lock() and
-- the statements the plan runs as the caller need the caller's own
-- privileges; migrate_as_owner() and migrate_read_as_owner()
-- refuse (42501) a role that may not SET ROLE to the table's owner;
-- migrate_lookup() reads the mapping table with its caller's
-- rights; flake_rekey_claim(), which uses up a node, is revoked from PUBLIC
-- and checks that the caller owns the table.  Only the extension's owner
-- may create objects in flake_internal, so no other role's function can
-- take the place of a helper there.

------------------------------------------------------------------------
-- flake_migrate(): the plan, and running it
------------------------------------------------------------------------

CREATE FUNCTION flake_migrate(tbl regclass, col name DEFAULT 'id',
							  generator text DEFAULT 'flake_next',
							  rekey_from name DEFAULT NULL,
							  dry_run boolean DEFAULT false,
							  also text[] DEFAULT NULL,
							  undatable text DEFAULT NULL)
	RETURNS TABLE(step integer, action text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $migrate$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	rekey		boolean := rekey_from IS NOT NULL;
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake'
							 ELSE 'bigint' END;
	key			record;			-- the key column: migrate_key()
	map_rel		text;			-- the mapping table, when rekeying
	extra		flake_internal.migrate_column[];	-- the columns named in also
	closure		record;			-- migrate_closure(): the columns and tables
	first_id	bigint;			-- the generator's next id, drawn now
	fk_drops	flake_internal.migrate_step[] := '{}';	-- foreign keys into the columns
	fk_adds		flake_internal.migrate_step[] := '{}';
	plan		flake_internal.migrate_step[] := '{}';
	blocked		flake_internal.migrate_step[] := '{}';	-- what a dry run found in the way
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	PERFORM flake_internal.migrate_arguments(tbl, col, generator, dry_run, undatable);

	-- the table is locked before its definition is read
	plan := plan || flake_internal.migrate_lock(tbl, NULL, dry_run);
	SELECT * INTO key FROM flake_internal.migrate_key(tbl, col);
	IF rekey THEN
		BEGIN
			map_rel := flake_internal.migrate_map_name(tbl, col, generator, rekey_from);
		EXCEPTION WHEN OTHERS THEN
			IF NOT dry_run THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
									det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			blocked := blocked || flake_internal.migrate_blocked(msg, state, det, hint);
			-- the plan below it names the table all the same
			map_rel := flake_internal.migrate_map_rel(tbl);
		END;
	END IF;
	BEGIN
		extra := flake_internal.migrate_also(tbl, col, key.key_attnum, also);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
								det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		blocked := blocked || flake_internal.migrate_blocked(msg, state, det, hint);
		extra := '{}';
	END;
	SELECT * INTO closure
	FROM flake_internal.migrate_closure(tbl, col, key.key_attnum, extra, to_ulid, rekey, dry_run);
	plan := plan || closure.locks;
	blocked := blocked
		|| flake_internal.migrate_blockers(tbl, col, closure.cols, closure.touched, dry_run);

	SELECT plan || c.notes, blocked || c.refused INTO plan, blocked
	FROM flake_internal.migrate_candidate_steps(tbl, col, closure.cols, rekey OR to_ulid, also,
												dry_run) c;

	EXECUTE format('SELECT CAST(@extschema@.%I() AS bigint)', generator) INTO first_id;
	BEGIN
		plan := plan || flake_internal.migrate_probe(tbl, col, closure.cols, generator, first_id,
													 rekey);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
								det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		blocked := blocked || flake_internal.migrate_blocked(msg, state, det, hint);
	END;

	IF rekey THEN
		SELECT plan || r.steps, blocked || r.refused INTO plan, blocked
		FROM flake_internal.migrate_rekey_steps(tbl, col, generator, rekey_from, map_rel, first_id,
												undatable, closure.touched, dry_run) r;
	END IF;

	IF rekey OR true = ANY (SELECT c.changes FROM unnest(closure.cols) c) THEN
		BEGIN
			SELECT f.drops, f.adds INTO fk_drops, fk_adds
			FROM flake_internal.migrate_foreign_keys(tbl, col, closure.cols) f;
		EXCEPTION WHEN OTHERS THEN
			IF NOT dry_run THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
									det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			blocked := blocked || flake_internal.migrate_blocked(msg, state, det, hint);
		END;
		plan := plan || fk_drops;
	END IF;

	plan := plan || flake_internal.migrate_detach(tbl, col, key.key_attnum, key.identity_seq,
												  key.default_oid, key.default_seqs);

	plan := plan || flake_internal.migrate_alter_steps(closure.cols, closure.touched, generator,
													   rekey, map_rel);

	plan := plan || fk_adds
		|| ROW('set default',
			   format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT @extschema@.%I()',
					  tbl, col, generator),
			   true, false, tbl)::flake_internal.migrate_step;

	-- run the plan (or only show it, after what is in its way)
	RETURN QUERY SELECT * FROM flake_internal.migrate_run(blocked || plan, dry_run, to_ulid);
END
$migrate$;

COMMENT ON FUNCTION flake_migrate(regclass, name, text, name, boolean, text[], text) IS
	'switch a serial or identity key (and the columns referencing it) to flake ids, '
	'optionally rekeying existing rows from a time column';

------------------------------------------------------------------------
-- flake_migrate_tables(): a set of tables in one call
------------------------------------------------------------------------

--
-- Migrate the keys of several tables, in the caller's transaction: tables
-- whose keys others reference (through foreign keys or also) first; a
-- referencing column is changed by the migration of the key it
-- references, once.  Each entry of also is 'table.column:key_table', or
-- 'table.column' when the column is a candidate reference (see
-- migrate_candidates) of exactly one of the tables.
--
CREATE FUNCTION flake_migrate_tables(tbls regclass[], col name DEFAULT 'id',
									 generator text DEFAULT 'flake_next',
									 rekey_from name DEFAULT NULL,
									 dry_run boolean DEFAULT false,
									 also text[] DEFAULT NULL,
									 undatable text DEFAULT NULL)
	RETURNS TABLE(tbl regclass, step integer, action text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ordered		regclass[];
	assigned	text[];			-- by table, in the order of ordered: its also
	item		text;
	owners		regclass[];
	i			integer;
BEGIN
	IF tbls IS NULL OR cardinality(tbls) = 0 THEN
		RAISE EXCEPTION 'tbls must name at least one table'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	SELECT array_agg(u.t ORDER BY u.t::text) INTO ordered
	FROM (SELECT DISTINCT x AS t FROM unnest(tbls) x) u;

	-- each also entry goes to one table's migration
	assigned := array_fill(NULL::text, ARRAY[cardinality(ordered)]);
	FOREACH item IN ARRAY coalesce(also, '{}') LOOP
		IF strpos(item, ':') > 0 THEN
			-- table.column:key_table, the key's table as in tbls or by name
			SELECT coalesce(array_agg(o.t), '{}') INTO owners
			FROM unnest(ordered) o(t) JOIN pg_class c ON c.oid = o.t
			WHERE substring(item FROM ':([^:]*)$') IN (o.t::text, c.relname::text);
			item := substring(item FROM '^(.*):[^:]*$');
		ELSE
			SELECT coalesce(array_agg(o.t), '{}') INTO owners
			FROM unnest(ordered) o(t)
			CROSS JOIN LATERAL unnest(flake_internal.migrate_also(o.t, col, 0::int2, ARRAY[item])) x
			WHERE EXISTS (SELECT FROM flake_internal.migrate_candidates(o.t, col, '{}') c
						  WHERE c.relid = x.relid AND c.attnum = x.attnum);
		END IF;
		IF cardinality(owners) <> 1 THEN
			RAISE EXCEPTION 'cannot tell which key "%" in also references', item
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = CASE WHEN cardinality(owners) = 0
							   THEN 'It names none of the tables '
									'and is no candidate reference of any of them.'
							   ELSE format('It could reference the keys of %s.',
										   array_to_string(owners, ', ')) END,
					  HINT = 'Write it as table.column:key_table, '
							 'naming one of the tables being migrated.';
		END IF;
		i := array_position(ordered, owners[1]);
		assigned[i] := concat_ws(E'\n', assigned[i], item);
	END LOOP;

	-- referenced tables first: a table's depth is one more than the
	-- deepest table of the set it references, through a foreign key or a
	-- column named in also
	WITH RECURSIVE t(relid, items) AS (
		SELECT x.t::oid, x.items FROM unnest(ordered, assigned) x(t, items)
	), edges(child, parent) AS (
		SELECT c.conrelid, c.confrelid
		FROM pg_constraint c
		WHERE c.contype = 'f' AND c.conrelid IN (SELECT t.relid FROM t)
		  AND c.confrelid IN (SELECT t.relid FROM t)
		UNION
		SELECT a.relid, t.relid
		FROM t
		CROSS JOIN LATERAL unnest(flake_internal.migrate_also(t.relid, col, 0::int2,
															  string_to_array(t.items, E'\n'))) a
		WHERE a.relid IN (SELECT t.relid FROM t)
	), refs(relid, depth) AS (
		SELECT t.relid, 0 FROM t
		UNION ALL
		SELECT e.child, r.depth + 1
		FROM refs r JOIN edges e ON e.parent = r.relid AND e.child <> e.parent
		WHERE r.depth < (SELECT count(*) FROM t)
	)
	SELECT array_agg(d.relid::regclass ORDER BY d.depth, d.relid::regclass::text),
		   array_agg(t.items ORDER BY d.depth, d.relid::regclass::text)
	INTO ordered, assigned
	FROM (SELECT refs.relid, max(refs.depth) AS depth FROM refs GROUP BY refs.relid) d
	JOIN t ON t.relid = d.relid;

	FOR i IN 1 .. cardinality(ordered) LOOP
		tbl := ordered[i];
		FOR step, action, detail IN
			SELECT m.step, m.action, m.detail
			FROM @extschema@.flake_migrate(ordered[i], col, generator, rekey_from, dry_run,
										   CASE WHEN also IS NOT NULL
										   THEN coalesce(string_to_array(assigned[i], E'\n'), '{}')
										   END,
										   undatable) m
		LOOP
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;

COMMENT ON FUNCTION flake_migrate_tables(regclass[], name, text, name, boolean, text[], text) IS
	'flake_migrate() for a set of tables in one transaction, referenced tables first';
