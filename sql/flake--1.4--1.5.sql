/* flake--1.4--1.5.sql, built by make from sql/parts/library.sql sql/parts/upgrade--1.4--1.5.sql sql/parts/added.sql sql/parts/citus.sql sql/parts/migrate/1-steps.sql sql/parts/migrate/2-columns.sql sql/parts/migrate/3-checks.sql sql/parts/migrate/4-probe.sql sql/parts/migrate/5-rekey.sql sql/parts/migrate/6-alter.sql sql/parts/migrate/7-run.sql sql/parts/online/1-copies.sql sql/parts/online/2-checks.sql sql/parts/online/3-copy.sql sql/parts/online/4-swap.sql sql/parts/online/5-plan.sql sql/parts/privileges.sql */
\echo Use "ALTER EXTENSION flake UPDATE" to load this file. \quit
------------------------------------------------------------------------
-- First, the library this server runs: this version's or a later one.
-- After a package upgrade a server runs the library it loaded at start
-- until it restarts, and the script would fail on a C function that
-- library lacks ("could not find function"), without saying why.  make
-- puts the script's version in place of 1.5.  The function
-- that tells is created for this check alone, and dropped.
------------------------------------------------------------------------

DO $$
DECLARE
	required CONSTANT pg_catalog.text := '1.5';
	loaded pg_catalog.text;
BEGIN
	BEGIN
		CREATE FUNCTION pg_temp.flake_library_version() RETURNS pg_catalog.text
			AS 'MODULE_PATHNAME', 'flake_library_version' LANGUAGE C STRICT;
		loaded := pg_temp.flake_library_version();
		DROP FUNCTION pg_temp.flake_library_version();
	EXCEPTION WHEN undefined_function THEN
		loaded := NULL;
	END;
	IF loaded IS NULL
	   OR pg_catalog.string_to_array(COALESCE(loaded, '0'), '.')::pg_catalog.int4[]
		  < pg_catalog.string_to_array(required, '.')::pg_catalog.int4[] THEN
		RAISE EXCEPTION 'this server runs a flake library older than %: %', required,
				COALESCE('version ' || loaded, 'one before 1.4')
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A server loads the library at start and runs it until it restarts: flake was upgraded since this server started.',
				  HINT = 'Restart the server (sudo systemctl restart postgresql, or pg_ctl restart), standbys first, then run the command again.';
	END IF;
END
$$;

------------------------------------------------------------------------
-- flake 1.4 to 1.5
--
-- The objects new in 1.5 are created by sql/parts/added.sql, which make
-- appends after this part, as to the install script: this part changes
-- only what 1.4 has.  The migration functions and the Citus check are
-- replaced whole, as in every upgrade: they are dropped here, and
-- sql/parts/citus.sql, migrate/*.sql and online/*.sql, appended by make
-- after those, create them again.
-- The helpers in flake_internal are dropped by a loop over the extension's
-- members, so that a helper renamed or removed in 1.5 needs no line here.
-- Kept: the trigger functions of flake_origin, of subscribed tables
-- (raise_marks) and of an online migration left unfinished (dropping them
-- would take the triggers with them); online/1-copies.sql replaces the
-- latter with CREATE OR REPLACE.
------------------------------------------------------------------------

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean, text[], text);
DROP FUNCTION flake_migrate_tables(regclass[], name, text, name, boolean, text[], text);
DROP FUNCTION flake_citus_check();

DO $$
DECLARE
	helper pg_catalog.regprocedure;
BEGIN
	FOR helper IN
		SELECT p.oid
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
			ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
		   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'flake'
		 WHERE p.pronamespace = 'flake_internal'::pg_catalog.regnamespace
		   AND p.proname NOT IN ('origin_local', 'online_log', 'online_no_truncate', 'raise_marks')
	LOOP
		EXECUTE pg_catalog.format('DROP FUNCTION %s', helper);
	END LOOP;
END
$$;
DROP TYPE flake_internal.migrate_step;
DROP TYPE flake_internal.migrate_column;

------------------------------------------------------------------------
-- The objects new in this version (1.5)
--
-- Appended by make to the install script, after the install parts, and
-- to the upgrade script, after the upgrade part: each is written once,
-- so that both create it alike.  When the next version opens, each
-- section moves into the install part it names, and this file keeps only
-- this header.
------------------------------------------------------------------------
------------------------------------------------------------------------
-- Citus: the cluster check
--
-- Appended by make to the install script and to every upgrade script, as
-- migrate.sql is: an upgrade part that follows 1.2 drops it first
-- (DROP FUNCTION flake_citus_check();) and this file creates it again.
------------------------------------------------------------------------

-- Citus: compare the flake settings of every node of the cluster
CREATE FUNCTION flake_citus_check()
	RETURNS TABLE(node text, problem text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF to_regclass('pg_catalog.pg_dist_node') IS NULL THEN
		RAISE EXCEPTION 'Citus is not installed in database %', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'flake_citus_check() compares the flake settings of the nodes '
						 'of a Citus cluster: run it on the coordinator.';
	END IF;
	-- Citus is called only where it is installed, hence EXECUTE
	RETURN QUERY EXECUTE $query$
	WITH probe AS (
		SELECT format('%s:%s', n.nodename, n.nodeport) AS node, r.success, r.result
		-- run on each node in a session of its own, whose search_path is
		-- that node's: every name qualified
		FROM run_command_on_all_nodes($probe$
			SELECT pg_catalog.json_build_object(
				'preloaded', 'flake' OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(
					pg_catalog.replace(pg_catalog.current_setting('shared_preload_libraries'),
									   ' ', ''), ',')),
				'version', (SELECT e.extversion FROM pg_catalog.pg_extension e
							WHERE e.extname OPERATOR(pg_catalog.=) 'flake'),
				'group', (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g),
				'epoch', pg_catalog.current_setting('flake.epoch', true),
				'node_bits', pg_catalog.current_setting('flake.node_bits', true)::pg_catalog.int4,
				'sequence_bits', pg_catalog.current_setting('flake.sequence_bits', true),
				'nodes', pg_catalog.current_setting('flake.nodes', true),
				'randflake_nodes', pg_catalog.current_setting('flake.randflake_nodes', true),
				'fingerprint', @extschema@.randflake_key_fingerprint())
		$probe$) r
		JOIN pg_dist_node n ON n.nodeid = r.nodeid
	), here AS (
		SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flake') AS version,
			   current_setting('flake.epoch', true) AS epoch,
			   current_setting('flake.node_bits', true) AS node_bits,
			   current_setting('flake.sequence_bits', true) AS sequence_bits,
			   @extschema@.randflake_key_fingerprint() AS fingerprint
	), s AS (
		SELECT p.node, p.result::json AS j FROM probe p WHERE p.success
	), lists AS (
		-- each node's node ranges as flake_next() and randflake_next() lease
		-- them: the setting, or at its default the Citus group's share
		SELECT s.node, 'flake_next()' AS generator,
			   CASE WHEN s.j->>'nodes' <> '' THEN s.j->>'nodes'
					ELSE format('%s-%s', (s.j->>'group')::int * 16,
								(s.j->>'group')::int * 16 + 15) END AS list
		FROM s
		UNION ALL
		SELECT s.node, 'randflake_next()',
			   CASE WHEN s.j->>'randflake_nodes' <> '0-131071' THEN s.j->>'randflake_nodes'
					ELSE format('%s-%s', (s.j->>'group')::int * 256,
								(s.j->>'group')::int * 256 + 255) END
		FROM s
	), ranges AS (
		SELECT l.node, l.generator, l.list, split_part(x, '-', 1)::bigint AS lo,
			   coalesce(nullif(split_part(x, '-', 2), ''), split_part(x, '-', 1))::bigint AS hi
		FROM lists l, regexp_split_to_table(replace(l.list, ' ', ''), ',') x
	)
	SELECT p.node, 'probe failed', p.result FROM probe p WHERE NOT p.success
	UNION ALL
	SELECT s.node, 'flake not preloaded',
		   'shared_preload_libraries does not list flake: its generators refuse to run there.'
	FROM s WHERE NOT (s.j->>'preloaded')::boolean
	UNION ALL
	SELECT s.node, 'version differs',
		   format('flake %s is installed there, %s on this node.', s.j->>'version', h.version)
	FROM s, here h WHERE s.j->>'version' IS DISTINCT FROM h.version
	UNION ALL
	SELECT s.node, 'layout differs',
		   format('flake.epoch %s, flake.node_bits %s, flake.sequence_bits %s there; '
				  '%s, %s, %s on this node: ids decode differently.',
				  s.j->>'epoch', s.j->>'node_bits', s.j->>'sequence_bits',
				  h.epoch, h.node_bits, h.sequence_bits)
	FROM s, here h
	WHERE (s.j->>'epoch', s.j->>'node_bits', s.j->>'sequence_bits')
		  IS DISTINCT FROM (h.epoch, h.node_bits, h.sequence_bits)
	UNION ALL
	SELECT s.node, 'randflake key differs',
		   format('flake.randflake_secret has key fingerprint %s there, %s on this node: '
				  'randflake_next() ids of the two are distinct only by chance.',
				  coalesce(s.j->>'fingerprint', 'none'), coalesce(h.fingerprint, 'none'))
	FROM s, here h WHERE s.j->>'fingerprint' IS DISTINCT FROM h.fingerprint
	UNION ALL
	SELECT s.node, 'group beyond the node space',
		   format('Citus group %s is beyond the %s groups flake.node_bits = %s holds: '
				  'flake_next() refuses there until it has flake.nodes of its own.',
				  s.j->>'group', (1 << (s.j->>'node_bits')::int) / 16, s.j->>'node_bits')
	FROM s WHERE s.j->>'nodes' = '' AND (s.j->>'group')::int >= (1 << (s.j->>'node_bits')::int) / 16
	UNION ALL
	SELECT s.node, 'group beyond the ulidflake sids',
		   format('Citus group %s is beyond the 32 ulidflake sids: '
				  'ulidflake_next() refuses there; call ulidflake_next(sid) with sids of its own.',
				  s.j->>'group')
	FROM s WHERE (s.j->>'group')::int > 31
	UNION ALL
	SELECT DISTINCT a.node, a.generator || ' node ranges overlap',
		   format('%s generates on nodes %s there and %s on %s: their ids can collide.',
				  a.generator, a.list, b.list, b.node)
	FROM ranges a JOIN ranges b ON a.generator = b.generator AND a.node <> b.node
		AND a.lo <= b.hi AND b.lo <= a.hi
	ORDER BY 1, 2, 3
	$query$;
END
$$;
REVOKE EXECUTE ON FUNCTION flake_citus_check() FROM PUBLIC;
COMMENT ON FUNCTION flake_citus_check() IS
	'on a Citus coordinator: a row per problem of the nodes'' flake settings '
	'(preloaded, version, layout, randflake key, node ranges); none when all is well';
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
-- it changes (or be a member of its owner).  Every statement that reads or
-- alters a table runs as that table's owner, in a security-restricted
-- operation (migrate_as_owner, migrate_read_as_owner): index
-- expressions, CHECK constraints and policies are the owner's code, and
-- must not run with the caller's rights, which may be a superuser's.  The
-- caller runs only statements that run no such code: locks, and creating,
-- filling and granting the mapping table.
------------------------------------------------------------------------

-- One step of a migration plan: a statement to run, a lock or a note.
CREATE TYPE flake_internal.migrate_step AS (
	action text,
	detail text,
	run boolean,
	counted boolean,
	as_owner_of regclass
);
COMMENT ON TYPE flake_internal.migrate_step IS 'a step of a flake_migrate() plan';
COMMENT ON COLUMN flake_internal.migrate_step.action IS
	'what kind of step: lock, alter type, rekey, note, blocked, ...';
COMMENT ON COLUMN flake_internal.migrate_step.detail IS
	'the statement, or the text of a note or of a blocked step';
COMMENT ON COLUMN flake_internal.migrate_step.run IS
	'false: a note, a blocked step, or a lock already taken';
COMMENT ON COLUMN flake_internal.migrate_step.counted IS 'report the rows the statement touched';
COMMENT ON COLUMN flake_internal.migrate_step.as_owner_of IS
	'run the statement as the owner of this table; NULL: as the caller';

-- A column that holds the key's values: the key or a referencing column.
CREATE TYPE flake_internal.migrate_column AS (
	relid oid,
	attnum int2,
	changes boolean
);
COMMENT ON TYPE flake_internal.migrate_column IS 'a column whose values flake_migrate() changes';
COMMENT ON COLUMN flake_internal.migrate_column.relid IS 'the column''s table';
COMMENT ON COLUMN flake_internal.migrate_column.attnum IS 'the column''s number in its table';
COMMENT ON COLUMN flake_internal.migrate_column.changes IS
	'its type changes, or its table is rewritten with new ids';

--
-- A statement or query on a table, run as the table's owner inside a
-- security-restricted operation with search_path pg_catalog, pg_temp (and
-- the extension's schema between them with flake_types, for ALTER TABLE
-- ... TYPE ulidflake), as PostgreSQL runs REINDEX (src/migrate_owner.c).
-- Open to PUBLIC, as the other helpers are (see the end of this file):
-- only a role that may SET ROLE to the owner may use them, which gives it
-- nothing it does not have.
--
CREATE FUNCTION flake_internal.migrate_as_owner(tbl regclass, statement text, flake_types boolean)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'flake_migrate_as_owner' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: run a statement as the owner of a table, in a security-restricted '
	'operation; returns the rows it processed';
CREATE FUNCTION flake_internal.migrate_read_as_owner(tbl regclass, query text, flake_types boolean)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'flake_migrate_read_as_owner' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_read_as_owner(regclass, text, boolean) IS
	'flake_migrate() helper: the rows of a query run as the owner of a table, in a '
	'security-restricted operation';

--
-- A blocker found by a dry run, as a plan step: the error it would raise,
-- with its detail and its hint, so that the dry run says what to do as the
-- real run's error does.
--
CREATE FUNCTION flake_internal.migrate_blocked(message text, sqlstate text, detail text,
													 hint text DEFAULT NULL)
	RETURNS flake_internal.migrate_step
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT ROW('blocked',
			   format('%s (SQLSTATE %s)', message, sqlstate)
			   || coalesce('. ' || nullif(concat_ws(' ', detail, 'Hint: ' || hint), ''), ''),
			   false, false, NULL)::flake_internal.migrate_step
$$;
COMMENT ON FUNCTION flake_internal.migrate_blocked(text, text, text, text) IS
	'flake_migrate() helper: the step a dry run shows for an error that a real run would raise, '
	'with its detail and hint';

--
-- Check that the caller owns a table, and lock it unless this is a dry run.
-- The lock comes before anything of the table is read, so that nothing
-- changes between check and change.  referenced names the key column that
-- a referencing table's column points to (NULL for the key's own table).
--
CREATE FUNCTION flake_internal.migrate_lock(tbl regclass, referenced text, dry_run boolean)
	RETURNS flake_internal.migrate_step
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
						   THEN format('flake_migrate alters %s; only its owner %s '
									   '(or a member of that role) can.',
									   tbl, owner)
						   ELSE format('%s references %s, so flake_migrate alters it too; '
									   'only its owner %s (or a member of that role) can.',
									   tbl, referenced, owner) END,
				  HINT = 'Run flake_migrate as the owner of the tables.';
	END IF;
	IF NOT dry_run THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
	END IF;
	RETURN ROW('lock', format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl), false, false,
			   NULL)::flake_internal.migrate_step;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_lock(regclass, text, boolean) IS
	'flake_migrate() helper: check that the caller owns a table, '
	'and lock it unless this is a dry run';
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
	rel			record;
	map_name	text;
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
-- flake_migrate(), 5: the rekey's mapping of old ids to new

--
-- Rows of a rekey without a time its ids can carry (NULL, before the
-- epoch, after the newest id): with undatable, the plan's note; without,
-- an error.
--
CREATE FUNCTION flake_internal.migrate_rekey_undated(tbl regclass, generator text, rekey_from name,
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
		note := format('%s of %s %s no time that %s can carry (in column %I: %s NULL, '
					   '%s before the epoch, %s after the current time): %s',
					   CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
							ELSE (n_null + n_before + n_after) || ' rows' END,
					   tbl, CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END,
					   gen_call, rekey_from, n_null, n_before, n_after,
					   CASE undatable WHEN 'keep' THEN 'they keep their old ids'
							ELSE 'they get ids of now' END);
	ELSIF n_null + n_before + n_after > 0 THEN
		RAISE EXCEPTION '% of % % no time that % can carry',
				CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
				ELSE (n_null + n_before + n_after) || ' rows' END, tbl,
				CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END, gen_call
			USING ERRCODE = CASE WHEN n_null > 0 THEN 'null_value_not_allowed'
								 ELSE 'numeric_value_out_of_range' END,
				  DETAIL = format('In column %I: %s NULL, %s before the epoch %s, '
								  '%s after the current time.',
								  rekey_from, n_null, n_before,
								  regexp_replace(to_char(epoch AT TIME ZONE 'UTC',
														 'YYYY-MM-DD HH24:MI:SS.MS'),
												 '\.000$', '') || '+00',
								  n_after),
				  HINT = 'Give those rows a time first, or pass undatable => ''keep'' '
						 '(they keep their old ids) or ''now'' (they get ids of now)'
						 || CASE WHEN n_before = 0 THEN '.'
								 WHEN to_ulid THEN '; the ulidflake epoch is fixed.'
								 ELSE '; with flake.epoch set before the oldest row, '
									  'every id carries its row''s exact millisecond.' END;
	END IF;
	RETURN note;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_undated(regclass, text, name, text, timestamptz,
														 bigint, bigint, bigint) IS
	'flake_migrate() helper: the note, or the error, for rows a rekey cannot date';

--
-- The statement of a rekey's mapping (old_id, new_id), from the slots of
-- the rows (migrate_rekey_query): the milliseconds, then for
-- ulidflake the sequence and a band, for Snowflake a node and the
-- sequence, the band or node claimed when the statement runs; with
-- undated_now, ids of now for the rows without a usable time.
--
CREATE FUNCTION flake_internal.migrate_rekey_statement(tbl regclass, col name, generator text,
													   rekey_from name, slots text, datable text,
													   seq_bits integer, ms_shift integer,
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
	slots_read := format('flake_internal.migrate_read_as_owner(CAST(%L AS regclass), '
						 'CAST(%L AS text), false) AS s(k bigint, slot bigint)',
						 tbl, slots);
	IF no_rows THEN
		mapping := 'SELECT NULL::bigint AS old_id, NULL::bigint AS new_id WHERE false';
	ELSIF generator = 'ulidflake_next' THEN
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim($q$
						  || $q$CAST(CAST(%3$s AS oid) AS regclass), %4$L, true) AS band)
SELECT k AS old_id, ((slot >> 15) << 20) | ((slot & 32767) << 5) | n.band AS new_id
FROM %1$s, n$q$,
						  slots_read, NULL, tbl::oid, rekey_from);
	ELSE
		-- the claim runs exactly once, when the statement does
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim($q$
						  || $q$CAST(CAST(%5$s AS oid) AS regclass), %6$L) AS node)
SELECT k AS old_id, ((slot >> %1$s) << %2$s) | (n.node::bigint << %1$s) | (slot & %3$s) AS new_id
FROM %4$s, n$q$,
						  seq_bits, ms_shift, per_ms - 1, slots_read, tbl::oid, rekey_from);
	END IF;
	-- rows without a time: ids of now, in old id order
	IF undated_now THEN
		mapping := format('%s UNION ALL (SELECT k, CAST(@extschema@.%s() AS bigint) '
						  'FROM flake_internal.migrate_read_as_owner(CAST(%L AS regclass), '
						  'CAST(%L AS text), false) AS u(k bigint))',
						  mapping, generator, tbl,
						  format('SELECT CAST(%I AS bigint) FROM %s '
								 'WHERE NOT coalesce(%s, false) ORDER BY 1', col, tbl, datable));
	END IF;
	RETURN mapping;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_statement(regclass, name, text, name, text, text,
														   integer, integer, boolean, boolean) IS
	'flake_migrate() helper: the statement of a rekey''s mapping, from the slots of the rows';

--
-- The rekey mapping: a query of (old_id, new_id), new ids from each row's
-- time, in (time, old id) order; a millisecond with more rows than ids
-- spills into the next ones.  All lie below first_id, the id just drawn
-- from the generator.  Snowflake ids go on a node of flake.rekey_nodes,
-- which live generation never uses, claimed for the rekey's milliseconds
-- when the query runs (see src/migrate_rekey.c), so no other rekey gets them.
-- Refuses rows without a usable time, and new ids that could meet old
-- ones.  The table is read as its owner (migrate_read_as_owner); the
-- query runs as the caller, who may claim the node.
--
CREATE FUNCTION flake_internal.migrate_rekey_query(tbl regclass, col name, generator text,
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
	slots := format($q$SELECT k, rn + max(ms * %1$s - rn) $q$
					|| $q$OVER (ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS slot
      FROM (SELECT CAST(%2$I AS bigint) AS k, CAST(%3$I AS timestamptz) AS t,
                   row_number() OVER (ORDER BY CAST(%3$I AS timestamptz), CAST(%2$I AS bigint)) - 1 AS rn,
                   CAST(@extschema@.%4$s(CAST(%3$I AS timestamptz)) AS bigint) >> %5$s AS ms
            FROM %6$s%7$s) r$q$,
					per_ms, col, rekey_from,
					CASE WHEN to_ulid THEN 'ulidflake_from_timestamp'
						 ELSE 'flake_from_timestamp' END,
					ms_shift, tbl,
					CASE WHEN undatable IS NOT NULL THEN ' WHERE ' || datable ELSE '' END);

	-- one scan: the rows without a usable time, the milliseconds of the
	-- others, and the largest old key
	SELECT * INTO n_null, n_before, n_after, first_ms, last_ms, cnt, max_old
	FROM flake_internal.migrate_read_as_owner(tbl, format(
			'SELECT count(*) FILTER (WHERE %1$I IS NULL),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) < CAST(%6$L AS timestamptz)),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) >= CAST(%7$L AS timestamptz)),
					min(CASE WHEN %2$s THEN %3$s END), max(CASE WHEN %2$s THEN %3$s END),
					count(*) FILTER (WHERE %2$s), max(CAST(%4$I AS bigint))
			 FROM %5$s',
			rekey_from, datable,
			format('CAST(@extschema@.%s(CAST(%I AS timestamptz)) AS bigint) >> %s',
					CASE WHEN to_ulid THEN 'ulidflake_from_timestamp'
						 ELSE 'flake_from_timestamp' END,
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
	note := flake_internal.migrate_rekey_undated(tbl, generator, rekey_from, undatable, epoch,
												 n_null, n_before, n_after);

	-- the new ids sort below the generator's next one
	IF last_ms >= first_id >> ms_shift THEN
		RAISE EXCEPTION 'too many rows of % in the last milliseconds', tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Rekeyed ids must stay below %s, the id just drawn from %s.',
								  first_id, gen_call),
				  HINT = 'Try again in a moment.';
	END IF;

	-- ... and must not meet the old ids of other rows
	IF first_ms << ms_shift <= max_old THEN
		SELECT * INTO cnt
		FROM flake_internal.migrate_read_as_owner(tbl, format(
				'SELECT count(DISTINCT s.k) FROM (%s) s JOIN %s o '
				'ON CAST(o.%I AS bigint) BETWEEN (s.slot / %4$s) << %5$s '
				'AND ((s.slot / %4$s + 1) << %5$s) - 1',
				slots, tbl, col, per_ms, ms_shift),
			false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION '% new ids of % could equal old ids of other rows', cnt, tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Rows timed in the first milliseconds after the epoch '
									  'get ids as small as the old keys (up to %s).', max_old),
					  HINT = 'Migrate without rekey_from, or correct the time of those rows.';
		END IF;
	END IF;

	query := flake_internal.migrate_rekey_statement(tbl, col, generator, rekey_from, slots, datable,
													seq_bits, ms_shift, first_ms IS NULL,
													undatable = 'now' AND note IS NOT NULL);
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_query(regclass, name, text, name, bigint, text) IS
	'flake_migrate() helper: the query of old and new ids that fills a rekey''s mapping table';
-- flake_migrate(), 6: the statements that change the tables

--
-- Foreign keys into the columns that change are dropped and added back
-- afterwards under the same names: one validation instead of one per
-- altered column, and no checks while the ids are rewritten.  Both as the
-- owner of the referencing table, as every statement on a table.
--
CREATE FUNCTION flake_internal.migrate_foreign_keys(tbl regclass, col name,
													cols flake_internal.migrate_column[],
													OUT drops flake_internal.migrate_step[],
													OUT adds flake_internal.migrate_step[])
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
				  DETAIL = format('flake_migrate drops and adds these foreign keys again, '
								  'which would enable them: %s.', list),
				  HINT = 'Enable their triggers (ALTER TABLE ... ENABLE TRIGGER ALL), '
						 'or drop the foreign keys first.';
	END IF;
	-- the owner adding a foreign key needs REFERENCES on the key, which it
	-- lacks when it was given the table after the key was made, or the
	-- privilege was revoked since
	SELECT string_agg(DISTINCT format('%I on %s references %s, and its owner %s may not',
									  c.conname, c.conrelid::regclass, c.confrelid::regclass,
									  r.relowner::regrole), ', ')
	INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
	JOIN pg_class r ON r.oid = c.conrelid
	WHERE EXISTS (SELECT FROM unnest(c.confkey) k
				  WHERE NOT has_column_privilege(r.relowner, c.confrelid, k, 'REFERENCES'));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'owners of tables referencing %.% may not reference it',
				tbl, quote_ident(col)
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('flake_migrate adds the foreign keys back '
								  'as the owners of their tables: %s.', list),
				  HINT = 'GRANT REFERENCES on the referenced tables to those owners.';
	END IF;
	drops := '{}';
	adds := '{}';
	FOR fk IN
		SELECT DISTINCT c.oid, c.conrelid, c.conname, pg_get_constraintdef(c.oid) AS def,
			   obj_description(c.oid, 'pg_constraint') AS comment
		FROM unnest(cols) u
		JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid
								AND u.attnum = ANY (c.confkey)
		ORDER BY c.conrelid, c.conname
	LOOP
		drops := drops || ROW('drop constraint',
							  format('ALTER TABLE %s DROP CONSTRAINT %I',
									 fk.conrelid::regclass, fk.conname),
							  true, false, fk.conrelid)::flake_internal.migrate_step;
		adds := adds || ROW('add constraint',
							format('ALTER TABLE %s ADD CONSTRAINT %I %s',
								   fk.conrelid::regclass, fk.conname, fk.def),
							true, false, fk.conrelid)::flake_internal.migrate_step;
		IF fk.comment IS NOT NULL THEN
			adds := adds || ROW('comment',
								format('COMMENT ON CONSTRAINT %I ON %s IS %L',
									   fk.conname, fk.conrelid::regclass, fk.comment),
								true, false, fk.conrelid)::flake_internal.migrate_step;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_foreign_keys(regclass, name,
														flake_internal.migrate_column[]) IS
	'flake_migrate() helper: the steps that drop the foreign keys into the changing columns '
	'and add them back';

--
-- Detach the key from its identity, or from its default and the sequences
-- it draws from: a sequence is dropped only when the column owns it and
-- nothing else uses it.  As the table's owner, who owns such a sequence.
--
CREATE FUNCTION flake_internal.migrate_detach(tbl regclass, col name, key_attnum int2,
											  identity_seq oid, default_oid oid, default_seqs oid[])
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	steps		flake_internal.migrate_step[] := '{}';
	seq			oid;
	list		text;
BEGIN
	IF identity_seq IS NOT NULL THEN
		RETURN ARRAY[ROW('drop identity',
						 format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col),
						 true, false, tbl)::flake_internal.migrate_step];
	END IF;
	IF default_oid IS NULL THEN
		RETURN steps;
	END IF;
	steps := steps || ROW('drop default',
						  format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col),
						  true, false, tbl)::flake_internal.migrate_step;
	FOREACH seq IN ARRAY default_seqs LOOP
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1)
		INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = seq AND d.deptype = 'n'
		  AND NOT (d.classid = 'pg_attrdef'::regclass AND d.objid = default_oid);
		IF NOT EXISTS (SELECT FROM pg_depend d
					   WHERE d.classid = 'pg_class'::regclass AND d.objid = seq
						 AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl
						 AND d.refobjsubid = key_attnum AND d.deptype = 'a') THEN
			steps := steps || ROW('note',
								  format('sequence %s is kept: %s.%I does not own it',
										 seq::regclass, tbl, col),
								  false, false, NULL)::flake_internal.migrate_step;
		ELSIF list IS NOT NULL THEN
			steps := steps || ROW('note',
								  format('sequence %s is kept: also used by %s',
										 seq::regclass, list),
								  false, false, NULL)::flake_internal.migrate_step
						   || ROW('disown sequence',
								  format('ALTER SEQUENCE %s OWNED BY NONE', seq::regclass),
								  true, false, tbl)::flake_internal.migrate_step;
		ELSE
			-- an owned sequence has the table's owner
			steps := steps || ROW('drop sequence', format('DROP SEQUENCE %s', seq::regclass),
								  true, false, tbl)::flake_internal.migrate_step;
		END IF;
	END LOOP;
	RETURN steps;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_detach(regclass, name, smallint, oid, oid, oid[]) IS
	'flake_migrate() helper: the steps that detach the key from its identity or its sequences';

-- a node of flake.rekey_nodes for the milliseconds a table's rows span,
-- which it reads from the table (the caller's own), claimed durably for
-- this server: not for everyone, since each call uses one up.  Replaced,
-- not dropped, by an upgrade, so the roles granted EXECUTE keep it.
CREATE OR REPLACE FUNCTION flake_rekey_claim(tbl regclass, time_column name,
											 band boolean DEFAULT false)
	RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_rekey_claim(regclass, name, boolean) IS
	'claim a node of flake.rekey_nodes (or with band, a ulidflake band) for the milliseconds '
	'the rows of a table span, for a flake_migrate() rekey';

-- the new id of an old one in a rekey's mapping table (src/migrate_remap.c), for
-- ALTER TABLE ... TYPE ... USING: the table is read once per statement,
-- with the rights of the table's owner, who runs the ALTER TABLE
CREATE FUNCTION flake_internal.migrate_lookup(map regclass, old_id bigint) RETURNS bigint
	AS 'MODULE_PATHNAME', 'flake_migrate_lookup' LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_lookup(regclass, bigint) IS
	'the new id of old_id in a flake_migrate() mapping table, or old_id when it lists none';
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
------------------------------------------------------------------------
-- The online migration: flake_migrate()'s work while the application
-- keeps writing
--
-- flake_migrate() changes the types of the key and its referencing
-- columns with ALTER TABLE, which rewrites each table under ACCESS
-- EXCLUSIVE.  The online path instead copies each table whose columns
-- change type into a new table of the final shape (the shadow, named
-- TABLE__flake_new), as pg_repack does: the trigger
-- online_log() logs the key of every row the application
-- writes meanwhile, the rows are copied in batches that commit, the
-- indexes are built on the shadow (which only the migration writes, so
-- plainly, one scan each), the log is applied again and again (the logged
-- keys' rows are deleted from the shadow and copied anew, in one
-- snapshot), and one short transaction applies the rest of the log and
-- puts the shadows in the place of the tables.  The foreign keys come back
-- NOT VALID in that transaction and are validated after it.  Committed
-- batches cannot run in a function, so the functions here plan: the client
-- program flake_migrate_online (client/) runs the steps, with lock_timeout
-- and retries.
--
-- The plan is made again from the catalogs at every run, so a run that
-- stopped anywhere is continued by running the command again: the state is
-- in the catalogs (the shadows, their indexes, the logs, the table
-- TABLE__flake_validate of the foreign keys left to validate after the
-- swap; each found by the oid of its table that its comment records,
-- never by its name) and in the shadows' rows.  Until the swap the
-- tables are not changed (but for the trigger), so undoing is dropping
-- what the migration added.  The checks are flake_migrate()'s own, through
-- its dry run, and those of online_blockers().
------------------------------------------------------------------------

-- appends the key of each row written to the log; arguments: the log's
-- qualified name, the key column.  This and the next are replaced, not
-- dropped, by an upgrade: the triggers of an unfinished migration use them.
CREATE OR REPLACE FUNCTION flake_internal.online_log() RETURNS trigger
	AS 'MODULE_PATHNAME', 'flake_migrate_online_log' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.online_log() IS
	'trigger of an online migration: log the key of every row the application writes '
	'while the table is copied';

-- a TRUNCATE would not be logged: refused while the table is copied
CREATE OR REPLACE FUNCTION flake_internal.online_no_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'cannot truncate % while flake_migrate_online copies it', TG_TABLE_NAME
		USING ERRCODE = 'object_in_use',
			  HINT = 'Let the migration finish, or undo it with flake_migrate_online --undo.';
END
$$;
COMMENT ON FUNCTION flake_internal.online_no_truncate() IS
	'trigger of an online migration: refuse TRUNCATE of a table while it is copied';

--
-- A name made of base and suffix that fits in a name (63 bytes).  When it
-- does not fit, base is cut, whole characters at a time, and a hash of the
-- whole base goes between: two bases that begin alike (a table and its
-- primary key's index, TABLE_pkey) still give two names.  The checks
-- refuse a name that another object has, or that two of the names the
-- migration needs share (online_check_names).
--
CREATE FUNCTION flake_internal.online_name(base name, suffix text)
	RETURNS name
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CAST(left(base, n) || m.mark || suffix AS name)
	FROM (SELECT CASE WHEN octet_length(base || suffix) <= 63 THEN ''
					  ELSE '_' || lpad(to_hex(hashtextextended(base, 0) & 4294967295), 8, '0')
				 END) m(mark),
		 generate_series(length(base), 0, -1) n
	WHERE octet_length(left(base, n) || m.mark || suffix) <= 63
	ORDER BY n DESC
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.online_name(name, text) IS
	'online migration helper: base with suffix, cut to fit a name';

--
-- The copy or the log (what) of a table: the table of its owner whose
-- comment, set by the create step, records the table's oid, wherever it
-- is and whatever its name (the table may have been renamed meanwhile).
-- Only the owner of a table (or a superuser) may comment on it, so no
-- other role can make one.  The C trigger online_log()
-- checks its log the same way.  After the swap, the list of foreign keys
-- to validate is found so too (what: 'foreign keys to validate').
--
CREATE FUNCTION flake_internal.online_marked(rel oid, what text)
	RETURNS oid
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.oid
	FROM pg_description d
	JOIN pg_class m ON m.oid = d.objoid
	JOIN pg_class c ON c.oid = rel
	WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0
	  -- the text made once, not for each comment of the database
	  AND d.description = (SELECT format('flake_migrate_online: the %s of %s', what, rel))
	  AND m.relkind = 'r' AND m.relowner = c.relowner
	ORDER BY m.oid
	LIMIT 1
$$;
COMMENT ON FUNCTION flake_internal.online_marked(oid, text) IS
	'online migration helper: the copy or the log of a table, '
	'found by the oid their comment records';

--
-- Take back from a table the migration made (a copy, a log, the list of
-- foreign keys to validate) what ALTER DEFAULT PRIVILEGES gave other roles
-- when it was created, and give its owner every privilege (default
-- privileges may have taken some from it): only the owner may use it.  The
-- swap then grants exactly the table's own privileges.
--
CREATE FUNCTION flake_internal.online_private(rel regclass)
	RETURNS void
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	owner		regrole := (SELECT c.relowner FROM pg_class c WHERE c.oid = rel);
	grantees	text;
BEGIN
	IF NOT pg_has_role(owner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', rel
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF (SELECT c.relacl FROM pg_class c WHERE c.oid = rel) IS NULL THEN
		RETURN;
	END IF;
	SELECT string_agg(DISTINCT CASE WHEN g.grantee = 0 THEN 'PUBLIC'
									ELSE g.grantee::regrole::text END, ', ')
	INTO grantees
	FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) g
	WHERE c.oid = rel;
	IF grantees IS NOT NULL THEN
		EXECUTE format('REVOKE ALL ON %s FROM %s', rel, grantees);
	END IF;
	EXECUTE format('GRANT ALL ON %s TO %s', rel, owner);
END
$$;
COMMENT ON FUNCTION flake_internal.online_private(regclass) IS
	'online migration helper: take back the default privileges of a table the migration made';

--
-- The key's column and those that reference it, transitively (with the
-- columns named in also), and the tables the migration changes: what the
-- plan, the swap and undoing start from, as flake_migrate() finds them
-- (migrate_key(), migrate_also(), migrate_closure()).  Unless dry_run,
-- each table found besides the key's is locked as flake_migrate() locks
-- it, and the catalogs are read again until no new one appears.  to_ulid
-- counts every referencing column as changing, so that every table that
-- may have been copied is found.
--
CREATE FUNCTION flake_internal.online_closure(tbl regclass, col name, also text[],
											  to_ulid boolean, dry_run boolean,
											  OUT cols flake_internal.migrate_column[],
											  OUT touched oid[])
	LANGUAGE sql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT c.cols, c.touched
	FROM flake_internal.migrate_key(tbl, col) k,
		 flake_internal.migrate_closure(tbl, col, k.key_attnum,
										flake_internal.migrate_also(tbl, col, k.key_attnum, also),
										to_ulid, false, dry_run) c
$$;
COMMENT ON FUNCTION flake_internal.online_closure(regclass, name, text[], boolean, boolean) IS
	'online migration helper: the columns that reference the key, transitively, '
	'and the tables the migration changes (locked unless dry_run)';

--
-- The tables to copy (those with a column that changes type), each with
-- its shadow and log (their names, and their oids once they exist), the
-- column its batches go by (its primary key, or else a unique index on one
-- NOT NULL column), and the pieces of the statements that copy its rows:
-- the columns to insert (not the generated ones) and the values, the
-- changing columns cast to their new type.
--
CREATE FUNCTION flake_internal.online_tables(cols flake_internal.migrate_column[], target text)
	RETURNS TABLE(relid oid, rel text, shadow_name name, shadow text, shadow_oid oid,
				  log text, log_oid oid, batch_key name, batch_type text, batch_index oid,
				  key_cast text, inserts text, copies text, alters text, apply text[])
	LANGUAGE sql STABLE PARALLEL SAFE
	SET search_path = pg_catalog, pg_temp
AS $$
	-- apply: the statements that apply the table's log: the logged keys'
	-- rows are deleted from the shadow and copied anew, then the entries
	-- read are deleted.  In one REPEATABLE READ transaction (or under the
	-- swap's locks) they leave the shadow equal to the table as of its
	-- snapshot, and running them again changes nothing more.  The log is
	-- analyzed first: its statistics are otherwise those of another pass
	-- (tens of thousands of entries after the copy, a few hundred later),
	-- and the planner would join it to the table and the shadow by
	-- scanning them whole, a second or more a pass for a few million rows,
	-- under the swap's locks too, instead of by their keys' indexes.
	SELECT t.*,
		   CASE WHEN t.batch_key IS NOT NULL
		   THEN ARRAY[format('ANALYZE %s', t.log),
					  format('DELETE FROM %s s USING %s l WHERE s.%I %s %s',
							 t.shadow, t.log, t.batch_key,
							 CASE WHEN t.key_cast <> '%s' AND target <> 'bigint'
								  THEN 'OPERATOR(@extschema@.=)' ELSE '=' END,
							 format(t.key_cast, 'l.k')),
					  format('INSERT INTO %s (%s) SELECT %s FROM %s '
							 'WHERE %I IN (SELECT l.k FROM %s l)',
							 t.shadow, t.inserts, t.copies, t.rel, t.batch_key, t.log),
					  format('DELETE FROM %s', t.log)] END
	FROM (
	SELECT c.oid AS relid, c.oid::regclass::text AS rel,
		   coalesce(sc.relname, s.shadow_name) AS shadow_name,
		   coalesce(sc.oid::regclass::text,
					format('%s.%I', c.relnamespace::regnamespace, s.shadow_name)) AS shadow,
		   sc.oid AS shadow_oid,
		   coalesce(lc.oid::regclass::text,
					format('%s.%I', c.relnamespace::regnamespace, s.log_name)) AS log,
		   lc.oid AS log_oid,
		   k.attname AS batch_key, format_type(k.atttypid, k.atttypmod) AS batch_type,
		   k.indexrelid AS batch_index,
		   CASE WHEN EXISTS (SELECT FROM unnest(cols) u
							 WHERE u.relid = c.oid AND u.attnum = k.attnum AND u.changes)
				THEN format('CAST(CAST(%%s AS bigint) AS %s)', target) ELSE '%s' END AS key_cast,
		   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
			FROM pg_attribute a
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			  AND a.attgenerated = '') AS inserts,
		   (SELECT string_agg(CASE WHEN u.changes
								   THEN format('CAST(CAST(%I AS bigint) AS %s)', a.attname, target)
								   ELSE quote_ident(a.attname) END, ', ' ORDER BY a.attnum)
			FROM pg_attribute a
			LEFT JOIN unnest(cols) u ON u.relid = a.attrelid AND u.attnum = a.attnum
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			  AND a.attgenerated = '') AS copies,
		   concat_ws(', ',
					 (SELECT string_agg(format('ALTER COLUMN %I TYPE %s '
											   'USING CAST(CAST(%1$I AS bigint) AS %2$s)',
											   a.attname, target)
										-- the key's sequence is the table's alone
										|| CASE WHEN u.relid = cols[1].relid
													 AND u.attnum = cols[1].attnum
												THEN format(', ALTER COLUMN %I DROP DEFAULT',
															a.attname)
												ELSE '' END,
										', ' ORDER BY a.attnum)
					  FROM unnest(cols) u
					  JOIN pg_attribute a ON a.attrelid = u.relid AND a.attnum = u.attnum
					  WHERE u.relid = c.oid AND u.changes),
					 -- the columns' statistics targets and options, which LIKE leaves
					 (SELECT string_agg(concat_ws(', ',
												  CASE WHEN a.attstattarget >= 0
												  THEN format('ALTER COLUMN %I SET STATISTICS %s',
															  a.attname, a.attstattarget) END,
												  CASE WHEN cardinality(a.attoptions) > 0
												  THEN format('ALTER COLUMN %I SET (%s)', a.attname,
															  array_to_string(a.attoptions, ', '))
												  END),
										', ' ORDER BY a.attnum)
					  FROM pg_attribute a
					  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
						AND (a.attstattarget >= 0 OR cardinality(a.attoptions) > 0))) AS alters
	FROM pg_class c
	CROSS JOIN LATERAL (SELECT flake_internal.online_name(c.relname, '__flake_new') AS shadow_name,
							   flake_internal.online_name(c.relname, '__flake_log') AS log_name) s
	LEFT JOIN pg_class sc ON sc.oid = flake_internal.online_marked(c.oid, 'copy')
	LEFT JOIN pg_class lc ON lc.oid = flake_internal.online_marked(c.oid, 'log')
	LEFT JOIN LATERAL (
		SELECT x.indexrelid, ka.attnum, ka.attname, ka.atttypid, ka.atttypmod
		FROM pg_index x
		JOIN pg_attribute ka ON ka.attrelid = x.indrelid AND ka.attnum = x.indkey[0]
		WHERE x.indrelid = c.oid AND x.indisunique AND x.indisvalid AND x.indnkeyatts = 1
		  AND x.indkey[0] <> 0 AND x.indpred IS NULL AND ka.attnotnull
		ORDER BY x.indisprimary DESC, x.indexrelid
		LIMIT 1) k ON true
	WHERE c.oid IN (SELECT u.relid FROM unnest(cols) u WHERE u.changes)) t
	ORDER BY t.relid
$$;
COMMENT ON FUNCTION flake_internal.online_tables(flake_internal.migrate_column[], text) IS
	'online migration helper: the tables to copy, their shadows and logs, '
	'and how to copy their rows';
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

------------------------------------------------------------------------
-- Privileges: the grants of the extension, after every object exists
--
-- Appended by make last, to the install script and to every upgrade
-- script.  The objects a script creates get the default privileges of the
-- role that runs it (ALTER DEFAULT PRIVILEGES ... GRANT ALL ON TABLES,
-- FUNCTIONS, SCHEMAS, TYPES TO a role): that role could then write
-- flake_origin, create functions in flake_internal beside the helpers, or
-- call the functions revoked from PUBLIC (randflake_decode(bigint), ...).
-- What those default privileges added is revoked here: on the objects
-- this transaction made members of the extension, and on older members
-- where the item is one of those an install or upgrade script left them
-- (pg_init_privs), not one the database's administrator granted since.
-- Then the extension's grants, which would otherwise be revoked with them
-- where they coincide.
------------------------------------------------------------------------

DO $$
DECLARE
	added record;
BEGIN
	FOR added IN
		WITH member AS (
			SELECT d.classid, d.objid, d.xmin = pg_catalog.pg_current_xact_id()::xid AS new
			FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
			WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
			  AND e.extname = 'flake'
		), acl AS (
			SELECT m.*, 'ROUTINE' AS kind, p.oid::pg_catalog.regprocedure::text AS name,
				   p.proowner AS owner, p.pronamespace AS nsp, 'f' AS objtype, p.proacl AS acl
			FROM member m JOIN pg_catalog.pg_proc p ON p.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'TABLE', c.oid::pg_catalog.regclass::text,
				   c.relowner, c.relnamespace, 'r', c.relacl
			FROM member m JOIN pg_catalog.pg_class c ON c.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'TYPE', t.oid::pg_catalog.regtype::text,
				   t.typowner, t.typnamespace, 'T', t.typacl
			FROM member m JOIN pg_catalog.pg_type t ON t.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
			UNION ALL
			SELECT m.*, 'SCHEMA', pg_catalog.quote_ident(n.nspname), n.nspowner, 0, 'n', n.nspacl
			FROM member m JOIN pg_catalog.pg_namespace n ON n.oid = m.objid
			WHERE m.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
		)
		-- an item of the object's privileges that a default privilege of its
		-- owner (for every schema, or for the object's) gives and the
		-- built-in default does not, on a new member or left by a script
		SELECT o.kind, o.name, a.privilege_type,
			   CASE WHEN a.grantee = 0 THEN 'PUBLIC'
					ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee))
			   END AS grantee
		FROM acl o, pg_catalog.aclexplode(o.acl) a
		WHERE (o.new
			   OR EXISTS (SELECT FROM pg_catalog.pg_init_privs i,
									  pg_catalog.aclexplode(i.initprivs) ia
						  WHERE i.classoid = o.classid AND i.objoid = o.objid AND i.objsubid = 0
							AND i.privtype = 'e'
							AND ia.grantee = a.grantee AND ia.privilege_type = a.privilege_type))
		  AND EXISTS (SELECT FROM pg_catalog.pg_default_acl x, pg_catalog.aclexplode(x.defaclacl) xa
					  WHERE x.defaclrole = o.owner AND x.defaclobjtype = o.objtype
						AND x.defaclnamespace IN (0, o.nsp)
						AND xa.grantee = a.grantee AND xa.privilege_type = a.privilege_type)
		  AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(
										  pg_catalog.acldefault(o.objtype::"char", o.owner)) b
						  WHERE b.grantee = a.grantee AND b.privilege_type = a.privilege_type)
	LOOP
		EXECUTE pg_catalog.format('REVOKE %s ON %s %s FROM %s CASCADE',
								  added.privilege_type, added.kind, added.name, added.grantee);
	END LOOP;
END
$$;

GRANT USAGE ON SCHEMA flake_internal TO PUBLIC;
GRANT SELECT ON flake_internal.flake_origin TO PUBLIC;
GRANT EXECUTE ON FUNCTION flake_lease_info() TO pg_monitor;
GRANT SELECT ON flake_leases TO pg_monitor;
GRANT EXECUTE ON FUNCTION flake_horizon_info() TO pg_monitor;
GRANT SELECT ON flake_horizon_holders TO pg_monitor;
