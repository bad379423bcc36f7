------------------------------------------------------------------------
-- Migration: serial, bigserial and identity keys to generator ids
--
-- flake_migrate() switches a key column's default to a flake generator,
-- detaches it from its sequence or identity, widens it (and every column
-- that references it through foreign keys, transitively, or by convention
-- when named in also) to bigint or ulidflake, and optionally gives existing
-- rows ids made from a time column: a mapping table of old and new ids,
-- then one ALTER TABLE a table that changes type and ids together.
-- Everything is checked before anything changes (a dry run lists every
-- problem); the changes run in the caller's transaction, so an error
-- anywhere undoes all of them.
--
-- The work is split along its phases into the flake_migrate_* helpers
-- below, in the schema flake_internal (out of the way of the user's
-- functions and of \df); flake_migrate() puts their steps into one plan and
-- runs it.  All are SECURITY INVOKER, and the caller must own each table
-- it changes (or be a member of its owner).  Every statement that reads or alters a
-- table runs as that table's owner, in a security-restricted operation
-- (flake_migrate_as_owner, flake_migrate_read_as_owner): index
-- expressions, CHECK constraints and policies are the owner's code, and
-- must not run with the caller's rights, which may be a superuser's.  The
-- caller runs only statements that run no such code: locks, and creating,
-- filling and granting the mapping table.
------------------------------------------------------------------------

-- One step of a migration plan: a statement to run, a lock or a note.
CREATE TYPE flake_internal.flake_migrate_step AS (
	action text,
	detail text,
	run boolean,
	counted boolean,
	as_owner_of regclass
);
COMMENT ON TYPE flake_internal.flake_migrate_step IS 'a step of a flake_migrate() plan';
COMMENT ON COLUMN flake_internal.flake_migrate_step.action IS 'what kind of step: lock, alter type, rekey, note, blocked, ...';
COMMENT ON COLUMN flake_internal.flake_migrate_step.detail IS 'the statement, or the text of a note or of a blocked step';
COMMENT ON COLUMN flake_internal.flake_migrate_step.run IS 'false: a note, a blocked step, or a lock already taken';
COMMENT ON COLUMN flake_internal.flake_migrate_step.counted IS 'report the rows the statement touched';
COMMENT ON COLUMN flake_internal.flake_migrate_step.as_owner_of IS 'run the statement as the owner of this table; NULL: as the caller';

-- A column that holds the key's values: the key or a referencing column.
CREATE TYPE flake_internal.flake_migrate_column AS (
	relid oid,
	attnum int2,
	changes boolean
);
COMMENT ON TYPE flake_internal.flake_migrate_column IS 'a column whose values flake_migrate() changes';
COMMENT ON COLUMN flake_internal.flake_migrate_column.relid IS 'the column''s table';
COMMENT ON COLUMN flake_internal.flake_migrate_column.attnum IS 'the column''s number in its table';
COMMENT ON COLUMN flake_internal.flake_migrate_column.changes IS 'its type changes, or its table is rewritten with new ids';

--
-- A statement or query on a table, run as the table's owner inside a
-- security-restricted operation with search_path pg_catalog, pg_temp (and
-- the extension's schema between them with flake_types, for ALTER TABLE
-- ... TYPE ulidflake), as PostgreSQL runs REINDEX (src/owner.c).  Open to
-- PUBLIC, as the other helpers are (see the end of this file): only a role
-- that may SET ROLE to the owner may use them, which gives it nothing it
-- does not have.
--
CREATE FUNCTION flake_internal.flake_migrate_as_owner(tbl regclass, statement text, flake_types boolean)
	RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.flake_migrate_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: run a statement as the owner of a table, in a security-restricted operation; returns the rows it processed';
CREATE FUNCTION flake_internal.flake_migrate_read_as_owner(tbl regclass, query text, flake_types boolean)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.flake_migrate_read_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: the rows of a query run as the owner of a table, in a security-restricted operation';

--
-- A blocker found by a dry run, as a plan step: the error it would raise,
-- with its detail and its hint, so that the dry run says what to do as the
-- real run's error does.
--
CREATE FUNCTION flake_internal.flake_migrate_blocked(message text, sqlstate text, detail text,
													 hint text DEFAULT NULL)
	RETURNS flake_internal.flake_migrate_step
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT ROW('blocked', format('%s (SQLSTATE %s)', message, sqlstate)
						  || coalesce('. ' || nullif(concat_ws(' ', detail, 'Hint: ' || hint), ''), ''),
			   false, false, NULL)::flake_internal.flake_migrate_step
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_blocked(text, text, text, text) IS
	'flake_migrate() helper: the step a dry run shows for an error that a real run would raise, with its detail and hint';

--
-- Check that the caller owns a table, and lock it unless this is a dry run.
-- The lock comes before anything of the table is read, so that nothing
-- changes between check and change.  referenced names the key column that
-- a referencing table's column points to (NULL for the key's own table).
--
CREATE FUNCTION flake_internal.flake_migrate_lock(tbl regclass, referenced text, dry_run boolean)
	RETURNS flake_internal.flake_migrate_step
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	owner		regrole := (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = tbl);
BEGIN
	IF NOT pg_has_role(owner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = CASE WHEN referenced IS NULL
						   THEN format('flake_migrate alters %s; only its owner %s (or a member of that role) can.',
									   tbl, owner)
						   ELSE format('%s references %s, so flake_migrate alters it too; only its owner %s (or a member of that role) can.',
									   tbl, referenced, owner) END,
				  HINT = 'Run flake_migrate as the owner of the tables.';
	END IF;
	IF NOT dry_run THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	RETURN ROW('lock', format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl), false, false, NULL)::flake_internal.flake_migrate_step;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_lock(regclass, text, boolean) IS
	'flake_migrate() helper: check that the caller owns a table, and lock it unless this is a dry run';

--
-- The key column and where its values come from: its identity sequence, or
-- the sequences its default draws from.
--
CREATE FUNCTION flake_internal.flake_migrate_key(tbl regclass, col name,
								  OUT key_attnum int2, OUT key_type oid, OUT key_notnull boolean,
								  OUT identity_seq oid, OUT default_oid oid, OUT default_seqs oid[])
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
				  DETAIL = format('It is %s%s; flake_migrate migrates smallint, integer and bigint keys (serial, bigserial, identity).',
								  CASE WHEN generated <> '' THEN 'a generated column of type ' ELSE 'of type ' END,
								  format_type(key_type, NULL));
	END IF;

	SELECT d.objid INTO identity_seq
	FROM pg_attribute a
	JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
					AND d.refobjid = tbl AND d.refobjsubid = a.attnum AND d.deptype = 'i'
	WHERE a.attrelid = tbl AND a.attnum = key_attnum AND a.attidentity <> '';
	IF identity_seq IS NOT NULL THEN
		-- dropping the identity drops its sequence, which must be unused
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1) INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = identity_seq AND d.deptype = 'n';
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'the identity sequence % of %.% is used by other objects',
					identity_seq::regclass, tbl, quote_ident(col)
				USING ERRCODE = 'dependent_objects_still_exist',
					  DETAIL = format('Dropping the identity drops the sequence; these depend on it: %s.', list),
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
			RAISE EXCEPTION 'column %.% already takes its ids from a flake generator', tbl, quote_ident(col)
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
				  DETAIL = 'It has no default and is not an identity column; flake_migrate migrates keys filled by a sequence (serial, bigserial, identity).',
				  HINT = 'Name the key column with col => ''...'' (the default is id).';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_key(regclass, name) IS
	'flake_migrate() helper: the key column, and the identity or sequences its values come from';

--
-- Whether a column can hold ids: an integer, or a numeric without
-- fractions (as pgloader loads MySQL's bigint unsigned).  Its values are
-- checked by flake_migrate_blockers().
--
CREATE FUNCTION flake_internal.flake_migrate_holds_ids(typid oid, typmod integer)
	RETURNS boolean
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT typid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)
		OR (typid = 'numeric'::regtype AND (typmod = -1 OR ((typmod - 4) & 65535) = 0))
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_holds_ids(oid, integer) IS
	'flake_migrate() helper: whether a column of this type and typmod can hold ids (an integer, or a numeric without fractions)';

--
-- The columns named in also => '{table.column, ...}' (an unqualified
-- table is looked up in the key's schema): they hold the key's values by
-- convention, without a foreign key, and are changed like the columns
-- that reference the key through one.
--
CREATE FUNCTION flake_internal.flake_migrate_also(tbl regclass, col name, key_attnum int2, also text[])
	RETURNS flake_internal.flake_migrate_column[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	result		flake_internal.flake_migrate_column[] := '{}';
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
			RAISE EXCEPTION 'table %.% named in also does not exist', quote_ident(parts[1]), quote_ident(parts[2])
				USING ERRCODE = 'undefined_table',
					  HINT = 'A table without a schema is looked up in the schema of the key''s table.';
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
		IF NOT flake_internal.flake_migrate_holds_ids(att.atttypid, att.atttypmod) THEN
			RAISE EXCEPTION 'column %.% cannot hold ids', rel::regclass, quote_ident(parts[3])
				USING ERRCODE = 'datatype_mismatch',
					  DETAIL = format('It is of type %s; columns named in also must be smallint, integer, bigint or numeric without fractions.',
									  format_type(att.atttypid, att.atttypmod));
		END IF;
		result := result || ROW(rel, att.attnum, true)::flake_internal.flake_migrate_column;
	END LOOP;
	RETURN result;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_also(regclass, name, smallint, text[]) IS
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
CREATE FUNCTION flake_internal.flake_migrate_candidates(tbl regclass, col name, cols flake_internal.flake_migrate_column[])
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
	FROM flake_internal.flake_migrate_read_as_owner(tbl, format('SELECT CAST(min(%1$I) AS numeric), CAST(max(%1$I) AS numeric) FROM %2$s', col, tbl),
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
		  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
		  AND a.attnum > 0 AND NOT a.attisdropped
		  AND flake_internal.flake_migrate_holds_ids(a.atttypid, a.atttypmod)
		  AND lower(a.attname) IN (SELECT names.name || '_id' FROM names UNION SELECT names.name || 'id' FROM names)
		  AND (a.attrelid, a.attnum) NOT IN (SELECT x.relid, x.attnum FROM unnest(cols) x)
		  AND NOT EXISTS (SELECT FROM pg_constraint f
						  WHERE f.contype = 'f' AND f.conrelid = a.attrelid AND a.attnum = ANY (f.conkey))
		  AND has_column_privilege(a.attrelid, a.attnum, 'SELECT')
		ORDER BY a.attrelid::regclass::text, a.attname
	LOOP
		BEGIN
			SELECT * INTO lo, hi
			FROM flake_internal.flake_migrate_read_as_owner(r.attrelid::regclass,
														 format('SELECT CAST(min(%1$I) AS numeric), CAST(max(%1$I) AS numeric) FROM %2$s',
																r.attname, r.attrelid::regclass),
														 false)
				 AS m(lo numeric, hi numeric);
			CONTINUE WHEN lo < key_min OR hi > key_max;
			description := format('%s.%I (%s, %s)', r.attrelid::regclass, r.attname, r.type,
								  CASE WHEN lo IS NULL THEN 'no values' ELSE format('values %s to %s', lo, hi) END);
		EXCEPTION WHEN insufficient_privilege THEN
			description := format('%s.%I (%s, values not read: its owner is %s)', r.attrelid::regclass, r.attname,
								  r.type, r.owner);
		END;
		relid := r.attrelid;
		attnum := r.attnum;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_candidates(regclass, name, flake_internal.flake_migrate_column[]) IS
	'flake_migrate() helper: columns that may hold the key''s values by convention, without a foreign key';

--
-- Rekeying's arguments and prerequisites; returns the mapping table's name.
--
CREATE FUNCTION flake_internal.flake_migrate_map_name(tbl regclass, col name, generator text, rekey_from name)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rekey_type	oid;
	rel			record;
	map_name	text;
	map_rel		text;
BEGIN
	IF generator = 'randflake_next' THEN
		RAISE EXCEPTION 'cannot rekey with randflake_next'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Randflake ids are encrypted: they do not sort by time, so they cannot carry the time of existing rows.',
				  HINT = 'Rekey with flake_next or ulidflake_next, or migrate without rekey_from so that only new rows get randflake ids.';
	END IF;
	IF generator = 'flake_next' AND coalesce(current_setting('flake.rekey_nodes', true), '') = '' THEN
		RAISE EXCEPTION 'flake.rekey_nodes is empty'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Rekeyed ids lie in the past, where live ids may exist on every node of flake.nodes, so they are made on nodes reserved for rekeys.',
				  HINT = 'Leave some nodes out of flake.nodes, here and on every server that shares keys, and name them in flake.rekey_nodes, for example flake.nodes = ''0-1015'' and flake.rekey_nodes = ''1016-1023''; then restart the server.';
	END IF;
	IF NOT has_function_privilege('@extschema@.flake_rekey_claim(regclass, name, boolean)', 'EXECUTE') THEN
		RAISE EXCEPTION 'permission denied for function flake_rekey_claim'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'A rekey claims a node of flake.rekey_nodes (or a band of ulidflake ids) for this server''s ids.',
				  HINT = 'Rekey as a superuser, or GRANT EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) to the role.';
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
				  DETAIL = format('It is of type %s; rekey_from needs timestamptz, timestamp or date.',
								  format_type(rekey_type, NULL));
	END IF;
	IF NOT EXISTS (
			SELECT FROM pg_attribute a JOIN pg_index x ON x.indrelid = a.attrelid
			WHERE a.attrelid = tbl AND a.attname = col AND a.attnotnull
			  AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
			  AND x.indkey[0] = a.attnum AND x.indpred IS NULL) THEN
		RAISE EXCEPTION 'column %.% is not a key', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Rekeying maps each old id to one new id, so the column must be NOT NULL and unique on its own.',
				  HINT = 'Add a primary key or a unique constraint on the column first.';
	END IF;

	SELECT c.relname, n.nspname INTO rel
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
	map_name := rel.relname;
	WHILE octet_length(map_name || '_flake_map') > 63 LOOP
		map_name := left(map_name, -1);
	END LOOP;
	map_rel := format('%I.%I', rel.nspname, map_name || '_flake_map');
	IF to_regclass(map_rel) IS NOT NULL THEN
		RAISE EXCEPTION 'relation % already exists', map_rel
			USING ERRCODE = 'duplicate_table',
				  DETAIL = 'Rekeying keeps the old and new ids in that table.',
				  HINT = 'Rename or drop it if it is left over from an earlier migration.';
	END IF;
	RETURN map_rel;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_map_name(regclass, name, text, name) IS
	'flake_migrate() helper: check a rekey''s arguments and prerequisites, and name its mapping table';

--
-- The columns that reference the key through foreign keys (also composite
-- and in other schemas, transitively), and the tables to alter: the key's
-- table first, then by oid.  Each new table is checked and locked (the
-- caller locked the key's table), and the catalogs are read again until no
-- new one appears.  The locks come before the checks that read data.
--
CREATE FUNCTION flake_internal.flake_migrate_closure(tbl regclass, col name, key_attnum int2,
									  extra flake_internal.flake_migrate_column[], to_ulid boolean,
									  rekey boolean, dry_run boolean,
									  OUT cols flake_internal.flake_migrate_column[], OUT touched oid[],
									  OUT locks flake_internal.flake_migrate_step[])
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
							 a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'numeric'::regtype) OR to_ulid OR rekey)::flake_internal.flake_migrate_column
						 ORDER BY refs.relid <> tbl, refs.attnum <> key_attnum, refs.relid, refs.attnum)
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
				locks := locks || flake_internal.flake_migrate_lock(t, format('%s.%I', tbl, col), dry_run);
			EXCEPTION WHEN insufficient_privilege THEN
				IF NOT dry_run THEN
					RAISE;
				END IF;
				GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
				locks := locks || flake_internal.flake_migrate_blocked(msg, state, det, hint);
			END;
			checked := checked || t;
		END LOOP;
		-- a dry run takes no locks, so looking again would change nothing
		EXIT WHEN dry_run;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_closure(regclass, name, smallint, flake_internal.flake_migrate_column[], boolean, boolean, boolean) IS
	'flake_migrate() helper: the columns that reference the key, transitively, and the tables to alter, locked';

--
-- Objects that would stop the migration: columns that cannot hold the new
-- ids, foreign keys to other keys, table hierarchies, and objects that
-- depend on a column whose type changes.  Each is an error, or with
-- collect (a dry run) a blocked step in the result.
--
CREATE FUNCTION flake_internal.flake_migrate_check_types(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
	WHERE NOT flake_internal.flake_migrate_holds_ids(a.atttypid, a.atttypmod);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'columns referencing %.% are not integers', tbl, quote_ident(col)
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = format('Referencing columns: %s.', list);
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_types(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: every column that references the key holds integers, or an error';

CREATE FUNCTION flake_internal.flake_migrate_check_numeric(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
		  -- the caller is not as blocked already (flake_migrate_lock)
		  AND pg_has_role(c.relowner, 'USAGE')
	LOOP
		SELECT * INTO cnt
		FROM flake_internal.flake_migrate_read_as_owner(r.rel, format('SELECT count(*) FROM %s WHERE %I <> trunc(%2$I) OR %2$I NOT BETWEEN -9223372036854775808 AND 9223372036854775807',
																   r.rel, r.attname),
													 false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION 'column %.% holds values that are not ids', r.rel, quote_ident(r.attname)
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('Rows with a fraction or a value beyond bigint: %s. The column becomes bigint.', cnt);
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_numeric(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: the values of numeric columns that become bigint are whole and fit, or an error';

CREATE FUNCTION flake_internal.flake_migrate_check_foreign_keys(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
	SELECT string_agg(format('%s (%s.%I) references %s.%I', c.conname, c.conrelid::regclass, a.attname,
							 c.confrelid::regclass, fa.attname), ', ' ORDER BY c.conrelid, c.conname, k)
	INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.conrelid = u.relid
	CROSS JOIN LATERAL generate_subscripts(c.conkey, 1) k
	JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[k]
	JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = c.confkey[k]
	WHERE c.conkey[k] = u.attnum
	  AND (c.confrelid, c.confkey[k]) NOT IN (SELECT x.relid, x.attnum FROM unnest(cols) x);
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'columns that would get ids of %.% also reference other keys', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Foreign keys: %s; their values must exist there too.', list),
				  HINT = 'Migrate the table they reference instead (the columns referencing its key follow), or drop those foreign keys first.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_foreign_keys(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: the columns to change reference no key that keeps its values, or an error';

CREATE FUNCTION flake_internal.flake_migrate_check_citus(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
			   OR (a.attrelid, a.attnum) IN (SELECT u.relid, u.attnum FROM unnest($1) u WHERE u.changes)
		$q$ INTO list USING cols, tbl, col;
		IF list IS NOT NULL THEN
			RAISE EXCEPTION 'cannot migrate %.%: Citus distributes tables by the columns it would change', tbl, quote_ident(col)
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Distribution columns: %s. Citus changes neither the default nor the type of a distribution column.', list),
					  HINT = format('Give the key its default before distributing the table (ALTER TABLE ... SET DEFAULT, then create_distributed_table), or: SELECT undistribute_table(%L); then flake_migrate, then create_distributed_table again with the same distribution column and co-location.', tbl::text);
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_citus(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: no column to change distributes a Citus table, or an error';

CREATE FUNCTION flake_internal.flake_migrate_check_hierarchy(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
		RAISE EXCEPTION 'cannot migrate tables of a partitioned or inheritance hierarchy'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('%s.', list),
				  HINT = 'flake_migrate changes single tables; migrate the key of a partitioned table by hand.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_hierarchy(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: no table to alter is in a partitioned or inheritance hierarchy, or an error';

CREATE FUNCTION flake_internal.flake_migrate_check_dependents(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
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
				THEN format('%s %s', CASE v.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END,
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
		RAISE EXCEPTION 'cannot change the type of %.% and the columns referencing it', tbl, quote_ident(col)
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('These objects depend on the columns: %s.', list),
				  HINT = 'Drop them in the same transaction before flake_migrate and create them again after it (pg_get_viewdef() and pg_get_triggerdef() show their definitions; grant their privileges again).';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_check_dependents(regclass, name, flake_internal.flake_migrate_column[], oid[]) IS
	'flake_migrate() check: no object depends on a column whose type changes, or an error';

--
-- The checks above, each an error; with collect (a dry run) each error is a
-- blocked step of the result instead, so that all are shown at once.  Every
-- check takes the same arguments, so that they can be run from one list.
--
CREATE FUNCTION flake_internal.flake_migrate_blockers(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
									   touched oid[], collect boolean)
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	check_name	text;
	found		flake_internal.flake_migrate_step[] := '{}';
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	FOREACH check_name IN ARRAY ARRAY['types', 'numeric', 'foreign_keys', 'citus', 'hierarchy', 'dependents']
	LOOP
		BEGIN
			EXECUTE format('SELECT flake_internal.flake_migrate_check_%s($1, $2, $3, $4)', check_name)
				USING tbl, col, cols, touched;
		EXCEPTION WHEN OTHERS THEN
			IF NOT collect THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			found := found || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		END;
	END LOOP;
	RETURN found;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_blockers(regclass, name, flake_internal.flake_migrate_column[], oid[], boolean) IS
	'flake_migrate() helper: objects that would stop the migration, as errors or as a dry run''s blocked steps';

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
CREATE FUNCTION flake_internal.flake_migrate_probe_expressions(cols flake_internal.flake_migrate_column[],
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
			-- the caller is not as blocked already (flake_migrate_lock)
			WHERE pg_has_role(c.relowner, 'USAGE')
			GROUP BY x.relid
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
		FOREACH probe IN ARRAY CASE WHEN generator = 'randflake_next'
							   THEN ARRAY[-9223372036854775808, 9223372036854775807] ELSE ARRAY[first_id] END LOOP
			SELECT string_agg(CASE WHEN a.attnum = r.att
							  THEN format('CAST(CAST(%L AS bigint) AS %s) AS %I', probe, target, a.attname)
							  WHEN a.attnum = ANY (r.atts)
							  THEN format('CAST(CAST(%1$I AS bigint) AS %2$s) AS %1$I', a.attname, target)
							  ELSE format('%I', a.attname) END, ', ' ORDER BY a.attnum)
			INTO list
			FROM pg_attribute a WHERE a.attrelid = r.relid AND a.attnum > 0 AND NOT a.attisdropped;
			BEGIN
				-- as the table's owner; with ulidflake, the search_path
				-- finds its operators, as ALTER TABLE needs them
				SELECT * INTO fails
				FROM flake_internal.flake_migrate_read_as_owner(
					r.relid::regclass,
					format('WITH o AS (SELECT t.* FROM (SELECT) AS one LEFT JOIN (SELECT * FROM %s LIMIT 1) AS t ON true), n AS (SELECT %s FROM o) ',
						   r.relid::regclass, list)
					|| CASE WHEN r.is_check
					   THEN format('SELECT coalesce((SELECT %1$s FROM o), true) AND NOT coalesce((SELECT %1$s FROM n), true)', r.expr)
					   ELSE format('SELECT (SELECT ROW(%s, true)::text FROM n) IS NULL', r.expr) END,
					to_ulid) AS p(fails boolean);
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
		RAISE EXCEPTION 'the ids of % would not pass constraints or indexes', gen_call
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('%s.', array_to_string(problems, '; ')),
				  HINT = 'Drop or change them in the same transaction before flake_migrate'
						 || CASE WHEN generator = 'randflake_next' THEN ' (randflake ids take any bigint value, negative ones too)' ELSE '' END
						 || ', and create them again after it in a form that takes the new ids.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_probe_expressions(flake_internal.flake_migrate_column[], text, bigint) IS
	'flake_migrate() helper: check the generator''s ids against the constraints and index expressions on the columns that get them';

--
-- The generator's ids against the data: the next id must sort above every
-- key that stays, a ulidflake cannot be negative, and the constraints and
-- indexes on the columns that get the ids must take them (above).  Returns
-- the notes for the plan.
--
CREATE FUNCTION flake_internal.flake_migrate_probe(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
									generator text, first_id bigint, rekey boolean)
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	notes		flake_internal.flake_migrate_step[] := '{}';
	cnt			bigint;
	max_old		bigint;
BEGIN
	IF generator = 'randflake_next' THEN
		notes := notes || ROW('note', 'randflake_next() ids are encrypted: they do not sort by time, nor above the existing keys; they are unique among themselves on this server, and the primary key refuses the rare one equal to an old key', false, false, NULL)::flake_internal.flake_migrate_step;
	ELSIF NOT rekey THEN
		SELECT * INTO max_old
		FROM flake_internal.flake_migrate_read_as_owner(tbl, format('SELECT max(CAST(%I AS bigint)) FROM %s', col, tbl), false)
			 AS m(max_old bigint);
		IF max_old >= first_id THEN
			RAISE EXCEPTION '%.% holds keys above the ids % would issue', tbl, quote_ident(col), gen_call
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('The largest key is %s; the next generated id is %s.', max_old, first_id),
					  HINT = 'New ids would not sort after existing rows; rekey the rows (rekey_from) or keep the sequence.';
		END IF;
	END IF;
	IF to_ulid THEN
		SELECT * INTO cnt
		FROM flake_internal.flake_migrate_read_as_owner(tbl, format('SELECT count(*) FROM %s WHERE %I < 0', tbl, col), false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION '%.% has negative keys', tbl, quote_ident(col)
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = format('Rows with a key below 0: %s. A ulidflake is a non-negative 63-bit number.', cnt),
					  HINT = 'Migrate to flake_next instead, or renumber those rows first.';
		END IF;
	END IF;

	PERFORM flake_internal.flake_migrate_probe_expressions(cols, generator, first_id);
	RETURN notes;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_probe(regclass, name, flake_internal.flake_migrate_column[], text, bigint, boolean) IS
	'flake_migrate() helper: check the generator''s ids against the keys that stay, constraints and indexes';

--
-- Rows of a rekey without a time its ids can carry (NULL, before the
-- epoch, after the newest id): with undatable, the plan's note; without,
-- an error.
--
CREATE FUNCTION flake_internal.flake_migrate_rekey_undated(tbl regclass, generator text, rekey_from name,
													undatable text, epoch timestamptz,
													n_null bigint, n_before bigint, n_after bigint)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	note		text;
BEGIN
	IF n_null + n_before + n_after > 0 AND undatable IS NOT NULL THEN
		note := format('%s of %s %s no time that %s can carry (in column %I: %s NULL, %s before the epoch, %s after the current time): %s',
					   CASE n_null + n_before + n_after WHEN 1 THEN '1 row' ELSE (n_null + n_before + n_after) || ' rows' END,
					   tbl, CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END, gen_call,
					   rekey_from, n_null, n_before, n_after,
					   CASE undatable WHEN 'keep' THEN 'they keep their old ids' ELSE 'they get ids of now' END);
	ELSIF n_null + n_before + n_after > 0 THEN
		RAISE EXCEPTION '% of % % no time that % can carry',
				CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
				ELSE (n_null + n_before + n_after) || ' rows' END, tbl,
				CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END, gen_call
			USING ERRCODE = CASE WHEN n_null > 0 THEN 'null_value_not_allowed' ELSE 'numeric_value_out_of_range' END,
				  DETAIL = format('In column %I: %s NULL, %s before the epoch %s, %s after the current time.',
								  rekey_from, n_null, n_before,
								  regexp_replace(to_char(epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
												 '\.000$', '') || '+00',
								  n_after),
				  HINT = 'Give those rows a time first, or pass undatable => ''keep'' (they keep their old ids) or ''now'' (they get ids of now)'
						 || CASE WHEN n_before = 0 THEN '.'
						 WHEN to_ulid THEN '; the ulidflake epoch is fixed.'
						 ELSE '; with flake.epoch set before the oldest row, every id carries its row''s exact millisecond.' END;
	END IF;
	RETURN note;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_rekey_undated(regclass, text, name, text, timestamptz, bigint, bigint, bigint) IS
	'flake_migrate() helper: the note, or the error, for rows a rekey cannot date';

--
-- The statement of a rekey's mapping (old_id, new_id), from the slots of
-- the rows (flake_migrate_rekey_query): the milliseconds, then for
-- ulidflake the sequence and a band, for Snowflake a node and the
-- sequence, the band or node claimed when the statement runs; with
-- undated_now, ids of now for the rows without a usable time.
--
CREATE FUNCTION flake_internal.flake_migrate_rekey_statement(tbl regclass, col name, generator text, rekey_from name,
													  slots text, datable text, seq_bits integer, ms_shift integer,
													  no_rows boolean, undated_now boolean)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	per_ms		bigint := 1::bigint << seq_bits;
	slots_read	text;			-- the slots, read as the table's owner
	mapping		text;
BEGIN
	-- the milliseconds, then for ulidflake the sequence and a band, for
	-- Snowflake a node and the sequence; the band or node is claimed for
	-- the milliseconds of the table's rows (which flake_rekey_claim reads
	-- itself, up to the newest id issued: at least first_ms to last_ms)
	-- when the statement runs.  The slots are read as the table's owner.
	slots_read := format('flake_internal.flake_migrate_read_as_owner(CAST(%L AS regclass), CAST(%L AS text), false) AS s(k bigint, slot bigint)',
						 tbl, slots);
	IF no_rows THEN
		mapping := 'SELECT NULL::bigint AS old_id, NULL::bigint AS new_id WHERE false';
	ELSIF generator = 'ulidflake_next' THEN
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim(CAST(CAST(%3$s AS oid) AS regclass), %4$L, true) AS band)
SELECT k AS old_id, ((slot >> 15) << 20) | ((slot & 32767) << 5) | n.band AS new_id
FROM %1$s, n$q$,
						slots_read, NULL, tbl::oid, rekey_from);
	ELSE
		-- the claim runs exactly once, when the statement does
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim(CAST(CAST(%5$s AS oid) AS regclass), %6$L) AS node)
SELECT k AS old_id, ((slot >> %1$s) << %2$s) | (n.node::bigint << %1$s) | (slot & %3$s) AS new_id
FROM %4$s, n$q$,
						seq_bits, ms_shift, per_ms - 1, slots_read, tbl::oid, rekey_from);
	END IF;
	-- rows without a time: ids of now, in old id order
	IF undated_now THEN
		mapping := format('%s UNION ALL (SELECT k, CAST(@extschema@.%s() AS bigint) FROM flake_internal.flake_migrate_read_as_owner(CAST(%L AS regclass), CAST(%L AS text), false) AS u(k bigint))',
						mapping, generator, tbl,
						format('SELECT CAST(%I AS bigint) FROM %s WHERE NOT coalesce(%s, false) ORDER BY 1', col, tbl, datable));
	END IF;
	RETURN mapping;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_rekey_statement(regclass, name, text, name, text, text, integer, integer, boolean, boolean) IS
	'flake_migrate() helper: the statement of a rekey''s mapping, from the slots of the rows';

--
-- The rekey mapping: a query of (old_id, new_id), new ids from each row's
-- time, in (time, old id) order; a millisecond with more rows than ids
-- spills into the next ones.  All lie below first_id, the id just drawn
-- from the generator.  Snowflake ids go on a node of flake.rekey_nodes,
-- which live generation never uses, claimed for the rekey's milliseconds
-- when the query runs (see src/rekey.c), so no other rekey gets them.
-- Refuses rows without a usable time, and new ids that could meet old
-- ones.  The table is read as its owner (flake_migrate_read_as_owner); the
-- query runs as the caller, who may claim the node.
--
CREATE FUNCTION flake_internal.flake_migrate_rekey_query(tbl regclass, col name, generator text,
										  rekey_from name, first_id bigint, undatable text,
										  OUT query text, OUT note text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	slots		text;			-- SELECT k (old id), slot (ms * per_ms + n)
	per_ms		bigint;			-- ids of a millisecond on one node
	ms_shift	integer;		-- bits below the milliseconds in an id
	seq_bits	integer;
	epoch		timestamptz;
	cnt			bigint;
	n_null		bigint;
	n_before	bigint;
	n_after		bigint;
	first_ms	bigint;
	last_ms		bigint;
	max_old		bigint;
	datable		text;			-- a row's time is one the ids can carry
BEGIN
	IF to_ulid THEN
		-- the low 5 bits of the entropy hold the rekey's band
		epoch := @extschema@.flake_timestamp(CAST(0::bigint AS @extschema@.ulidflake));
		seq_bits := 15;
		ms_shift := 20;
	ELSE
		epoch := @extschema@.flake_timestamp(CAST(0 AS bigint));
		seq_bits := current_setting('flake.sequence_bits')::integer;
		ms_shift := current_setting('flake.node_bits')::integer + seq_bits;
	END IF;
	per_ms := 1::bigint << seq_bits;
	datable := format('CAST(%1$I AS timestamptz) >= %2$L AND CAST(%1$I AS timestamptz) < %3$L',
					  rekey_from, epoch,
					  CASE WHEN to_ulid
					  THEN @extschema@.flake_timestamp(CAST(first_id AS @extschema@.ulidflake))
					  ELSE @extschema@.flake_timestamp(first_id) END + interval '1 ms');
	-- both windows in (time, old id) order, so that rows are sorted once
	slots := format($q$SELECT k, rn + max(ms * %1$s - rn) OVER (ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS slot
      FROM (SELECT CAST(%2$I AS bigint) AS k, CAST(%3$I AS timestamptz) AS t,
                   row_number() OVER (ORDER BY CAST(%3$I AS timestamptz), CAST(%2$I AS bigint)) - 1 AS rn,
                   CAST(@extschema@.%4$s(CAST(%3$I AS timestamptz)) AS bigint) >> %5$s AS ms
            FROM %6$s%7$s) r$q$,
					per_ms, col, rekey_from,
					CASE WHEN to_ulid THEN 'ulidflake_from_timestamp' ELSE 'flake_from_timestamp' END,
					ms_shift, tbl, CASE WHEN undatable IS NOT NULL THEN ' WHERE ' || datable ELSE '' END);

	-- one scan: the rows without a usable time, the milliseconds of the
	-- others, and the largest old key
	SELECT * INTO n_null, n_before, n_after, first_ms, last_ms, cnt, max_old
	FROM flake_internal.flake_migrate_read_as_owner(tbl, format(
			'SELECT count(*) FILTER (WHERE %1$I IS NULL),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) < CAST(%6$L AS timestamptz)),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) >= CAST(%7$L AS timestamptz)),
					min(CASE WHEN %2$s THEN %3$s END), max(CASE WHEN %2$s THEN %3$s END),
					count(*) FILTER (WHERE %2$s), max(CAST(%4$I AS bigint))
			 FROM %5$s',
			rekey_from, datable,
			format('CAST(@extschema@.%s(CAST(%I AS timestamptz)) AS bigint) >> %s',
				   CASE WHEN to_ulid THEN 'ulidflake_from_timestamp' ELSE 'flake_from_timestamp' END,
				   rekey_from, ms_shift),
			col, tbl, epoch,
			CASE WHEN to_ulid
			THEN @extschema@.flake_timestamp(CAST(first_id AS @extschema@.ulidflake))
			ELSE @extschema@.flake_timestamp(first_id) END + interval '1 ms'),
		false)
		 AS n(n_null bigint, n_before bigint, n_after bigint, first_ms bigint, last_ms bigint,
			  cnt bigint, max_old bigint);
	-- a millisecond with more rows than ids spills into the next ones
	last_ms := last_ms + (cnt - 1) / per_ms;
	note := flake_internal.flake_migrate_rekey_undated(tbl, generator, rekey_from, undatable, epoch,
													   n_null, n_before, n_after);

	-- the new ids sort below the generator's next one
	IF last_ms >= first_id >> ms_shift THEN
		RAISE EXCEPTION 'too many rows of % in the last milliseconds', tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Rekeyed ids must stay below %s, the id just drawn from %s.', first_id, gen_call),
				  HINT = 'Try again in a moment.';
	END IF;

	-- ... and must not meet the old ids of other rows
	IF first_ms << ms_shift <= max_old THEN
		SELECT * INTO cnt
		FROM flake_internal.flake_migrate_read_as_owner(tbl, format(
				'SELECT count(DISTINCT s.k) FROM (%s) s JOIN %s o ON CAST(o.%I AS bigint) BETWEEN (s.slot / %4$s) << %5$s AND ((s.slot / %4$s + 1) << %5$s) - 1',
				slots, tbl, col, per_ms, ms_shift),
			false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION '% new ids of % could equal old ids of other rows', cnt, tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Rows timed in the first milliseconds after the epoch get ids as small as the old keys (up to %s).', max_old),
					  HINT = 'Migrate without rekey_from, or correct the time of those rows.';
		END IF;
	END IF;

	query := flake_internal.flake_migrate_rekey_statement(tbl, col, generator, rekey_from, slots, datable,
														  seq_bits, ms_shift, first_ms IS NULL,
														  undatable = 'now' AND note IS NOT NULL);
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_rekey_query(regclass, name, text, name, bigint, text) IS
	'flake_migrate() helper: the query of old and new ids that fills a rekey''s mapping table';

--
-- Foreign keys into the columns that change are dropped and added back
-- afterwards under the same names: one validation instead of one per
-- altered column, and no checks while the ids are rewritten.  Both as the
-- owner of the referencing table, as every statement on a table.
--
CREATE FUNCTION flake_internal.flake_migrate_foreign_keys(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
										   OUT drops flake_internal.flake_migrate_step[], OUT adds flake_internal.flake_migrate_step[])
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	fk			record;
	list		text;
BEGIN
	-- a new constraint gets enabled triggers: refuse to lose a state that
	-- only a superuser can set
	SELECT string_agg(DISTINCT format('%I on %s', c.conname, c.conrelid::regclass), ', ') INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
	JOIN pg_trigger g ON g.tgconstraint = c.oid
	WHERE g.tgenabled <> 'O';
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'foreign keys referencing %.% have disabled triggers', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('flake_migrate drops and adds these foreign keys again, which would enable them: %s.', list),
				  HINT = 'Enable their triggers (ALTER TABLE ... ENABLE TRIGGER ALL), or drop the foreign keys first.';
	END IF;
	-- the owner adding a foreign key needs REFERENCES on the key, which it
	-- lacks when it was given the table after the key was made, or the
	-- privilege was revoked since
	SELECT string_agg(DISTINCT format('%I on %s references %s, and its owner %s may not', c.conname,
									  c.conrelid::regclass, c.confrelid::regclass, r.relowner::regrole), ', ')
	INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
	JOIN pg_class r ON r.oid = c.conrelid
	WHERE EXISTS (SELECT FROM unnest(c.confkey) k
				  WHERE NOT has_column_privilege(r.relowner, c.confrelid, k, 'REFERENCES'));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'owners of tables referencing %.% may not reference it', tbl, quote_ident(col)
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('flake_migrate adds the foreign keys back as the owners of their tables: %s.', list),
				  HINT = 'GRANT REFERENCES on the referenced tables to those owners.';
	END IF;
	drops := '{}';
	adds := '{}';
	FOR fk IN
		SELECT DISTINCT c.oid, c.conrelid, c.conname, pg_get_constraintdef(c.oid) AS def,
			   obj_description(c.oid, 'pg_constraint') AS comment
		FROM unnest(cols) u
		JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
		ORDER BY c.conrelid, c.conname
	LOOP
		drops := drops || ROW('drop constraint',
							  format('ALTER TABLE %s DROP CONSTRAINT %I', fk.conrelid::regclass, fk.conname),
							  true, false, fk.conrelid)::flake_internal.flake_migrate_step;
		adds := adds || ROW('add constraint',
							format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.conrelid::regclass, fk.conname, fk.def),
							true, false, fk.conrelid)::flake_internal.flake_migrate_step;
		IF fk.comment IS NOT NULL THEN
			adds := adds || ROW('comment',
								format('COMMENT ON CONSTRAINT %I ON %s IS %L', fk.conname, fk.conrelid::regclass, fk.comment),
								true, false, fk.conrelid)::flake_internal.flake_migrate_step;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_foreign_keys(regclass, name, flake_internal.flake_migrate_column[]) IS
	'flake_migrate() helper: the steps that drop the foreign keys into the changing columns and add them back';

--
-- Detach the key from its identity, or from its default and the sequences
-- it draws from: a sequence is dropped only when the column owns it and
-- nothing else uses it.  As the table's owner, who owns such a sequence.
--
CREATE FUNCTION flake_internal.flake_migrate_detach(tbl regclass, col name, key_attnum int2, identity_seq oid,
									 default_oid oid, default_seqs oid[])
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	steps		flake_internal.flake_migrate_step[] := '{}';
	seq			oid;
	list		text;
BEGIN
	IF identity_seq IS NOT NULL THEN
		RETURN ARRAY[ROW('drop identity', format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col),
						 true, false, tbl)::flake_internal.flake_migrate_step];
	END IF;
	IF default_oid IS NULL THEN
		RETURN steps;
	END IF;
	steps := steps || ROW('drop default', format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col),
						  true, false, tbl)::flake_internal.flake_migrate_step;
	FOREACH seq IN ARRAY default_seqs LOOP
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1) INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = seq AND d.deptype = 'n'
		  AND NOT (d.classid = 'pg_attrdef'::regclass AND d.objid = default_oid);
		IF NOT EXISTS (SELECT FROM pg_depend d
					   WHERE d.classid = 'pg_class'::regclass AND d.objid = seq
						 AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl
						 AND d.refobjsubid = key_attnum AND d.deptype = 'a') THEN
			steps := steps || ROW('note', format('sequence %s is kept: %s.%I does not own it', seq::regclass, tbl, col),
								  false, false, NULL)::flake_internal.flake_migrate_step;
		ELSIF list IS NOT NULL THEN
			steps := steps || ROW('note', format('sequence %s is kept: also used by %s', seq::regclass, list),
								  false, false, NULL)::flake_internal.flake_migrate_step
						   || ROW('disown sequence', format('ALTER SEQUENCE %s OWNED BY NONE', seq::regclass),
								  true, false, tbl)::flake_internal.flake_migrate_step;
		ELSE
			-- an owned sequence has the table's owner
			steps := steps || ROW('drop sequence', format('DROP SEQUENCE %s', seq::regclass),
								  true, false, tbl)::flake_internal.flake_migrate_step;
		END IF;
	END LOOP;
	RETURN steps;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_detach(regclass, name, smallint, oid, oid, oid[]) IS
	'flake_migrate() helper: the steps that detach the key from its identity or its sequences';

-- a node of flake.rekey_nodes for the milliseconds a table's rows span,
-- which it reads from the table (the caller's own), claimed durably for
-- this server: not for everyone, since each call uses one up.  Replaced,
-- not dropped, by an upgrade, so the roles granted EXECUTE keep it.
CREATE OR REPLACE FUNCTION flake_rekey_claim(tbl regclass, time_column name, band boolean DEFAULT false) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_rekey_claim(regclass, name, boolean) IS 'claim a node of flake.rekey_nodes (or with band, a ulidflake band) for the milliseconds the rows of a table span, for a flake_migrate() rekey';

-- the new id of an old one in a rekey's mapping table (src/remap.c), for
-- ALTER TABLE ... TYPE ... USING: the table is read once per statement,
-- with the rights of the table's owner, who runs the ALTER TABLE
CREATE FUNCTION flake_internal.flake_migrate_lookup(map regclass, old_id bigint) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.flake_migrate_lookup(regclass, bigint) IS 'the new id of old_id in a flake_migrate() mapping table, or old_id when it lists none';

--
-- flake_migrate()'s arguments, and the isolation level it runs at, checked.
--
CREATE FUNCTION flake_internal.flake_migrate_arguments(tbl regclass, col name, generator text, dry_run boolean, undatable text)
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
				  HINT = 'undatable is keep (rows without a usable time keep their old ids) or now (they get ids of now).';
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
				  DETAIL = 'It reads the tables once it holds their locks; this transaction''s snapshot is older, and rows committed while it waited for them would be missed.',
				  HINT = 'Run it in a transaction at READ COMMITTED: BEGIN ISOLATION LEVEL READ COMMITTED, or SET default_transaction_isolation = ''read committed'' first.';
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_arguments(regclass, name, text, boolean, text) IS
	'flake_migrate() helper: check its arguments';

--
-- References by convention that also does not name: notes, and a refusal
-- (a blocked step in a dry run) when they would be left behind without
-- also saying so.  all_change: every column changes (a rekey or
-- ulidflake), so a bigint candidate counts too.
--
CREATE FUNCTION flake_internal.flake_migrate_candidate_steps(tbl regclass, col name, cols flake_internal.flake_migrate_column[],
											  all_change boolean, also text[], dry_run boolean,
											  OUT notes flake_internal.flake_migrate_step[], OUT refused flake_internal.flake_migrate_step[])
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
		   coalesce(array_agg(ROW('note', 'possible reference without a foreign key, left as it is: ' || c.description,
								  false, false, NULL)::flake_internal.flake_migrate_step), '{}')
	INTO list, notes
	FROM flake_internal.flake_migrate_candidates(tbl, col, cols) c
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
				  HINT = 'Name the columns that hold its ids in also => ''{table.column, ...}'' so that they change with it, or pass also => ''{}'' to leave them as they are.';
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		refused := refused || flake_internal.flake_migrate_blocked(msg, state, det, hint);
	END;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_candidate_steps(regclass, name, flake_internal.flake_migrate_column[], boolean, text[], boolean) IS
	'flake_migrate() helper: notes on possible references without a foreign key, or the refusal to leave them behind';

--
-- The steps of a rekey: the mapping table made, filled from
-- flake_migrate_rekey_query(), indexed, and granted to the owners of the
-- touched tables, who read it in their ALTER TABLE.  The mapping table is
-- the caller's own: it holds no code of another role.  A dry run collects
-- what stops it as blocked steps (refused).
--
CREATE FUNCTION flake_internal.flake_migrate_rekey_steps(tbl regclass, col name, generator text, rekey_from name,
										  map_rel text, first_id bigint, undatable text, touched oid[],
										  dry_run boolean,
										  OUT steps flake_internal.flake_migrate_step[], OUT refused flake_internal.flake_migrate_step[])
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	mapping		record;			-- flake_migrate_rekey_query(): old and new ids
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
		FROM flake_internal.flake_migrate_rekey_query(tbl, col, generator, rekey_from, first_id, undatable);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		refused := refused || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		SELECT NULL::text AS query, NULL::text AS note INTO mapping;
	END;
	IF mapping.note IS NOT NULL THEN
		steps := steps || ROW('note', mapping.note, false, false, NULL)::flake_internal.flake_migrate_step;
	END IF;
	steps := steps
		|| ROW('create map',
			   format('CREATE TABLE %s (old_id bigint NOT NULL, new_id %s NOT NULL)', coalesce(map_rel, '...'), target),
			   true, false, NULL)::flake_internal.flake_migrate_step
		|| ROW('comment',
			   format('COMMENT ON TABLE %s IS %L', map_rel,
					  format('old and new ids of %s.%I, rekeyed by flake_migrate from %I', tbl, col, rekey_from)),
			   true, false, NULL)::flake_internal.flake_migrate_step
		|| ROW('fill map',
			   format('INSERT INTO %s (old_id, new_id) SELECT old_id, %s FROM (%s) c', map_rel,
					  CASE WHEN to_ulid THEN format('CAST(new_id AS %s)', target) ELSE 'new_id' END,
					  coalesce(mapping.query, '...')),
			   true, true, NULL)::flake_internal.flake_migrate_step
		-- built after the rows are in: one sort each
		|| ROW('index map',
			   format('ALTER TABLE %s ADD PRIMARY KEY (old_id), ADD UNIQUE (new_id)', coalesce(map_rel, '...')),
			   true, false, NULL)::flake_internal.flake_migrate_step;
	SELECT string_agg(DISTINCT c.relowner::regrole::text, ', ') INTO owners
	FROM pg_class c
	WHERE c.oid = ANY (touched) AND c.relowner <> current_user::regrole;
	IF owners IS NOT NULL THEN
		steps := steps || ROW('grant', format('GRANT SELECT ON %s TO %s', coalesce(map_rel, '...'), owners),
							  true, false, NULL)::flake_internal.flake_migrate_step;
	END IF;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_rekey_steps(regclass, name, text, name, text, bigint, text, oid[], boolean) IS
	'flake_migrate() helper: the steps that make, fill, index and grant a rekey''s mapping table';

--
-- The steps that widen the key and the columns referencing it, one
-- statement a table; a rekey gives them their new ids in the same
-- statement, through the mapping table, so each table is rewritten once
-- (and no trigger, rule or policy acts on it).
--
CREATE FUNCTION flake_internal.flake_migrate_alter_steps(cols flake_internal.flake_migrate_column[], touched oid[], generator text,
										  rekey boolean, map_rel text)
	RETURNS flake_internal.flake_migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	steps		flake_internal.flake_migrate_step[] := '{}';
	t			oid;
	list		text;
BEGIN
	FOREACH t IN ARRAY touched LOOP
		SELECT string_agg(format('ALTER COLUMN %I TYPE %s%s', a.attname, target,
								 CASE WHEN rekey
								 THEN format(' USING %s', format(CASE WHEN to_ulid THEN 'CAST(%s AS %s)' ELSE '%s' END,
																 format('flake_internal.flake_migrate_lookup(%L, CAST(%I AS bigint))',
																		coalesce(map_rel, '...'), a.attname),
																 target))
								 WHEN to_ulid
								 THEN format(' USING CAST(CAST(%I AS bigint) AS %s)', a.attname, target)
								 ELSE '' END), ', ' ORDER BY a.attnum)
		INTO list
		FROM unnest(cols) u
		JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
		WHERE u.relid = t AND u.changes;
		CONTINUE WHEN list IS NULL;
		steps := steps || ROW(CASE WHEN rekey THEN 'rekey' ELSE 'alter type' END,
							  format('ALTER TABLE %s %s', t::regclass, list),
							  true, false, t)::flake_internal.flake_migrate_step;
	END LOOP;
	RETURN steps;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_alter_steps(flake_internal.flake_migrate_column[], oid[], text, boolean, text) IS
	'flake_migrate() helper: the ALTER TABLE of each table whose columns change type or get new ids';

--
-- Run a plan's steps in order, or with dry_run only list them; counted
-- steps report their rows.  A step on a table runs as the table's owner
-- (flake_migrate_as_owner), so that the table's code never runs with the
-- caller's rights.
--
CREATE FUNCTION flake_internal.flake_migrate_run(plan flake_internal.flake_migrate_step[], dry_run boolean, to_ulid boolean)
	RETURNS TABLE(step integer, action text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	s			flake_internal.flake_migrate_step;
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
				cnt := flake_internal.flake_migrate_as_owner(s.as_owner_of, detail,
														  action IN ('alter type', 'rekey') AND to_ulid);
			END IF;
			IF s.counted THEN
				detail := format('%s /* %s rows */', detail, cnt);
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.flake_migrate_run(flake_internal.flake_migrate_step[], boolean, boolean) IS
	'flake_migrate() helper: run the steps of a plan, or list them for a dry run';

-- Who may call the helpers.  flake_migrate() is SECURITY INVOKER: the
-- table owner's session (and the online client, connected as the owner)
-- calls them with its own rights, so they need EXECUTE for every role that
-- may own a table, that is PUBLIC, and the schema's USAGE (granted where
-- the schema is made).  None gives more than its caller has: the catalog
-- readers return what pg_catalog shows everyone; flake_migrate_lock() and
-- the statements the plan runs as the caller need the caller's own
-- privileges; flake_migrate_as_owner() and flake_migrate_read_as_owner()
-- refuse (42501) a role that may not SET ROLE to the table's owner;
-- flake_migrate_lookup() reads the mapping table with its caller's
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
	target		text := CASE WHEN generator = 'ulidflake_next' THEN '@extschema@.ulidflake' ELSE 'bigint' END;
	key			record;			-- the key column: flake_migrate_key()
	map_rel		text;			-- the mapping table, when rekeying
	extra		flake_internal.flake_migrate_column[];	-- the columns named in also
	closure		record;			-- flake_migrate_closure(): the columns and tables
	first_id	bigint;			-- the generator's next id, drawn now
	fk_drops	flake_internal.flake_migrate_step[] := '{}';	-- foreign keys into the columns
	fk_adds		flake_internal.flake_migrate_step[] := '{}';
	plan		flake_internal.flake_migrate_step[] := '{}';
	blocked		flake_internal.flake_migrate_step[] := '{}';	-- what a dry run found in the way
	msg			text;
	state		text;
	det			text;
	hint		text;
BEGIN
	PERFORM flake_internal.flake_migrate_arguments(tbl, col, generator, dry_run, undatable);

	-- the table is locked before its definition is read
	plan := plan || flake_internal.flake_migrate_lock(tbl, NULL, dry_run);
	SELECT * INTO key FROM flake_internal.flake_migrate_key(tbl, col);
	IF rekey THEN
		BEGIN
			map_rel := flake_internal.flake_migrate_map_name(tbl, col, generator, rekey_from);
		EXCEPTION WHEN OTHERS THEN
			IF NOT dry_run THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			blocked := blocked || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		END;
	END IF;
	BEGIN
		extra := flake_internal.flake_migrate_also(tbl, col, key.key_attnum, also);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		blocked := blocked || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		extra := '{}';
	END;
	SELECT * INTO closure
	FROM flake_internal.flake_migrate_closure(tbl, col, key.key_attnum, extra, to_ulid, rekey, dry_run);
	plan := plan || closure.locks;
	blocked := blocked
		|| flake_internal.flake_migrate_blockers(tbl, col, closure.cols, closure.touched, dry_run);

	SELECT plan || c.notes, blocked || c.refused INTO plan, blocked
	FROM flake_internal.flake_migrate_candidate_steps(tbl, col, closure.cols, rekey OR to_ulid, also, dry_run) c;

	EXECUTE format('SELECT CAST(@extschema@.%I() AS bigint)', generator) INTO first_id;
	BEGIN
		plan := plan || flake_internal.flake_migrate_probe(tbl, col, closure.cols, generator, first_id, rekey);
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			RAISE;
		END IF;
		GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
		blocked := blocked || flake_internal.flake_migrate_blocked(msg, state, det, hint);
	END;

	IF rekey THEN
		SELECT plan || r.steps, blocked || r.refused INTO plan, blocked
		FROM flake_internal.flake_migrate_rekey_steps(tbl, col, generator, rekey_from, map_rel, first_id,
												   undatable, closure.touched, dry_run) r;
	END IF;

	IF rekey OR true = ANY (SELECT c.changes FROM unnest(closure.cols) c) THEN
		BEGIN
			SELECT f.drops, f.adds INTO fk_drops, fk_adds
			FROM flake_internal.flake_migrate_foreign_keys(tbl, col, closure.cols) f;
		EXCEPTION WHEN OTHERS THEN
			IF NOT dry_run THEN
				RAISE;
			END IF;
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
			blocked := blocked || flake_internal.flake_migrate_blocked(msg, state, det, hint);
		END;
		plan := plan || fk_drops;
	END IF;

	plan := plan || flake_internal.flake_migrate_detach(tbl, col, key.key_attnum, key.identity_seq,
													 key.default_oid, key.default_seqs);

	plan := plan || flake_internal.flake_migrate_alter_steps(closure.cols, closure.touched, generator, rekey, map_rel);

	plan := plan || fk_adds
		|| ROW('set default', format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT @extschema@.%I()', tbl, col, generator),
			   true, false, tbl)::flake_internal.flake_migrate_step;

	-- run the plan (or only show it, after what is in its way)
	RETURN QUERY SELECT * FROM flake_internal.flake_migrate_run(blocked || plan, dry_run, to_ulid);
END
$migrate$;

COMMENT ON FUNCTION flake_migrate(regclass, name, text, name, boolean, text[], text) IS
	'switch a serial or identity key (and the columns referencing it) to flake ids, optionally rekeying existing rows from a time column';

------------------------------------------------------------------------
-- flake_migrate_tables(): a set of tables in one call
------------------------------------------------------------------------

--
-- Migrate the keys of several tables, in the caller's transaction: tables
-- whose keys others reference (through foreign keys or also) first; a
-- referencing column is changed by the migration of the key it
-- references, once.  Each entry of
-- also is 'table.column:key_table', or 'table.column' when the column is
-- a candidate reference (see flake_migrate_candidates) of exactly one of
-- the tables.
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
			CROSS JOIN LATERAL unnest(flake_internal.flake_migrate_also(o.t, col, 0::int2, ARRAY[item])) x
			WHERE EXISTS (SELECT FROM flake_internal.flake_migrate_candidates(o.t, col, '{}') c
						  WHERE c.relid = x.relid AND c.attnum = x.attnum);
		END IF;
		IF cardinality(owners) <> 1 THEN
			RAISE EXCEPTION 'cannot tell which key "%" in also references', item
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = CASE WHEN cardinality(owners) = 0
							   THEN 'It names none of the tables and is no candidate reference of any of them.'
							   ELSE format('It could reference the keys of %s.', array_to_string(owners, ', ')) END,
					  HINT = 'Write it as table.column:key_table, naming one of the tables being migrated.';
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
		WHERE c.contype = 'f' AND c.conrelid IN (SELECT t.relid FROM t) AND c.confrelid IN (SELECT t.relid FROM t)
		UNION
		SELECT a.relid, t.relid
		FROM t CROSS JOIN LATERAL unnest(flake_internal.flake_migrate_also(t.relid, col, 0::int2,
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
										   THEN coalesce(string_to_array(assigned[i], E'\n'), '{}') END,
										   undatable) m
		LOOP
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;

COMMENT ON FUNCTION flake_migrate_tables(regclass[], name, text, name, boolean, text[], text) IS
	'flake_migrate() for a set of tables in one transaction, referenced tables first';
