------------------------------------------------------------------------
-- The state files: taking them over, repairing them
--
-- Appended by make to the install script, after flake.sql (new in 1.3).
------------------------------------------------------------------------

-- flake's state files (flake.hwm, flake.rekeys) live in the data directory,
-- which pg_upgrade and pg_dump do not carry.  flake_take_over() takes over
-- another server's from its data directory (stopped), as the start-up
-- import does, while this server runs: superusers only (also checked in
-- C), since it reads the server's filesystem and raises the state every
-- database's ids depend on.  flake_repair_state() replaces a damaged
-- flake.hwm or flake.rekeys from an operator's statement of the newest
-- time ids were issued at.  Neither is undone by ROLLBACK.
CREATE FUNCTION flake_take_over(data_directory text,
								OUT system_identifier bigint, OUT servers bigint[],
								OUT flake_next_mark timestamptz, OUT ulidflake_mark timestamptz,
								OUT randflake_mark timestamptz, OUT rekey_claims integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_take_over(text) FROM PUBLIC;
COMMENT ON FUNCTION flake_take_over(text) IS
	'take over the flake state (flake.hwm, flake.rekeys) of the server of a data directory, '
	'stopped: after pg_upgrade or a restore into this server';

-- flake_repair_state(): ahead_of_clock and again default to false, as
-- 1.3's one-argument form behaved
CREATE FUNCTION flake_repair_state(newest timestamptz, ahead_of_clock boolean DEFAULT false,
								   again boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) IS
	'replace a damaged flake.hwm or flake.rekeys, taking newest as the time no id of this '
	'server, nor any row a rekey gave an id, is later than; ahead_of_clock: newest may be '
	'more than a day ahead of the clock; again: correct a repair made with a wrong time';
