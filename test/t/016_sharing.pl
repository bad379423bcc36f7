# More generating sessions than nodes (issue 12): 40 pgbench clients on
# flake.nodes = '0-3', 100k flake_next() ids each into one unique index, then
# the same with randflake_next() on flake.randflake_nodes = '0-7'.  No
# errors, no duplicates, every id on a node of the set, and the ids of each
# session on each node strictly increasing in the order it issued them
# (holders of a shared node interleave, so across sessions the observable
# property is uniqueness).  Each transaction records, per node, whether its
# 1000 ids came in sorted order (strictly, as no id repeats) and its first
# and last id; the batches of a session are then compared in order, which
# keeps the checks small.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $clients = 40;
my $per_client = 100_000;
my $batch = 1000;
my $total = $clients * $per_client;
my $key = q{'\x000102030405060708090a0b0c0d0e0f'::bytea};

my $node = PostgreSQL::Test::Cluster->new('sharing');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.nodes = '0-3'
flake.randflake_nodes = '0-7'
flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'
max_connections = 60
shared_buffers = 256MB
});
$node->start;

# ids: every id; batches: per transaction and node, the position (the id,
# or the decrypted (second, sequence) of a randflake id) of the first and
# last id and whether they came in increasing order.  Randflake ids are
# random, so a unique index on them fills slowly from 40 sessions: their
# uniqueness is counted after the load instead.
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE UNLOGGED TABLE flake_ids (id bigint NOT NULL);
	CREATE UNIQUE INDEX ON flake_ids (id);
	CREATE UNLOGGED TABLE randflake_ids (id bigint NOT NULL);
	CREATE UNLOGGED TABLE batches (n bigserial, generator text, pid int, node int,
								   first bigint, last bigint, ordered boolean);
});

my %script = (
	flake_next => qq{
WITH ids AS (SELECT g, flake_next() AS id FROM generate_series(1, $batch) g),
	 stored AS (INSERT INTO flake_ids SELECT id FROM ids)
INSERT INTO batches (generator, pid, node, first, last, ordered)
	SELECT 'flake_next', pg_backend_pid(), flake_node(id), min(id), max(id),
		   array_agg(id ORDER BY g) = array_agg(id ORDER BY id)
	FROM ids GROUP BY flake_node(id);
},
	randflake_next => qq{
WITH ids AS (SELECT g, randflake_next() AS id FROM generate_series(1, $batch) g),
	 stored AS (INSERT INTO randflake_ids SELECT id FROM ids),
	 decoded AS (SELECT g, d.node, extract(epoch FROM d.ts)::bigint << 17 | d.sequence AS pos
				 FROM ids, randflake_decode(id, $key) d)
INSERT INTO batches (generator, pid, node, first, last, ordered)
	SELECT 'randflake_next', pg_backend_pid(), node, min(pos), max(pos),
		   array_agg(pos ORDER BY g) = array_agg(pos ORDER BY pos)
	FROM decoded GROUP BY node;
});
foreach my $generator ('flake_next', 'randflake_next')
{
	my $file = $node->basedir . "/$generator.sql";
	append_to_file($file, $script{$generator});
	$node->command_ok(
		[
			'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => 2,
			'--transactions' => $per_client / $batch, '--file' => $file, 'postgres'
		],
		"$clients clients x $per_client $generator(), no errors");
}

is($node->safe_psql('postgres', 'SELECT count(*) FROM flake_ids'), $total,
	'flake_next(): every id stored, through the unique index');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM randflake_ids'), "$total|$total",
	'randflake_next(): every id stored and distinct');

# per generator: sessions, lowest and highest node, batches out of order,
# and batches not above the session's previous batch on the same node
my $check = q{
	SELECT generator, count(DISTINCT pid), min(node), max(node),
		   count(*) FILTER (WHERE NOT ordered), count(*) FILTER (WHERE first <= previous_last)
	FROM (SELECT *, lag(last) OVER (PARTITION BY generator, pid, node ORDER BY n) AS previous_last
		  FROM batches) b
	GROUP BY generator ORDER BY generator};
is($node->safe_psql('postgres', $check),
	"flake_next|$clients|0|3|0|0\nrandflake_next|$clients|0|7|0|0",
	'every session generated on nodes of its setting, each session\'s ids on each node strictly increasing');

$node->stop;
done_testing();
