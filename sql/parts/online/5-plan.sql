-- The online migration, 5: the plan the client program runs, and undoing

--
-- The steps of an online migration that are left to do, after the checks:
-- blocked steps (flake_migrate()'s dry run, then the online path's own)
-- and nothing else when something is in the way; the validation alone
-- after a swap; a single done step when nothing is left.
--
CREATE FUNCTION flake_internal.online_plan(tbl regclass, col name DEFAULT 'id',
										  generator text DEFAULT 'flake_next',
										  also text[] DEFAULT NULL)
	RETURNS TABLE(step integer, phase text, rel regclass, action text, lock text,
				  statement text, batch text, total bigint, resume text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake'
							 ELSE 'bigint' END;
	-- found by the oid it records (by its name if 1.2 made it)
	list		regclass := coalesce(flake_internal.online_marked(tbl, 'foreign keys to validate'),
									 to_regclass(format('%s.%I',
														(SELECT c.relnamespace::regnamespace
														 FROM pg_class c WHERE c.oid = tbl),
														flake_internal.online_name(
															(SELECT c.relname FROM pg_class c
															 WHERE c.oid = tbl),
															'__flake_validate'))));
	closure		record;
	blocked		text[];
BEGIN
	PERFORM flake_internal.migrate_arguments(tbl, col, generator, false, NULL);
	step := 0; rel := tbl;
	IF EXISTS (SELECT FROM pg_attribute a
			   JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			   WHERE a.attrelid = tbl AND a.attname = col
				 AND pg_get_expr(d.adbin, d.adrelid) ~ ('^(.*\.)?' || generator || '\(\)$')) THEN
		IF list IS NOT NULL THEN
			step := 1; phase := 'validate'; action := 'validate the foreign keys added NOT VALID';
			lock := 'SHARE UPDATE EXCLUSIVE on the referencing tables, '
					'ROW SHARE on the referenced ones';
			statement := format('SELECT flake_internal.online_validate(%L)', list);
		ELSE
			step := 1; phase := 'done'; action := 'note';
			statement := format('%s.%I takes its ids from %s() already', tbl, col, generator);
		END IF;
		RETURN NEXT;
		RETURN;
	END IF;
	-- the same checks as flake_migrate(), through its dry run
	SELECT array_agg(m.detail ORDER BY m.step) INTO blocked
	FROM @extschema@.flake_migrate(tbl, col, generator, NULL, true, also) m
	WHERE m.action = 'blocked';
	IF blocked IS NULL THEN
		SELECT * INTO closure
		FROM flake_internal.online_closure(tbl, col, also, generator = 'ulidflake_next', true);
		SELECT array_agg(b.detail) INTO blocked
		FROM unnest(flake_internal.online_blockers(closure.cols, target)) b
		WHERE b.action = 'blocked';
	END IF;
	IF blocked IS NOT NULL THEN
		FOREACH statement IN ARRAY blocked LOOP
			step := step + 1; phase := 'check'; action := 'blocked';
			RETURN NEXT;
		END LOOP;
		RETURN;
	END IF;

	FOR phase, rel, action, lock, statement, batch, total, resume IN
		SELECT * FROM flake_internal.online_prepare(closure.cols, target)
	LOOP
		step := step + 1;
		RETURN NEXT;
	END LOOP;
	step := step + 1; phase := 'swap'; rel := tbl; action := 'put the copies in the tables'' place';
	lock := 'ACCESS EXCLUSIVE on every table changed, '
			'SHARE ROW EXCLUSIVE on those referencing them, a moment';
	statement := format('SELECT flake_internal.online_swap(%L, %L, %L, %L)',
						tbl, col, generator, also);
	-- what it runs, for the dry run
	batch := array_to_string(flake_internal.online_swap_sql(tbl, col, generator,
															closure.cols, target),
							 E';\n  ');
	total := NULL; resume := NULL;
	RETURN NEXT;
	IF EXISTS (SELECT FROM pg_constraint f
			   WHERE f.contype = 'f' AND f.convalidated
				 AND (f.conrelid IN (SELECT t.relid
									 FROM flake_internal.online_tables(closure.cols, target) t)
					  OR f.confrelid IN (SELECT t.relid
										 FROM flake_internal.online_tables(closure.cols,
																		   target) t))) THEN
		step := step + 1; phase := 'validate';
		action := 'validate the foreign keys added NOT VALID';
		lock := 'SHARE UPDATE EXCLUSIVE on the referencing tables, '
				'ROW SHARE on the referenced ones';
		statement := format('SELECT flake_internal.online_validate(%L)',
							format('%s.%I',
								   (SELECT c.relnamespace::regnamespace FROM pg_class c
									WHERE c.oid = tbl),
								   flake_internal.online_name((SELECT c.relname FROM pg_class c
															   WHERE c.oid = tbl),
															  '__flake_validate')));
		batch := NULL;
		RETURN NEXT;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.online_plan(regclass, name, text, text[]) IS
	'the steps left of an online migration to flake ids '
	'(run by the flake_migrate_online program), or what blocks it';

--
-- Undo an online migration that has not swapped yet: per table, one short
-- transaction drops the triggers, the log and the copy.  The tables were
-- never changed but for the triggers.
--
CREATE FUNCTION flake_internal.online_undo(tbl regclass, col name DEFAULT 'id',
										   also text[] DEFAULT NULL)
	RETURNS TABLE(step integer, phase text, rel regclass, action text, lock text, statement text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	closure		record;
BEGIN
	-- every table that may have been copied, whatever the generator was
	SELECT * INTO closure FROM flake_internal.online_closure(tbl, col, also, true, true);
	step := 0;
	FOR rel, statement IN
		SELECT t.relid::regclass,
			   format('DROP TRIGGER IF EXISTS zz_flake_migrate_online_log ON %s; '
					  'DROP TRIGGER IF EXISTS zz_flake_migrate_online_no_truncate ON %1$s', t.rel)
			   || coalesce('; DROP TABLE ' || t.log_oid::regclass::text, '')
			   || coalesce('; DROP TABLE ' || t.shadow_oid::regclass::text, '')
		FROM flake_internal.online_tables(closure.cols, 'bigint') t
		WHERE t.shadow_oid IS NOT NULL OR t.log_oid IS NOT NULL
		   OR EXISTS (SELECT FROM pg_trigger g
					  WHERE g.tgrelid = t.relid AND g.tgname = 'zz_flake_migrate_online_log')
		ORDER BY t.relid DESC
	LOOP
		step := step + 1; phase := 'undo'; action := 'drop the copy, the log and the triggers';
		lock := 'ACCESS EXCLUSIVE on the table, a moment';
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.online_undo(regclass, name, text[]) IS
	'the steps that undo an online migration to flake ids that has not swapped yet';
