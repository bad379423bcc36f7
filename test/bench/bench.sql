-- The benchmark harness (make bench): server-side timing of queries, and the
-- report.  test/bench/cases.sql says what to measure; test/bench/run loads
-- this file, then the cases, runs them, runs pgbench, and prints
-- bench.report().
--
-- A case is a query returning one bigint, the number of rows it went
-- through (count(...) over those rows); "{N}" in its text becomes its row
-- count.  bench.run() runs every case once to warm up, then in rounds: each
-- round times every case once, in order, around EXECUTE inside the server,
-- so neither psql nor the socket is measured.  A run's cost is its time /
-- its row count.  The time is the backend's CPU time, read from
-- /proc/self/schedstat (Linux), so that other processes on a busy machine
-- count for little; the wall-clock time is kept beside it, and used alone
-- where the CPU time cannot be read.  Interleaving the cases keeps a slow
-- spell of the machine from landing on one case only; ratios are taken
-- within each round and the report shows their median.
--
--   bench.add_case(label, query [, floor] [, scale])
--       floor: label of a case whose time is overhead this query shares
--       (the generate_series loop, a table scan); the report subtracts it
--       in its "net" columns.  scale: this case's rows as a fraction of N,
--       for slow cases.
--   bench.add_generator(expr [, target] [, versus] [, scale] [, label])
--       a generator: count(expr) over the loop floor, its ratio to the
--       floor (with the target, if given) and its ratio to each case
--       labelled in versus.  A new generator is one line, e.g.
--         SELECT bench.add_generator('randflake_next()', target => 1.5,
--                                    versus => '{flake_next()}');
--   bench.add_ratio(name, num, den [, target] [, basis])
--       num's cost over den's, to report against target (at most); basis
--       'net' judges the target on the ratio with each side's floor taken
--       off, 'gross' (the default) on the plain ratio.
--   bench.add_pgbench(label, statement)
--       a one-statement pgbench script; test/bench/run runs each at every
--       client count, in passes that interleave the statements, and stores
--       transactions per second in bench.tps.
--   bench.add_tps_ratio(num, den [, clients, target])
--       num's throughput over den's at each client count (the median over
--       passes of the ratio within a pass), to report against target (at
--       least) at the client count given.

\set ON_ERROR_STOP 1

CREATE SCHEMA bench;

CREATE TABLE bench.settings (
	n bigint NOT NULL,
	rounds int NOT NULL,
	cpu_clock boolean			-- the backend's CPU time is readable
);
INSERT INTO bench.settings VALUES (:N, :ROUNDS);

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

CREATE TABLE bench.tps (
	label text REFERENCES bench.pgbench (label),
	clients int,
	pass int,
	tps float8 NOT NULL,
	PRIMARY KEY (label, clients, pass)
);

CREATE TABLE bench.tps_ratios (
	ord serial,
	num text NOT NULL,
	den text NOT NULL,
	clients int,
	target float8				-- at least
);

CREATE FUNCTION bench.median(float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest($1) x
$$;

CREATE FUNCTION bench.add_case(label text, query text, floor text DEFAULT NULL,
							   scale float8 DEFAULT 1)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.cases (label, query, floor, rows)
	SELECT label, query, floor, greatest(round(n * scale), 1) FROM bench.settings
$$;

CREATE FUNCTION bench.add_ratio(name text, num text, den text,
								target float8 DEFAULT NULL, basis text DEFAULT 'gross')
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.ratios (name, num, den, target, basis)
	VALUES (name, num, den, target, basis)
$$;

CREATE FUNCTION bench.add_generator(expr text, target float8 DEFAULT NULL,
									versus text[] DEFAULT '{}',
									scale float8 DEFAULT 1, label text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	l text := coalesce(label, expr);
	other text;
BEGIN
	PERFORM bench.add_case(l, format('SELECT count(%s) FROM generate_series(1, {N}) g', expr),
						   'loop floor', scale);
	PERFORM bench.add_ratio(l || ' / loop floor', l, 'loop floor', target);
	FOREACH other IN ARRAY versus LOOP
		PERFORM bench.add_ratio(l || ' / ' || other, l, other);
	END LOOP;
END
$$;

CREATE FUNCTION bench.add_pgbench(label text, statement text)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.pgbench (label, statement) VALUES (label, statement)
$$;

CREATE FUNCTION bench.add_tps_ratio(num text, den text, clients int DEFAULT NULL,
									target float8 DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench.tps_ratios (num, den, clients, target)
	VALUES (num, den, clients, target)
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
		FOR c IN SELECT * FROM bench.cases ORDER BY ord LOOP
			t := bench.time_query(replace(c.query, '{N}', c.rows::text), use_cpu);
			IF t.nrows <> c.rows AND c.query LIKE '%{N}%' THEN
				RAISE EXCEPTION 'case "%" counted % rows, not %', c.label, t.nrows, c.rows;
			END IF;
			INSERT INTO bench.samples
				VALUES (c.label, r, coalesce(t.cpu, t.wall) / t.nrows, t.wall / t.nrows);
			COMMIT;
		END LOOP;
	END LOOP;
END
$$;

CREATE FUNCTION bench.report() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	w int;
	nmet int := 0;
	nmissed int := 0;
	verdict text;
BEGIN
	RETURN NEXT format('Per-row cost: median (and minimum) of %s rounds after a warm-up, %s rows',
					   (SELECT rounds FROM bench.settings), (SELECT n FROM bench.settings));
	RETURN NEXT 'per run unless noted; timed in the server, jit = off, no parallel workers.';
	IF (SELECT cpu_clock FROM bench.settings) THEN
		RETURN NEXT 'ns/row, min, net: the backend''s CPU time; wall: wall-clock time.';
	ELSE
		RETURN NEXT 'ns/row, min, net, wall: wall-clock time (the CPU time was not readable).';
	END IF;
	RETURN NEXT 'net: the median over rounds of ns/row minus the ns/row of the floor named on';
	RETURN NEXT 'the right in the same round.';
	RETURN NEXT '';
	SELECT max(length(label)) INTO w FROM bench.cases;
	RETURN NEXT format('%-*s  %8s  %8s  %8s  %8s  %8s', w, 'case', 'rows', 'ns/row', 'min', 'net', 'wall');
	RETURN NEXT repeat('-', w + 50);
	FOR r IN
		SELECT c.label, c.rows, c.floor,
			bench.median(array_agg(s.ns)) AS ns, min(s.ns) AS min_ns,
			bench.median(array_agg(s.ns - f.ns)) AS net,
			bench.median(array_agg(s.wall)) AS wall
		FROM bench.cases c
		JOIN bench.samples s USING (label)
		LEFT JOIN bench.samples f ON f.label = c.floor AND f.round = s.round
		GROUP BY c.ord, c.label, c.rows, c.floor
		ORDER BY c.ord
	LOOP
		RETURN NEXT rtrim(format('%-*s  %8s  %8s  %8s  %8s  %8s  %s', w, r.label, r.rows,
			to_char(r.ns, 'FM99990.0'), to_char(r.min_ns, 'FM99990.0'),
			coalesce(to_char(r.net, 'FM99990.0'), ''), to_char(r.wall, 'FM99990.0'),
			coalesce('(' || r.floor || ')', '')));
	END LOOP;

	IF EXISTS (SELECT FROM bench.ratios) THEN
		RETURN NEXT '';
		RETURN NEXT 'Ratios of ns/row, lower is better: the median over rounds of the ratio within';
		RETURN NEXT 'each round; net takes each side''s floor off first; wall is gross on';
		RETURN NEXT 'wall-clock time.';
		RETURN NEXT '';
		SELECT max(length(name)) INTO w FROM bench.ratios;
		RETURN NEXT format('%-*s  %6s  %6s  %6s  %s', w, 'ratio', 'gross', 'net', 'wall', 'target');
		RETURN NEXT repeat('-', w + 40);
		FOR r IN
			SELECT q.name, q.target, q.basis,
				bench.median(array_agg(n.ns / d.ns)) AS gross,
				bench.median(array_agg((n.ns - nf.ns) / nullif(d.ns - df.ns, 0))) AS net,
				bench.median(array_agg(n.wall / d.wall)) AS wall
			FROM bench.ratios q
			LEFT JOIN bench.cases nc ON nc.label = q.num
			LEFT JOIN bench.cases dc ON dc.label = q.den
			LEFT JOIN bench.samples n ON n.label = q.num
			LEFT JOIN bench.samples d ON d.label = q.den AND d.round = n.round
			LEFT JOIN bench.samples nf ON nf.label = nc.floor AND nf.round = n.round
				AND nc.floor <> q.den
			LEFT JOIN bench.samples df ON df.label = dc.floor AND df.round = n.round
			GROUP BY q.ord, q.name, q.target, q.basis
			ORDER BY q.ord
		LOOP
			IF r.gross IS NULL THEN
				RAISE EXCEPTION 'ratio "%" names a case that was not measured', r.name;
			END IF;
			verdict := NULL;
			IF r.target IS NOT NULL THEN
				IF (CASE r.basis WHEN 'net' THEN r.net ELSE r.gross END) <= r.target THEN
					verdict := 'met';
					nmet := nmet + 1;
				ELSE
					verdict := 'MISSED';
					nmissed := nmissed + 1;
				END IF;
			END IF;
			RETURN NEXT rtrim(format('%-*s  %6s  %6s  %6s  %s', w, r.name,
				to_char(r.gross, 'FM990.00'), coalesce(to_char(r.net, 'FM990.00'), ''),
				to_char(r.wall, 'FM990.00'),
				CASE WHEN r.target IS NULL THEN ''
					ELSE format('<= %s %s: %s', r.target, r.basis, verdict) END));
		END LOOP;
	END IF;

	IF EXISTS (SELECT FROM bench.tps) THEN
		RETURN NEXT '';
		RETURN NEXT format('Throughput: pgbench transactions per second, one statement each; median of %s',
						   (SELECT count(DISTINCT pass) FROM bench.tps));
		RETURN NEXT 'interleaved passes.  Ratios: the median over passes of the ratio within a pass;';
		RETURN NEXT 'higher is better.';
		RETURN NEXT '';
		SELECT max(length(x)) INTO w FROM (
			SELECT label FROM bench.pgbench
			UNION ALL SELECT num || ' / ' || den FROM bench.tps_ratios) s(x);
		RETURN NEXT format('%-*s  %s', w, 'statement',
			(SELECT string_agg(format('%10s', c || ' client' || CASE WHEN c > 1 THEN 's' ELSE '' END), '  ' ORDER BY c)
			 FROM (SELECT DISTINCT clients AS c FROM bench.tps) s));
		RETURN NEXT repeat('-', w + 2 + 12 * (SELECT count(DISTINCT clients) FROM bench.tps)::int);
		FOR r IN
			SELECT label, string_agg(format('%10s', round(tps)), '  ' ORDER BY clients) AS row
			FROM (SELECT p.ord, p.label, t.clients, bench.median(array_agg(t.tps)) AS tps
				  FROM bench.pgbench p JOIN bench.tps t USING (label)
				  GROUP BY p.ord, p.label, t.clients) m
			GROUP BY ord, label ORDER BY ord
		LOOP
			RETURN NEXT format('%-*s  %s', w, r.label, r.row);
		END LOOP;
		FOR r IN
			SELECT q.ord, q.num, q.den, q.clients, q.target,
				string_agg(format('%10s', to_char(m.ratio, 'FM990.00')), '  '
						   ORDER BY m.clients) AS row,
				max(m.ratio) FILTER (WHERE m.clients = q.clients) AS ratio
			FROM bench.tps_ratios q
			JOIN LATERAL (
				SELECT n.clients, bench.median(array_agg(n.tps / d.tps)) AS ratio
				FROM bench.tps n
				JOIN bench.tps d ON d.label = q.den AND d.clients = n.clients AND d.pass = n.pass
				WHERE n.label = q.num
				GROUP BY n.clients) m ON true
			GROUP BY q.ord, q.num, q.den, q.clients, q.target
			ORDER BY q.ord
		LOOP
			RETURN NEXT format('%-*s  %s', w, r.num || ' / ' || r.den, r.row);
			IF r.target IS NULL THEN
				CONTINUE;
			ELSIF r.ratio IS NULL THEN
				verdict := 'not measured';
				nmissed := nmissed + 1;
			ELSIF r.ratio >= r.target THEN
				verdict := 'met';
				nmet := nmet + 1;
			ELSE
				verdict := 'MISSED';
				nmissed := nmissed + 1;
			END IF;
			RETURN NEXT format('  target: at least %s at %s clients: %s', r.target, r.clients, verdict);
		END LOOP;
	END IF;

	RETURN NEXT '';
	RETURN NEXT format('targets: %s met, %s missed', nmet, nmissed);
END
$$;
