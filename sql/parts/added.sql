
------------------------------------------------------------------------
-- The objects new in this version (1.4)
--
-- Appended by make to the install script, after the install parts, and
-- to the upgrade script, after the upgrade part: each is written once,
-- so that both create it alike.  When the next version opens, each
-- section moves into the install part it names, and this file keeps only
-- this header.
------------------------------------------------------------------------

-- flake.sql, the ulidflake accessors and the Snowflake decoders: the
-- upper bounds of a millisecond
CREATE FUNCTION ulidflake_upper_bound(timestamptz) RETURNS ulidflake
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ulidflake_upper_bound(timestamptz) IS
	'the largest ulidflake of a millisecond, for range predicates';
-- STABLE as the decoders: the layout is the server's (docs/partitioning.md)
CREATE FUNCTION flake_upper_bound(timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flake_upper_bound(timestamptz) IS
	'the largest Snowflake id of a millisecond, for range predicates';

-- flake.sql, Operations: the horizon (docs/consumers.md).  Below it,
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

-- flake.sql, after flake_origin: ids that arrive from another server
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
	'take over the servers flake_origin names from the ids this database holds, '
	'with no access to them: after restoring a dump of a running server';

-- state.sql, after flake_take_over(): flake_repair_state() with the
-- arguments ahead_of_clock and again, whose defaults keep 1.3's calls
-- (the upgrade part drops 1.3's one-argument form)
CREATE FUNCTION flake_repair_state(newest timestamptz, ahead_of_clock boolean DEFAULT false,
								   again boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_repair_state(timestamptz, boolean, boolean) IS
	'replace a damaged flake.hwm or flake.rekeys, taking newest as the time no id of this '
	'server, nor any row a rekey gave an id, is later than; ahead_of_clock: newest may be '
	'more than a day ahead of the clock; again: correct a repair made with a wrong time';
