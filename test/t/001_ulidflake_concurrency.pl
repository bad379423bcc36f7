# Concurrent ulidflake generation with flake preloaded: many sessions, one
# unique index, no violations; each session's values strictly increasing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $clients = 4;
my $per_client = 200_000;
my $batch = 1000;

my $node = PostgreSQL::Test::Cluster->new('ulid_concurrency');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, client int NOT NULL, v ulidflake NOT NULL);
	CREATE UNIQUE INDEX ids_v ON ids (v);
});

my $script = $node->basedir . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO ids (client, v) SELECT :client_id, ulidflake_next() FROM generate_series(1, $batch);\n");

$node->command_ok(
	[
		'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => $clients,
		'--transactions' => $per_client / $batch, '--file' => $script, 'postgres'
	],
	"$clients clients x $per_client ulidflake_next() into one unique index");

is( $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT v), count(DISTINCT client) FROM ids'),
	join('|', $clients * $per_client, $clients * $per_client, $clients),
	'every value stored, all distinct, from every client');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT v <= lag(v) OVER (PARTITION BY client ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', 'each session\'s values strictly increasing');

$node->stop;
done_testing();
