--
-- randflake_next(): Randflake ids, the reference vectors, decoding, text form
--
SET client_min_messages = warning;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE FUNCTION randflake_sqlstate(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	RETURN 'OK';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE;
END $$;

-- The Go reference's outputs: raw fields -> encrypted id -> text -> fields.
CREATE TABLE randflake_vec (secret_hex text, unix_seconds bigint, node int, sequence int,
				  raw_int64 bigint, encrypted_int64 bigint, encoded text,
				  inspect text, note text);
\copy randflake_vec FROM 'test/data/randflake.tsv' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
SELECT count(*) AS vectors, count(DISTINCT secret_hex) AS secrets FROM randflake_vec;

-- decoding with the key gives the fields back, also where the raw value has
-- its top bit set (from 2041-10-31), where the reference's Inspect fails
SELECT count(*) FILTER (WHERE d.ts = to_timestamp(v.unix_seconds)
						  AND d.node = v.node AND d.sequence = v.sequence) AS decoded,
	   count(*) FILTER (WHERE v.raw_int64 < 0) AS with_top_bit,
	   count(*) FILTER (WHERE v.raw_int64 < 0 AND d.ts = to_timestamp(v.unix_seconds)
						  AND d.node = v.node AND d.sequence = v.sequence) AS top_bit_decoded
FROM randflake_vec v, randflake_decode(v.encrypted_int64, decode(v.secret_hex, 'hex')) d;

-- the reference codec both ways
SELECT count(*) FILTER (WHERE randflake_encode(encrypted_int64) = encoded) AS encoded,
	   count(*) FILTER (WHERE randflake_parse(encoded) = encrypted_int64) AS parsed,
	   count(*) FILTER (WHERE randflake_parse(upper(encoded)) = encrypted_int64) AS parsed_upper
FROM randflake_vec;

-- the server's secret is the vectors' key: decode without passing it
SELECT count(*) AS decoded_with_server_secret
FROM randflake_vec v, randflake_decode(v.encrypted_int64) d
WHERE v.secret_hex = 'dffd6021bb2bd5b0af676290809ec3a5'
  AND d.ts = to_timestamp(v.unix_seconds) AND d.node = v.node AND d.sequence = v.sequence;
SELECT * FROM randflake_decode(4594531474933654033);

-- the codec edge cases, including where flake is stricter than the reference
CREATE TABLE randflake_codec (direction text, input text, expected text, note text);
\copy randflake_codec FROM 'test/data/randflake_text.tsv' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
SELECT input, expected, randflake_encode(input::bigint) AS got
FROM randflake_codec WHERE direction = 'encode';
SELECT input, expected,
	   CASE WHEN randflake_sqlstate(format('SELECT randflake_parse(%L)', input::json #>> '{}')) = 'OK'
			THEN randflake_parse(input::json #>> '{}')::text
			ELSE 'ERR:' || randflake_sqlstate(format('SELECT randflake_parse(%L)', input::json #>> '{}'))
	   END AS got
FROM randflake_codec WHERE direction = 'decode';
SELECT randflake_parse('3vgo=e12');
SELECT randflake_parse('');
SELECT randflake_parse('vvvvvvvvvvvvvv');

-- keys other than 16 bytes are refused
SELECT * FROM randflake_decode(1, '\x00'::bytea);
SELECT * FROM randflake_decode(1, decode(repeat('00', 17), 'hex'));
-- key fingerprints, as the server log names keys: HMAC-SHA256(key,
-- 'flake randflake key fingerprint'), first 4 bytes
SELECT randflake_key_fingerprint() AS server_key,
	   randflake_key_fingerprint(decode('dffd6021bb2bd5b0af676290809ec3a5', 'hex')) AS given_key,
	   randflake_key_fingerprint(decode('a1b2c3d4e5f60718293a4b5c6d7e8f90', 'hex')) AS other_key;
SELECT randflake_key_fingerprint('\x00'::bytea);
-- a wrong key gives wrong fields, never an error
SELECT count(*) FILTER (WHERE d.node = v.node AND d.sequence = v.sequence
						  AND d.ts = to_timestamp(v.unix_seconds)) AS matching_with_wrong_key,
	   count(*) AS decoded
FROM randflake_vec v, randflake_decode(v.encrypted_int64, decode('ffeeddccbbaa99887766554433221100', 'hex')) d;

-- generation: unique, on this backend's leased node, near now, and
-- decoding the same with the server's secret and with the key
CREATE TABLE randflake_ids AS SELECT n, randflake_next() AS id FROM generate_series(1, 100000) n;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
	   count(DISTINCT (randflake_decode(id)).node) AS nodes_used,
	   bool_and(abs(extract(epoch FROM (randflake_decode(id)).ts - now())) < 60) AS near_now,
	   bool_and(randflake_decode(id) = randflake_decode(id, decode('dffd6021bb2bd5b0af676290809ec3a5', 'hex'))) AS same_decoding,
	   bool_and(randflake_parse(randflake_encode(id)) = id) AS text_round_trips
FROM randflake_ids;
-- per node, (second, sequence) strictly increase in generation order
SELECT count(*) AS not_increasing
FROM (SELECT d.ts, d.sequence,
			 lag(d.ts) OVER w AS prev_ts, lag(d.sequence) OVER w AS prev_sequence
	  FROM randflake_ids, randflake_decode(id) d
	  WINDOW w AS (PARTITION BY d.node ORDER BY n)) s
WHERE (ts, sequence) <= (prev_ts, prev_sequence);
SELECT generator, pid = pg_backend_pid() AS mine, issued > 0 AS issued
FROM flake_leases WHERE generator = 'randflake_next';

-- the secret is the superuser's to read: a plain role sees nothing
CREATE ROLE regress_randflake_reader;
GRANT SELECT ON randflake_ids TO regress_randflake_reader;
SET ROLE regress_randflake_reader;
-- (insufficient_privilege; the wording changes with the major)
\set VERBOSITY sqlstate
SHOW flake.randflake_secret;
SELECT current_setting('flake.randflake_secret');
\set VERBOSITY default
SELECT count(*) AS visible_in_pg_settings FROM pg_settings WHERE name = 'flake.randflake_secret';
SELECT * FROM randflake_decode((SELECT id FROM randflake_ids LIMIT 1));
SELECT randflake_sqlstate('SELECT randflake_next()') AS generate_as_plain_role;
SELECT randflake_sqlstate('SELECT randflake_key_fingerprint()') AS fingerprint_as_plain_role;
SELECT randflake_key_fingerprint(decode('dffd6021bb2bd5b0af676290809ec3a5', 'hex')) AS fingerprint_of_a_key;
RESET ROLE;
-- EXECUTE can be granted
GRANT EXECUTE ON FUNCTION randflake_decode(bigint) TO regress_randflake_reader;
SET ROLE regress_randflake_reader;
SELECT (randflake_decode(4594531474933654033)).node AS node_with_grant;
RESET ROLE;
DROP OWNED BY regress_randflake_reader;
DROP ROLE regress_randflake_reader;

-- a key written into an index, a generated column or a partition key
-- would be shown to every role (pg_indexes, pg_dump --schema-only):
-- randflake_decode(bigint, bytea) is stable, which they refuse (42P17)
CREATE TABLE keyed (id bigint);
\set VERBOSITY sqlstate
CREATE INDEX ON keyed (((randflake_decode(id, '\x000102030405060708090a0b0c0d0e0f'::bytea)).ts));
ALTER TABLE keyed ADD COLUMN made timestamptz
	GENERATED ALWAYS AS ((randflake_decode(id, '\x000102030405060708090a0b0c0d0e0f'::bytea)).ts) STORED;
CREATE TABLE keyed_parts (id bigint)
	PARTITION BY RANGE (((randflake_decode(id, '\x000102030405060708090a0b0c0d0e0f'::bytea)).ts));
\set VERBOSITY default
DROP TABLE keyed;

-- the superuser reads it; it cannot be set per session
SHOW flake.randflake_secret;
SET flake.randflake_secret = '00112233445566778899aabbccddeeff';
SHOW flake.randflake_nodes;

-- a malformed secret is refused without echoing it
ALTER SYSTEM SET flake.randflake_secret = 'not-a-secret';
ALTER SYSTEM SET flake.randflake_secret = '00112233445566778899aabbccddeefg';
ALTER SYSTEM SET flake.randflake_nodes = '0-131072';
ALTER SYSTEM SET flake.randflake_nodes = '5,3';

-- functions' volatility and parallel safety
SELECT p.oid::regprocedure, provolatile, proparallel
FROM pg_proc p
WHERE proname LIKE 'randflake%'
ORDER BY p.oid::regprocedure::text;
