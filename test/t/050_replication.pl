# Servers with disjoint node ranges exchanging rows through logical
# replication (issue 12).
#
# Fan-in: three servers (flake.nodes and flake.randflake_nodes 0-99, 100-199,
# 200-299; ulidflake sids 1, 2, 3; one randflake secret) each insert 100k
# rows keyed by all three families; a fourth server subscribes to all three,
# with flake_guard() enabled always on its table.  Every row arrives, no
# apply error, and each id decodes to a node (or sid) of its origin.
#
# Bidirectional (PostgreSQL 16+, CREATE SUBSCRIPTION ... WITH (origin =
# none)): two servers write one table and subscribe to each other, then
# each updates some of the other's rows, which go back to their origin as
# updates of its own ids (the guard lets them through, issue 18); no apply
# error, identical contents after catch-up.  Skipped before 16
# (test/t/051_guard.pl runs two-way replication on every major).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $rows = 100_000;
# the table, with this server's generators as defaults and a guard that
# refuses replicated rows made on this server's own nodes or sid
sub create_table
{
	my ($node, $sid) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE t (
			f bigint PRIMARY KEY DEFAULT flake_next(),
			u ulidflake NOT NULL UNIQUE DEFAULT ulidflake_next($sid),
			r bigint NOT NULL UNIQUE DEFAULT randflake_next(),
			origin int NOT NULL);
		CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON t
			FOR EACH ROW EXECUTE FUNCTION flake_guard('f', 'u:ulidflake=$sid', 'r:randflake');
		ALTER TABLE t ENABLE ALWAYS TRIGGER guard;
	});
}

# Every *_error_count column of the subscriptions' statistics: their names
# differ between majors (19 splits sync_error_count by object kind).
sub apply_errors
{
	my ($node) = @_;
	return $node->safe_psql('postgres', q{
		SELECT coalesce(sum(e.value::bigint), 0)
		FROM pg_stat_subscription_stats s, jsonb_each_text(to_jsonb(s)) e
		WHERE e.key LIKE '%error_count'});
}

# --- fan-in
my @origins = map { flake_server("origin$_", ($_ - 1) * 100 . '-' . ($_ * 100 - 1)) } 1 .. 3;
my $hub = flake_server('hub', '300-399');
create_table($hub, 0);
foreach my $i (1 .. 3)
{
	my $origin = $origins[ $i - 1 ];
	create_table($origin, $i);
	$origin->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t');
	my $connstr = $origin->connstr . ' dbname=postgres';
	$hub->safe_psql('postgres',
		"CREATE SUBSCRIPTION sub$i CONNECTION '$connstr' PUBLICATION pub WITH (copy_data = false)");
}
foreach my $i (1 .. 3)
{
	$origins[ $i - 1 ]->safe_psql('postgres', "INSERT INTO t (origin) SELECT $i FROM generate_series(1, $rows)");
}
$origins[ $_ - 1 ]->wait_for_catchup("sub$_") foreach 1 .. 3;

is( $hub->safe_psql('postgres', q{
		SELECT string_agg(format('%s:%s:%s:%s:%s', origin, n, nodes_ok, sids_ok, randflake_ok), ',' ORDER BY origin)
		FROM (
			SELECT origin, count(*) AS n,
				   bool_and(flake_node(f) BETWEEN (origin - 1) * 100 AND origin * 100 - 1) AS nodes_ok,
				   bool_and(ulidflake_sid(u) = origin) AS sids_ok,
				   bool_and((randflake_decode(r)).node BETWEEN (origin - 1) * 100 AND origin * 100 - 1) AS randflake_ok
			FROM t GROUP BY origin) s}),
	join(',', map { "$_:$rows:t:t:t" } 1 .. 3),
	'fan-in: every row arrived, each id from a node (or sid) of its origin');
is(apply_errors($hub), '0', 'fan-in: no apply error (no key conflict, no guard refusal)');

$_->stop foreach (@origins, $hub);

# --- bidirectional
SKIP:
{
	skip 'bidirectional logical replication needs CREATE SUBSCRIPTION ... WITH (origin = none), PostgreSQL 16 or later', 4
	  if $hub->pg_version < 16;

	my $left = flake_server('left', '0-511');
	my $right = flake_server('right', '512-1023');
	create_table($left, 1);
	create_table($right, 2);
	foreach my $pair ([ $left, $right, 'left_from_right' ], [ $right, $left, 'right_from_left' ])
	{
		my ($subscriber, $publisher, $name) = @$pair;
		$publisher->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t');
	}
	foreach my $pair ([ $left, $right, 'left_from_right' ], [ $right, $left, 'right_from_left' ])
	{
		my ($subscriber, $publisher, $name) = @$pair;
		my $connstr = $publisher->connstr . ' dbname=postgres';
		$subscriber->safe_psql('postgres',
			"CREATE SUBSCRIPTION $name CONNECTION '$connstr' PUBLICATION pub WITH (copy_data = false, origin = none)");
	}
	$left->safe_psql('postgres', "INSERT INTO t (origin) SELECT 1 FROM generate_series(1, $rows)");
	$right->safe_psql('postgres', "INSERT INTO t (origin) SELECT 2 FROM generate_series(1, $rows)");
	$right->wait_for_catchup('left_from_right');
	$left->wait_for_catchup('right_from_left');
	$left->safe_psql('postgres', 'UPDATE t SET origin = 12 WHERE origin = 2 AND f % 100 = 0');
	$right->safe_psql('postgres', 'UPDATE t SET origin = 11 WHERE origin = 1 AND f % 100 = 0');
	$right->wait_for_catchup('left_from_right');
	$left->wait_for_catchup('right_from_left');

	my $contents = q{SELECT count(*), md5(string_agg(format('%s %s %s %s', f, u, r, origin), ',' ORDER BY f)) FROM t};
	my $left_contents = $left->safe_psql('postgres', $contents);
	like($left_contents, qr/^@{[ 2 * $rows ]}\|/, 'bidirectional: both servers\' rows on the left');
	is($right->safe_psql('postgres', $contents), $left_contents, 'bidirectional: identical contents on both');
	is(apply_errors($left) + apply_errors($right), 0, 'bidirectional: no apply error on either side');
	is($left->safe_psql('postgres', 'SELECT count(*) > 0 FROM t WHERE origin IN (11, 12) GROUP BY origin ORDER BY origin'),
		"t\nt", 'bidirectional: each side\'s updates of the other\'s rows arrived');
	$_->stop foreach ($left, $right);
}

done_testing();
