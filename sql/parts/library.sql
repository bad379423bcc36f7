------------------------------------------------------------------------
-- First, the library this server runs: this version's or a later one.
-- After a package upgrade a server runs the library it loaded at start
-- until it restarts, and the script would fail on a C function that
-- library lacks ("could not find function"), without saying why.  make
-- puts the script's version in place of @FLAKE_VERSION@.  The function
-- that tells is created for this check alone, and dropped.
------------------------------------------------------------------------

DO $$
DECLARE
	required CONSTANT pg_catalog.text := '@FLAKE_VERSION@';
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

