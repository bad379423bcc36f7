# Timestamp overflow is caught for every allowed layout, at its extremes:
# 31 bits of timestamp with all the other bits in the sequence (node_bits
# 0, sequence_bits 32) or split (16/16), and 62 bits (0/1).  flake_next()
# raises 22003 once the clock is past the layout's end, never returns an
# id with a wrapped timestamp; the last millisecond of the layout still
# works (a clock frozen there by libfaketime); decoders refuse timestamps
# beyond PostgreSQL's instead of returning wrapped ones.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;

my $node = PostgreSQL::Test::Cluster->new('overflow');
$node->init;
my $conf = slurp_file($node->data_dir . '/postgresql.conf')
  . "shared_preload_libraries = 'flake'\n";
my $clock = FlakeClock->new($node);

sub start_with
{
	my ($settings) = @_;
	$node->stop if defined $node->{_pid};
	open my $fh, '>', $node->data_dir . '/postgresql.conf' or die $!;
	print $fh $conf . $settings;
	close $fh;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS flake');
}

sub fails_with
{
	my ($sql, $pattern, $name) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET timezone = 'UTC';\n$sql");
	like($stderr, $pattern, $name);
	is($stdout, '', '... and returns nothing');
}

# 0/32 and epoch 2020-01-01 00:00:00.353: the layout ends at
# 2020-01-25 20:31:24.000, (2^31 - 1) ms later.  On a clock frozen at that
# millisecond ids carry it; a millisecond later they overflow.
$clock->set('2020-01-25 20:31:24');
start_with("flake.node_bits = 0\nflake.sequence_bits = 32\nflake.epoch = '2020-01-01 00:00:00.353'\n");
is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		WITH g AS MATERIALIZED (SELECT n, flake_next() AS id FROM generate_series(1, 1000) n)
		SELECT count(DISTINCT id), bool_and(id >> 32 = 2147483647), min(flake_sequence(id)), max(flake_sequence(id)),
		       min(flake_timestamp(id)), bool_and(id >= flake_from_timestamp('2020-01-25 20:31:24+00'))
		FROM g}),
	'1000|t|0|999|2020-01-25 20:31:24+00|t', 'the last millisecond of the layout issues ids');
is($node->safe_psql('postgres', "SELECT flake_from_timestamp('2020-01-25 20:31:24+00')"),
	'9223372032559808512', 'flake_from_timestamp() gives the last millisecond');
fails_with("SELECT flake_from_timestamp('2020-01-25 20:31:24.001+00')",
	qr/ERROR:  22003: timestamp "2020-01-25 20:31:24.001\+00" is out of range for flake ids\n.*HINT:  flake ids cover 2020-01-01 00:00:00.353\+00 to 2020-01-25 20:31:24\+00/s,
	'and refuses the next one');
$clock->set('2020-01-25 20:31:25');
fails_with('SELECT flake_next()',
	qr/ERROR:  22003: flake_next\(\) timestamp overflow\nDETAIL:  With flake.id_bits = 63, flake.node_bits = 0 and flake.sequence_bits = 32, ids hold 31 bits of milliseconds since flake.epoch, which ran out at 2020-01-25 20:31:24\+00/,
	'a clock past the end overflows');
fails_with('SELECT flake_next(0)', qr/ERROR:  22003: flake_next\(\) timestamp overflow/, 'on explicit nodes too');

# the real clock, far past the end of 31 bits from the default epoch
$clock->set('+0');
foreach my $layout ([ 0, 32 ], [ 16, 16 ])
{
	my ($node_bits, $sequence_bits) = @$layout;
	start_with("flake.node_bits = $node_bits\nflake.sequence_bits = $sequence_bits\n");
	fails_with('SELECT flake_next()',
		qr/ERROR:  22003: flake_next\(\) timestamp overflow\nDETAIL:  .* ran out at 2015-01-25 20:31:23.647\+00/,
		"node_bits $node_bits, sequence_bits $sequence_bits: 22003 from the default epoch");
	fails_with('SELECT flake_next(0)', qr/ERROR:  22003: flake_next\(\) timestamp overflow/,
		'on explicit nodes too');
}

# with a recent epoch the same layouts work; and 0/1 (62 bits of timestamp,
# beyond PostgreSQL's timestamps) from the default one.  Each on a server
# of its own: this one issued ids up to the end of its 31 bits, which ids
# of these layouts would repeat (refused since 1.5, t/084).
my @t = gmtime(time - 86400);
my $yesterday = sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]);
my $overflow = $node;
$overflow->stop;
foreach my $layout ([ 0, 32, "flake.epoch = '$yesterday'" ], [ 16, 16, "flake.epoch = '$yesterday'" ], [ 0, 1, '' ])
{
	my ($node_bits, $sequence_bits, $epoch) = @$layout;
	$node->stop if $node != $overflow;
	$node = PostgreSQL::Test::Cluster->new("layout_${node_bits}_$sequence_bits");
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n"
		  . "flake.node_bits = $node_bits\nflake.sequence_bits = $sequence_bits\n$epoch\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flake');
	is( $node->safe_psql('postgres', q{
			WITH g AS MATERIALIZED (SELECT flake_next() AS id FROM generate_series(1, 1000))
			SELECT count(DISTINCT id), bool_and(abs(extract(epoch FROM flake_timestamp(id) - clock_timestamp())) < 60)
			FROM g}),
		'1000|t', "node_bits $node_bits, sequence_bits $sequence_bits: distinct ids near the clock");
}
is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		SELECT flake_timestamp(flake_from_timestamp('294276-12-31 23:59:59.999+00'))}),
	'294276-12-31 23:59:59.999+00', 'the last timestamp of PostgreSQL round-trips');
fails_with('SELECT flake_timestamp(9223372036854775807)',
	qr/ERROR:  22008: timestamp of flake id 9223372036854775807 is out of range/,
	'an id beyond PostgreSQL\'s timestamps is refused by flake_timestamp()');
fails_with('SELECT flake_decode(9223372036854775807)',
	qr/ERROR:  22008: timestamp of flake id 9223372036854775807 is out of range/, 'and by flake_decode()');
fails_with("SELECT flake_from_timestamp('infinity')",
	qr/HINT:  flake ids cover 2015-01-01 00:00:00\+00 to 294276-12-31 23:59:59.999999\+00/,
	'the range in messages ends with PostgreSQL\'s');

# the high-water mark of the first ids is past the end of their 31-bit
# layout from 2020: a restart there overflows rather than wrap the mark
$node->stop;
$node = $overflow;
$clock->set('2020-01-25 20:31:20');
start_with("flake.node_bits = 0\nflake.sequence_bits = 32\nflake.epoch = '2020-01-01 00:00:00.353'\n");
fails_with('SELECT flake_next()', qr/ERROR:  22003: flake_next\(\) timestamp overflow/,
	'a high-water mark past the layout\'s end overflows');

$clock->set('+0');
$node->stop;
done_testing();
