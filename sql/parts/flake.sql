
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

-- the fingerprint of a key (first 4 bytes of HMAC-SHA256(key, 'flake
-- randflake key fingerprint'), hex), as the server log names keys: of the
-- server's secret for roles that may know it, of any key for everyone
CREATE FUNCTION randflake_key_fingerprint() RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
REVOKE EXECUTE ON FUNCTION randflake_key_fingerprint() FROM PUBLIC;
COMMENT ON FUNCTION randflake_key_fingerprint() IS 'fingerprint of flake.randflake_secret, as the server log names it; NULL when unset';
CREATE FUNCTION randflake_key_fingerprint(secret bytea) RETURNS text
	AS 'MODULE_PATHNAME', 'randflake_key_fingerprint_of'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION randflake_key_fingerprint(bytea) IS 'fingerprint of a 16-byte randflake key, as the server log names keys';

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
								 OUT issued bigint, OUT holders integer)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

CREATE VIEW flake_leases AS
	SELECT generator, node, pid, leased_at, last_issued, issued, holders FROM flake_lease_info();
COMMENT ON VIEW flake_leases IS 'nodes held by backends, with their last issued timestamp, count and number of holders';


-- a trigger for replicated tables: refuse rows whose ids were made on this
-- server's own nodes (their origin's node range overlaps this server's)
CREATE FUNCTION flake_guard() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_guard() IS 'trigger: refuse replicated rows whose ids were made on this server''s own nodes; arguments: the key columns';
