# More generating sessions than leasable nodes: the next one shares the
# least shared node instead of failing, flake_leases counts the holders, and
# ids stay distinct and increasing on the shared node.  A node whose holders
# have all exited is leased again, and the new holder continues above them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('snowflake_slots');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.nodes = '5-6'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake; CREATE TABLE ids (n bigserial, pid int, id bigint UNIQUE)');

my $s1 = $node->background_psql('postgres');
my $s2 = $node->background_psql('postgres');
my $s3 = $node->background_psql('postgres');
my $insert = 'INSERT INTO ids (pid, id) SELECT pg_backend_pid(), flake_next() FROM generate_series(1, 1000)';
$s1->query_safe($insert);
$s2->query_safe('SELECT flake_next()');
my $s1_pid = $s1->query_safe('SELECT pg_backend_pid()');

is($node->safe_psql('postgres', q{SELECT string_agg(node || ':' || holders, ',' ORDER BY node) FROM flake_leases}),
	'5:1,6:1', 'both nodes of flake.nodes are leased, one holder each');

# a third session shares the least shared node (the first of a tie)
$s3->query_safe($insert);
is($s3->query_safe('SELECT flake_node()'), '5', 'a third session shares a node instead of failing');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(node || ':' || holders || ':' || (pid IS NOT NULL), ',' ORDER BY node) FROM flake_leases}),
	'5:2:true,6:1:true', 'flake_leases shows two holders of node 5');
is($node->safe_psql('postgres', q{SELECT pid FROM flake_leases WHERE node = 5}),
	$s1_pid, 'the pid is the backend that leased the node while it was free');
$s1->query_safe($insert);
$s3->query_safe($insert);
is($node->safe_psql('postgres', q{SELECT issued FROM flake_leases WHERE node = 5}),
	'4000', 'issued counts the ids of every holder of the node');

is($node->safe_psql('postgres', 'SELECT flake_next(5) > 0'), 't',
	'an explicit node still works alongside shared holders');

# the first holder exits; the sharer keeps the node
$s1->quit;
$node->poll_query_until('postgres', 'SELECT holders FROM flake_leases WHERE node = 5', '1')
  or die 'the first holder did not let go';
is($node->safe_psql('postgres', 'SELECT pid IS NULL FROM flake_leases WHERE node = 5'), 't',
	'once the first holder exits, the shared node shows no pid');
$s3->query_safe($insert);

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'), '5000|5000', 'no id repeated');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (PARTITION BY flake_node(id) ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', 'ids of the shared node increase in the order they were issued');

# every holder of node 5 exits: it is leased again, above their ids
my $last = $node->safe_psql('postgres', 'SELECT max(id) FROM ids WHERE flake_node(id) = 5');
$s3->quit;
$node->poll_query_until('postgres', 'SELECT count(*) FROM flake_leases', '1')
  or die 'the lease was not released';
my $id = $node->safe_psql('postgres', 'SELECT flake_next()');
is($node->safe_psql('postgres', "SELECT flake_node($id)"), '5', 'the released node is leased again');
cmp_ok($id, '>', $last, 'the new holder continues above the old holders\' ids');

$s2->quit;
$node->stop;
done_testing();
