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
