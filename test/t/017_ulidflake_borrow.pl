# One role's loop cannot push ulidflake timestamps into the future: the last
# value is shared by every session, and a loop that uses up the entropy of
# each millisecond (256 scalable values a millisecond) waits for the clock
# once it is flake.max_borrow ahead, as flake_next() does.  Without that
# bound the loop below would leave every session's values seconds ahead of
# the clock, and the high-water mark after them across a restart.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('ulid_borrow');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'flake'
flake.max_borrow = '100ms'
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE ROLE mallory LOGIN;
});

# 1M scalable values are 3.9 s of entropy: unbounded, they end seconds
# ahead of the clock however fast the loop runs.  (One backend cannot
# outrun the stand-alone form's 8000 values a millisecond; both forms share
# the last value and the bound.)
$node->safe_psql('postgres',
	'SET ROLE mallory; SELECT count(ulidflake_next(0)) FROM generate_series(1, 1000000)');
my $ahead = $node->safe_psql('postgres', q{
	SELECT extract(epoch FROM flake_timestamp(ulidflake_next()) - clock_timestamp()) * 1000});
cmp_ok($ahead, '<=', 100 + 400,
	"after a loop of 1M ulidflake_next(0), values are at most flake.max_borrow (+ slack) ahead of the clock (${ahead} ms)");

# The bound holds across a restart: the mark followed the values, not more.
$node->restart;
$ahead = $node->safe_psql('postgres', q{
	SELECT extract(epoch FROM flake_timestamp(ulidflake_next()) - clock_timestamp()) * 1000});
cmp_ok($ahead, '<=', 1000 + 100 + 400,
	"after a restart, values are at most one mark chunk and flake.max_borrow ahead (${ahead} ms)");

$node->stop;
done_testing();
