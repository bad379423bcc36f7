-- The benchmark harness (make bench): server-side timing of queries, bulk
-- inserts, and the report.  bench/cases.sql says what to measure;
-- bench/run loads this file, then the cases, runs them, runs pgbench
-- and the bulk inserts, prints bench.report() and keeps the raw samples.
--
-- A case is a query returning one bigint, the number of rows it went
-- through (count(...) over those rows); "{N}" in its text becomes its row
-- count.  bench.run() runs every case once to warm up, then in rounds: each
-- round times every case once, around EXECUTE inside the server, so neither
-- psql nor the socket is measured, and each round starts with another case
-- so that no case always runs first or after the same neighbour.  A run's
-- cost is its time / its row count.  The time is the backend's CPU time,
-- read from /proc/self/schedstat (Linux), so that other processes on a busy
-- machine count for little; the wall-clock time is kept beside it, and used
-- alone where the CPU time cannot be read.  Ratios are taken within each
-- round and the report shows their median.
--
-- Cases may need what a server does not have: a peer extension (requires,
-- created when it is available) or a newer PostgreSQL (min_version, as
-- server_version_num).  Such a case is recorded in bench.skipped with the
-- reason, and the report says so where the case would be.
--
--   bench.add_case(label, query [, floor] [, scale] [, requires] [, min_version])
--       floor: label of a case whose time is overhead this query shares
--       (the generate_series loop, a table scan); the report subtracts it
--       in its "net" columns.  scale: this case's rows as a fraction of N,
--       for slow cases.
--   bench.add_generator(expr [, target] [, versus] [, scale] [, label]
--                       [, requires] [, min_version])
--       a generator: count(expr) over the loop floor, its ratio to the
--       floor (with the target, if given) and its ratio to each case
--       labelled in versus.  A new generator is one line, e.g.
--         SELECT bench.add_generator('uuid_generate_v7()', requires => 'pg_uuidv7');
--   bench.add_ratio(name, num, den [, target] [, basis])
--       num's cost over den's, to report against target (at most); basis
--       'net' judges the target on the ratio with each side's floor taken
--       off, 'gross' (the default) on the plain ratio.
--   bench.add_pgbench(label, statement [, requires] [, min_version])
--       a one-statement pgbench script; bench/run runs each at every
--       client count, in passes that interleave the statements, and stores
--       transactions per second in bench.tps.
--   bench.add_tps_ratio(num, den [, clients, target])
--       num's throughput over den's at each client count (the median over
--       passes of the ratio within a pass), beside the ratio of their
--       backends' CPU time a transaction (den's over num's), and against
--       target (at least) at the client count given, judged on the CPU
--       ratio: on a busy machine tps swings with what else runs, CPU time
--       a transaction far less.
--   bench.add_bulk(label, key [, requires] [, min_version])
--       a bulk insert: a fresh table whose primary key column is declared
--       as key (type, default), filled with BULK_N rows by one INSERT after
--       a checkpoint, in rounds of rotated order; the report gives the
--       time against bigserial's, the size of the key's index, and how
--       many adjacent rows in physical order have decreasing keys.
--   bench.setting(name, value)
--       a setting cases need (such as snowflake.node), for this session
--       and every later one (pgbench, bulk inserts).

\set ON_ERROR_STOP 1

CREATE SCHEMA bench;

CREATE TABLE bench.settings (
	n bigint NOT NULL,
	rounds int NOT NULL,
	bulk_n bigint NOT NULL,
	bulk_rounds int NOT NULL,
	cpu_clock boolean			-- the backend's CPU time is readable
);
INSERT INTO bench.settings VALUES (:N, :ROUNDS, :BULK_N, :BULK_ROUNDS);

-- What was not measured, and why.
CREATE TABLE bench.skipped (
	label text PRIMARY KEY,
	reason text NOT NULL
);

CREATE TABLE bench.cases (
	ord serial,
	label text PRIMARY KEY,
	query text NOT NULL,
	floor text REFERENCES bench.cases (label),
	rows bigint NOT NULL
);

CREATE TABLE bench.samples (
	label text REFERENCES bench.cases (label),
	round int,
	position int NOT NULL,		-- place of the case in its round's order
	ns float8 NOT NULL,			-- per row: CPU time, else wall-clock time
	wall float8 NOT NULL,		-- per row: wall-clock time
	PRIMARY KEY (label, round)
);

-- Ratios may name cases added later; the report checks them.
CREATE TABLE bench.ratios (
	ord serial,
	name text PRIMARY KEY,
	num text NOT NULL,
	den text NOT NULL,
	target float8,				-- at most
	basis text NOT NULL DEFAULT 'gross' CHECK (basis IN ('gross', 'net'))
);

CREATE TABLE bench.pgbench (
	ord serial,
	label text PRIMARY KEY,
	statement text NOT NULL
);

-- A pgbench run: its throughput, and beside it what other load on the
-- machine sways far less (bench/measure.sh): the backends' CPU time a
-- transaction.
CREATE TABLE bench.tps (
	label text REFERENCES bench.pgbench (label),
	clients int,
	pass int,
	tps float8 NOT NULL,
	cpu_us float8 NOT NULL,		-- the backends' CPU time a transaction
	client_us float8 NOT NULL,	-- pgbench's CPU time a transaction
	others float8 NOT NULL,		-- cores kept busy by other processes
	loadavg float8 NOT NULL,	-- 1-minute load average at the end
	PRIMARY KEY (label, clients, pass)
);

CREATE TABLE bench.tps_ratios (
	ord serial,
	num text NOT NULL,
	den text NOT NULL,
	clients int,
	target float8				-- at least
);

CREATE TABLE bench.bulk (
	ord serial,
	label text PRIMARY KEY,
	key text NOT NULL			-- the key column's type and default
);

CREATE TABLE bench.bulk_samples (
	label text REFERENCES bench.bulk (label),
	round int,
	position int NOT NULL,
	seconds float8 NOT NULL,	-- wall-clock time of the INSERT and its commit
	index_bytes bigint NOT NULL,	-- the primary key's index
	table_bytes bigint NOT NULL,
	descents bigint NOT NULL,	-- adjacent rows in physical order whose key decreases
	PRIMARY KEY (label, round)
);

CREATE FUNCTION bench.median(float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest($1) x
$$;

-- Whether this server can run a case that needs extension requires (NULL:
-- none) and PostgreSQL min_version or later; records why not in
-- bench.skipped.  An available extension is created here.
CREATE FUNCTION bench.runnable(label text, requires text, min_version int)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	reason text;
BEGIN
	IF min_version IS NOT NULL AND current_setting('server_version_num')::int < min_version THEN
		reason := format('needs PostgreSQL %s or later', min_version / 10000);
	ELSIF requires IS NOT NULL
		AND NOT EXISTS (SELECT FROM pg_available_extensions WHERE name = requires) THEN
		reason := format('not installed (extension %s)', requires);
	END IF;
	IF reason IS NOT NULL THEN
		INSERT INTO bench.skipped VALUES (label, reason) ON CONFLICT DO NOTHING;
		RETURN false;
	END IF;
	IF requires IS NOT NULL AND NOT EXISTS (SELECT FROM pg_extension WHERE extname = requires) THEN
		EXECUTE format('CREATE EXTENSION %I', requires);
	END IF;
	RETURN true;
END
$$;

CREATE FUNCTION bench.setting(name text, value text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('ALTER DATABASE %I SET %s = %L', current_database(), name, value);
	PERFORM set_config(name, value, false);
END
$$;

CREATE FUNCTION bench.add_case(label text, query text, floor text DEFAULT NULL,
							   scale float8 DEFAULT 1, requires text DEFAULT NULL,
							   min_version int DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF bench.runnable(label, requires, min_version) THEN
		INSERT INTO bench.cases (label, query, floor, rows)
		SELECT label, query, floor, greatest(round(n * scale), 1) FROM bench.settings;
	END IF;
END
$$;

CREATE FUNCTION bench.add_ratio(name text, num text, den text,
								target float8 DEFAULT NULL, basis text DEFAULT 'gross')
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.ratios (name, num, den, target, basis)
	VALUES (name, num, den, target, basis)
$$;

CREATE FUNCTION bench.add_generator(expr text, target float8 DEFAULT NULL,
									versus text[] DEFAULT '{}',
									scale float8 DEFAULT 1, label text DEFAULT NULL,
									requires text DEFAULT NULL,
									min_version int DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	l text := coalesce(label, expr);
	other text;
BEGIN
	PERFORM bench.add_case(l, format('SELECT count(%s) FROM generate_series(1, {N}) g', expr),
						   'loop floor', scale, requires, min_version);
	PERFORM bench.add_ratio(l || ' / loop floor', l, 'loop floor', target);
	FOREACH other IN ARRAY versus LOOP
		PERFORM bench.add_ratio(l || ' / ' || other, l, other);
	END LOOP;
END
$$;

CREATE FUNCTION bench.add_pgbench(label text, statement text,
								  requires text DEFAULT NULL, min_version int DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF bench.runnable(label, requires, min_version) THEN
		INSERT INTO bench.pgbench (label, statement) VALUES (label, statement);
	END IF;
END
$$;

CREATE FUNCTION bench.add_tps_ratio(num text, den text, clients int DEFAULT NULL,
									target float8 DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.tps_ratios (num, den, clients, target)
	VALUES (num, den, clients, target)
$$;

CREATE FUNCTION bench.add_bulk(label text, key text,
							   requires text DEFAULT NULL, min_version int DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF bench.runnable('bulk: ' || label, requires, min_version) THEN
		INSERT INTO bench.bulk (label, key) VALUES (label, key);
	END IF;
END
$$;

-- Nanoseconds this backend has run on a CPU.  The kernel brings the count
-- of a running process up to date only at a timer tick or when it stops
-- running, so sleep a moment first to make it exact.
CREATE FUNCTION bench.cpu_ns() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	PERFORM pg_sleep(0.001);
	RETURN split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
END
$$;

CREATE FUNCTION bench.has_cpu_clock() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	RETURN bench.cpu_ns() > 0;
EXCEPTION
	WHEN OTHERS THEN
		RETURN false;
END
$$;

-- Run query once: the wall-clock and CPU nanoseconds it took (cpu is NULL
-- without a CPU clock), and the rows it counted.
CREATE FUNCTION bench.time_query(query text, cpu_clock boolean,
								 OUT wall float8, OUT cpu float8, OUT nrows bigint)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	c0 bigint;
BEGIN
	IF cpu_clock THEN
		c0 := bench.cpu_ns();
	END IF;
	t0 := clock_timestamp();
	EXECUTE query INTO nrows;
	wall := extract(epoch FROM clock_timestamp() - t0) * 1e9;
	IF cpu_clock THEN
		cpu := bench.cpu_ns() - c0;
	END IF;
END
$$;

-- The labels of tbl (bench.cases or bench.bulk) in round's order: the
-- order of ord, started at another place each round.
CREATE FUNCTION bench.rotation(tbl regclass, round int)
RETURNS TABLE (label text, "position" int) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT label, (row_number() OVER (ORDER BY (k + $1) %% total, ord))::int
		 FROM (SELECT label, ord, row_number() OVER (ORDER BY ord) AS k,
					  count(*) OVER () AS total FROM %s) s
		 ORDER BY 2', tbl) USING round;
END
$$;

-- Each run is a transaction of its own, as an application's would be.
CREATE PROCEDURE bench.run()
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	t record;
	nrounds int := (SELECT rounds FROM bench.settings);
	use_cpu boolean := bench.has_cpu_clock();
BEGIN
	UPDATE bench.settings SET cpu_clock = use_cpu;
	FOR c IN SELECT * FROM bench.cases ORDER BY ord LOOP
		PERFORM bench.time_query(replace(c.query, '{N}', c.rows::text), use_cpu);
		COMMIT;
	END LOOP;
	FOR r IN 1 .. nrounds LOOP
		RAISE NOTICE 'bench: round % of %', r, nrounds;
		FOR c IN
			SELECT bc.*, o.position
			FROM bench.rotation('bench.cases', r) o JOIN bench.cases bc USING (label)
			ORDER BY o.position
		LOOP
			t := bench.time_query(replace(c.query, '{N}', c.rows::text), use_cpu);
			IF t.nrows <> c.rows AND c.query LIKE '%{N}%' THEN
				RAISE EXCEPTION 'case "%" counted % rows, not %', c.label, t.nrows, c.rows;
			END IF;
			INSERT INTO bench.samples
				VALUES (c.label, r, c.position, coalesce(t.cpu, t.wall) / t.nrows, t.wall / t.nrows);
			COMMIT;
		END LOOP;
	END LOOP;
END
$$;

-- One bulk insert: a fresh table bench.bulk_t whose primary key column is
-- declared as key, filled with nrows rows by one INSERT after a checkpoint,
-- so that it pays for no earlier dirty buffers.  Timed on the wall clock:
-- writing the table, its index and WAL is the point, not the backend's CPU
-- alone.  Also run alone by bench/baseline.
CREATE PROCEDURE bench.time_bulk(key text, nrows bigint, INOUT seconds float8 DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	inserted bigint;
BEGIN
	DROP TABLE IF EXISTS bench.bulk_t;
	EXECUTE format('CREATE TABLE bench.bulk_t (id %s PRIMARY KEY, v int NOT NULL)', key);
	COMMIT;
	CHECKPOINT;
	t0 := clock_timestamp();
	INSERT INTO bench.bulk_t (v) SELECT g FROM generate_series(1, nrows) g;
	GET DIAGNOSTICS inserted = ROW_COUNT;
	COMMIT;
	seconds := extract(epoch FROM clock_timestamp() - t0);
	IF inserted <> nrows THEN
		RAISE EXCEPTION 'bulk insert with key "%" inserted % rows, not %', key, inserted, nrows;
	END IF;
END
$$;

-- Bulk inserts: in each round, every key kind in rotated order.
CREATE PROCEDURE bench.run_bulk()
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	nrows bigint := (SELECT bulk_n FROM bench.settings);
	nrounds int := (SELECT bulk_rounds FROM bench.settings);
	secs float8;
BEGIN
	FOR r IN 1 .. nrounds LOOP
		FOR c IN
			SELECT b.*, o.position
			FROM bench.rotation('bench.bulk', r) o JOIN bench.bulk b USING (label)
			ORDER BY o.position
		LOOP
			RAISE NOTICE 'bench: bulk round % of %: %', r, nrounds, c.label;
			CALL bench.time_bulk(c.key, nrows, secs);
			INSERT INTO bench.bulk_samples
			SELECT c.label, r, c.position, secs,
				pg_relation_size('bench.bulk_t_pkey'), pg_relation_size('bench.bulk_t'),
				(SELECT count(*) FROM (SELECT id < lag(id) OVER (ORDER BY ctid) AS down
									   FROM bench.bulk_t) s WHERE down);
			COMMIT;
		END LOOP;
	END LOOP;
	DROP TABLE IF EXISTS bench.bulk_t;
END
$$;

-- Median absolute deviation: the spread of samples, robust to outliers.
CREATE FUNCTION bench.mad(float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT bench.median(array_agg(abs(x - bench.median($1)))) FROM unnest($1) x
$$;

-- A cost or time with its spread: "median (min-max)".
CREATE FUNCTION bench.spread(med float8, lo float8, hi float8, fmt text DEFAULT 'FM99990.0')
RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT format('%s (%s-%s)', to_char(med, fmt), to_char(lo, fmt), to_char(hi, fmt))
$$;

-- The verdict on a target, and the report's tally of targets met and
-- missed with it: met where ok, MISSED where not, and also where ok is
-- NULL (a net ratio too close to noise to judge).
CREATE FUNCTION bench.judge(ok boolean, INOUT met int, INOUT missed int, OUT verdict text)
LANGUAGE sql IMMUTABLE AS $$
	SELECT met + (ok IS TRUE)::int, missed + (ok IS NOT TRUE)::int,
		   CASE WHEN ok THEN 'met' ELSE 'MISSED' END
$$;

CREATE FUNCTION bench.report() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	tr record;
	judged record;
	measured boolean;
	w int;
	nmet int := 0;
	nmissed int := 0;
	verdict text;
	skip text;
BEGIN
	RETURN NEXT format('Extensions: %s.', (SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
										   FROM pg_extension WHERE extname <> 'plpgsql'));
	RETURN NEXT '';
	RETURN NEXT format('Per-row cost: median (minimum-maximum) of %s rounds after a warm-up, in',
					   (SELECT rounds FROM bench.settings));
	RETURN NEXT format('rotated order, %s rows per run unless noted; timed in the server, jit = off,',
					   (SELECT n FROM bench.settings));
	RETURN NEXT 'no parallel workers.';
	IF (SELECT cpu_clock FROM bench.settings) THEN
		RETURN NEXT 'ns/row, net: the backend''s CPU time; wall: wall-clock time.';
	ELSE
		RETURN NEXT 'ns/row, net, wall: wall-clock time (the CPU time was not readable).';
	END IF;
	RETURN NEXT 'net: the median over rounds of ns/row minus the ns/row of the floor named on';
	RETURN NEXT 'the right in the same round.';
	RETURN NEXT '';
	SELECT max(length(label)) INTO w FROM (SELECT label FROM bench.cases UNION ALL
										   SELECT label FROM bench.skipped) s;
	RETURN NEXT format('%-*s  %8s  %-26s  %8s  %8s', w, 'case', 'rows', 'ns/row (min-max)', 'net', 'wall');
	RETURN NEXT repeat('-', w + 60);
	FOR r IN
		SELECT c.label, c.rows, c.floor,
			bench.median(array_agg(s.ns)) AS ns, min(s.ns) AS min_ns, max(s.ns) AS max_ns,
			bench.median(array_agg(s.ns - f.ns)) AS net,
			bench.median(array_agg(s.wall)) AS wall
		FROM bench.cases c
		JOIN bench.samples s USING (label)
		LEFT JOIN bench.samples f ON f.label = c.floor AND f.round = s.round
		GROUP BY c.ord, c.label, c.rows, c.floor
		ORDER BY c.ord
	LOOP
		RETURN NEXT rtrim(format('%-*s  %8s  %-26s  %8s  %8s  %s', w, r.label, r.rows,
			bench.spread(r.ns, r.min_ns, r.max_ns),
			coalesce(to_char(r.net, 'FM99990.0'), ''), to_char(r.wall, 'FM99990.0'),
			coalesce('(' || r.floor || ')', '')));
	END LOOP;
	FOR r IN SELECT * FROM bench.skipped WHERE label NOT LIKE 'bulk: %' ORDER BY label LOOP
		RETURN NEXT format('%-*s  skipped: %s', w, r.label, r.reason);
	END LOOP;

	IF EXISTS (SELECT FROM bench.ratios) THEN
		RETURN NEXT '';
		RETURN NEXT 'Ratios of ns/row, lower is better: the median over rounds of the ratio within';
		RETURN NEXT 'each round; net takes each side''s floor off first, and is shown only where';
		RETURN NEXT 'the denominator''s net is well above noise (at least 10% of its gross cost';
		RETURN NEXT 'and 3 times its spread over rounds); wall is gross on wall-clock time.';
		RETURN NEXT '';
		SELECT max(length(name)) INTO w FROM bench.ratios;
		RETURN NEXT format('%-*s  %6s  %6s  %6s  %s', w, 'ratio', 'gross', 'net', 'wall', 'target');
		RETURN NEXT repeat('-', w + 40);
		FOR r IN
			SELECT q.name, q.num, q.den, q.target, q.basis,
				bench.median(array_agg(n.ns / d.ns)) AS gross,
				bench.median(array_agg((n.ns - nf.ns) / nullif(d.ns - df.ns, 0))) AS net,
				bench.median(array_agg(d.ns - df.ns)) AS den_net,
				bench.mad(array_agg(d.ns - df.ns)) AS den_net_mad,
				bench.median(array_agg(d.ns)) AS den_gross,
				bench.median(array_agg(n.wall / d.wall)) AS wall
			FROM bench.ratios q
			LEFT JOIN bench.cases nc ON nc.label = q.num
			LEFT JOIN bench.cases dc ON dc.label = q.den
			LEFT JOIN bench.samples n ON n.label = q.num
			LEFT JOIN bench.samples d ON d.label = q.den AND d.round = n.round
			LEFT JOIN bench.samples nf ON nf.label = nc.floor AND nf.round = n.round
				AND nc.floor <> q.den
			LEFT JOIN bench.samples df ON df.label = dc.floor AND df.round = n.round
			GROUP BY q.ord, q.name, q.num, q.den, q.target, q.basis
			ORDER BY q.ord
		LOOP
			IF r.gross IS NULL THEN
				SELECT string_agg(reason, '; ') INTO skip
				FROM bench.skipped WHERE label IN (r.num, r.den);
				IF skip IS NULL THEN
					RAISE EXCEPTION 'ratio "%" names a case that was not measured', r.name;
				END IF;
				RETURN NEXT format('%-*s  skipped: %s', w, r.name, skip);
				CONTINUE;
			END IF;
			IF r.den_net < 0.1 * r.den_gross OR r.den_net < 3 * r.den_net_mad THEN
				r.net := NULL;
			END IF;
			verdict := NULL;
			IF r.target IS NOT NULL THEN
				SELECT * INTO nmet, nmissed, verdict
				FROM bench.judge((CASE r.basis WHEN 'net' THEN r.net ELSE r.gross END) <= r.target,
								 nmet, nmissed);
			END IF;
			RETURN NEXT rtrim(format('%-*s  %6s  %6s  %6s  %s', w, r.name,
				to_char(r.gross, 'FM990.00'),
				CASE WHEN r.net IS NOT NULL THEN to_char(r.net, 'FM990.00')
					 WHEN r.den_net IS NOT NULL THEN 'n/a' ELSE '' END,
				to_char(r.wall, 'FM990.00'),
				CASE WHEN r.target IS NULL THEN ''
					ELSE format('<= %s %s: %s', r.target, r.basis, verdict) END));
		END LOOP;
	END IF;

	IF EXISTS (SELECT FROM bench.tps) THEN
		RETURN NEXT '';
		RETURN NEXT format('Throughput: pgbench, one statement a transaction, in %s interleaved passes;',
						   (SELECT count(DISTINCT pass) FROM bench.tps));
		RETURN NEXT 'median (lowest-highest) over passes.  tps: transactions per second.  CPU: the';
		RETURN NEXT 'backends'' CPU time a transaction (us), which other load on the machine sways';
		RETURN NEXT 'far less than tps.  Other load: the cores that other processes kept busy.';
		RETURN NEXT '';
		SELECT max(length(label)) INTO w FROM bench.pgbench;
		RETURN NEXT format('%-*s  %7s  %-22s  %-19s  %s', w, 'statement', 'clients', 'tps', 'CPU us',
						   'other load');
		RETURN NEXT repeat('-', w + 75);
		FOR r IN
			SELECT p.label, t.clients,
				bench.median(array_agg(t.tps)) AS tps, min(t.tps) AS tps_lo, max(t.tps) AS tps_hi,
				bench.median(array_agg(t.cpu_us)) AS cpu, min(t.cpu_us) AS cpu_lo, max(t.cpu_us) AS cpu_hi,
				bench.median(array_agg(t.others)) AS others, min(t.others) AS others_lo,
				max(t.others) AS others_hi
			FROM bench.pgbench p JOIN bench.tps t USING (label)
			GROUP BY p.ord, p.label, t.clients
			ORDER BY t.clients, p.ord
		LOOP
			RETURN NEXT format('%-*s  %7s  %-22s  %-19s  %s', w, r.label, r.clients,
				bench.spread(r.tps, r.tps_lo, r.tps_hi, 'FM9999990'),
				bench.spread(r.cpu, r.cpu_lo, r.cpu_hi, 'FM9990.00'),
				bench.spread(r.others, r.others_lo, r.others_hi, 'FM90.00'));
		END LOOP;
		RETURN NEXT (SELECT format('1-minute load average after the runs: %s',
								   bench.spread(bench.median(array_agg(loadavg)), min(loadavg), max(loadavg),
												'FM990.00'))
					 FROM bench.tps);
		RETURN NEXT '';
		RETURN NEXT 'Ratios, higher is better: the median (lowest-highest) over passes of the ratio';
		RETURN NEXT 'within a pass, of tps, and of CPU time a transaction (the denominator''s over';
		RETURN NEXT 'the numerator''s).  A target is judged on CPU, the figure that holds still on a';
		RETURN NEXT 'busy machine; where the passes'' tps ratios fall on both sides of the target,';
		RETURN NEXT 'tps alone cannot tell a change from noise.';
		RETURN NEXT '';
		SELECT max(length(num || ' / ' || den)) INTO w FROM bench.tps_ratios;
		RETURN NEXT format('%-*s  %7s  %-19s  %s', w, 'ratio', 'clients', 'tps', 'CPU');
		RETURN NEXT repeat('-', w + 52);
		FOR tr IN SELECT * FROM bench.tps_ratios ORDER BY ord LOOP
			measured := false;
			FOR r IN
				SELECT n.clients,
					bench.median(array_agg(n.tps / d.tps)) AS tps, min(n.tps / d.tps) AS tps_lo,
					max(n.tps / d.tps) AS tps_hi,
					bench.median(array_agg(d.cpu_us / n.cpu_us)) AS cpu,
					min(d.cpu_us / n.cpu_us) AS cpu_lo, max(d.cpu_us / n.cpu_us) AS cpu_hi
				FROM bench.tps n
				JOIN bench.tps d ON d.label = tr.den AND d.clients = n.clients AND d.pass = n.pass
				WHERE n.label = tr.num
				GROUP BY n.clients
				ORDER BY n.clients
			LOOP
				RETURN NEXT format('%-*s  %7s  %-19s  %s', w, tr.num || ' / ' || tr.den, r.clients,
					bench.spread(r.tps, r.tps_lo, r.tps_hi, 'FM990.00'),
					bench.spread(r.cpu, r.cpu_lo, r.cpu_hi, 'FM990.00'));
				IF r.clients = tr.clients THEN
					judged := r;
					measured := true;
				END IF;
			END LOOP;
			CONTINUE WHEN tr.target IS NULL;
			IF NOT measured THEN
				verdict := 'not measured';
				nmissed := nmissed + 1;
			ELSE
				SELECT * INTO nmet, nmissed, verdict
				FROM bench.judge(judged.cpu >= tr.target, nmet, nmissed);
				verdict := format('%s, %s; tps %s%s', to_char(judged.cpu, 'FM990.00'), verdict,
								  to_char(judged.tps, 'FM990.00'),
								  CASE WHEN judged.tps_lo < tr.target AND judged.tps_hi >= tr.target
									   THEN ', its passes on both sides of the target' ELSE '' END);
			END IF;
			RETURN NEXT format('  target: at least %s at %s clients, on CPU: %s', tr.target, tr.clients, verdict);
		END LOOP;
	END IF;

	IF EXISTS (SELECT FROM bench.bulk_samples) THEN
		RETURN NEXT '';
		RETURN NEXT format('Bulk insert: %s rows by one INSERT into a fresh table with the key as its',
						   (SELECT bulk_n FROM bench.settings));
		RETURN NEXT format('primary key default, after a checkpoint; median (minimum-maximum) of %s',
						   (SELECT bulk_rounds FROM bench.settings));
		RETURN NEXT 'rounds in rotated order, wall-clock seconds including the commit; ratio:';
		RETURN NEXT format('median over rounds of the time over %s''s in the same round; index and',
						   (SELECT label FROM bench.bulk ORDER BY ord LIMIT 1));
		RETURN NEXT 'table in MB; descents: adjacent rows in physical order whose key decreases.';
		RETURN NEXT '';
		SELECT max(length(label)) INTO w FROM (SELECT label FROM bench.bulk UNION ALL
											   SELECT substr(label, 7) FROM bench.skipped
											   WHERE label LIKE 'bulk: %') s;
		RETURN NEXT format('%-*s  %-20s  %6s  %7s  %7s  %9s', w, 'key', 'seconds (min-max)',
						   'ratio', 'index', 'table', 'descents');
		RETURN NEXT repeat('-', w + 60);
		FOR r IN
			SELECT b.label,
				bench.median(array_agg(s.seconds)) AS secs, min(s.seconds) AS lo, max(s.seconds) AS hi,
				bench.median(array_agg(s.seconds / ref.seconds)) AS ratio,
				bench.median(array_agg(s.index_bytes)) / 1048576 AS index_mb,
				bench.median(array_agg(s.table_bytes)) / 1048576 AS table_mb,
				round(bench.median(array_agg(s.descents))) AS descents
			FROM bench.bulk b
			JOIN bench.bulk_samples s USING (label)
			JOIN bench.bulk_samples ref ON ref.round = s.round
				AND ref.label = (SELECT label FROM bench.bulk ORDER BY ord LIMIT 1)
			GROUP BY b.ord, b.label
			ORDER BY b.ord
		LOOP
			RETURN NEXT format('%-*s  %-20s  %6s  %7s  %7s  %9s', w, r.label,
				bench.spread(r.secs, r.lo, r.hi, 'FM990.00'), to_char(r.ratio, 'FM990.00'),
				to_char(r.index_mb, 'FM99990.0'), to_char(r.table_mb, 'FM99990.0'), r.descents);
		END LOOP;
		FOR r IN SELECT * FROM bench.skipped WHERE label LIKE 'bulk: %' ORDER BY label LOOP
			RETURN NEXT format('%-*s  skipped: %s', w, substr(r.label, 7), r.reason);
		END LOOP;
	END IF;

	RETURN NEXT '';
	RETURN NEXT format('targets: %s met, %s missed', nmet, nmissed);
END
$$;
