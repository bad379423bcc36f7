# More generating sessions than nodes (issue 12): 40 pgbench clients on
# flake.nodes = '0-3', 200k flake_next() ids each into one unique index, then
# the same with randflake_next() on flake.randflake_nodes = '0-7'.  No
# errors, no duplicates, every id on a node of the set, and the ids of each
# session on each node increasing in the order it issued them (holders of a
# shared node interleave, so order across sessions is only uniqueness).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $clients = 40;
my $per_client = 200_000;
my $batch = 1000;
my $total = $clients * $per_client;

my $node = PostgreSQL::Test::Cluster->new('sharing');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.nodes = '0-3'
flake.randflake_nodes = '0-7'
flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'
max_connections = 60
shared_buffers = 512MB
work_mem = 512MB
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

# randflake ids are random, so a unique index on them is slow to fill from
# 40 sessions: their uniqueness is checked after the load instead
$node->safe_psql('postgres', q{
	CREATE UNLOGGED TABLE flake_next (n bigserial, pid int NOT NULL, id bigint NOT NULL);
	CREATE UNIQUE INDEX ON flake_next (id);
	CREATE UNLOGGED TABLE randflake_next (n bigserial, pid int NOT NULL, id bigint NOT NULL);
});
foreach my $generator ('flake_next', 'randflake_next')
{
	my $script = $node->basedir . "/$generator.sql";
	append_to_file($script,
		"INSERT INTO $generator (pid, id) SELECT pg_backend_pid(), $generator() FROM generate_series(1, $batch);\n");
	$node->command_ok(
		[
			'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => 2,
			'--transactions' => $per_client / $batch, '--file' => $script, 'postgres'
		],
		"$clients clients x $per_client $generator(), no errors");
}

# (the unique index makes every stored id distinct)
is( $node->safe_psql('postgres', q{
		SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT pid FROM flake_next) p),
			   min(flake_node(id)), max(flake_node(id))
		FROM flake_next}),
	"$total|$clients|0|3", 'flake_next(): every id stored, from every session, on the nodes of flake.nodes');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (PARTITION BY pid ORDER BY n) AS back
			FROM flake_next) s
		WHERE back}),
	'0', 'flake_next(): ids of each session strictly increasing');

is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT id), (SELECT count(*) FROM (SELECT DISTINCT pid FROM randflake_next) p)
		FROM randflake_next}),
	"$total|$total|$clients", 'randflake_next(): every id stored and distinct, from every session');
is( $node->safe_psql('postgres', q{
		SELECT min(node), max(node), count(*) FILTER (WHERE back) FROM (
			SELECT node, (ts, sequence) <= (lag(ts) OVER w, lag(sequence) OVER w) AS back
			FROM randflake_next, randflake_decode(id, '\x000102030405060708090a0b0c0d0e0f'::bytea) d
			WINDOW w AS (PARTITION BY pid, node ORDER BY n)) s}),
	'0|7|0', 'randflake_next(): on the nodes of flake.randflake_nodes, and the ids of each session on each node strictly increasing');

$node->stop;
done_testing();
