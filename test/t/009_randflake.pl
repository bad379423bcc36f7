# randflake_next() on a real server: the secret (unset, set by ALTER SYSTEM
# and reload, malformed, never in the log), 4 pgbench clients x 200k ids
# into one unique index, ids of each node strictly increasing, and a node
# set smaller than the sessions.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $secret = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
my $other = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
my $clients = 4;
my $per_client = 200_000;
my $batch = 1000;

my $node = PostgreSQL::Test::Cluster->new('randflake');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

# no secret yet
my ($ret, $stdout, $stderr) =
  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT randflake_next()");
isnt($ret, 0, 'randflake_next() fails without a secret');
like($stderr, qr/ERROR:  55000: flake.randflake_secret is not set/, '55000 names the setting');
like($stderr, qr/HINT:  .*postgresql.conf.*\nflake.randflake_secret_file = '\/path\/to\/key'\nflake.randflake_secret = '<32 hex digits>'\nAvoid ALTER SYSTEM/s,
	'the hint shows the postgresql.conf lines and advises against ALTER SYSTEM, as the README does');

# set by ALTER SYSTEM and a reload
$node->safe_psql('postgres', "ALTER SYSTEM SET flake.randflake_secret = '$secret'");
$node->reload;
$node->poll_query_until('postgres', 'SHOW flake.randflake_secret', $secret)
  or die 'the secret did not arrive';
my $id = $node->safe_psql('postgres', 'SELECT randflake_next()');
is( $node->safe_psql('postgres',
		"SELECT randflake_decode($id) = randflake_decode($id, decode('$secret', 'hex'))"),
	't', 'ids are encrypted with the secret set by ALTER SYSTEM');

# from here on in postgresql.conf, which ALTER SYSTEM would override
$node->safe_psql('postgres', 'ALTER SYSTEM RESET flake.randflake_secret');
$node->append_conf('postgresql.conf', "flake.randflake_secret = '$secret'\n");
$node->reload;

# a malformed value on reload is refused, and the old secret stays
$node->append_conf('postgresql.conf', "flake.randflake_secret = 'x$other'\n");
$node->reload;
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_file_settings WHERE name = 'flake.randflake_secret' AND error IS NOT NULL")
  or die 'the malformed secret was not read';
is($node->safe_psql('postgres', 'SHOW flake.randflake_secret'), $secret, 'a malformed secret is refused');

# a change of secret takes effect in new and running sessions
my $session = $node->background_psql('postgres');
$session->query_safe('SELECT randflake_next()');
$node->append_conf('postgresql.conf', "flake.randflake_secret = '$other'\n");
$node->reload;
$node->poll_query_until('postgres', 'SHOW flake.randflake_secret', $other)
  or die 'the new secret did not arrive';
$id = $session->query_safe('SELECT randflake_next()');
is( $node->safe_psql('postgres',
		"SELECT randflake_decode($id) = randflake_decode($id, decode('$other', 'hex'))"),
	't', 'a running session encrypts with the reloaded secret');
$session->quit;

# (the cluster logs every statement, and this test's own statements name
# the secrets: those lines are left out)
my $log = join("\n", grep { !/ statement: / } split /\n/, slurp_file($node->logfile));
like($log, qr/invalid value for parameter "flake.randflake_secret"/, 'the log reports the malformed secret');
unlike($log, qr/$secret|$other/i, 'no secret, valid or malformed, is in the server log');

# concurrency: no duplicates, one node per client, per node increasing
$node->safe_psql('postgres', q{
	CREATE TABLE ids (n bigserial, id bigint NOT NULL);
	CREATE UNIQUE INDEX ids_id ON ids (id);
});
my $script = $node->basedir . '/insert.sql';
append_to_file($script,
	"INSERT INTO ids (id) SELECT randflake_next() FROM generate_series(1, $batch);\n");
$node->command_ok(
	[
		'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => $clients,
		'--transactions' => $per_client / $batch, '--file' => $script, 'postgres'
	],
	"$clients clients x $per_client randflake_next() into one unique index");
is( $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'),
	join('|', $clients * $per_client, $clients * $per_client), 'every id stored and distinct');
is(randflake_backwards($node, 'ids'), '0', 'ids of each node strictly increasing');

# more generating sessions than nodes: the third shares a node; once every
# holder of a node has let go, it is leased again and its new holder
# continues above the old holders' ids
$node->append_conf('postgresql.conf', "flake.randflake_nodes = '7-8'\n");
$node->restart;
my $s1 = $node->background_psql('postgres');
my $s2 = $node->background_psql('postgres');
$s1->query_safe('CREATE TABLE handover AS SELECT 1 AS holder, randflake_next() AS id FROM generate_series(1, 1000)');
$s2->query_safe('SELECT randflake_next()');
is($node->safe_psql('postgres',
		q{SELECT string_agg(node || ':' || holders, ',' ORDER BY node) FROM flake_leases WHERE generator = 'randflake_next'}),
	'7:1,8:1', 'both nodes of flake.randflake_nodes are leased');
($ret, $stdout, $stderr) =
  $node->psql('postgres', "SELECT count(DISTINCT randflake_next()) FROM generate_series(1, 1000)");
is($stdout, '1000', 'a third session generates on a shared node instead of failing');
my $s1_node = $node->safe_psql('postgres', 'SELECT DISTINCT (randflake_decode(id)).node FROM handover');
$s1->quit;
$node->poll_query_until('postgres', qq{SELECT count(*) = 0 FROM flake_leases WHERE node = $s1_node AND generator = 'randflake_next'})
  or die 'the first session did not let go of its node';
$node->safe_psql('postgres', 'INSERT INTO handover SELECT 2, randflake_next() FROM generate_series(1, 1000)');
is( $node->safe_psql('postgres', q{
		SELECT count(DISTINCT d.node), min(pos) FILTER (WHERE holder = 2) > max(pos) FILTER (WHERE holder = 1)
		FROM handover, randflake_decode(id) d,
			 LATERAL (SELECT extract(epoch FROM d.ts)::bigint << 17 | d.sequence AS pos) p}),
	'1|t', 'the released node is leased again, and its ids continue above the old holder\'s');
$s2->quit;

$node->stop;
done_testing();
