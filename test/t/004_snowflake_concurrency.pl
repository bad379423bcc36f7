# flake_next() from 8 pgbench clients x 250k ids into one unique index: no
# violations, one node per backend, ids of each node strictly increasing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $clients = 8;
my $per_client = 250_000;
my $batch = 1000;

my $node = PostgreSQL::Test::Cluster->new('snowflake_concurrency');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, id bigint NOT NULL);
	CREATE UNIQUE INDEX ids_id ON ids (id);
});

my $script = $node->basedir . '/insert.sql';
append_to_file($script,
	"INSERT INTO ids (id) SELECT flake_next() FROM generate_series(1, $batch);\n");

$node->command_ok(
	[
		'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => $clients,
		'--transactions' => $per_client / $batch, '--file' => $script, 'postgres'
	],
	"$clients clients x $per_client flake_next() into one unique index");

is( $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id), count(DISTINCT flake_node(id)) FROM ids'),
	join('|', $clients * $per_client, $clients * $per_client, $clients),
	'every id stored and distinct, on one node per client');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (PARTITION BY flake_node(id) ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', 'ids of each node strictly increasing');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM ids WHERE flake_timestamp(id) > clock_timestamp() + interval '1 s'}),
	'0', 'no id more than flake.max_borrow ahead of the clock');

$node->stop;
done_testing();
