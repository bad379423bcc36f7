# The online migration (flake_migrate_online, sql/parts/online/):
# a serial key with a child in another schema (a plain and a composite
# foreign key) and an also => column, migrated while pgbench writes from
# three clients, then every row compared with a mirror the clients wrote
# too and the schema with flake_migrate() of a copy; an identity key to
# ulidflake, the command stopped in each phase by SIGINT or SIGKILL and
# resumed; a server crash while it copies and while it swaps, then undone;
# --jobs, its sessions stopped with the program and the program with them;
# a dry run; what the checks refuse; a non-owner refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('online',
	"flake.nodes = '0-1015'\nflake.randflake_nodes = '0-1015'\nflake.randflake_secret = '$flake_secret'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');
my $db = $node->connstr('postgres');
my $pg_dump = $node->config_data('--bindir') . '/pg_dump';

# The command, as the user postgres (or with user => ROLE): exit code,
# stdout, stderr.
sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

# Tables in schema $s and $s_sales, with $n orders: a composite foreign
# key, an also => column, a check, an index with INCLUDE, grants,
# comments, triggers (one disabled), column statistics settings to carry
# over.
sub make_tables
{
	my ($s, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE SCHEMA $s; CREATE SCHEMA ${s}_sales;
		CREATE TABLE $s.orders (id serial PRIMARY KEY, tenant int NOT NULL DEFAULT 1 CHECK (tenant > 0),
								placed timestamptz NOT NULL DEFAULT '2025-01-01', UNIQUE (tenant, id));
		COMMENT ON TABLE $s.orders IS 'orders'; COMMENT ON COLUMN $s.orders.id IS 'the order';
		ALTER TABLE $s.orders ALTER COLUMN placed SET STATISTICS 500, ALTER COLUMN tenant SET (n_distinct = 3);
		GRANT SELECT ON $s.orders TO PUBLIC;
		CREATE TABLE ${s}_sales.lines (id bigserial PRIMARY KEY,
			order_id int NOT NULL REFERENCES $s.orders ON DELETE CASCADE,
			tenant int NOT NULL DEFAULT 1, qty int NOT NULL DEFAULT 1,
			FOREIGN KEY (tenant, order_id) REFERENCES $s.orders (tenant, id));
		CREATE INDEX ON ${s}_sales.lines (order_id DESC) INCLUDE (qty);
		CREATE TRIGGER keep BEFORE UPDATE ON ${s}_sales.lines FOR EACH ROW EXECUTE FUNCTION public.keep();
		CREATE TRIGGER unused AFTER INSERT ON ${s}_sales.lines FOR EACH ROW EXECUTE FUNCTION public.keep();
		ALTER TABLE ${s}_sales.lines DISABLE TRIGGER unused;
		CREATE TABLE $s.notes (id bigserial PRIMARY KEY, order_ref int, body text);
		INSERT INTO $s.orders (tenant) SELECT 1 + n % 3 FROM generate_series(1, $n) n;
		INSERT INTO ${s}_sales.lines (order_id, tenant, qty) SELECT id, tenant, l FROM $s.orders, generate_series(1, 2) l;
		INSERT INTO $s.notes (order_ref, body) SELECT id, 'n' || id FROM $s.orders WHERE id % 2 = 0;
	});
}

# A count and checksum of every column of every row of orders and lines,
# in schemas $o and $l.
sub rows_of
{
	my ($o, $l) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', id, tenant, placed), ',' ORDER BY id)) FROM $o.orders)
			|| ' ' || (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', id, order_id, tenant, qty), ',' ORDER BY id)) FROM $l.lines)});
}

# pg_dump --schema-only of two schemas, with their names made neutral and
# the lines sorted (the objects' oids differ).
sub schema_of
{
	my ($s) = @_;
	my $dump = `$pg_dump --schema-only -n $s -n ${s}_sales '$db'`;
	$dump =~ s/\b${s}_sales\b/S_sales/g;
	$dump =~ s/\b$s\b/S/g;
	return join("\n", sort grep { /\S/ && !/^--|^\\(un)?restrict / } split /\n/, $dump);
}

# A session that holds a lock until released: the command waits in the
# phase that needs it, and is stopped there.
sub hold { return online_hold($node, @_); }

# The command started with @args, once it waits for a lock in $phase.
sub start_waiting { my ($phase, @args) = @_; return online_start($node, \@args, phase => $phase); }

$node->safe_psql('postgres', q{CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'});
make_tables('app', 2000);
make_tables('ofl', 2000);
is(rows_of('ofl', 'ofl_sales'), rows_of('app', 'app_sales'), 'the copy has the same rows');
# a mirror of app's orders and lines, written with them
$node->safe_psql('postgres', q{
	CREATE SCHEMA mir;
	CREATE TABLE mir.orders AS SELECT id::bigint, tenant, placed FROM app.orders;
	CREATE TABLE mir.lines AS SELECT id, order_id::bigint, tenant, qty FROM app_sales.lines;
	ALTER TABLE mir.lines ADD PRIMARY KEY (id);
});

# a dry run: every step with its lock, nothing changed
my ($rc, $out, $err) = online([ '-t', 'app.orders', '-a', 'app.notes.order_ref', '--dry-run' ]);
is($rc, 0, 'dry run exits 0');
my $steps = () = $out =~ /^step \d+/mg;
my $locks = () = $out =~ /^  lock: /mg;
ok($steps >= 15 && $steps == $locks, "dry run prints $steps steps, each with its lock");
like($out, qr/\(swap: .*\n  lock: ACCESS EXCLUSIVE on every table.*\n.*\n  which runs:\n(.*\n)*?  DROP TABLE /, 'the swap, its lock and its statements are shown');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'}),
	'0', 'the dry run changed nothing');

# the online migration while three clients write, each statement to app's
# tables and to the mirror: orders with lines, updates of lines, changes
# of their key, deletes, reads; as a subscription writes (replica mode,
# where only ALWAYS triggers fire)
my $script = $node->basedir . '/writes.sql';
append_to_file($script, q{
\set t random(1, 3)
\set k random(1, 4000)
SET session_replication_role = :mode;
WITH o AS (INSERT INTO app.orders (tenant) VALUES (:t) RETURNING *), l AS (INSERT INTO app_sales.lines (order_id, tenant) SELECT id, tenant FROM o RETURNING *), m AS (INSERT INTO mir.orders SELECT * FROM o) INSERT INTO mir.lines SELECT * FROM l;
WITH x AS (UPDATE app_sales.lines SET qty = qty + 1 WHERE id = :k RETURNING id, qty) UPDATE mir.lines m SET qty = x.qty FROM x WHERE m.id = x.id;
WITH x AS (UPDATE app_sales.lines SET id = id + 1000000 WHERE id = :k + 1 RETURNING id) UPDATE mir.lines m SET id = x.id FROM x WHERE m.id = x.id - 1000000;
WITH x AS (DELETE FROM app_sales.lines WHERE id = :k + 2 RETURNING id) DELETE FROM mir.lines m USING x WHERE m.id = x.id;
SELECT count(*) FROM app_sales.lines l JOIN app.orders o ON o.id = l.order_id WHERE o.id > 1990;
});
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client' => 3, '--jobs' => 3, '--time' => 900,
		'--protocol' => 'simple', '--file' => $script, '--define' => 'mode=replica',
		'--host' => $node->host, '--port' => $node->port, 'postgres'
	],
	'>', \$bench_out, '2>', \$bench_err);
$node->poll_query_until('postgres', 'SELECT count(*) > 2050 FROM app.orders')
  or die 'pgbench does not write';
($rc, $out, $err) = online([ '-t', 'app.orders', '-a', 'app.notes.order_ref', '-b', '100', '--sleep', '20', '--jobs', '3' ]);
is($rc, 0, 'the online migration exits 0') or diag($out, $err);
like($out, qr/copy app\.orders: done/, 'it reports its progress');
is(join(' ', sort keys %{ { map { $_ => 1 } $out =~ /^\[([^\]]+)\] step \d+ \(copy:/mg } }),
	'app.notes app.orders app_sales.lines', 'with --jobs 3, each table is copied in a session of its own');
# the writers go on after the swap, with flake ids, until stopped here
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM app.orders WHERE id > 4294967296')
  or die 'pgbench does not write after the swap';
$bench->signal('KILL');
$bench->finish;
unlike($bench_err, qr/ERROR|abort/, 'no statement of the writers failed') or diag($bench_err);
my $processed = $node->safe_psql('postgres', 'SELECT count(*) - 2000 FROM app.orders');
ok($processed > 0, "$processed orders were written meanwhile");
is(rows_of('app', 'app_sales'), rows_of('mir', 'mir'), 'every row is as the writers left it');
$node->safe_psql('postgres', q{SELECT flake_migrate('ofl.orders', also => '{ofl.notes.order_ref}')});
is(schema_of('app'), schema_of('ofl'), 'the schema is that of flake_migrate() of the copy');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM app.notes n JOIN app.orders o ON o.id = n.order_ref;
		SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'}),
	"1000\n0", 'the also => column holds the keys; nothing of the migration is left');
is( $node->safe_psql('postgres', q{
		INSERT INTO app.orders DEFAULT VALUES RETURNING id > (SELECT max(id) FROM app.orders WHERE id < 1000000)}),
	't', 'new orders get flake ids');
($rc, $out) = online([ '-t', 'app.orders' ]);
is($rc, 0, 'running it again after the end exits 0');
like($out, qr/^done: .*flake_next\(\) already/m, 'and says it is done');

# writes the log application cannot catch up with (--apply-rows 0, and
# a statement in four writes 200 rows to both tables): the command pauses
# them until its passes end, and the writers only wait
# A table $t of $n rows, and ${t}c, a child for each, by an indexed
# foreign key
sub parent_and_child
{
	my ($t, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $t (id serial PRIMARY KEY, v int NOT NULL);
		CREATE TABLE ${t}c (id bigserial PRIMARY KEY, ${t}_id int NOT NULL REFERENCES $t, v int NOT NULL);
		CREATE INDEX ON ${t}c (${t}_id);
		INSERT INTO $t (v) SELECT n FROM generate_series(1, $n) n;
		INSERT INTO ${t}c (${t}_id, v) SELECT id, id FROM $t;
	});
}
parent_and_child('pz', 5000);
my $pz_script = $node->basedir . '/pz.sql';
append_to_file($pz_script, q{
\set k random(1, 5000)
WITH p AS (INSERT INTO pz (v) SELECT n FROM generate_series(1, 200) n RETURNING id) INSERT INTO pzc (pz_id, v) SELECT id, 1 FROM p;
UPDATE pz SET v = v + 1 WHERE id = :k;
UPDATE pzc SET v = v + 1 WHERE id = :k;
DELETE FROM pzc WHERE id = :k;
});
($bench_out, $bench_err) = ('', '');
$bench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client' => 2, '--jobs' => 2, '--time' => 900,
		'--protocol' => 'prepared', '--file' => $pz_script,
		'--host' => $node->host, '--port' => $node->port, 'postgres'
	],
	'>', \$bench_out, '2>', \$bench_err);
$node->poll_query_until('postgres', 'SELECT count(*) > 6000 FROM pz')
  or die 'pgbench does not write';
($rc, $out, $err) = online([ '-t', 'pz', '--apply-rows', '0', '--pause', '50' ]);
is($rc, 0, 'the online migration under writes it cannot catch up with exits 0') or diag($out, $err);
like($out, qr/the logs do not shrink: pausing the writes to the tables for 50 ms at a time/,
	'it says it pauses the writes');
like($out, qr/writes paused \d+ times for 50 ms/, 'and how often it paused them, once the passes end');
# (a backend ends a moment after its client closes the connection)
my $sessions_gone = q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'flake_migrate_online'};
ok($node->poll_query_until('postgres', $sessions_gone), 'no session of the command is left');
my $pz_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM pz');
$node->poll_query_until('postgres', "SELECT count(*) > $pz_rows FROM pz")
  or die 'pgbench does not write after the swap';
$bench->signal('KILL');
$bench->finish;
unlike($bench_err, qr/ERROR|abort/, 'no statement of the paused writers failed') or diag($bench_err);
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pzc c LEFT JOIN pz p ON p.id = c.pz_id WHERE p.id IS NULL;
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'pzc'::regclass AND attname = 'pz_id'}),
	"0\nbigint", 'every child joins its parent, by a bigint');
($rc, undef, $err) = online([ '-t', 'pz', '--pause', '-1' ]);
is($rc, 2, 'a negative --pause: exit code 2');
like($err, qr/invalid pause "-1": a whole number of at least 0/, 'saying what it takes');

# --jobs: the sessions of the tables (above, the migration under writes
# ran so) are stopped with the program, and the program with them: a
# session killed, the program stopped by SIGINT, the program killed.
# Each time no session is left, and the next run goes on from there.
parent_and_child('jb', 600);
# the program, copying slowly (10 rows a batch, 100 ms apart), once both
# tables' sessions have copied rows (or go on from a run before): its
# handle, its output and its processes' pids.  With -q (its sessions then
# write nothing to a pipe that would break when it is gone), once both
# copies have rows more.
sub start_copying
{
	my @quiet = @_;
	my ($o, $e) = ('', '');
	my ($jb, $jbc) = @quiet
	  ? split(/\|/, $node->safe_psql('postgres',
			q{SELECT (SELECT count(*) FROM jb__flake_new), (SELECT count(*) FROM jbc__flake_new)}))
	  : ();
	my $h = IPC::Run::start(
		[ FlakeTest::online_command($node, [ '-t', 'jb', '--jobs', '2', '-b', '10', '--sleep', '100', @quiet ]) ],
		'>', \$o, '2>', \$e);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	until (!$h->pumpable || time > $deadline
		|| (@quiet
			? $node->safe_psql('postgres', "SELECT (SELECT count(*) FROM jb__flake_new) > $jb
											   AND (SELECT count(*) FROM jbc__flake_new) > $jbc") eq 't'
			: keys %{ { map { $_ => 1 } $o =~ /^\[([^\]]+)\]   copy \S+: (?:\d+ (?:of about|rows)|continuing)/mg } }
			== 2))
	{
		$h->pump_nb;
		select(undef, undef, undef, 0.05);
	}
	my $pid = $h->{KIDS}[0]{PID};
	return ($h, \$o, \$e, $pid, children_of($pid));
}
# the state and parent of the process $1 ("S", 123), from /proc; none once
# it is gone
sub process_of
{
	my ($pid) = @_;
	my $stat = eval { slurp_file("/proc/$pid/stat") } // return;
	return $stat =~ /.*\) (\S) (\d+)/s ? ($1, $2) : ();
}
# the pids of the processes whose parent is $1
sub children_of
{
	my ($parent) = @_;
	return grep { ((process_of($_))[1] // 0) == $parent } map { m{/proc/(\d+)$} } glob '/proc/[0-9]*';
}
my ($jh, $jo, $je, $jpid, @jobs) = start_copying();
is(scalar @jobs, 2, 'with --jobs 2, two sessions copy') or diag($$jo, $$je);
kill 'KILL', $jobs[0];
$jh->finish;
is($jh->result(0), 1, 'a session killed: the program stops the other and exits 1');
like($$je, qr/the session of --jobs for public\.jbc? ended by signal 9/, 'saying which session ended how')
  or diag($$je);
like($$je, qr/stopped during/, 'and the other session says it was stopped');
ok($node->poll_query_until('postgres', $sessions_gone), 'no session is left');
($jh, $jo, $je, $jpid, @jobs) = start_copying();
like($$jo, qr/continuing after key/, 'the next run continues the copies');
kill 'INT', $jpid;
$jh->finish;
is($jh->result(0), 5, 'the program stopped by SIGINT: exit 5');
like($$je, qr/stopped during the steps of the tables/, 'saying what it stopped') or diag($$je);
ok($node->poll_query_until('postgres', $sessions_gone), 'its sessions are stopped with it');
($jh, $jo, $je, $jpid, @jobs) = start_copying('-q');
kill 'KILL', $jpid;
$jh->finish;
ok($node->poll_query_until('postgres', $sessions_gone), 'the program killed: its sessions stop');
# (a process ended may stay a zombie until its new parent reaps it)
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
my $running = sub { grep { my ($state) = process_of($_); defined $state && $state ne 'Z' } @jobs };
select(undef, undef, undef, 0.1) while $running->() && time < $deadline;
ok(!$running->(), 'and their processes end');
($rc, $out, $err) = online([ '-t', 'jb', '--jobs', '2' ]);
is($rc, 0, 'the next run finishes') or diag($out, $err);
like($out, qr/copy public\.jbc?: done, [1-9]\d* rows/,
	'copying the rows left: the killed program\'s sessions stopped copying with it');
is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT c.id), sum(c.v) FROM jbc c JOIN jb p ON p.id = c.jb_id;
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'jbc'::regclass AND attname = 'jb_id'}),
	"600|600|180300\nbigint", 'every row copied once, by a bigint');
($rc, undef, $err) = online([ '-t', 'jb', '--jobs', '0' ]);
is($rc, 2, '--jobs 0: exit code 2');
like($err, qr/invalid jobs "0": a whole number of at least 1/, 'saying what it takes');

# an identity key to ulidflake, the command stopped in each phase by
# SIGINT or SIGKILL while it waits for a lock that another session holds,
# resumed each time, then finished
$node->safe_psql('postgres', q{
	CREATE TABLE tags (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text);
	CREATE INDEX ON tags (name);
	CREATE TABLE tagged (tag_id int REFERENCES tags, n int PRIMARY KEY);
	INSERT INTO tags (name) SELECT 't' || n FROM generate_series(1, 3000) n;
	INSERT INTO tagged SELECT id, id FROM tags;
});
my $tags_before = $node->safe_psql('postgres',
	q{SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id});
my $usable = q{
	WITH t AS (INSERT INTO tags (name) VALUES ('new') RETURNING id)
	INSERT INTO tagged SELECT id, (SELECT least(min(n), 0) - 1 FROM tagged) FROM t RETURNING 1};
my @ulid = ('-t', 'tags', '-g', 'ulidflake_next');
my $signal = 'KILL';
for my $stop (
	[ create   => undef,      'LOCK tags IN ROW EXCLUSIVE MODE' ],
	[ copy     => 'create',   'LOCK tags__flake_new IN SHARE MODE' ],
	[ apply    => 'copy',     'LOCK tags__flake_new IN SHARE MODE' ],
	[ index    => 'apply',    'LOCK tags__flake_new IN ROW EXCLUSIVE MODE' ],
	[ analyze  => 'index',    'LOCK tags__flake_new IN SHARE MODE' ],
	[ swap     => 'analyze',  'LOCK tags IN ACCESS SHARE MODE' ],
	[ validate => 'swap',     'LOCK tagged IN SHARE MODE' ])
{
	my ($phase, $before, $lock) = @$stop;
	if (defined $before)
	{
		($rc, $out, $err) = online([ @ulid, '--until', $before ]);
		is($rc, 0, "resumed up to $before") or diag($out, $err);
	}
	my $release = hold($lock);
	my ($h, $o, $e) = start_waiting($phase, @ulid);
	like($$o, qr/\($phase: [^\n]*\n(  (lock not free|copy .*: continuing)[^\n]*\n)*\z/, "the command waits in $phase");
	$signal = $signal eq 'INT' ? 'KILL' : 'INT';
	$h->signal($signal);
	eval { $h->finish };
	is($h->result, 5, "SIGINT in $phase: exits 5") if $signal eq 'INT';
	like($$e, qr/stopped during .*Run the same command again/s, 'and says how to go on') if $signal eq 'INT';
	$release->();
	is($node->safe_psql('postgres', $usable), '1', "after SIG$signal in $phase the tables are in use");
}
($rc, $out, $err) = online([@ulid]);
is($rc, 0, 'resumed to the end') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id
		WHERE g.n > 0}),
	$tags_before, 'every row as it was');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) || ' ' || attidentity::text FROM pg_attribute WHERE attrelid = 'tags'::regclass AND attname = 'id'
		UNION ALL SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'tagged'::regclass AND attname = 'tag_id'
		UNION ALL SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'tags'::regclass
		UNION ALL SELECT string_agg(conname || ' ' || convalidated, ',') FROM pg_constraint WHERE conrelid = 'tagged'::regclass AND contype = 'f'}),
	"ulidflake \nulidflake\nulidflake_next()\ntagged_tag_id_fkey true",
	'tags.id is a ulidflake without identity, tagged.tag_id too, its foreign key validated');

# a crash of the server while the command copies, and while it waits to
# swap: it loses its connection (exit 1), the server recovers, the tables
# are in use; resumed; a column added meanwhile; then undone: the schema as
# before
$node->safe_psql('postgres', q{
	CREATE TABLE und (id serial PRIMARY KEY, v int);
	CREATE TABLE und_child (und_id int NOT NULL REFERENCES und, k int PRIMARY KEY);
	INSERT INTO und (v) SELECT n FROM generate_series(1, 500) n;
	INSERT INTO und_child SELECT id, id FROM und;
});
# pg_dump of some tables, without the lines that change at every run
sub dump_of
{
	my ($pattern) = @_;
	return join("\n", grep { !/^\\(un)?restrict / } split /\n/, `$pg_dump --schema-only -t '$pattern' '$db'`);
}
my $und_schema = dump_of('und*');
my $und_usable = q{WITH t AS (INSERT INTO und (v) VALUES (0) RETURNING id) INSERT INTO und_child SELECT id, -id FROM t RETURNING 1};
for my $stop ([ copy => 'create', 'LOCK und__flake_new IN SHARE MODE' ], [ swap => 'analyze', 'LOCK und IN ACCESS SHARE MODE' ])
{
	my ($phase, $before, $lock) = @$stop;
	($rc, $out, $err) = online([ '-t', 'und', '--until', $before ]);
	is($rc, 0, "und up to $before") or diag($out, $err);
	my $release = hold($lock);
	my ($h, $o, $e) = start_waiting($phase, '-t', 'und');
	like($$o, qr/\($phase: /, "the command waits in $phase");
	$node->stop('immediate');
	eval { $h->finish };
	$release->();
	is($h->result, 1, "a server crash in $phase: exits 1");
	like($$e, qr/connection lost.*run the same command again/s, 'and says how to go on');
	$node->start;
	is($node->safe_psql('postgres', $und_usable), '1', "after the crash in $phase the tables are in use");
}
# a column added meanwhile: the swap refuses, the tables as they are
$node->safe_psql('postgres', 'ALTER TABLE und ADD COLUMN w int');
($rc, $out, $err) = online([ '-t', 'und' ]);
is($rc, 3, 'a column added during the migration: refused');
like($err, qr/public\.und: its columns or checks changed while it was copied/, 'and says why');
is($node->safe_psql('postgres', $und_usable), '1', 'the tables are in use');
$node->safe_psql('postgres', 'ALTER TABLE und DROP COLUMN w');
# the log trigger disabled meanwhile: the swap refuses
$node->safe_psql('postgres', 'ALTER TABLE und_child DISABLE TRIGGER zz_flake_migrate_online_log');
($rc, $out, $err) = online([ '-t', 'und' ]);
is($rc, 1, 'the log trigger disabled during the migration: the swap refuses');
like($err, qr/the log trigger of public\.und_child was disabled or dropped during the copy/, 'and says why');
($rc, $out, $err) = online([ '-t', 'und', '--undo' ]);
is($rc, 0, 'undone') or diag($out, $err);
$node->safe_psql('postgres', 'DELETE FROM und_child WHERE k < 0; DELETE FROM und WHERE v = 0');
is(dump_of('und*'), $und_schema, 'the schema is as before');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'und%\_\_flake\_%'}),
	'0', 'no copy or log is left');

# a bigint key changes no type: only the swap, which detaches the
# sequence; and randflake_next, widening an integer key
$node->safe_psql('postgres', q{
	CREATE TABLE wide (id bigserial PRIMARY KEY); CREATE TABLE wide_child (wide_id bigint REFERENCES wide, k int PRIMARY KEY);
	INSERT INTO wide SELECT FROM generate_series(1, 100); INSERT INTO wide_child SELECT id, id FROM wide;
	CREATE TABLE rnd (id serial PRIMARY KEY, v int); INSERT INTO rnd (v) SELECT n FROM generate_series(1, 300) n;
});
($rc, $out, $err) = online([ '-t', 'wide', '--dry-run' ]);
is(join(',', $out =~ /^step \d+ \((\w+):/mg), 'swap', 'a bigint key: the plan is the swap alone');
($rc, $out, $err) = online([ '-t', 'wide' ]);
is($rc, 0, 'a bigint key migrated online') or diag($out, $err);
($rc, $out, $err) = online([ '-t', 'rnd', '-g', 'randflake_next' ]);
is($rc, 0, 'randflake_next online') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid IN ('wide'::regclass, 'rnd'::regclass) ORDER BY adrelid::regclass::text;
		SELECT count(*) FROM pg_class WHERE relname IN ('wide_id_seq', 'rnd_id_seq');
		SELECT count(*), sum(v) FROM rnd}),
	"randflake_next()\nflake_next()\n0\n300|45150", 'both have their generator, no sequence, every row');

# what the checks refuse: what flake_migrate() refuses, with the same
# blocked text, and what only the online path cannot do
$node->safe_psql('postgres', q{
	CREATE TABLE viewed (id serial PRIMARY KEY); CREATE VIEW viewed_v AS SELECT id FROM viewed;
	CREATE TABLE sec (id serial PRIMARY KEY); ALTER TABLE sec ENABLE ROW LEVEL SECURITY;
});
($rc, undef, $err) = online([ '-t', 'viewed' ]);
is($rc, 3, 'a view on the key: refused with exit code 3');
my $offline = $node->safe_psql('postgres',
	q{SELECT detail FROM flake_migrate('viewed', dry_run => true) WHERE action = 'blocked'});
is($err, "blocked: $offline\n", 'with the blocked row of flake_migrate()');
($rc, undef, $err) = online([ '-t', 'sec' ]);
is($rc, 3, 'row level security: refused');
like($err, qr/blocked: objects that the online path cannot carry.*public\.sec: row level security/, 'and why');
$node->safe_psql('postgres', 'CREATE TABLE heap (v int); CREATE TABLE ref (id serial PRIMARY KEY, w int)');
$node->safe_psql('postgres', 'ALTER TABLE heap ADD COLUMN ref_id int REFERENCES ref');
($rc, undef, $err) = online([ '-t', 'ref' ]);
is($rc, 3, 'a referencing table without a key for batches: refused');
like($err, qr/blocked: tables without a key to copy them in batches.*Tables: public\.heap\b/, 'and which');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'}),
	'0', 'nothing was changed by the refused runs');

# a non-owner is refused before anything runs
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO mallory;
	CREATE TABLE owned (id serial PRIMARY KEY);
});
($rc, undef, $err) = online([ '-t', 'owned' ], user => 'mallory');
is($rc, 1, 'a non-owner: exit code 1');
like($err, qr/must connect as the owner of table public\.owned, \S+ \(SQLSTATE 42501\)/, 'must be owner');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgname = 'zz_flake_migrate_online_log'}),
	'0', 'and nothing changed');

# the log trigger writes only into a table of its own table's owner: a
# role cannot point it at another role's table
$node->safe_psql('postgres', q{
	CREATE TABLE victim_log (k int);
	GRANT CREATE ON SCHEMA public TO mallory;
	SET ROLE mallory;
	CREATE TABLE mine (id int PRIMARY KEY);
	CREATE TRIGGER t AFTER INSERT ON mine FOR EACH ROW EXECUTE FUNCTION flake_internal.online_log('public.victim_log', 'id');
});
($rc, undef, $err) = $node->psql('postgres', 'SET ROLE mallory; INSERT INTO mine VALUES (1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'a log of another owner is refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM victim_log'), '0', 'and not written');

# a superuser is refused on another role's table: the table's code would
# run with its rights (an owner's index function could RESET ROLE after a
# SET ROLE), so the migration connects as the owner
$node->safe_psql('postgres', q{
	CREATE ROLE eve LOGIN;
	CREATE TABLE eves (id serial PRIMARY KEY);
	ALTER TABLE eves OWNER TO eve;
});
($rc, undef, $err) = online([ '-t', 'eves' ]);
is($rc, 1, 'a superuser on another role\'s table: exit code 1');
like($err, qr/must connect as the owner of table public\.eves, eve \(SQLSTATE 42501\)/, 'connect as the owner');
($rc, undef, $err) = online([ '-t', 'eves', '--until', 'create' ], user => 'eve');
is($rc, 3, 'the owner without CREATE on the schema: refused');
like($err, qr/public\.eves: no CREATE privilege on its schema/, 'the copy needs it');
$node->safe_psql('postgres', 'GRANT CREATE ON SCHEMA public TO eve');
($rc, undef, $err) = online([ '-t', 'eves', '--until', 'create' ], user => 'eve');
is($rc, 0, 'the owner connected as itself migrates it') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'eves'::regclass AND tgname = 'zz_flake_migrate_online_log'}),
	'1', 'and it is under way');
($rc, undef, $err) = $node->psql('postgres', q{SELECT flake_internal.online_swap('eves', 'id', 'flake_next', NULL)});
like($err, qr/must be logged in as the owner of public\.eves/, 'the swap called by a superuser is refused too');
# ... and to the end, with the extension's helpers (in flake_internal)
# called with the owner's rights
$node->safe_psql('postgres', 'INSERT INTO eves SELECT FROM generate_series(1, 3)');
($rc, undef, $err) = online([ '-t', 'eves' ], user => 'eve');
is($rc, 0, 'the owner finishes it') or diag($err);
is($node->safe_psql('postgres', q{
	SELECT format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid), (SELECT count(*) FROM eves)
	FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE a.attrelid = 'eves'::regclass AND a.attname = 'id'}),
	'bigint|flake_next()|3', 'eves.id is a bigint from flake_next(), every row kept');

($rc, $out) = online([ '--help' ]);
is($rc, 0, '--help exits 0');
like($out, qr/Exit codes: 0 done/, '--help lists the exit codes');
like($out, qr/--pause=MS/, '--help shows --pause');
($rc) = online([ '--bogus' ]);
is($rc, 2, 'a bad option: exit code 2');
($rc, undef, $err) = online([ '-t', 'eves', '-g', 'serial_next' ]);
is($rc, 2, 'an unknown generator: exit code 2');
like($err, qr/invalid generator "serial_next": flake_next, randflake_next or ulidflake_next/, 'naming the generators');

$node->stop;
done_testing();
