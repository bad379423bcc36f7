--
-- ulidflake: text and binary forms, casts, accessors, generation
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS flake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- Reference vectors: int64 <-> base32 <-> fields
CREATE TABLE vec (i bigint, b32 text, unix_ms bigint, entropy20 int, entropy15 int, sid int);
\copy vec FROM 'test/data/ulidflake.tsv' WITH (FORMAT csv, DELIMITER E'\t', HEADER true)
SELECT count(*) AS vectors FROM vec;

-- every row must round-trip; a row listed here is a failure
SELECT i, b32 FROM vec
WHERE b32::ulidflake::bigint <> i
   OR lower(b32)::ulidflake::bigint <> i
   OR b32::ulidflake::text <> b32
   OR lower(b32)::ulidflake::text <> b32
   OR i::ulidflake::text <> b32
   OR i::ulidflake <> b32::ulidflake
   OR flake_timestamp(b32::ulidflake) <> 'epoch'::timestamptz + unix_ms * interval '1 millisecond'
   OR ulidflake_entropy(b32::ulidflake) <> entropy20
   OR ulidflake_entropy(b32::ulidflake) >> 5 <> entropy15
   OR ulidflake_sid(b32::ulidflake) <> sid
   OR ulidflake_from_timestamp(flake_timestamp(b32::ulidflake))::bigint <> i >> 20 << 20;

-- Inputs the references reject, with the SQLSTATE flake must raise.
-- The first column is a JSON string literal; QUOTE \x01 keeps it verbatim.
CREATE TABLE inv (input_json text, expected text, note text);
\copy inv FROM 'test/data/ulidflake_invalid.tsv' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
CREATE FUNCTION sqlstate_of(input text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM input::ulidflake;
	RETURN 'OK';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE;
END $$;
SELECT count(*) AS invalid_vectors, count(*) FILTER (WHERE expected <> 'OK') AS rejected FROM inv;
SELECT input_json, expected, sqlstate_of(input_json::json #>> '{}') AS got, note
FROM inv WHERE sqlstate_of(input_json::json #>> '{}') <> expected;

-- the messages quote the input and say what is wrong
SELECT 'O0CMXB6TAK4SA'::ulidflake;
SELECT '00CMXB6TAK4S'::ulidflake;
SELECT '8000000000000'::ulidflake;
SELECT (-1)::bigint::ulidflake;
SELECT '0000000000000'::ulidflake, '7zzzzzzzzzzzz'::ulidflake;

-- no implicit casts with bigint: undefined_function (the detail and hint
-- change with the major)
\set VERBOSITY sqlstate
SELECT '00CMXB6TAK4SA'::ulidflake = 14246757444195114;
\set VERBOSITY default
SELECT pg_typeof('00CMXB6TAK4SA'::ulidflake::bigint);

-- a quoted literal is a ulidflake where overloads for ulidflake and bigint
-- meet (the type is in the string category); a number stays a bigint
SELECT flake_timestamp('00CMXB6TAK4SA') AT TIME ZONE 'UTC' AS ulidflake_literal,
       flake_timestamp('00cmxb6tak4sa') = flake_timestamp('00CMXB6TAK4SA'::ulidflake) AS same;
SELECT flake_timestamp(175928847299117063) AT TIME ZONE 'UTC' AS bigint_number;
-- an id as decimal text (untyped, as drivers send strings) reads as the
-- bigint (1.5); 13 characters stay a ulidflake's
SELECT flake_timestamp('175928847299117063') = flake_timestamp(175928847299117063) AS decimal_text,
       flake_timestamp('0000000000001') = flake_timestamp('0000000000001'::ulidflake) AS thirteen_digits;
-- nothing else changes: no implicit cast to or from text, an unknown
-- literal beside a ulidflake is a ulidflake, text is the category's
-- preferred type
\set VERBOSITY sqlstate
SELECT '00CMXB6TAK4SA'::ulidflake = '00CMXB6TAK4SA'::text;
SELECT CASE WHEN true THEN '00CMXB6TAK4SA'::ulidflake ELSE 'x'::text END;
\set VERBOSITY default
SELECT pg_typeof(u) FROM (SELECT '00CMXB6TAK4SA'::ulidflake AS u UNION ALL SELECT '00CMXB6TAK4SB') s LIMIT 1;
SELECT pg_typeof('a' || '00CMXB6TAK4SA'::ulidflake), pg_typeof(upper('00CMXB6TAK4SA'));

-- ulidflake_from_timestamp: smallest value of the millisecond
SELECT ulidflake_from_timestamp('2024-01-01 00:00:00+00');
SELECT ulidflake_from_timestamp('2024-01-01 00:00:00.0019+00') AS two_ms_floor,
       ulidflake_from_timestamp('2024-01-01 00:00:00.0019+00')::bigint >> 20 AS ms;
SELECT ulidflake_from_timestamp('2302-09-27 15:10:22.207+00');
SELECT ulidflake_from_timestamp('2302-09-27 15:10:22.208+00');
SELECT ulidflake_from_timestamp('2023-12-31 23:59:59.999+00');
SELECT ulidflake_from_timestamp('infinity');
SELECT ulidflake_from_timestamp('-infinity');
-- ulidflake_upper_bound: the largest value of the millisecond
SELECT ulidflake_upper_bound('2024-01-01 00:00:00.0019+00')::bigint + 1 =
       ulidflake_from_timestamp('2024-01-01 00:00:00.002+00')::bigint AS adjacent;
SELECT ulidflake_upper_bound('2302-09-27 15:10:22.207+00')::bigint AS last;
SELECT ulidflake_upper_bound('2302-09-27 15:10:22.208+00');

-- ordering by value equals ordering by text
WITH v AS (SELECT b32::ulidflake AS u FROM vec
           UNION ALL SELECT ulidflake_next() FROM generate_series(1, 1000)
           UNION ALL SELECT ulidflake_next(g % 32) FROM generate_series(1, 1000) g)
SELECT array_agg(u ORDER BY u) = array_agg(u ORDER BY u::text COLLATE "C") AS same_order,
       array_agg(u ORDER BY u) = array_agg(u ORDER BY u::bigint) AS same_as_bigint
FROM v;

-- min and max
SELECT min(b32::ulidflake), max(b32::ulidflake) FROM vec;

--
-- Generation
--
-- 200k values in one statement are strictly increasing; within one
-- millisecond the entropy grows by 1 to 255
CREATE TABLE gen AS
SELECT n, ulidflake_next() AS v FROM generate_series(1, 200000) n;
SELECT count(*) AS generated,
       count(*) FILTER (WHERE v <= prev) AS not_increasing,
       count(DISTINCT v) AS distinct_values,
       min(v::bigint - prev::bigint) FILTER (WHERE same_ms) >= 1 AS step_min_ok,
       max(v::bigint - prev::bigint) FILTER (WHERE same_ms) <= 255 AS step_max_ok
FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev,
             v::bigint >> 20 = lag(v::bigint >> 20) OVER (ORDER BY n) AS same_ms
      FROM gen) s;

-- generated timestamps are the wall clock
SELECT abs(extract(epoch FROM flake_timestamp(ulidflake_next()) - clock_timestamp())) < 5 AS near_now;

-- the scalable form carries its sid and is strictly increasing too
CREATE TABLE gen_sid AS
SELECT n, n % 32 AS sid, ulidflake_next(n % 32) AS v FROM generate_series(1, 100000) n;
SELECT count(*) FILTER (WHERE v <= prev) AS not_increasing,
       count(*) FILTER (WHERE ulidflake_sid(v) <> sid) AS wrong_sid,
       count(DISTINCT v) AS distinct_values
FROM (SELECT v, sid, lag(v) OVER (ORDER BY n) AS prev FROM gen_sid) s;

-- scalable and stand-alone values from one server never collide
SELECT count(*) AS collisions FROM gen_sid JOIN gen USING (v);

SELECT ulidflake_next(32);
SELECT ulidflake_next(-1);
SELECT ulidflake_next(NULL) IS NULL AS strict;

-- generators are volatile and parallel unsafe; the rest immutable and safe
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
       p.provolatile, p.proparallel, p.proisstrict
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'flake')
  AND (p.proname LIKE 'ulidflake%' OR 'ulidflake'::regtype IN (p.prorettype, p.proargtypes[0]))
ORDER BY 1, 2;
