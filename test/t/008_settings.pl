# Settings are checked at server start: an invalid value or layout stops the
# server with a message that names the setting and the reason; a valid
# non-default layout is used by generation and decoding.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('settings');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");

my @bad = (
	[ "flake.node_bits = 16\nflake.sequence_bits = 20", qr/FATAL:  flake.node_bits \(16\) and flake.sequence_bits \(20\) leave 27 timestamp bits/ ],
	[ "flake.node_bits = 17", qr/FATAL:  invalid value for parameter "flake.node_bits": "17"\n.*DETAIL:  flake.node_bits must be between 0 and 16/ ],
	[ "flake.sequence_bits = 0", qr/FATAL:  invalid value for parameter "flake.sequence_bits": "0"\n.*DETAIL:  flake.sequence_bits must be between 1 and 32/ ],
	[ "flake.nodes = '0-2000'", qr/FATAL:  invalid value for parameter "flake.nodes": "0-2000"\n.*DETAIL:  a node is outside the node space/ ],
	[ "flake.node_bits = 4\nflake.nodes = '3,16'", qr/FATAL:  invalid value for parameter "flake.nodes": "3,16"\n.*flake.node_bits = 4 allows nodes 0 to 15/ ],
	[ "flake.epoch = 'tomorrow'", qr/FATAL:  invalid value for parameter "flake.epoch": "tomorrow"\n.*DETAIL:  flake.epoch must be a UTC timestamp/ ],
);

my $conf = slurp_file($node->data_dir . '/postgresql.conf');
foreach my $case (@bad)
{
	my ($settings, $message) = @$case;
	open my $fh, '>', $node->data_dir . '/postgresql.conf' or die $!;
	print $fh $conf . $settings . "\n";
	close $fh;
	my $log_start = -s $node->logfile // 0;
	ok(!$node->start(fail_ok => 1), "server refuses to start with: $settings");
	my $log = substr(slurp_file($node->logfile), $log_start);
	like($log, $message, 'the log says which setting and why');
}

open my $fh, '>', $node->data_dir . '/postgresql.conf' or die $!;
print $fh $conf . "flake.epoch = '2020-01-01 00:00:00+00'\nflake.node_bits = 4\nflake.sequence_bits = 8\nflake.nodes = '3,8-9'\n";
close $fh;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		SELECT flake_from_timestamp('2020-01-01 00:00:00.001+00'),
		       flake_decode((1::bigint << 12) | (15 << 8) | 255)}),
	'4096|("2020-01-01 00:00:00.001+00",15,255)', 'the configured layout decodes');

is( $node->safe_psql('postgres', q{
		WITH g AS MATERIALIZED (SELECT n, flake_next() AS id FROM generate_series(1, 5000) n)
		SELECT count(*) FILTER (WHERE id <= prev), bool_and(flake_node(id) = 3), max(flake_sequence(id)) <= 255,
		       bool_and(abs(extract(epoch FROM flake_timestamp(id) - clock_timestamp())) < 5)
		FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g) s}),
	'0|t|t|t', 'generation uses the layout, the first node of flake.nodes and the epoch');

my ($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT flake_next(16)');
like($stderr, qr/node 16 is out of range for flake_next\(\)/, 'the node space follows flake.node_bits');

$node->stop;
done_testing();
