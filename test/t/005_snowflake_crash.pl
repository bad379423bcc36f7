# kill -9 of a backend that holds a lease, while ids are being generated:
# the server restarts, generation continues, no id repeats, and every node
# continues above its ids from before the crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = PostgreSQL::Test::Cluster->new('snowflake_crash');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nrestart_after_crash = on\n");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL DEFAULT 1);
});

my $script = $node->basedir . '/insert.sql';
append_to_file($script,
	"INSERT INTO ids (id) SELECT flake_next() FROM generate_series(1, 100);\n");

my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client' => 4, '--jobs' => 4,
		'--time' => 60, '--file' => $script,
		'--host' => $node->host, '--port' => $node->port, 'postgres'
	],
	'>', \$out, '2>', \$err);

$node->poll_query_until('postgres', 'SELECT count(*) >= 20000 FROM ids')
  or die 'no ids generated';
my $victim = $node->safe_psql('postgres',
	'SELECT pid FROM flake_leases ORDER BY node LIMIT 1');
ok($victim > 0, "backend $victim holds a lease");
kill 'KILL', $victim;

$pgbench->finish;
like($err, qr/aborted|terminat|server closed/i, 'the generating clients lost their connections');

back_after_crash($node);
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through crash recovery');

$node->safe_psql('postgres', q{
	INSERT INTO ids (id, phase) SELECT flake_next(), 2 FROM generate_series(1, 50000);
	INSERT INTO ids (id, phase) SELECT flake_next(n % 4), 2 FROM generate_series(1, 20000) n;
});

is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE phase = 2), count(*) = count(DISTINCT id) FROM ids}),
	'70000|t', 'generation continues after the crash, no id repeated');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM ids after
		WHERE phase = 2 AND after.id <= (SELECT max(id) FROM ids WHERE phase = 1)}),
	'0', 'ids after the crash are above every id from before it');

$node->stop;
done_testing();
