------------------------------------------------------------------------
-- flake 1.0 to 1.1
--
-- The migration functions are replaced whole: the old ones are dropped
-- here and sql/parts/migrate.sql, appended by make, creates the new ones.
------------------------------------------------------------------------

DROP FUNCTION flake_migrate(regclass, name, text, name, boolean);

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
CREATE VIEW flake_leases AS
	SELECT generator, node, pid, leased_at, last_issued, issued, holders FROM flake_lease_info();
COMMENT ON VIEW flake_leases IS 'nodes held by backends, with their last issued timestamp, count and number of holders';

-- a trigger for replicated tables: refuse rows whose ids were made on this
-- server's own nodes (their origin's node range overlaps this server's)
CREATE FUNCTION flake_guard() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION flake_guard() IS 'trigger: refuse replicated rows whose ids were made on this server''s own nodes; arguments: the key columns';
