# The server's wall clock steps back 10 s (libfaketime): ulidflake_next()
# refuses to run more than flake.max_borrow ahead of the clock (55000), and
# with a larger flake.max_borrow continues from the last value it issued and
# never goes back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;

my $node = PostgreSQL::Test::Cluster->new('ulid_clock');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'");

# every process started from here on runs on the faked clock
my $clock = FlakeClock->new($node);
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, v ulidflake NOT NULL UNIQUE);
	INSERT INTO ids (v) SELECT ulidflake_next() FROM generate_series(1, 10000);
});
my $before = $node->safe_psql('postgres', q{SELECT extract(epoch FROM clock_timestamp())});

$clock->set('-10s');
my $after = $node->safe_psql('postgres', q{SELECT extract(epoch FROM clock_timestamp())});
cmp_ok($after, '<', $before - 5, 'the server clock went back');

# The rest of the last value's millisecond may still be issued; the next
# millisecond (20000 stand-alone or 1000 scalable values reach it) may not.
foreach my $call ('ulidflake_next()', 'ulidflake_next(5)')
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"SELECT count($call) FROM generate_series(1, 20000)",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, qr/55000: the system clock is \d+ ms behind the last ulidflake issued/,
		"$call refuses to run 10 s ahead of the clock with flake.max_borrow = 1s");
}

$node->append_conf('postgresql.conf', "flake.max_borrow = '20s'");
$node->reload;
$node->safe_psql('postgres', q{
	INSERT INTO ids (v) SELECT ulidflake_next() FROM generate_series(1, 10000);
	INSERT INTO ids (v) SELECT ulidflake_next(5) FROM generate_series(1, 1000);
});
is( $node->safe_psql('postgres', q{
		SELECT count(*), count(*) FILTER (WHERE v <= prev)
		FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev FROM ids) s}),
	'21000|0', 'values keep increasing across the step back');

ok( $node->safe_psql('postgres', q{
		SELECT flake_timestamp(max(v)) > clock_timestamp() + interval '5 s' FROM ids}),
	'with flake.max_borrow = 20s, values continue from the last issued timestamp, ahead of the clock');

$clock->set('+0');
$node->stop;
done_testing();
