# The server's wall clock steps back 10 s (libfaketime): ulidflake_next()
# continues from the last value it issued and never goes back.
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
	'values continue from the last issued timestamp, ahead of the clock');

$clock->set('+0');
$node->stop;
done_testing();
