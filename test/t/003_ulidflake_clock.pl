# The server's wall clock steps back 10 s (libfaketime): ulidflake_next()
# continues from the last value it issued and never goes back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
my ($found) = grep { -e } ($libfaketime, glob('/usr/lib/*/faketime/libfaketime.so.1'));
BAIL_OUT('libfaketime is missing (Debian package libfaketime)') unless $found;

my $node = PostgreSQL::Test::Cluster->new('ulid_clock');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'");

my $clock = $node->basedir . '/faketime';
PostgreSQL::Test::Utils::append_to_file($clock, "+0\n");
{
	local $ENV{LD_PRELOAD} = $found;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock;
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	$node->start;
}

sub set_clock
{
	my ($offset) = @_;
	open my $fh, '>', $clock or die "could not write $clock: $!";
	print $fh "$offset\n";
	close $fh;
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, v ulidflake NOT NULL UNIQUE);
	INSERT INTO ids (v) SELECT ulidflake_next() FROM generate_series(1, 10000);
});
my $before = $node->safe_psql('postgres', q{SELECT extract(epoch FROM clock_timestamp())});

set_clock('-10s');
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

set_clock('+0');
$node->stop;
done_testing();
