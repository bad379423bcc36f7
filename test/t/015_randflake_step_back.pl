# randflake_next() with the clock 60 s behind the last ids (issue 9, item 4):
# one ordinary role generating 4M ids must not take a further node for every
# 131072 ids of the gap.  Nodes move on a second per real second, a backend
# holds at most half of flake.randflake_nodes and lets go of the nodes its
# rate no longer needs, and other sessions keep getting nodes of their own.
# After a restart with the clock still behind the mark, a new session needs
# one node.  Node counts come from flake_leases.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;

my $node = PostgreSQL::Test::Cluster->new('randflake_step_back');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'
flake.randflake_nodes = '0-31'
});
my $clock = FlakeClock->new($node);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake; CREATE ROLE app LOGIN');

sub held
{
	my ($pid) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM flake_leases WHERE generator = 'randflake_next' AND pid = $pid");
}

# ids at the real clock first, then the clock steps 60 s back
$node->safe_psql('postgres', 'SELECT count(randflake_next()) FROM generate_series(1, 1000)', extra_params => [ '-U', 'app' ]);
$clock->set('-60s');

my $burst = $node->background_psql('postgres', extra_params => [ '-U', 'app' ]);
my $burst_pid = $burst->query_safe('SELECT pg_backend_pid()');
is($burst->query_safe('SELECT count(randflake_next()) FROM generate_series(1, 4000000)'),
	'4000000', 'one ordinary role generates 4M ids with the clock 60 s back');
my $held = held($burst_pid);
cmp_ok($held, '<=', 16, "it holds at most half of the 32 nodes ($held)");
cmp_ok($node->safe_psql('postgres',
		q{SELECT max(extract(epoch FROM last_issued)) FROM flake_leases WHERE generator = 'randflake_next'}),
	'<=', time() + 1, 'its ids are not ahead of the real clock');

# other sessions of the same role get nodes of their own
my @others = map { $node->background_psql('postgres', extra_params => [ '-U', 'app' ]) } 1 .. 8;
my $ok = 0;
foreach my $other (@others)
{
	$ok++ if $other->query_safe('SELECT count(DISTINCT randflake_next()) FROM generate_series(1, 10000)') eq '10000';
}
is($ok, 8, 'eight more sessions generate');
is($node->safe_psql('postgres',
		q{SELECT count(*), max(holders) FROM flake_leases WHERE generator = 'randflake_next'}),
	($held + 8) . '|1', 'each on a node of its own');
$_->quit foreach @others;

# as seconds pass at a low rate, the burst session lets go of the nodes it
# no longer needs (a round ends after a real second by the monotonic clock)
foreach (1 .. 2)
{
	usleep(1_100_000);
	$burst->query_safe('SELECT randflake_next()');
}
is(held($burst_pid), '1', 'at one id a second the session holds one node');
$burst->quit;

# a restart with the clock still behind the high-water mark
$node->restart;
my $fresh = $node->background_psql('postgres', extra_params => [ '-U', 'app' ]);
my $fresh_pid = $fresh->query_safe('SELECT pg_backend_pid()');
$fresh->query_safe('SELECT randflake_next()');
is(held($fresh_pid), '1', 'after a restart behind the mark, the first call leases one node');
$fresh->query_safe('SELECT count(randflake_next()) FROM generate_series(1, 100000)');
is(held($fresh_pid), '1', 'and 100000 ids still fit on it');
$fresh->quit;

$clock->set('+0');
$node->stop;
done_testing();
