------------------------------------------------------------------------
-- flake 1.0 to 1.1
--
-- The migration functions are replaced whole: the old ones are dropped
-- here and sql/parts/migrate.sql, appended by make, creates the new ones.
------------------------------------------------------------------------

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean);

-- 1.1 describes every object: those of 1.0 that had no comment get the
-- one sql/parts/flake.sql gives them
COMMENT ON FUNCTION ulidflake_in(cstring) IS 'input of a ulidflake: 13 Crockford Base32 characters';
COMMENT ON FUNCTION ulidflake_out(ulidflake) IS 'output of a ulidflake: 13 Crockford Base32 characters';
COMMENT ON FUNCTION ulidflake_recv(internal) IS 'binary input of a ulidflake, as an int8; negative values are refused';
COMMENT ON FUNCTION ulidflake_send(ulidflake) IS 'binary output of a ulidflake, as an int8';
COMMENT ON FUNCTION ulidflake(bigint) IS 'the ulidflake with the value of a non-negative bigint';
COMMENT ON CAST (bigint AS ulidflake) IS 'explicit: the ulidflake with the value of a non-negative bigint';
COMMENT ON CAST (ulidflake AS bigint) IS 'explicit: the value of a ulidflake as a bigint';
COMMENT ON FUNCTION ulidflake_eq(ulidflake, ulidflake) IS 'implementation of = operator';
COMMENT ON FUNCTION ulidflake_ne(ulidflake, ulidflake) IS 'implementation of <> operator';
COMMENT ON FUNCTION ulidflake_lt(ulidflake, ulidflake) IS 'implementation of < operator';
COMMENT ON FUNCTION ulidflake_le(ulidflake, ulidflake) IS 'implementation of <= operator';
COMMENT ON FUNCTION ulidflake_gt(ulidflake, ulidflake) IS 'implementation of > operator';
COMMENT ON FUNCTION ulidflake_ge(ulidflake, ulidflake) IS 'implementation of >= operator';
COMMENT ON FUNCTION ulidflake_cmp(ulidflake, ulidflake) IS 'B-tree comparison: less-equal-greater';
COMMENT ON FUNCTION ulidflake_sortsupport(internal) IS 'B-tree sort support';
COMMENT ON FUNCTION ulidflake_hash(ulidflake) IS 'hash of a ulidflake';
COMMENT ON FUNCTION ulidflake_hash_extended(ulidflake, bigint) IS 'hash of a ulidflake with a 64-bit seed';
COMMENT ON OPERATOR = (ulidflake, ulidflake) IS 'equal';
COMMENT ON OPERATOR <> (ulidflake, ulidflake) IS 'not equal';
COMMENT ON OPERATOR < (ulidflake, ulidflake) IS 'less than';
COMMENT ON OPERATOR <= (ulidflake, ulidflake) IS 'less than or equal';
COMMENT ON OPERATOR > (ulidflake, ulidflake) IS 'greater than';
COMMENT ON OPERATOR >= (ulidflake, ulidflake) IS 'greater than or equal';
COMMENT ON OPERATOR CLASS ulidflake_ops USING btree IS 'default B-tree ordering of ulidflake, which is time order';
COMMENT ON OPERATOR FAMILY ulidflake_ops USING btree IS 'B-tree ordering of ulidflake, which is time order';
COMMENT ON OPERATOR CLASS ulidflake_ops USING hash IS 'default hash equality of ulidflake';
COMMENT ON OPERATOR FAMILY ulidflake_ops USING hash IS 'hash equality of ulidflake';
COMMENT ON OPERATOR CLASS ulidflake_minmax_ops USING brin IS 'default BRIN minmax summaries of ulidflake, for tables filled in time order';
COMMENT ON OPERATOR FAMILY ulidflake_minmax_ops USING brin IS 'BRIN minmax summaries of ulidflake';
COMMENT ON FUNCTION ulidflake_smaller(ulidflake, ulidflake) IS 'smaller of two';
COMMENT ON FUNCTION ulidflake_larger(ulidflake, ulidflake) IS 'larger of two';
COMMENT ON AGGREGATE min(ulidflake) IS 'minimum value of all ulidflake input values';
COMMENT ON AGGREGATE max(ulidflake) IS 'maximum value of all ulidflake input values';
COMMENT ON FUNCTION ulidflake_next() IS 'next Ulid-Flake id, stand-alone form: 20 bits of entropy';
COMMENT ON FUNCTION ulidflake_next(integer) IS 'next Ulid-Flake id, scalable form: 15 bits of entropy, then the sid (0-31)';
COMMENT ON FUNCTION flake_timestamp(ulidflake) IS 'the millisecond a ulidflake was generated';
COMMENT ON FUNCTION ulidflake_entropy(ulidflake) IS 'the low 20 bits of a ulidflake: its entropy (and sid, in the scalable form)';
COMMENT ON FUNCTION ulidflake_sid(ulidflake) IS 'the low 5 bits of a ulidflake: the sid of the scalable form';
COMMENT ON FUNCTION ulidflake_from_timestamp(timestamptz) IS 'the smallest ulidflake of a millisecond, for range predicates';
COMMENT ON FUNCTION flake_timestamp(bigint) IS 'the millisecond of a Snowflake id';
COMMENT ON FUNCTION flake_node(bigint) IS 'the node of a Snowflake id';
COMMENT ON FUNCTION flake_sequence(bigint) IS 'the sequence number of a Snowflake id within its millisecond and node';
COMMENT ON FUNCTION flake_decode(bigint) IS 'time, node and sequence of a Snowflake id';
COMMENT ON FUNCTION flake_from_timestamp(timestamptz) IS 'the smallest Snowflake id of a millisecond, for range predicates';
COMMENT ON FUNCTION randflake_encode(bigint) IS 'text form of a Randflake id: base-32 digits 0-9a-v of its unsigned 64 bits';
COMMENT ON FUNCTION randflake_parse(text) IS 'the Randflake id of its text form, the inverse of randflake_encode()';

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

-- flake_leases: how many backends share each node
DROP VIEW flake_leases;
DROP FUNCTION flake_lease_info();
CREATE FUNCTION flake_lease_info(OUT generator text, OUT node integer, OUT pid integer,
								 OUT leased_at timestamptz, OUT last_issued timestamptz,
								 OUT issued bigint, OUT holders integer)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_lease_info() IS 'nodes held by backends: the rows of the flake_leases view';
CREATE VIEW flake_leases AS
	SELECT generator, node, pid, leased_at, last_issued, issued, holders FROM flake_lease_info();
COMMENT ON VIEW flake_leases IS 'nodes held by backends, with their last issued timestamp, count and number of holders';

-- a trigger for replicated tables: refuse rows whose ids were made on this
-- server's own nodes (their origin's node range overlaps this server's)
CREATE FUNCTION flake_guard() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_guard() IS 'trigger: refuse replicated rows whose ids were made on this server''s own nodes; arguments: the key columns';
