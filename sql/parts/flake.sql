
------------------------------------------------------------------------
-- ulidflake: a non-negative int8 with a Crockford Base32 text form.
-- Comparison, hashing and aggregates reuse the built-in int8 functions.
------------------------------------------------------------------------

CREATE TYPE ulidflake;

CREATE FUNCTION ulidflake_in(cstring) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_in(cstring) IS 'input of a ulidflake: 13 Crockford Base32 characters';
CREATE FUNCTION ulidflake_out(ulidflake) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_out(ulidflake) IS
	'output of a ulidflake: 13 Crockford Base32 characters';
CREATE FUNCTION ulidflake_recv(internal) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_recv(internal) IS
	'binary input of a ulidflake, as an int8; negative values are refused';
CREATE FUNCTION ulidflake_send(ulidflake) RETURNS bytea
	AS 'int8send' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_send(ulidflake) IS 'binary output of a ulidflake, as an int8';

-- In the string category, as its text form is: a quoted literal where
-- overloads for ulidflake and bigint meet (flake_timestamp('02N1X2KCSDK1S'))
-- is taken as a ulidflake instead of being ambiguous; where a text
-- overload is there too (flake_timestamp(text), 1.5), as text, the
-- category's preferred type, which reads 13 characters as a ulidflake.
-- No implicit cast comes with it.
CREATE TYPE ulidflake (
	INPUT = ulidflake_in,
	OUTPUT = ulidflake_out,
	RECEIVE = ulidflake_recv,
	SEND = ulidflake_send,
	INTERNALLENGTH = 8,
	PASSEDBYVALUE,
	ALIGNMENT = double,
	STORAGE = plain,
	CATEGORY = 'S'
);

COMMENT ON TYPE ulidflake IS
	'Ulid-Flake id: 43-bit milliseconds since 2024 and 20 bits of entropy, '
	'as 13 Crockford Base32 characters';

-- casts: explicit only, so that ids never mix with numbers by accident
CREATE FUNCTION ulidflake(bigint) RETURNS ulidflake
	AS 'MODULE_PATHNAME', 'ulidflake_from_bigint'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake(bigint) IS 'the ulidflake with the value of a non-negative bigint';
CREATE CAST (bigint AS ulidflake) WITH FUNCTION ulidflake(bigint);
COMMENT ON CAST (bigint AS ulidflake) IS
	'explicit: the ulidflake with the value of a non-negative bigint';
CREATE CAST (ulidflake AS bigint) WITHOUT FUNCTION;
COMMENT ON CAST (ulidflake AS bigint) IS 'explicit: the value of a ulidflake as a bigint';

-- comparison
CREATE FUNCTION ulidflake_eq(ulidflake, ulidflake) RETURNS boolean
	AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_eq(ulidflake, ulidflake) IS 'implementation of = operator';
CREATE FUNCTION ulidflake_ne(ulidflake, ulidflake) RETURNS boolean
	AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_ne(ulidflake, ulidflake) IS 'implementation of <> operator';
CREATE FUNCTION ulidflake_lt(ulidflake, ulidflake) RETURNS boolean
	AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_lt(ulidflake, ulidflake) IS 'implementation of < operator';
CREATE FUNCTION ulidflake_le(ulidflake, ulidflake) RETURNS boolean
	AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_le(ulidflake, ulidflake) IS 'implementation of <= operator';
CREATE FUNCTION ulidflake_gt(ulidflake, ulidflake) RETURNS boolean
	AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_gt(ulidflake, ulidflake) IS 'implementation of > operator';
CREATE FUNCTION ulidflake_ge(ulidflake, ulidflake) RETURNS boolean
	AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_ge(ulidflake, ulidflake) IS 'implementation of >= operator';
CREATE FUNCTION ulidflake_cmp(ulidflake, ulidflake) RETURNS integer
	AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_cmp(ulidflake, ulidflake) IS 'B-tree comparison: less-equal-greater';
CREATE FUNCTION ulidflake_sortsupport(internal) RETURNS void
	AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_sortsupport(internal) IS 'B-tree sort support';
CREATE FUNCTION ulidflake_hash(ulidflake) RETURNS integer
	AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_hash(ulidflake) IS 'hash of a ulidflake';
CREATE FUNCTION ulidflake_hash_extended(ulidflake, bigint) RETURNS bigint
	AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ulidflake_hash_extended(ulidflake, bigint) IS
	'hash of a ulidflake with a 64-bit seed';

CREATE OPERATOR = (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_eq,
	COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
	HASHES, MERGES
);
COMMENT ON OPERATOR = (ulidflake, ulidflake) IS 'equal';
CREATE OPERATOR <> (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_ne,
	COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
COMMENT ON OPERATOR <> (ulidflake, ulidflake) IS 'not equal';
CREATE OPERATOR < (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_lt,
	COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
COMMENT ON OPERATOR < (ulidflake, ulidflake) IS 'less than';
CREATE OPERATOR <= (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_le,
	COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
COMMENT ON OPERATOR <= (ulidflake, ulidflake) IS 'less than or equal';
CREATE OPERATOR > (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_gt,
	COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
COMMENT ON OPERATOR > (ulidflake, ulidflake) IS 'greater than';
CREATE OPERATOR >= (
	LEFTARG = ulidflake, RIGHTARG = ulidflake, PROCEDURE = ulidflake_ge,
	COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
COMMENT ON OPERATOR >= (ulidflake, ulidflake) IS 'greater than or equal';

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
COMMENT ON OPERATOR CLASS ulidflake_ops USING btree IS
	'default B-tree ordering of ulidflake, which is time order';
COMMENT ON OPERATOR FAMILY ulidflake_ops USING btree IS
	'B-tree ordering of ulidflake, which is time order';

CREATE OPERATOR CLASS ulidflake_ops
	DEFAULT FOR TYPE ulidflake USING hash AS
		OPERATOR 1 =,
		FUNCTION 1 ulidflake_hash(ulidflake),
		FUNCTION 2 ulidflake_hash_extended(ulidflake, bigint);
COMMENT ON OPERATOR CLASS ulidflake_ops USING hash IS 'default hash equality of ulidflake';
COMMENT ON OPERATOR FAMILY ulidflake_ops USING hash IS 'hash equality of ulidflake';

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
COMMENT ON OPERATOR CLASS ulidflake_minmax_ops USING brin IS
	'default BRIN minmax summaries of ulidflake, for tables filled in time order';
COMMENT ON OPERATOR FAMILY ulidflake_minmax_ops USING brin IS 'BRIN minmax summaries of ulidflake';

CREATE FUNCTION ulidflake_smaller(ulidflake, ulidflake) RETURNS ulidflake
	AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_smaller(ulidflake, ulidflake) IS 'smaller of two';
CREATE FUNCTION ulidflake_larger(ulidflake, ulidflake) RETURNS ulidflake
	AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_larger(ulidflake, ulidflake) IS 'larger of two';
CREATE AGGREGATE min(ulidflake) (
	SFUNC = ulidflake_smaller, STYPE = ulidflake,
	COMBINEFUNC = ulidflake_smaller, SORTOP = <, PARALLEL = SAFE
);
COMMENT ON AGGREGATE min(ulidflake) IS 'minimum value of all ulidflake input values';
CREATE AGGREGATE max(ulidflake) (
	SFUNC = ulidflake_larger, STYPE = ulidflake,
	COMBINEFUNC = ulidflake_larger, SORTOP = >, PARALLEL = SAFE
);
COMMENT ON AGGREGATE max(ulidflake) IS 'maximum value of all ulidflake input values';

-- generators: strictly increasing on one server when preloaded
CREATE FUNCTION ulidflake_next() RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION ulidflake_next() IS 'next Ulid-Flake id, stand-alone form: 20 bits of entropy';
CREATE FUNCTION ulidflake_next(sid integer) RETURNS ulidflake
	AS 'MODULE_PATHNAME', 'ulidflake_next_sid'
	LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION ulidflake_next(integer) IS
	'next Ulid-Flake id, scalable form: 15 bits of entropy, then the sid (0-31)';

-- accessors
CREATE FUNCTION flake_timestamp(ulidflake) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'ulidflake_timestamp'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_timestamp(ulidflake) IS 'the millisecond a ulidflake was generated';
CREATE FUNCTION ulidflake_entropy(ulidflake) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_entropy(ulidflake) IS
	'the low 20 bits of a ulidflake: its entropy (and sid, in the scalable form)';
CREATE FUNCTION ulidflake_sid(ulidflake) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_sid(ulidflake) IS
	'the low 5 bits of a ulidflake: the sid of the scalable form';
CREATE FUNCTION ulidflake_from_timestamp(timestamptz) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_from_timestamp(timestamptz) IS
	'the smallest ulidflake of a millisecond, for range predicates';

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
COMMENT ON FUNCTION flake_node() IS
	'the node this backend leased, or NULL before its first flake_next()';

-- decoders read flake.epoch, flake.node_bits and flake.sequence_bits
CREATE FUNCTION flake_timestamp(bigint) RETURNS timestamptz
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_timestamp(bigint) IS 'the millisecond of a Snowflake id';
CREATE FUNCTION flake_node(bigint) RETURNS integer
	AS 'MODULE_PATHNAME', 'flake_node_of' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_node(bigint) IS 'the node of a Snowflake id';
CREATE FUNCTION flake_sequence(bigint) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_sequence(bigint) IS
	'the sequence number of a Snowflake id within its millisecond and node';
CREATE FUNCTION flake_decode(id bigint, OUT ts timestamptz, OUT node integer, OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_decode(bigint) IS 'time, node and sequence of a Snowflake id';
CREATE FUNCTION flake_from_timestamp(timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_from_timestamp(timestamptz) IS
	'the smallest Snowflake id of a millisecond, for range predicates';

-- the upper bounds of a millisecond
CREATE FUNCTION ulidflake_upper_bound(timestamptz) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_upper_bound(timestamptz) IS
	'the largest ulidflake of a millisecond, for range predicates';
-- STABLE as the decoders: the layout is the server's (docs/partitioning.md)
CREATE FUNCTION flake_upper_bound(timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_upper_bound(timestamptz) IS
	'the largest Snowflake id of a millisecond, for range predicates';

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
CREATE FUNCTION randflake_decode(id bigint, OUT ts timestamptz, OUT node integer,
								 OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
REVOKE EXECUTE ON FUNCTION randflake_decode(bigint) FROM PUBLIC;
COMMENT ON FUNCTION randflake_decode(bigint) IS
	'time, node and sequence of a Randflake id, decrypted with the server''s secret';
-- with a key given: STABLE, not IMMUTABLE, although the result depends on
-- the arguments alone, so that no index, generated column or partition key
-- can keep a key written in the expression: pg_indexes and pg_dump
-- --schema-only show such expressions to every role.
CREATE FUNCTION randflake_decode(id bigint, secret bytea, OUT ts timestamptz, OUT node integer,
								 OUT sequence integer)
	RETURNS record
	AS 'MODULE_PATHNAME', 'randflake_decode_key'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_decode(bigint, bytea) IS
	'time, node and sequence of a Randflake id, decrypted with the given 16-byte key';

-- the fingerprint of a key (first 4 bytes of HMAC-SHA256(key, 'flake
-- randflake key fingerprint'), hex), as the server log names keys: of the
-- server's secret for roles that may know it, of any key for everyone
CREATE FUNCTION randflake_key_fingerprint() RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
REVOKE EXECUTE ON FUNCTION randflake_key_fingerprint() FROM PUBLIC;
COMMENT ON FUNCTION randflake_key_fingerprint() IS
	'fingerprint of flake.randflake_secret, as the server log names it; NULL when unset';
CREATE FUNCTION randflake_key_fingerprint(secret bytea) RETURNS text
	AS 'MODULE_PATHNAME', 'randflake_key_fingerprint_of'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_key_fingerprint(bytea) IS
	'fingerprint of a 16-byte randflake key, as the server log names keys';

-- the reference codec: base-32 digits 0-9a-v of the unsigned 64 bits
CREATE FUNCTION randflake_encode(bigint) RETURNS text
	AS 'MODULE_PATHNAME', 'randflake_encode_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_encode(bigint) IS
	'text form of a Randflake id: base-32 digits 0-9a-v of its unsigned 64 bits';
CREATE FUNCTION randflake_parse(text) RETURNS bigint
	AS 'MODULE_PATHNAME', 'randflake_parse_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_parse(text) IS
	'the Randflake id of its text form, the inverse of randflake_encode()';

------------------------------------------------------------------------
-- Operations
------------------------------------------------------------------------

CREATE FUNCTION flake_lease_info(OUT generator text, OUT node integer, OUT pid integer,
								 OUT leased_at timestamptz, OUT last_issued timestamptz,
								 OUT issued bigint, OUT holders integer)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_lease_info() IS
	'nodes held by backends: the rows of the flake_leases view';

CREATE VIEW flake_leases AS
	SELECT generator, node, pid, leased_at, last_issued, issued, holders FROM flake_lease_info();
COMMENT ON VIEW flake_leases IS
	'nodes held by backends, with their last issued timestamp, count and number of holders';
COMMENT ON COLUMN flake_leases.generator IS
	'the family whose node this is: flake_next or randflake_next';
COMMENT ON COLUMN flake_leases.node IS 'the node number';
COMMENT ON COLUMN flake_leases.pid IS
	'the backend that leased the node while it was free; NULL once it has exited';
COMMENT ON COLUMN flake_leases.leased_at IS 'when that backend leased the node';
COMMENT ON COLUMN flake_leases.last_issued IS 'the time of the last id issued on the node';
COMMENT ON COLUMN flake_leases.issued IS
	'ids issued on the node by all its holders since it was leased '
	'(a Randflake holder adds 256 at each reservation)';
COMMENT ON COLUMN flake_leases.holders IS 'the number of backends that share the node';
-- for monitoring roles, as pg_stat_statements' and pg_buffercache's views:
-- the counts show how many ids every role's backends make, and the pids
-- which backends; pg_monitor members read it, other roles are refused
-- (granted in privileges.sql)
REVOKE EXECUTE ON FUNCTION flake_lease_info() FROM PUBLIC;

-- the horizon (docs/consumers.md).  Below it,
-- every id that will ever commit is visible to a new snapshot already.
CREATE FUNCTION flake_horizon() RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_horizon() IS
	'an id below which every flake_next() id that will commit is visible already';
CREATE FUNCTION ulidflake_horizon() RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION ulidflake_horizon() IS
	'a value below which every ulidflake_next() value that will commit is visible already';
CREATE FUNCTION flake_horizon_info(OUT generator text, OUT pid integer,
								   OUT transaction xid, OUT since timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_horizon_info() IS
	'transactions that hold a horizon: the rows of the flake_horizon_holders view';
CREATE VIEW flake_horizon_holders AS
	SELECT h.generator, h.pid, h.transaction, p.gid, h.since
	  FROM flake_horizon_info() h
	  LEFT JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = h.transaction;
COMMENT ON VIEW flake_horizon_holders IS
	'open and prepared transactions that hold a horizon, and from when';
COMMENT ON COLUMN flake_horizon_holders.generator IS
	'the family: flake_next or ulidflake_next';
COMMENT ON COLUMN flake_horizon_holders.pid IS
	'the backend of an open transaction (see pg_stat_activity); NULL for a prepared one';
COMMENT ON COLUMN flake_horizon_holders.transaction IS
	'the transaction id of a prepared transaction; NULL for an open one';
COMMENT ON COLUMN flake_horizon_holders.gid IS 'the prepared transaction''s identifier';
COMMENT ON COLUMN flake_horizon_holders.since IS
	'the horizon stays at or below this time until the transaction ends';
-- for monitoring roles, as flake_lease_info() (granted in privileges.sql)
REVOKE EXECUTE ON FUNCTION flake_horizon_info() FROM PUBLIC;

-- a trigger for replicated tables: refuse rows whose ids were made on this
-- server's own nodes (their origin's node range overlaps this server's)
CREATE FUNCTION flake_guard() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_guard() IS
	'trigger: refuse ids that replication brings new into the table '
	'(inserted, or set by an update) when they were made on this server''s own nodes; '
	'arguments: the key columns';


------------------------------------------------------------------------
-- flake_internal: the helpers of flake_migrate() and of the online
-- migration (sql/parts/migrate/, sql/parts/online/), which users do
-- not call, and the table flake_origin: out of the extension's schema, so
-- that \df flake* lists what users call and applications' schema tools
-- see no table of flake's.  The owners' sessions call the helpers
-- (flake_migrate() is SECURITY INVOKER), hence USAGE for PUBLIC (granted
-- in privileges.sql); CREATE is the extension owner's alone.
------------------------------------------------------------------------

CREATE SCHEMA flake_internal;
COMMENT ON SCHEMA flake_internal IS
	'internal helpers of flake_migrate() and the online migration, and flake_origin; not for direct use';

-- The servers (system identifiers) this database was created on: pg_dump
-- dumps the rows and pg_upgrade keeps the table, so a database carried to
-- another server names the server whose flake.hwm and flake.rekeys (which
-- stay in its data directory) hold the state of the ids in it; flake
-- refuses to generate until the new server has taken them over.  Every
-- role reads it (granted in privileges.sql): pg_dump reads the rows of
-- every role that may dump the database, and they are system identifiers,
-- which pg_control_system() shows every role.  Only the extension's owner
-- writes it.  It is in flake_internal, not in the extension's schema
-- (public by default), so that the schema dumps and introspection of
-- applications' tools (Rails' schema.rb, Django's inspectdb, ...) do not
-- take it for one of the application's tables.
-- taken_over_by (1.5): the server that took over that server's ids in
-- this database (flake_take_over_ids()); such a take-over is the
-- database's, not the server's: it goes with the database, and counts only
-- on that server or one that took over its whole state.
CREATE TABLE flake_internal.flake_origin (system_identifier bigint NOT NULL, taken_over_by bigint);
COMMENT ON TABLE flake_internal.flake_origin IS
	'the servers (system identifiers) whose ids this database may hold: '
	'flake generates only where flake.hwm covers them all';
COMMENT ON COLUMN flake_internal.flake_origin.system_identifier IS
	'the system identifier of a server (pg_control_system()) whose ids this database may hold';
COMMENT ON COLUMN flake_internal.flake_origin.taken_over_by IS
	'the server that took over these ids in this database (flake_take_over_ids()), or NULL';
INSERT INTO flake_internal.flake_origin SELECT system_identifier FROM pg_control_system();
SELECT pg_catalog.pg_extension_config_dump('flake_internal.flake_origin', '');

-- flake_origin under logical replication.  It is a table of the database,
-- so a publication of all tables (or of the schema flake_internal) publishes
-- it, and a subscriber's initial copy and apply would add the publisher's
-- server to the subscriber's flake_origin: that server's ids are the
-- publisher's to guard (its nodes are its own), yet the subscriber would
-- refuse to generate until it took over the publisher's files.  So the rows
-- a subscription's workers write into it are skipped (the table describes
-- the database it is in, and is carried by pg_dump and pg_upgrade as
-- before), and the whole row is its replica identity, so that deleting the
-- row of a server (see docs/upgrading.md) works where a publication publishes
-- deletes.  An upgrade replaces the function, never drops it: the trigger
-- uses it.
CREATE FUNCTION flake_internal.origin_local() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_stat_subscription s WHERE s.pid = pg_backend_pid()) THEN
		RETURN NULL;
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION flake_internal.origin_local() IS
	'trigger of flake_origin: skip the rows a subscription''s workers write, '
	'which are another server''s';
CREATE TRIGGER flake_origin_local BEFORE INSERT OR UPDATE OR DELETE ON flake_internal.flake_origin
	FOR EACH ROW EXECUTE FUNCTION flake_internal.origin_local();
ALTER TABLE flake_internal.flake_origin ENABLE ALWAYS TRIGGER flake_origin_local, REPLICA IDENTITY FULL;

-- ids that arrive from another server
-- (receive.c): a blue/green cutover through logical replication and its
-- rollback, a restore of a running server's dump.  The trigger is added
-- by flake to the tables of this database's subscriptions (after CREATE
-- or ALTER SUBSCRIPTION), enabled for replica sessions only: the
-- subscription's workers.  An upgrade replaces the function, never drops
-- it: the triggers use it.
CREATE FUNCTION flake_internal.raise_marks() RETURNS trigger
	AS 'MODULE_PATHNAME', 'flake_raise_marks' LANGUAGE C;
COMMENT ON FUNCTION flake_internal.raise_marks() IS
	'trigger flake_raise_marks of subscribed tables: raise this server''s high-water marks '
	'above the ids of the columns whose default is a flake generator';
-- superusers only (also checked in C): it reads every table of the
-- database and raises the state every database's ids depend on
CREATE FUNCTION flake_take_over_ids(OUT servers bigint[],
									OUT flake_next_mark timestamptz, OUT ulidflake_mark timestamptz,
									OUT randflake_mark timestamptz, OUT ids bigint)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_take_over_ids() FROM PUBLIC;
COMMENT ON FUNCTION flake_take_over_ids() IS
	'take over, in this database only, the servers flake_origin names from the ids '
	'this database holds, with no access to them: after restoring a dump of a running server';
