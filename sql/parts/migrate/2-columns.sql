-- flake_migrate(), 2: the key, the columns that hold its values, the mapping table's name

--
-- The key column and where its values come from: its identity sequence, or
-- the sequences its default draws from.
--
CREATE FUNCTION flake_internal.migrate_key(tbl regclass, col name,
										   OUT key_attnum int2, OUT key_type oid,
										   OUT key_notnull boolean, OUT identity_seq oid,
										   OUT default_oid oid, OUT default_seqs oid[])
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	generated	text;
	def_text	text;
	list		text;
BEGIN
	SELECT a.attnum, a.atttypid, a.attnotnull, a.attgenerated
	INTO key_attnum, key_type, key_notnull, generated
	FROM pg_attribute a
	WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table % does not exist', col, tbl
			USING ERRCODE = 'undefined_column',
				  HINT = 'Name the key column with col => ''...'' (the default is id).';
	END IF;
	IF key_type NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) OR generated <> '' THEN
		RAISE EXCEPTION 'column %.% is not an integer key', tbl, quote_ident(col)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('It is %s%s; flake_migrate migrates smallint, integer and bigint '
								  'keys (serial, bigserial, identity).',
								  CASE WHEN generated <> '' THEN 'a generated column of type '
									   ELSE 'of type ' END,
								  format_type(key_type, NULL));
	END IF;

	SELECT d.objid INTO identity_seq
	FROM pg_attribute a
	JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
					AND d.refobjid = tbl AND d.refobjsubid = a.attnum AND d.deptype = 'i'
	WHERE a.attrelid = tbl AND a.attnum = key_attnum AND a.attidentity <> '';
	IF identity_seq IS NOT NULL THEN
		-- dropping the identity drops its sequence, which must be unused
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1)
		INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = identity_seq AND d.deptype = 'n';
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'the identity sequence % of %.% is used by other objects',
					identity_seq::regclass, tbl, quote_ident(col)
				USING ERRCODE = 'dependent_objects_still_exist',
					  DETAIL = format('Dropping the identity drops the sequence; '
									  'these depend on it: %s.', list),
					  HINT = 'Let them draw from another sequence first.';
		END IF;
		RETURN;
	END IF;

	SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) INTO default_oid, def_text
	FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = key_attnum;
	SELECT coalesce(array_agg(d.refobjid ORDER BY d.refobjid), '{}') INTO default_seqs
	FROM pg_depend d JOIN pg_class s ON s.oid = d.refobjid
	WHERE d.classid = 'pg_attrdef'::regclass AND d.objid = default_oid
	  AND d.refclassid = 'pg_class'::regclass AND s.relkind = 'S';
	IF default_oid IS NOT NULL AND cardinality(default_seqs) = 0 THEN
		IF def_text LIKE '%flake\_next()%' THEN
			RAISE EXCEPTION 'column %.% already takes its ids from a flake generator',
					tbl, quote_ident(col)
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Its default is %s.', def_text);
		END IF;
		RAISE EXCEPTION 'column %.% has a default that is not a sequence', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Its default is %s.', def_text),
				  HINT = 'Drop the default first if it is meant to be replaced.';
	ELSIF default_oid IS NULL THEN
		RAISE EXCEPTION 'column %.% does not take its values from a sequence', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'It has no default and is not an identity column; flake_migrate '
						   'migrates keys filled by a sequence (serial, bigserial, identity).',
				  HINT = 'Name the key column with col => ''...'' (the default is id).';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_key(regclass, name) IS
	'flake_migrate() helper: the key column, and the identity or sequences its values come from';

--
-- Whether a column can hold ids: an integer, or a numeric without
-- fractions (as pgloader loads MySQL's bigint unsigned).  Its values are
-- checked by migrate_blockers().
--
CREATE FUNCTION flake_internal.migrate_holds_ids(typid oid, typmod integer)
	RETURNS boolean
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT typid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)
		OR (typid = 'numeric'::regtype AND (typmod = -1 OR ((typmod - 4) & 65535) = 0))
$$;
COMMENT ON FUNCTION flake_internal.migrate_holds_ids(oid, integer) IS
	'flake_migrate() helper: whether a column of this type and typmod can hold ids '
	'(an integer, or a numeric without fractions)';

--
-- The columns named in also => '{table.column, ...}' (an unqualified
-- table is looked up in the key's schema): they hold the key's values by
-- convention, without a foreign key, and are changed like the columns
-- that reference the key through one.
--
CREATE FUNCTION flake_internal.migrate_also(tbl regclass, col name, key_attnum int2, also text[])
	RETURNS flake_internal.migrate_column[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	result		flake_internal.migrate_column[] := '{}';
	item		text;
	parts		text[];
	rel			oid;
	att			record;
BEGIN
	FOREACH item IN ARRAY coalesce(also, '{}') LOOP
		BEGIN
			parts := parse_ident(item);
		EXCEPTION WHEN invalid_parameter_value THEN
			parts := NULL;
		END;
		IF parts IS NULL OR cardinality(parts) NOT IN (2, 3) THEN
			RAISE EXCEPTION 'invalid column name "%" in also', item
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Name each column as table.column or schema.table.column.';
		END IF;
		IF cardinality(parts) = 2 THEN
			parts := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
					  WHERE c.oid = tbl) || parts;
		END IF;
		SELECT c.oid INTO rel
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = parts[1] AND c.relname = parts[2] AND c.relkind IN ('r', 'p');
		IF rel IS NULL THEN
			RAISE EXCEPTION 'table %.% named in also does not exist',
					quote_ident(parts[1]), quote_ident(parts[2])
				USING ERRCODE = 'undefined_table',
					  HINT = 'A table without a schema is looked up '
							 'in the schema of the key''s table.';
		END IF;
		SELECT a.attnum, a.atttypid, a.atttypmod INTO att
		FROM pg_attribute a
		WHERE a.attrelid = rel AND a.attname = parts[3] AND a.attnum > 0 AND NOT a.attisdropped;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'column "%" of table % does not exist', parts[3], rel::regclass
				USING ERRCODE = 'undefined_column';
		END IF;
		IF rel = tbl AND att.attnum = key_attnum THEN
			RAISE EXCEPTION 'also names the key %.% itself', tbl, quote_ident(col)
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF NOT flake_internal.migrate_holds_ids(att.atttypid, att.atttypmod) THEN
			RAISE EXCEPTION 'column %.% cannot hold ids', rel::regclass, quote_ident(parts[3])
				USING ERRCODE = 'datatype_mismatch',
					  DETAIL = format('It is of type %s; columns named in also must be smallint, '
									  'integer, bigint or numeric without fractions.',
									  format_type(att.atttypid, att.atttypmod));
		END IF;
		result := result || ROW(rel, att.attnum, true)::flake_internal.migrate_column;
	END LOOP;
	RETURN result;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_also(regclass, name, smallint, text[]) IS
	'flake_migrate() helper: the columns named in also, checked';

--
-- Columns that may hold the key's values by convention: integer-like
-- columns of other tables, not yet among cols and without a foreign key,
-- whose name is the key table's name (or its singular, with or without a
-- prefix such as wp_) followed by _id or id, and whose values all lie in
-- the range of the key's values.  Each table is read as its owner; a table
-- whose owner the caller cannot act as is not read, and its column is
-- listed whatever its values.
--
CREATE FUNCTION flake_internal.migrate_candidates(tbl regclass, col name,
												  cols flake_internal.migrate_column[])
	RETURNS TABLE(relid oid, attnum int2, description text)
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	key_min		numeric;
	key_max		numeric;
	lo			numeric;
	hi			numeric;
	r			record;
BEGIN
	SELECT * INTO key_min, key_max
	FROM flake_internal.migrate_read_as_owner(tbl,
											  format('SELECT CAST(min(%1$I) AS numeric), '
													 'CAST(max(%1$I) AS numeric) FROM %2$s',
													 col, tbl),
											  false)
		 AS m(lo numeric, hi numeric);
	FOR r IN
		WITH base(name) AS (
			SELECT lower(c.relname) FROM pg_class c WHERE c.oid = tbl
			UNION
			SELECT regexp_replace(lower(c.relname), '^.*_', '') FROM pg_class c WHERE c.oid = tbl
		), names(name) AS (
			SELECT DISTINCT x FROM base
			CROSS JOIN LATERAL unnest(ARRAY[base.name, regexp_replace(base.name, 's$', ''),
											regexp_replace(base.name, 'es$', ''),
											regexp_replace(base.name, 'ies$', 'y')]) x
			WHERE x <> ''
		)
		SELECT a.attrelid, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
			   c.relowner::regrole AS owner
		FROM pg_attribute a
		JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
		  AND n.nspname NOT LIKE 'pg\_toast%'
		  AND a.attnum > 0 AND NOT a.attisdropped
		  AND flake_internal.migrate_holds_ids(a.atttypid, a.atttypmod)
		  AND lower(a.attname) IN (SELECT names.name || '_id' FROM names
								   UNION
								   SELECT names.name || 'id' FROM names)
		  AND (a.attrelid, a.attnum) NOT IN (SELECT x.relid, x.attnum FROM unnest(cols) x)
		  AND NOT EXISTS (SELECT FROM pg_constraint f
						  WHERE f.contype = 'f' AND f.conrelid = a.attrelid
							AND a.attnum = ANY (f.conkey))
		  AND has_column_privilege(a.attrelid, a.attnum, 'SELECT')
		ORDER BY a.attrelid::regclass::text, a.attname
	LOOP
		BEGIN
			SELECT * INTO lo, hi
			FROM flake_internal.migrate_read_as_owner(r.attrelid::regclass,
													  format('SELECT CAST(min(%1$I) AS numeric), '
															 'CAST(max(%1$I) AS numeric) FROM %2$s',
															 r.attname, r.attrelid::regclass),
													  false)
				 AS m(lo numeric, hi numeric);
			CONTINUE WHEN lo < key_min OR hi > key_max;
			description := format('%s.%I (%s, %s)', r.attrelid::regclass, r.attname, r.type,
								  CASE WHEN lo IS NULL THEN 'no values'
									   ELSE format('values %s to %s', lo, hi) END);
		EXCEPTION WHEN insufficient_privilege THEN
			description := format('%s.%I (%s, values not read: its owner is %s)',
								  r.attrelid::regclass, r.attname, r.type, r.owner);
		END;
		relid := r.attrelid;
		attnum := r.attnum;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_candidates(regclass, name,
													  flake_internal.migrate_column[]) IS
	'flake_migrate() helper: columns that may hold the key''s values by convention, '
	'without a foreign key';

--
-- The name of a rekey's mapping table: <table>_flake_map, in the table's
-- schema, the table's name shortened to fit.  Apart from the checks of
-- migrate_map_name(), so that a dry run they block still names it.
--
CREATE FUNCTION flake_internal.migrate_map_rel(tbl regclass)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rel			record;
	map_name	text;
BEGIN
	SELECT c.relname, n.nspname INTO rel
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
	map_name := rel.relname;
	WHILE octet_length(map_name || '_flake_map') > 63 LOOP
		map_name := left(map_name, -1);
	END LOOP;
	RETURN format('%I.%I', rel.nspname, map_name || '_flake_map');
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_map_rel(regclass) IS
	'flake_migrate() helper: the name of a rekey''s mapping table';

--
-- Rekeying's arguments and prerequisites; returns the mapping table's name.
--
CREATE FUNCTION flake_internal.migrate_map_name(tbl regclass, col name, generator text,
												rekey_from name)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rekey_type	oid;
	map_rel		text;
BEGIN
	IF generator = 'randflake_next' THEN
		RAISE EXCEPTION 'cannot rekey with randflake_next'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Randflake ids are encrypted: they do not sort by time, '
						   'so they cannot carry the time of existing rows.',
				  HINT = 'Rekey with flake_next or ulidflake_next, or migrate without rekey_from '
						 'so that only new rows get randflake ids.';
	END IF;
	IF generator = 'flake_next'
	   AND coalesce(current_setting('flake.rekey_nodes', true), '') = '' THEN
		RAISE EXCEPTION 'flake.rekey_nodes is empty'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Rekeyed ids lie in the past, where live ids may exist on every node '
						   'of flake.nodes, so they are made on nodes reserved for rekeys.',
				  HINT = 'Leave some nodes out of flake.nodes, here and on every server '
						 'that shares keys, and name them in flake.rekey_nodes, for example '
						 'flake.nodes = ''0-1015'' and flake.rekey_nodes = ''1016-1023''; '
						 'then restart the server.';
	END IF;
	IF NOT has_function_privilege('@extschema@.flake_rekey_claim(regclass, name, boolean)',
								  'EXECUTE') THEN
		RAISE EXCEPTION 'permission denied for function flake_rekey_claim'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'A rekey claims a node of flake.rekey_nodes '
						   '(or a band of ulidflake ids) for this server''s ids.',
				  HINT = 'Rekey as a superuser, or GRANT EXECUTE ON FUNCTION '
						 'flake_rekey_claim(regclass, name, boolean) to the role.';
	END IF;
	SELECT a.atttypid INTO rekey_type
	FROM pg_attribute a
	WHERE a.attrelid = tbl AND a.attname = rekey_from AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table % does not exist', rekey_from, tbl
			USING ERRCODE = 'undefined_column',
				  HINT = 'rekey_from names the column that holds each row''s time.';
	END IF;
	IF rekey_type NOT IN ('timestamptz'::regtype, 'timestamp'::regtype, 'date'::regtype) THEN
		RAISE EXCEPTION 'column %.% cannot give the time of rows', tbl, quote_ident(rekey_from)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('It is of type %s; '
								  'rekey_from needs timestamptz, timestamp or date.',
								  format_type(rekey_type, NULL));
	END IF;
	IF NOT EXISTS (
			SELECT FROM pg_attribute a JOIN pg_index x ON x.indrelid = a.attrelid
			WHERE a.attrelid = tbl AND a.attname = col AND a.attnotnull
			  AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
			  AND x.indkey[0] = a.attnum AND x.indpred IS NULL) THEN
		RAISE EXCEPTION 'column %.% is not a key', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Rekeying maps each old id to one new id, '
						   'so the column must be NOT NULL and unique on its own.',
				  HINT = 'Add a primary key or a unique constraint on the column first.';
	END IF;

	map_rel := flake_internal.migrate_map_rel(tbl);
	IF to_regclass(map_rel) IS NOT NULL THEN
		RAISE EXCEPTION 'relation % already exists', map_rel
			USING ERRCODE = 'duplicate_table',
				  DETAIL = 'Rekeying keeps the old and new ids in that table.',
				  HINT = 'Rename or drop it if it is left over from an earlier migration.';
	END IF;
	RETURN map_rel;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_map_name(regclass, name, text, name) IS
	'flake_migrate() helper: check a rekey''s arguments and prerequisites, '
	'and name its mapping table';

--
-- The columns that reference the key through foreign keys (also composite
-- and in other schemas, transitively), and the tables to alter: the key's
-- table first, then by oid.  Each new table is checked and locked (the
-- caller locked the key's table), and the catalogs are read again until no
-- new one appears.  The locks come before the checks that read data.
--
CREATE FUNCTION flake_internal.migrate_closure(tbl regclass, col name, key_attnum int2,
											   extra flake_internal.migrate_column[],
											   to_ulid boolean, rekey boolean, dry_run boolean,
											   OUT cols flake_internal.migrate_column[],
											   OUT touched oid[],
											   OUT locks flake_internal.migrate_step[])
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	checked		oid[] := ARRAY[tbl::oid];
	t			oid;
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	locks := '{}';
	LOOP
		WITH RECURSIVE refs(relid, attnum) AS (
			SELECT tbl::oid, key_attnum
			UNION
			SELECT x.relid, x.attnum FROM unnest(extra) x
			UNION
			SELECT c.conrelid, c.conkey[k]
			FROM refs
			JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = refs.relid
			CROSS JOIN LATERAL generate_subscripts(c.confkey, 1) k
			WHERE c.confkey[k] = refs.attnum
		)
		SELECT array_agg(ROW(refs.relid, refs.attnum,
							 a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'numeric'::regtype)
							 OR to_ulid OR rekey)::flake_internal.migrate_column
						 ORDER BY refs.relid <> tbl, refs.attnum <> key_attnum,
								  refs.relid, refs.attnum)
		INTO cols
		FROM refs JOIN pg_attribute a ON a.attrelid = refs.relid AND a.attnum = refs.attnum;

		IF rekey OR true = ANY (SELECT c.changes FROM unnest(cols) c) THEN
			SELECT array_agg(u.relid ORDER BY u.relid <> tbl, u.relid) INTO touched
			FROM (SELECT DISTINCT c.relid FROM unnest(cols) c) u;
		ELSE
			touched := ARRAY[tbl::oid];
		END IF;
		EXIT WHEN touched <@ checked;

		FOREACH t IN ARRAY touched LOOP
			CONTINUE WHEN t = ANY (checked);
			BEGIN
				locks := locks || flake_internal.migrate_lock(t, format('%s.%I', tbl, col),
															  dry_run);
			EXCEPTION WHEN insufficient_privilege THEN
				IF NOT dry_run THEN
					RAISE;
				END IF;
				GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
										det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
				locks := locks || flake_internal.migrate_blocked(msg, state, det, hint);
			END;
			checked := checked || t;
		END LOOP;
		-- a dry run takes no locks, so looking again would change nothing
		EXIT WHEN dry_run;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_closure(regclass, name, smallint,
												   flake_internal.migrate_column[],
												   boolean, boolean, boolean) IS
	'flake_migrate() helper: the columns that reference the key, transitively, '
	'and the tables to alter, locked';
