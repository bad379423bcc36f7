# The online migration (flake_migrate_online, sql/parts/migrate_online.sql):
# a serial key with a child in another schema (a plain and a composite
# foreign key) and an also => column, migrated while pgbench writes from
# three clients, then every row and the schema compared with flake_migrate()
# of a copy; an identity key to ulidflake; the command stopped after each
# phase and by signals, then resumed; an unfinished migration undone; a
# dry run; what the checks refuse; a non-owner refused.
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
my $client = $node->config_data('--bindir') . '/flake_migrate_online';
my $db = $node->connstr('postgres');
my $pg_dump = $node->config_data('--bindir') . '/pg_dump';

# The command, as the user postgres (or with user => ROLE): exit code,
# stdout, stderr.
sub online
{
	my ($args, %opt) = @_;
	my ($out, $err) = ('', '');
	my $conn = $db . (defined $opt{user} ? " user=$opt{user}" : '');
	IPC::Run::run([ $client, '-d', $conn, @$args ], '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# Tables in schema $s and $s_sales, with $n orders.
sub make_tables
{
	my ($s, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE SCHEMA $s; CREATE SCHEMA ${s}_sales;
		CREATE TABLE $s.orders (id serial PRIMARY KEY, tenant int NOT NULL DEFAULT 1,
								placed timestamptz NOT NULL DEFAULT '2025-01-01', UNIQUE (tenant, id));
		COMMENT ON COLUMN $s.orders.id IS 'the order';
		CREATE TABLE ${s}_sales.lines (id bigserial PRIMARY KEY,
			order_id int NOT NULL REFERENCES $s.orders ON DELETE CASCADE,
			tenant int NOT NULL DEFAULT 1, qty int NOT NULL DEFAULT 1,
			FOREIGN KEY (tenant, order_id) REFERENCES $s.orders (tenant, id));
		CREATE INDEX ON ${s}_sales.lines (order_id DESC) INCLUDE (qty);
		CREATE TABLE $s.notes (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, order_ref int, body text);
		INSERT INTO $s.orders (tenant) SELECT 1 + n % 3 FROM generate_series(1, $n) n;
		INSERT INTO ${s}_sales.lines (order_id, tenant, qty) SELECT id, tenant, l FROM $s.orders, generate_series(1, 2) l;
		INSERT INTO $s.notes (order_ref, body) SELECT id, 'n' || id FROM $s.orders WHERE id % 2 = 0;
	});
}

# A checksum of every column of the rows that were there before, by name,
# so that the order of the columns does not count.
sub rows_of
{
	my ($s, $max) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', id, tenant, placed), ',' ORDER BY id))
				FROM $s.orders WHERE id <= $max)
			|| ' ' || (SELECT md5(string_agg(concat_ws('|', id, order_id, tenant, qty), ',' ORDER BY id))
					   FROM ${s}_sales.lines WHERE order_id <= $max)
			|| ' ' || (SELECT md5(string_agg(concat_ws('|', id, order_ref, body), ',' ORDER BY id))
					   FROM $s.notes WHERE order_ref <= $max)});
}

# pg_dump --schema-only of two schemas, with their names made neutral and
# each line on its own, sorted: the online path adds the new columns at
# the end of a table, so only the order of the columns may differ.
sub schema_of
{
	my ($s) = @_;
	my $dump = `$pg_dump --schema-only -n $s -n ${s}_sales '$db'`;
	$dump =~ s/\b${s}_sales\b/S_sales/g;
	$dump =~ s/\b$s\b/S/g;
	return join("\n", sort map { s/,$//r } grep { /\S/ && !/^--|^\\(un)?restrict / } split /\n/, $dump);
}

make_tables('app', 2000);
make_tables('ofl', 2000);
my $before = rows_of('app', 2000);
is(rows_of('ofl', 2000), $before, 'the copy has the same rows');

# a dry run: every step with its lock, nothing changed
my ($rc, $out, $err) = online([ '-t', 'app.orders', '-a', 'app.notes.order_ref', '--dry-run' ]);
is($rc, 0, 'dry run exits 0');
my $steps = () = $out =~ /^step \d+/mg;
my $locks = () = $out =~ /^  lock: /mg;
ok($steps >= 15 && $steps == $locks, "dry run prints $steps steps, each with its lock");
like($out, qr/swap.*\n  lock: ACCESS EXCLUSIVE on every table/, 'the swap and its lock are shown');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_attribute WHERE attname LIKE '%\_\_flake'}),
	'0', 'the dry run changed nothing');

# the online migration while three clients write: orders with lines,
# updates of those lines, reads
my $script = $node->basedir . '/writes.sql';
append_to_file($script, q{
\set t random(1, 3)
BEGIN;
WITH o AS (INSERT INTO app.orders (tenant) VALUES (:t) RETURNING id, tenant)
INSERT INTO app_sales.lines (order_id, tenant) SELECT id, tenant FROM o;
UPDATE app_sales.lines SET qty = qty + 1 WHERE id = currval('app_sales.lines_id_seq');
COMMIT;
SELECT count(*) FROM app_sales.lines l JOIN app.orders o ON o.id = l.order_id WHERE o.id > 1990;
});
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client' => 3, '--jobs' => 3, '--time' => 900,
		'--protocol' => 'simple', '--file' => $script,
		'--host' => $node->host, '--port' => $node->port, 'postgres'
	],
	'>', \$bench_out, '2>', \$bench_err);
$node->poll_query_until('postgres', 'SELECT count(*) > 2050 FROM app.orders')
  or die 'pgbench does not write';
($rc, $out, $err) = online([ '-t', 'app.orders', '-a', 'app.notes.order_ref', '-b', '100', '--sleep', '20' ]);
is($rc, 0, 'the online migration exits 0') or diag($out, $err);
like($out, qr/backfill app\.orders: done/, 'it reports its progress');
# the writers go on after the swap, with flake ids, until stopped here
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM app.orders WHERE id > 4294967296')
  or die 'pgbench does not write after the swap';
$bench->signal('KILL');
$bench->finish;
unlike($bench_err, qr/ERROR|abort/, 'no statement of the writers failed') or diag($bench_err);
my $processed = $node->safe_psql('postgres', 'SELECT count(*) - 2000 FROM app.orders');

is(rows_of('app', 2000), $before, 'the rows that were there are unchanged');
$node->safe_psql('postgres', q{SELECT flake_migrate('ofl.orders', also => '{ofl.notes.order_ref}')});
is(rows_of('ofl', 2000), $before, 'as after flake_migrate() of the copy');
is( $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM app.orders) - 2000,
			   (SELECT count(*) FROM app_sales.lines l JOIN app.orders o ON o.id = l.order_id AND o.tenant = l.tenant) - 4000,
			   (SELECT count(*) FROM app_sales.lines WHERE qty <> 2 AND order_id > 2000)}),
	"$processed|$processed|0", "the $processed orders written meanwhile are there, each with its line, updated");
is(schema_of('app'), schema_of('ofl'), 'the schema is that of flake_migrate() but for the order of columns');
is( $node->safe_psql('postgres', q{
		INSERT INTO app.orders DEFAULT VALUES RETURNING id > (SELECT max(id) FROM app.orders WHERE id < 1000000)}),
	't', 'new orders get flake ids');
($rc, $out) = online([ '-t', 'app.orders' ]);
is($rc, 0, 'running it again after the end exits 0');
like($out, qr/^done: .*flake_next\(\) already/m, 'and says it is done');

# an identity key to ulidflake, stopped after each phase, then by SIGINT
# and by SIGKILL during the backfill, then by a crash of the server, then
# finished
$node->safe_psql('postgres', q{
	CREATE TABLE tags (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text);
	CREATE TABLE tagged (tag_id int REFERENCES tags, n int PRIMARY KEY);
	INSERT INTO tags (name) SELECT 't' || n FROM generate_series(1, 3000) n;
	INSERT INTO tagged SELECT id, id FROM tags;
});
my $tags_before = $node->safe_psql('postgres',
	q{SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id});
my $usable = q{
	WITH t AS (INSERT INTO tags (name) VALUES ('new') RETURNING id)
	INSERT INTO tagged SELECT id, -id FROM t RETURNING 1};
for my $phase (qw(expand backfill analyze index constrain validate))
{
	($rc, $out, $err) = online([ '-t', 'tags', '-g', 'ulidflake_next', '--until', $phase ]);
	is($rc, 0, "stopped after $phase") or diag($out, $err);
	is($node->safe_psql('postgres', $usable), '1', "after $phase the tables are in use");
	last if $phase eq 'backfill';
}
for my $signal (qw(INT KILL))
{
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start([ $client, '-d', $db, '-t', 'tags', '-g', 'ulidflake_next', '-b', '10', '--sleep', '100' ],
		'>', \$o, '2>', \$e);
	$h->pump while $o !~ /\(backfill: / && $h->pumpable;
	$h->signal($signal);
	$h->finish;
	is($h->result, 5, 'SIGINT: exits 5') if $signal eq 'INT';
	like($e, qr/stopped during .*Run the same command again/s, 'and says how to go on') if $signal eq 'INT';
	is($node->safe_psql('postgres', $usable), '1', "after SIG$signal the tables are in use");
}
# a crash of the server during the backfill: the command loses its
# connection (exit 1), the server recovers, the tables are in use
{
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start([ $client, '-d', $db, '-t', 'tags', '-g', 'ulidflake_next', '-b', '10', '--sleep', '100' ],
		'>', \$o, '2>', \$e);
	$h->pump while $o !~ /\(backfill: / && $h->pumpable;
	$node->stop('immediate');
	$h->finish;
	is($h->result, 1, 'a server crash: exits 1');
	like($e, qr/connection lost.*run the same command again/s, 'and says how to go on');
	$node->start;
	is($node->safe_psql('postgres', $usable), '1', 'after the crash the tables are in use');
}
for my $phase (qw(analyze index constrain validate))
{
	($rc, $out, $err) = online([ '-t', 'tags', '-g', 'ulidflake_next', '--until', $phase ]);
	is($rc, 0, "resumed, stopped after $phase") or diag($out, $err);
	is($node->safe_psql('postgres', $usable), '1', "after $phase the tables are in use");
}
($rc, $out, $err) = online([ '-t', 'tags', '-g', 'ulidflake_next' ]);
is($rc, 0, 'resumed to the end') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id
		WHERE g.n > 0}),
	$tags_before, 'every row as it was');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) || ' ' || attidentity::text FROM pg_attribute WHERE attrelid = 'tags'::regclass AND attname = 'id'
		UNION ALL SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'tagged'::regclass AND attname = 'tag_id'
		UNION ALL SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'tags'::regclass}),
	"ulidflake \nulidflake\nulidflake_next()", 'tags.id is a ulidflake without identity, tagged.tag_id too');

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

# undo: stopped after validate, undone, the schema as before
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
($rc) = online([ '-t', 'und', '--until', 'validate' ]);
is($rc, 0, 'und prepared up to the swap');
($rc, $out, $err) = online([ '-t', 'und', '--undo' ]);
is($rc, 0, 'undone') or diag($out, $err);
is(dump_of('und*'), $und_schema, 'the schema is as before');

# what the checks refuse: what flake_migrate() refuses, with the same
# blocked text, and what only the online path cannot do
$node->safe_psql('postgres', q{
	CREATE TABLE viewed (id serial PRIMARY KEY); CREATE VIEW viewed_v AS SELECT id FROM viewed;
	CREATE TABLE trig (id serial PRIMARY KEY, at timestamptz);
	CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.at := now(); RETURN NEW; END';
	CREATE TRIGGER touch BEFORE UPDATE ON trig FOR EACH ROW EXECUTE FUNCTION touch();
});
($rc, undef, $err) = online([ '-t', 'viewed' ]);
is($rc, 3, 'a view on the key: refused with exit code 3');
my $offline = $node->safe_psql('postgres',
	q{SELECT detail FROM flake_migrate('viewed', dry_run => true) WHERE action = 'blocked'});
is($err, "blocked: $offline\n", 'with the blocked row of flake_migrate()');
($rc, undef, $err) = online([ '-t', 'trig' ]);
is($rc, 3, 'an UPDATE trigger: refused');
like($err, qr/blocked: the batches that fill the new columns would run triggers.*trigger touch on public\.trig\b/, 'and why');
$node->safe_psql('postgres', 'CREATE TABLE heap (v int); CREATE TABLE ref (id serial PRIMARY KEY, w int)');
$node->safe_psql('postgres', 'ALTER TABLE heap ADD COLUMN ref_id int REFERENCES ref');
($rc, undef, $err) = online([ '-t', 'ref' ]);
is($rc, 3, 'a referencing table without a key for batches: refused');
like($err, qr/blocked: tables without a key to fill them in batches.*Tables: public\.heap\b/, 'and which');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
								   WHERE a.attname LIKE '%\_\_flake' AND NOT a.attisdropped AND c.relkind = 'r'}),
	'0', 'nothing was changed by the refused runs');

# a non-owner is refused before anything runs
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO mallory;
	CREATE TABLE owned (id serial PRIMARY KEY);
});
($rc, undef, $err) = online([ '-t', 'owned' ], user => 'mallory');
is($rc, 1, 'a non-owner: exit code 1');
like($err, qr/must connect as the owner of table public\.owned, \S+ \(SQLSTATE 42501\)/, 'must be owner');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgname = 'zz_flake_migrate_sync'}),
	'0', 'and nothing changed');

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
($rc, undef, $err) = online([ '-t', 'eves', '--until', 'expand' ], user => 'eve');
is($rc, 0, 'the owner connected as itself migrates it') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'eves'::regclass AND tgname = 'zz_flake_migrate_sync'}),
	'1', 'and it is under way');
# ... and to the end, with the extension's helpers (in flake_internal)
# called with the owner's rights (the copies of its indexes need CREATE on
# the table's schema, as any CREATE INDEX)
$node->safe_psql('postgres', 'INSERT INTO eves SELECT FROM generate_series(1, 3); GRANT CREATE ON SCHEMA public TO eve');
($rc, undef, $err) = online([ '-t', 'eves' ], user => 'eve');
is($rc, 0, 'the owner finishes it: swap and cleanup') or diag($err);
is($node->safe_psql('postgres', q{
	SELECT format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid), (SELECT count(*) FROM eves)
	FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE a.attrelid = 'eves'::regclass AND a.attname = 'id'}),
	'bigint|flake_next()|3', 'eves.id is a bigint from flake_next(), every row kept');

($rc, $out) = online([ '--help' ]);
is($rc, 0, '--help exits 0');
like($out, qr/Exit codes: 0 done/, '--help lists the exit codes');
($rc) = online([ '--bogus' ]);
is($rc, 2, 'a bad option: exit code 2');

$node->stop;
done_testing();
