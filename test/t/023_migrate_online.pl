# The online migration (flake_migrate_online, sql/parts/online/) under
# writes: a serial key with a child in another schema (a plain and a
# composite foreign key) and an also => column, migrated while pgbench
# writes from three clients, then every row compared with a mirror the
# clients wrote too and the schema with flake_migrate() of a copy; a dry
# run; writes the log application cannot catch up with, paused.  Stopping
# and resuming it: 027; keys, refusals and owners: 028.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = online_server('online');
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
online_parent_and_child($node, 'pz', 5000);
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
ok($node->poll_query_until('postgres', $online_sessions_gone), 'no session of the command is left');
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


$node->stop;
done_testing();
