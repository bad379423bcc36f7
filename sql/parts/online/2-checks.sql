-- The online migration, 2: what it refuses, before anything changes and again at the swap

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
CREATE FUNCTION flake_internal.online_check_replication(cols flake_internal.migrate_column[],
														target text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.online_tables(cols, target) t);
	schemas		oid[];
	list		text;
	whole		boolean;
	listed		boolean;
BEGIN
	SELECT string_agg(format('%s (subscription %s)', r.srrelid::regclass, quote_ident(s.subname)),
					  ', ' ORDER BY r.srrelid::regclass::text, s.subname)
	INTO list
	FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
	WHERE r.srrelid = ANY (copied);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate tables online that a subscription writes into'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s. The swap puts a copy in the place of each table, '
								  'and the subscription''s state for a table '
								  '(pg_subscription_rel) goes with the table: '
								  'the subscription would skip its changes from then on.', list),
				  HINT = 'Migrate them with flake_migrate() (offline), which changes the tables '
						 'in place (the subscription''s writes wait for it), '
						 'or migrate the tables on the publisher.';
	END IF;

	-- the copies' schemas, and the key's table's (the list of foreign keys)
	schemas := ARRAY(SELECT c.relnamespace FROM pg_class c
					 WHERE c.oid = ANY (copied)
						OR (c.oid = cols[1].relid AND cardinality(copied) > 0));
	SELECT string_agg(DISTINCT x, ', '), bool_or(NOT s.listed), bool_or(s.listed)
	INTO list, whole, listed
	FROM (
		SELECT format('publication %s (FOR ALL TABLES)', quote_ident(p.pubname)) AS x,
			   false AS listed
		FROM pg_publication p
		WHERE p.puballtables AND cardinality(copied) > 0
		UNION ALL
		SELECT format('publication %s (FOR TABLES IN SCHEMA %s)', quote_ident(p.pubname),
					  n.pnnspid::regnamespace), false
		FROM pg_publication_namespace n JOIN pg_publication p ON p.oid = n.pnpubid
		WHERE n.pnnspid = ANY (schemas)
		UNION ALL
		SELECT format('publication %s (FOR TABLE %s)', quote_ident(p.pubname),
					  r.prrelid::regclass), true
		FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
		WHERE r.prrelid = ANY (copied)) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate tables online that a publication publishes'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s.', list)
						   || CASE WHEN whole
								   THEN ' The copies of the tables and their logs, '
										'made in the tables'' schemas, would be published too, '
										'which no subscriber has: its apply worker would stop, '
										'for every table.'
								   ELSE '' END
						   || CASE WHEN listed
								   THEN ' The copy put in the place of a table '
										'would not be in the publications that list the table.'
								   ELSE '' END,
				  HINT = 'Migrate the tables with flake_migrate() (offline), '
						 'which changes them in place and keeps them in their publications.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.online_check_replication(flake_internal.migrate_column[],
															text) IS
	'online migration check: no subscription writes into a table to copy '
	'and no publication publishes it or its copy, or an error';

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
CREATE FUNCTION flake_internal.online_check_owners(cols flake_internal.migrate_column[],
												   target text)
	RETURNS void
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.online_tables(cols, target) t);
	owner		oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = cols[1].relid);
	list		text;
BEGIN
	SELECT string_agg(format('%s (owner %s)', c.oid::regclass,
							 quote_ident(pg_get_userbyid(c.relowner))),
					  ', ' ORDER BY c.oid::regclass::text)
	INTO list
	FROM pg_class c
	WHERE c.relowner <> owner
	  AND (c.oid = ANY (copied)
		   OR c.oid IN (SELECT unnest(ARRAY[f.conrelid, f.confrelid]) FROM pg_constraint f
						WHERE f.contype = 'f'
						  AND (f.conrelid = ANY (copied) OR f.confrelid = ANY (copied))));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'cannot migrate %.% online: tables of other owners are copied '
						'or at an end of a foreign key it adds again',
						cols[1].relid::regclass,
						quote_ident((SELECT a.attname FROM pg_attribute a
									 WHERE a.attrelid = cols[1].relid
									   AND a.attnum = cols[1].attnum))
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('%s. The swap adds every foreign key on and into the copied '
								  'tables again, and validates them: statements that need '
								  'the owner of both tables and run their code, '
								  'with the rights of the role migrating, %s.',
								  list, quote_ident(pg_get_userbyid(owner))),
				  HINT = 'Migrate with flake_migrate() (offline), which changes the tables '
						 'in place and leaves those foreign keys alone; '
						 'or have their owners drop those foreign keys '
						 'for the time of the migration and add them again after.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.online_check_owners(flake_internal.migrate_column[], text) IS
	'online migration check: the key''s table''s owner owns every table copied '
	'or at an end of a foreign key the swap adds again, or an error';

--
-- The names the migration gives (the copies, the logs, the list of foreign
-- keys to validate, the indexes of the copies; online_name()
-- makes them from the tables' and indexes' names) must be free in their
-- schema, as relations and as types (a table has a row type of its name),
-- but for the migration's own objects of an earlier run, and differ from
-- each other.
--
CREATE FUNCTION flake_internal.online_check_names(cols flake_internal.migrate_column[],
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
		FROM flake_internal.online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		UNION ALL
		SELECT c.relnamespace, flake_internal.online_name(c.relname, '__flake_log'), t.log_oid,
			   true, format('the log of %s', t.rel)
		FROM flake_internal.online_tables(cols, target) t JOIN pg_class c ON c.oid = t.relid
		UNION ALL
		SELECT c.relnamespace, flake_internal.online_name(c.relname, '__flake_validate'), NULL,
			   true, format('the list of foreign keys to validate of %s', c.oid::regclass)
		FROM pg_class c
		WHERE c.oid = cols[1].relid
		  AND EXISTS (SELECT FROM flake_internal.online_tables(cols, target))
		UNION ALL
		SELECT c.relnamespace, flake_internal.online_name(x.index_name, '__flake_new'),
			   (SELECT y.indexrelid FROM pg_index y JOIN pg_class yc ON yc.oid = y.indexrelid
				WHERE y.indrelid = t.shadow_oid
				  AND yc.relname = flake_internal.online_name(x.index_name, '__flake_new')),
			   false, format('the copy of index %s', quote_ident(x.index_name))
		FROM flake_internal.online_indexes(cols, target) x
		JOIN flake_internal.online_tables(cols, target) t ON t.relid = x.relid
		JOIN pg_class c ON c.oid = x.relid)
	SELECT string_agg(s.x, ', ' ORDER BY s.x) INTO list FROM (
		SELECT format('%s (%s): taken by %s', quote_ident(n.name), n.what,
					  pg_describe_object('pg_class'::regclass, o.oid, 0)) AS x
		FROM needed n JOIN pg_class o ON o.relnamespace = n.nsp AND o.relname = n.name
		WHERE o.oid IS DISTINCT FROM n.own
		UNION ALL
		SELECT format('%s (%s): taken by %s', quote_ident(n.name), n.what,
					  pg_describe_object('pg_type'::regclass, y.oid, 0))
		FROM needed n JOIN pg_type y ON y.typnamespace = n.nsp AND y.typname = n.name
		-- a relation's row type is the relation's name; an array type moves aside
		WHERE n.typed AND y.typrelid = 0 AND y.typcategory <> 'A'
		UNION ALL
		SELECT format('%s: %s', quote_ident(n.name), string_agg(n.what, ' and ' ORDER BY n.what))
		FROM needed n GROUP BY n.nsp, n.name HAVING count(*) > 1) s;
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'names that the online migration of %.% needs are taken',
						cols[1].relid::regclass,
						quote_ident((SELECT a.attname FROM pg_attribute a
									 WHERE a.attrelid = cols[1].relid
									   AND a.attnum = cols[1].attnum))
			USING ERRCODE = 'duplicate_object',
				  DETAIL = format('%s.', list),
				  HINT = 'Rename or drop the objects that have them, '
						 'or migrate with flake_migrate() (offline), which makes no copies.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.online_check_names(flake_internal.migrate_column[], text) IS
	'online migration check: the names of the copies, logs, list and index copies '
	'are free and distinct, or an error';

--
-- Where the log trigger of a table writes: the log its first argument
-- names and the column its second names (pg_trigger.tgargs holds them
-- ended by NUL bytes, in the database's encoding); no row without one.
--
CREATE FUNCTION flake_internal.online_logged(rel oid)
	RETURNS TABLE(log oid, key text)
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN g.tgnargs = 2
				THEN to_regclass(convert_from(substring(g.tgargs FROM 1 FOR p.n - 1),
											  getdatabaseencoding())) END,
		   CASE WHEN g.tgnargs = 2
				THEN convert_from(substring(g.tgargs FROM p.n + 1 FOR length(g.tgargs) - p.n - 1),
								  getdatabaseencoding()) END
	FROM pg_trigger g
	CROSS JOIN LATERAL (SELECT position('\x00'::bytea IN g.tgargs) AS n) p
	WHERE g.tgrelid = rel AND g.tgname = 'zz_flake_migrate_online_log'
$$;
COMMENT ON FUNCTION flake_internal.online_logged(oid) IS
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
CREATE FUNCTION flake_internal.online_blockers(cols flake_internal.migrate_column[], target text)
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	found		flake_internal.migrate_step[] := '{}';
	copied		oid[] := ARRAY(SELECT t.relid FROM flake_internal.online_tables(cols, target) t);
	list		text;
	check_name	text;
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	SELECT string_agg(t.rel, ', ') INTO list
	FROM flake_internal.online_tables(cols, target) t WHERE t.batch_key IS NULL;
	IF list IS NOT NULL THEN
		found := found || flake_internal.migrate_blocked(
			'tables without a key to copy them in batches', '55000',
			format('Tables: %s. The online path copies a table in batches by its primary key '
				   'or a unique index on one NOT NULL column.', list));
	END IF;

	SELECT string_agg(x, ', ' ORDER BY x) INTO list FROM (
		SELECT format('%s on %s', pg_describe_object(d.classid, d.objid, d.objsubid),
					  c.oid::regclass) AS x
		FROM pg_class c
		JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid
		WHERE c.oid = ANY (copied)
		  AND d.classid IN ('pg_rewrite'::regclass, 'pg_policy'::regclass,
							'pg_statistic_ext'::regclass)
		UNION
		SELECT format('%s uses the row type of %s',
					  pg_describe_object(d.classid, d.objid, d.objsubid), c.oid::regclass)
		FROM pg_class c
		JOIN pg_depend d ON d.refclassid = 'pg_type'::regclass AND d.refobjid = c.reltype
		WHERE c.oid = ANY (copied) AND d.deptype = 'n'
		UNION
		SELECT format('%s: %s', c.oid::regclass, r.what)
		FROM pg_class c CROSS JOIN LATERAL (VALUES
			(c.relrowsecurity OR c.relforcerowsecurity, 'row level security'),
			(c.relreplident NOT IN ('d'), 'a replica identity other than the primary key'),
			(c.reltablespace <> 0, 'a tablespace of its own'),
			(c.reloftype <> 0, 'a typed table'),
			(EXISTS (SELECT FROM pg_class t
					 WHERE t.oid = c.reltoastrelid AND t.reloptions IS NOT NULL),
			 'storage parameters of its TOAST table'),
			(NOT has_schema_privilege(c.relnamespace, 'CREATE'),
			 'no CREATE privilege on its schema, for the copy'),
			(EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attacl IS NOT NULL),
			 'column privileges'),
			(EXISTS (SELECT FROM aclexplode(c.relacl) g WHERE g.grantor <> c.relowner),
			 'privileges granted by another role'),
			(EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attidentity <> ''
					 AND NOT (a.attrelid = cols[1].relid AND a.attnum = cols[1].attnum)),
			 'an identity column other than the key'),
			(EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = c.oid
					 AND ((k.contype = 'c' AND NOT k.convalidated) OR k.contype = 'x'
						  OR (k.contype IN ('p', 'u') AND k.condeferrable))),
			 'a NOT VALID check, an exclusion constraint or a deferrable key'),
			(EXISTS (SELECT FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
					 WHERE x.indrelid = c.oid AND (NOT x.indisvalid OR ic.reltablespace <> 0)),
			 'an invalid index or one in a tablespace of its own'),
			(EXISTS (SELECT FROM pg_description d JOIN pg_class m ON m.oid = d.objoid
					 WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0
					   AND m.relowner <> c.relowner
					   AND d.description IN ('flake_migrate_online: the copy of ' || c.oid,
											 'flake_migrate_online: the log of ' || c.oid)),
			 'a copy or log of it belongs to another role '
			 '(its owner changed during the migration, or another role made it)')) r(blocks, what)
		WHERE c.oid = ANY (copied) AND r.blocks
		UNION
		SELECT format('%s: its columns or checks changed while it was copied '
					  '(a type, NOT NULL, a default, a collation, storage, '
					  'table options or its schema; undo, then run again)', t.rel)
		FROM flake_internal.online_tables(cols, target) t
		CROSS JOIN LATERAL (SELECT array_agg(a.attname) AS names,
								   (array_agg(a.attname)
									FILTER (WHERE u.relid = cols[1].relid
											  AND u.attnum = cols[1].attnum))[1] AS key
							FROM unnest(cols) u
							JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
							WHERE u.relid = t.relid AND u.changes) n
		WHERE t.shadow_oid IS NOT NULL
		  AND flake_internal.online_shape(t.relid, n.names, n.key)
			  IS DISTINCT FROM flake_internal.online_shape(t.shadow_oid, n.names, n.key)
		UNION
		-- the log trigger must log the key the copy goes by into the log:
		-- a primary key dropped meanwhile may have made another the key
		SELECT format('%s: its log trigger logs another column or into another table '
					  'than the copy goes by (undo, then run again)', t.rel)
		FROM flake_internal.online_tables(cols, target) t
		CROSS JOIN LATERAL flake_internal.online_logged(t.relid) g
		WHERE t.log_oid IS NOT NULL
		  AND (g.log IS DISTINCT FROM t.log_oid OR g.key IS DISTINCT FROM t.batch_key)
		UNION
		SELECT format('index %s (an expression, a predicate or an operator class '
					  'on a changing column)', x.indexrelid::regclass)
		FROM unnest(cols) u
		JOIN pg_index x ON x.indrelid = u.relid
		WHERE u.changes AND (
			(u.attnum = ANY (x.indkey)
			 AND EXISTS (SELECT FROM generate_series(0, x.indnkeyatts - 1) n
						 JOIN pg_opclass o ON o.oid = x.indclass[n]
						 WHERE x.indkey[n] = u.attnum AND NOT o.opcdefault))
			OR ((x.indexprs IS NOT NULL OR x.indpred IS NOT NULL)
				AND EXISTS (SELECT FROM pg_depend d
							WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
							  AND d.refobjid = u.relid AND d.refobjsubid = u.attnum)))) s;
	IF list IS NOT NULL THEN
		found := found || flake_internal.migrate_blocked(
			'objects that the online path cannot carry to the copies of the tables', '0A000',
			format('%s.', list));
		found := found || ROW('note',
							  'flake_migrate() (offline) may still migrate these tables; '
							  'or change the objects above first',
							  false, false, NULL)::flake_internal.migrate_step;
	END IF;
	-- the checks that are errors of the swap too
	FOREACH check_name IN ARRAY ARRAY['replication', 'owners', 'names'] LOOP
		BEGIN
			EXECUTE format('SELECT flake_internal.online_check_%s($1, $2)', check_name)
				USING cols, target;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
									det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			found := found || flake_internal.migrate_blocked(msg, state, det, hint);
		END;
	END LOOP;
	RETURN found;
END
$$;
COMMENT ON FUNCTION flake_internal.online_blockers(flake_internal.migrate_column[], text) IS
	'online migration helper: what the online path cannot do, as blocked steps';
