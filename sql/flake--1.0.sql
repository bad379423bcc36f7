/* flake--1.0.sql */

\echo Use "CREATE EXTENSION flake" to load this file. \quit

------------------------------------------------------------------------
-- ulidflake: a non-negative int8 with a Crockford Base32 text form.
-- Comparison, hashing and aggregates reuse the built-in int8 functions.
------------------------------------------------------------------------

CREATE TYPE ulidflake;

CREATE FUNCTION ulidflake_in(cstring) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_out(ulidflake) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_recv(internal) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_send(ulidflake) RETURNS bytea
	AS 'int8send' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE ulidflake (
	INPUT = ulidflake_in,
	OUTPUT = ulidflake_out,
	RECEIVE = ulidflake_recv,
	SEND = ulidflake_send,
	INTERNALLENGTH = 8,
	PASSEDBYVALUE,
	ALIGNMENT = double,
	STORAGE = plain
);

COMMENT ON TYPE ulidflake IS 'Ulid-Flake id: 43-bit milliseconds since 2024 and 20 bits of entropy, as 13 Crockford Base32 characters';

-- casts: explicit only, so that ids never mix with numbers by accident
CREATE FUNCTION ulidflake(bigint) RETURNS ulidflake
	AS 'MODULE_PATHNAME', 'ulidflake_from_bigint'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (bigint AS ulidflake) WITH FUNCTION ulidflake(bigint);
CREATE CAST (ulidflake AS bigint) WITHOUT FUNCTION;

-- comparison
CREATE FUNCTION ulidflake_eq(ulidflake, ulidflake) RETURNS boolean
	AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_ne(ulidflake, ulidflake) RETURNS boolean
	AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_lt(ulidflake, ulidflake) RETURNS boolean
	AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_le(ulidflake, ulidflake) RETURNS boolean
	AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_gt(ulidflake, ulidflake) RETURNS boolean
	AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_ge(ulidflake, ulidflake) RETURNS boolean
	AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_cmp(ulidflake, ulidflake) RETURNS integer
	AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_sortsupport(internal) RETURNS void
	AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_hash(ulidflake) RETURNS integer
	AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION ulidflake_hash_extended(ulidflake, bigint) RETURNS bigint
	AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR = (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_eq,
	COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
	HASHES, MERGES
);
CREATE OPERATOR <> (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_ne,
	COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_lt,
	COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_le,
	COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_gt,
	COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_ge,
	COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS ulidflake_ops
	DEFAULT FOR TYPE ulidflake USING btree AS
		OPERATOR 1 <,
		OPERATOR 2 <=,
		OPERATOR 3 =,
		OPERATOR 4 >=,
		OPERATOR 5 >,
		FUNCTION 1 ulidflake_cmp(ulidflake, ulidflake),
		FUNCTION 2 ulidflake_sortsupport(internal),
		FUNCTION 4 btequalimage(oid);

CREATE OPERATOR CLASS ulidflake_ops
	DEFAULT FOR TYPE ulidflake USING hash AS
		OPERATOR 1 =,
		FUNCTION 1 ulidflake_hash(ulidflake),
		FUNCTION 2 ulidflake_hash_extended(ulidflake, bigint);

CREATE OPERATOR CLASS ulidflake_minmax_ops
	DEFAULT FOR TYPE ulidflake USING brin AS
		OPERATOR 1 <,
		OPERATOR 2 <=,
		OPERATOR 3 =,
		OPERATOR 4 >=,
		OPERATOR 5 >,
		FUNCTION 1 brin_minmax_opcinfo(internal),
		FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
		FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
		FUNCTION 4 brin_minmax_union(internal, internal, internal);

CREATE FUNCTION ulidflake_smaller(ulidflake, ulidflake) RETURNS ulidflake
	AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_larger(ulidflake, ulidflake) RETURNS ulidflake
	AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE min(ulidflake) (
	SFUNC = ulidflake_smaller, STYPE = ulidflake,
	COMBINEFUNC = ulidflake_smaller, SORTOP = <, PARALLEL = SAFE
);
CREATE AGGREGATE max(ulidflake) (
	SFUNC = ulidflake_larger, STYPE = ulidflake,
	COMBINEFUNC = ulidflake_larger, SORTOP = >, PARALLEL = SAFE
);

-- generators: strictly increasing on one server when preloaded
CREATE FUNCTION ulidflake_next() RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION ulidflake_next(sid integer) RETURNS ulidflake
	AS 'MODULE_PATHNAME', 'ulidflake_next_sid'
	LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- accessors
CREATE FUNCTION flake_timestamp(ulidflake) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'ulidflake_timestamp'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_entropy(ulidflake) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_sid(ulidflake) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ulidflake_from_timestamp(timestamptz) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

------------------------------------------------------------------------
-- Snowflake ids: bigint, 0 | ms since flake.epoch | node | sequence
------------------------------------------------------------------------

CREATE FUNCTION flake_next() RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_next() IS 'next Snowflake id on the node this backend leased';
CREATE FUNCTION flake_next(node integer) RETURNS bigint
	AS 'MODULE_PATHNAME', 'flake_next_node'
	LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_next(integer) IS 'next Snowflake id on the given node';
CREATE FUNCTION flake_node() RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_node() IS 'the node this backend leased, or NULL before its first flake_next()';

-- decoders read flake.epoch, flake.node_bits and flake.sequence_bits
CREATE FUNCTION flake_timestamp(bigint) RETURNS timestamptz
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION flake_node(bigint) RETURNS integer
	AS 'MODULE_PATHNAME', 'flake_node_of' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION flake_sequence(bigint) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION flake_decode(id bigint, OUT ts timestamptz, OUT node integer, OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION flake_from_timestamp(timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

------------------------------------------------------------------------
-- Randflake ids: bigint, Sparx-64/128 encryption of
-- seconds since 1730000000 | node | sequence (gosuda/randflake v1.8.0)
------------------------------------------------------------------------

CREATE FUNCTION randflake_next() RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION randflake_next() IS 'next Randflake id, encrypted with flake.randflake_secret';

-- with the server's secret: not for everyone, since it reveals when and
-- where ids were made; GRANT EXECUTE to roles that may know.  Parallel
-- restricted: parallel workers do not receive the secret.
CREATE FUNCTION randflake_decode(id bigint, OUT ts timestamptz, OUT node integer, OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
REVOKE EXECUTE ON FUNCTION randflake_decode(bigint) FROM PUBLIC;
COMMENT ON FUNCTION randflake_decode(bigint) IS 'time, node and sequence of a Randflake id, decrypted with the server''s secret';
CREATE FUNCTION randflake_decode(id bigint, secret bytea, OUT ts timestamptz, OUT node integer, OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME', 'randflake_decode_key'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_decode(bigint, bytea) IS 'time, node and sequence of a Randflake id, decrypted with the given 16-byte key';

-- the reference codec: base-32 digits 0-9a-v of the unsigned 64 bits
CREATE FUNCTION randflake_encode(bigint) RETURNS text
	AS 'MODULE_PATHNAME', 'randflake_encode_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION randflake_parse(text) RETURNS bigint
	AS 'MODULE_PATHNAME', 'randflake_parse_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

------------------------------------------------------------------------
-- Operations
------------------------------------------------------------------------

CREATE FUNCTION flake_lease_info(OUT generator text, OUT node integer, OUT pid integer,
								 OUT leased_at timestamptz, OUT last_issued timestamptz,
								 OUT issued bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

CREATE VIEW flake_leases AS
	SELECT generator, node, pid, leased_at, last_issued, issued FROM flake_lease_info();
COMMENT ON VIEW flake_leases IS 'nodes leased by backends, with their last issued timestamp and count';

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
	locked		oid[] := '{}';
	prev		oid[];
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
	target := CASE WHEN to_ulid THEN format('%I.ulidflake', ext) ELSE 'bigint' END;

	--
	-- The table and its key
	--
	SELECT c.relname, c.relkind, n.nspname INTO root
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE c.oid = tbl;
	IF NOT FOUND OR root.relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION 'flake_migrate: % is not a table', tbl
			USING ERRCODE = 'wrong_object_type';
	END IF;

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
				WHERE x.indrelid = tbl AND x.indisunique AND x.indnkeyatts = 1
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
	-- check and lock them, the table first and the others in oid order, and
	-- look again until no new one appears.  The locks come before the checks
	-- that read data, so that nothing changes between check and change.
	--
	touched := ARRAY[tbl::oid];
	LOOP
		prev := touched;

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

		any_change := true = ANY (cl_change);
		IF rekey OR any_change THEN
			SELECT array_agg(u.relid ORDER BY u.relid <> tbl, u.relid) INTO touched
			FROM (SELECT DISTINCT x.relid FROM unnest(cl_rel) x(relid)) u;
		ELSE
			touched := ARRAY[tbl::oid];
		END IF;

		-- each table: owned by the caller, and not part of a hierarchy
		FOREACH t IN ARRAY touched LOOP
			CONTINUE WHEN t = ANY (locked);
			SELECT c.oid, c.relkind, c.relispartition, c.relowner INTO r
			FROM pg_class c WHERE c.oid = t;
			IF NOT pg_has_role(r.relowner, 'USAGE') THEN
				RAISE EXCEPTION 'flake_migrate: must be owner of table %', t::regclass
					USING ERRCODE = 'insufficient_privilege',
						  DETAIL = format('%s; only its owner %s (or a member of that role) can.',
										  CASE WHEN t = tbl THEN format('flake_migrate alters %s', tbl)
										  ELSE format('%s references %s.%I, so flake_migrate alters it too', t::regclass, tbl, col) END,
										  r.relowner::regrole),
						  HINT = 'Run flake_migrate as the owner of the tables.';
			END IF;
			IF r.relkind = 'p' OR r.relispartition
			   OR EXISTS (SELECT FROM pg_inherits h WHERE h.inhrelid = t OR h.inhparent = t) THEN
				SELECT string_agg(x, ', ') INTO list FROM (
					SELECT format('%s is a partition of %s', h.inhrelid::regclass, h.inhparent::regclass) AS x
					FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
					WHERE (h.inhrelid = t OR h.inhparent = t) AND c.relispartition
					UNION ALL
					SELECT format('%s inherits from %s', h.inhrelid::regclass, h.inhparent::regclass)
					FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
					WHERE (h.inhrelid = t OR h.inhparent = t) AND NOT c.relispartition
					ORDER BY 1) s;
				RAISE EXCEPTION 'flake_migrate: table % is part of a partitioned or inheritance hierarchy', t::regclass
					USING ERRCODE = 'feature_not_supported',
						  DETAIL = coalesce(list || '.', format('%s is partitioned.', t::regclass)),
						  HINT = 'flake_migrate changes single tables; migrate the key of a partitioned table by hand.';
			END IF;
			IF NOT dry_run THEN
				EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', t::regclass);
				locked := locked || t;
			END IF;
			p_action := p_action || 'lock'::text;
			p_detail := p_detail || format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', t::regclass);
			p_run := p_run || false;
			p_count := p_count || false;
		END LOOP;

		EXIT WHEN dry_run OR touched <@ prev AND prev <@ touched;
	END LOOP;

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
			  AND NOT (d.classid = 'pg_class'::regclass AND c.relkind IN ('i', 'I'))
			  AND NOT (d.classid = 'pg_class'::regclass AND d.objid = ANY (seqs || coalesce(idseq, 0)))
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
	IF generator <> 'flake_next' AND to_regprocedure(format('%I.%I()', ext, generator)) IS NULL THEN
		RAISE EXCEPTION 'flake_migrate: function %() does not exist', generator
			USING ERRCODE = 'undefined_function',
				  HINT = 'This build of flake does not provide that generator.';
	END IF;
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
				IF NOT pg_has_role((SELECT s.relowner FROM pg_class s WHERE s.oid = t), 'USAGE') THEN
					RAISE EXCEPTION 'flake_migrate: must be owner of sequence %', t::regclass
						USING ERRCODE = 'insufficient_privilege',
							  DETAIL = format('%s.%I owns the sequence, which is dropped with the migration.', tbl, col),
							  HINT = 'Run flake_migrate as the owner of the sequence.';
				END IF;
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
			EXECUTE detail;
			IF p_count[i] THEN
				GET DIAGNOSTICS cnt = ROW_COUNT;
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
