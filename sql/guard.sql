--
-- flake_guard(): refuse replicated rows whose ids were made on this
-- server's own nodes.  Rows count as replicated under
-- session_replication_role = replica, as in logical replication's apply
-- workers; this server's flake.nodes and flake.randflake_nodes are the whole
-- node spaces (the defaults), so every id is one of its own.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
\set VERBOSITY default

CREATE TABLE guarded (
	id bigint PRIMARY KEY DEFAULT flake_next(),
	token bigint DEFAULT randflake_next(),
	uid ulidflake DEFAULT ulidflake_next(3),
	note text
);
CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON guarded
	FOR EACH ROW EXECUTE FUNCTION flake_guard('id', 'token:randflake', 'uid:ulidflake=2-3');

-- an ordinary trigger does not fire for replicated rows: it says so
INSERT INTO guarded (note) VALUES ('local');
ALTER TABLE guarded ENABLE REPLICA TRIGGER guard;
INSERT INTO guarded (note) VALUES ('local');
SET session_replication_role = replica;
INSERT INTO guarded (id, token, uid, note)
	VALUES ((1::bigint << 22) | (7 << 12), NULL, NULL, 'flake id from node 7');
RESET session_replication_role;

-- enabled always, it checks replicated rows only: rows written here are
-- this server's own
ALTER TABLE guarded ENABLE ALWAYS TRIGGER guard;
INSERT INTO guarded (note) VALUES ('local');
UPDATE guarded SET note = 'still local';
SELECT count(*) FROM guarded;

-- replicated rows: every family is refused when the id is one of ours
SET session_replication_role = replica;
INSERT INTO guarded (id, token, uid, note)
	VALUES ((2::bigint << 22) | (1015 << 12) | 5, NULL, NULL, 'flake id from node 1015, the last of flake.nodes');
INSERT INTO guarded (id, token, uid, note) VALUES (-5, 12345, NULL, 'randflake id');
INSERT INTO guarded (id, token, uid, note)
	VALUES (-6, NULL, ulidflake((1::bigint << 20) | 2), 'ulidflake sid 2');
UPDATE guarded SET id = (3::bigint << 22) | (9 << 12);
-- an update that keeps the keys passes: it changes a row already here, as
-- two-way replication sends rows made here back (issue 18); one that
-- changes a key is checked on that key
UPDATE guarded SET note = 'updated by replication' RETURNING note;
UPDATE guarded SET token = 12345;
UPDATE guarded SET uid = ulidflake((1::bigint << 20) | 3);
-- ids that are not ours pass: a node outside flake.nodes, another sid, NULL,
-- a negative bigint (no flake id)
INSERT INTO guarded (id, token, uid, note)
	VALUES ((2::bigint << 22) | (1020 << 12), NULL, NULL, 'flake id from node 1020, not ours')
	RETURNING flake_node(id), note;
INSERT INTO guarded (id, token, uid, note)
	VALUES (-7, NULL, ulidflake((1::bigint << 20) | 4), 'ulidflake sid 4')
	RETURNING id, token, uid, ulidflake_sid(uid), note;
INSERT INTO guarded (id, token, uid, note) VALUES (-8, NULL, NULL, 'no keys') RETURNING id, note;
RESET session_replication_role;

-- arguments are checked on every row, local or replicated
CREATE TABLE misguided (id bigint, uid ulidflake, name text);
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard();
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('nosuch');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('name');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('uid');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('uid:ulidflake=5-40');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard BEFORE INSERT ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('id:snowflake');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DROP TRIGGER guard ON misguided;
CREATE TRIGGER guard AFTER DELETE ON misguided
	FOR EACH ROW EXECUTE FUNCTION flake_guard('id');
ALTER TABLE misguided ENABLE ALWAYS TRIGGER guard;
INSERT INTO misguided VALUES (1);
DELETE FROM misguided;
SELECT flake_guard();

-- A hostile session: a type named ulidflake first in search_path (a
-- bigint domain, so that any value passes as one), a serializable
-- transaction, a statement_timeout.  The guard knows flake's own type: the
-- look-alike column is refused as not a ulidflake, and the ids are
-- checked as before.
CREATE SCHEMA lookalike;
CREATE DOMAIN lookalike.ulidflake AS bigint;
CREATE TABLE spoofed (id bigint, uid lookalike.ulidflake);
CREATE TRIGGER guard BEFORE INSERT ON spoofed
	FOR EACH ROW EXECUTE FUNCTION flake_guard('id', 'uid:ulidflake=2');
ALTER TABLE spoofed ENABLE ALWAYS TRIGGER guard;
SET search_path = lookalike, public;
SET default_transaction_isolation = serializable;
SET statement_timeout = '60s';
SET session_replication_role = replica;
INSERT INTO spoofed VALUES ((2::bigint << 22) | (7 << 12), 2);
DROP TRIGGER guard ON spoofed;
CREATE TRIGGER guard BEFORE INSERT ON spoofed
	FOR EACH ROW EXECUTE FUNCTION public.flake_guard('id');
ALTER TABLE spoofed ENABLE ALWAYS TRIGGER guard;
INSERT INTO spoofed VALUES ((2::bigint << 22) | (7 << 12), 2);
RESET session_replication_role;
RESET statement_timeout;
RESET default_transaction_isolation;
RESET search_path;
DROP TABLE spoofed;
DROP SCHEMA lookalike CASCADE;

DROP TABLE guarded, misguided;
