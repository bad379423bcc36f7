# More generating sessions than leasable nodes: the next one gets 53400
# naming flake.nodes; once a holder exits its node is leased again, and the
# new holder continues above the old holder's ids.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('flake_slots');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.nodes = '5-6'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

my $s1 = $node->background_psql('postgres');
my $s2 = $node->background_psql('postgres');
$s1->query_safe('SELECT flake_next() FROM generate_series(1, 1000)');
$s2->query_safe('SELECT flake_next()');
my $s1_node = $s1->query_safe('SELECT flake_node()');
my $s1_last = $s1->query_safe('SELECT flake_next()');

is($node->safe_psql('postgres', 'SELECT string_agg(node::text, \',\' ORDER BY node) FROM flake_leases'),
	'5,6', 'both nodes of flake.nodes are leased');

my ($ret, $stdout, $stderr) =
  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_next()");
isnt($ret, 0, 'a third session cannot lease');
like($stderr, qr/ERROR:  53400: all nodes of flake.nodes are leased/, '53400 names flake.nodes');
like($stderr, qr/flake.nodes is "5-6"/, 'the detail shows the setting');

is($node->safe_psql('postgres', 'SELECT flake_next(5) > 0'), 't',
	'an explicit node still works when no node is free');

$s1->quit;
$node->poll_query_until('postgres', 'SELECT count(*) FROM flake_leases', '1')
  or die 'the lease was not released';

my $id = $node->safe_psql('postgres', 'SELECT flake_next()');
is($node->safe_psql('postgres', "SELECT flake_node($id)"), $s1_node,
	'the released node is leased again');
cmp_ok($id, '>', $s1_last, 'the new holder continues above the old holder\'s ids');

$s2->quit;
$node->stop;
done_testing();
