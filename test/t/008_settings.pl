# Settings are checked at server start: an invalid value or layout stops the
# server with a FATAL message, logged once (no WARNING before it), that names
# the setting, the value and the valid range or reason (never the value of the secret); a valid
# non-default layout is used by generation and decoding; once running, a
# reload with an invalid value is refused and the old value stays.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('settings');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nlog_error_verbosity = verbose\n");

my $secret = 'dffd6021bb2bd5b0af676290809ec3a5';
my $other = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
my @t = gmtime(time + 2 * 86400);
my $future = sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]);

sub invalid
{
	my ($name, $value, $detail) = @_;
	return qr/FATAL:  22023: invalid value for parameter "\Q$name\E": "\Q$value\E"\n.*DETAIL:  \Q$detail\E/;
}

my @bad = (
	[ "flake.node_bits = 16\nflake.sequence_bits = 20", qr/FATAL:  22023: flake.node_bits \(16\) and flake.sequence_bits \(20\) leave 27 timestamp bits/ ],
	[ "flake.node_bits = 17", invalid('flake.node_bits', '17', 'flake.node_bits must be an integer between 0 and 16.') ],
	[ "flake.node_bits = 64", invalid('flake.node_bits', '64', 'flake.node_bits must be an integer between 0 and 16.') ],
	[ "flake.node_bits = -1", invalid('flake.node_bits', '-1', 'flake.node_bits must be an integer between 0 and 16.') ],
	[ "flake.node_bits = '12abc'", invalid('flake.node_bits', '12abc', 'flake.node_bits must be an integer between 0 and 16.') ],
	[ "flake.sequence_bits = 0", invalid('flake.sequence_bits', '0', 'flake.sequence_bits must be an integer between 1 and 32.') ],
	[ "flake.sequence_bits = -1", invalid('flake.sequence_bits', '-1', 'flake.sequence_bits must be an integer between 1 and 32.') ],
	[ "flake.sequence_bits = 'ten'", invalid('flake.sequence_bits', 'ten', 'flake.sequence_bits must be an integer between 1 and 32.') ],
	[ "flake.sequence_bits = 64", invalid('flake.sequence_bits', '64', 'flake.sequence_bits must be an integer between 1 and 32.') ],
	[ "flake.max_borrow = '2h'", invalid('flake.max_borrow', '2h', 'flake.max_borrow must be a duration between 0 and 3600000 ms') ],
	[ "flake.max_borrow = -1", invalid('flake.max_borrow', '-1', 'flake.max_borrow must be a duration between 0 and 3600000 ms') ],
	[ "flake.max_borrow = '1 fortnight'", invalid('flake.max_borrow', '1 fortnight', 'flake.max_borrow must be a duration between 0 and 3600000 ms') ],
	[ "flake.nodes = '0-2000'", invalid('flake.nodes', '0-2000', 'a node is outside the node space') ],
	[ "flake.node_bits = 4\nflake.nodes = '3,16'", qr/FATAL:  22023: invalid value for parameter "flake.nodes": "3,16"\n.*flake.node_bits = 4 allows nodes 0 to 15/ ],
	[ "flake.nodes = 'all'", invalid('flake.nodes', 'all', 'expected a node number or a range') ],
	[ "flake.nodes = '8-3'", invalid('flake.nodes', '8-3', 'a range must not end below its start') ],
	[ "flake.nodes = '1-5,5'", invalid('flake.nodes', '1-5,5', 'nodes must be listed in increasing order, without overlap') ],
	[ "flake.randflake_nodes = '0-131072'", invalid('flake.randflake_nodes', '0-131072', 'a node is outside the node space (the randflake layout allows nodes 0 to 131071)') ],
	[ "flake.randflake_nodes = '7;9'", invalid('flake.randflake_nodes', '7;9', 'nodes are separated by commas') ],
	[ "flake.epoch = 'tomorrow'", invalid('flake.epoch', 'tomorrow', 'flake.epoch must be a UTC timestamp') ],
	[ "flake.epoch = '2021-02-29'", invalid('flake.epoch', '2021-02-29', 'flake.epoch must be a UTC timestamp') ],
	[ "flake.epoch = '$future'", invalid('flake.epoch', $future, 'flake.epoch must not be later than the system clock.') ],
	[ "flake.serial_default = 'flake'", invalid('flake.serial_default', 'flake', 'flake.serial_default must be one of off, flake_next, randflake_next.') ],
	# the secret is refused without being shown
	[ "flake.randflake_secret = '${secret}0'", qr/FATAL:  22023: invalid value for parameter "flake.randflake_secret"\n.*DETAIL:  The secret must be 32 hexadecimal digits \(16 bytes\); the value given has 33 characters./ ],
	[ "flake.randflake_secret = ' $secret'", qr/FATAL:  22023: invalid value for parameter "flake.randflake_secret"\n/ ],
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
	my @reports = $log =~ /^.*(?:WARNING|ERROR|FATAL|PANIC):  .*$/mg;
	is(scalar(@reports), 1, 'once') or diag(join("\n", @reports));
}
unlike(slurp_file($node->logfile), qr/$secret/, 'the log never shows the secret');

open my $fh, '>', $node->data_dir . '/postgresql.conf' or die $!;
print $fh $conf . "flake.epoch = '2020-01-01 00:00:00+00'\nflake.node_bits = 4\nflake.sequence_bits = 8\nflake.nodes = '3,8-9'\nflake.max_borrow = '2s'\nflake.randflake_secret = '$secret'\nflake.serial_default = 'randflake_next'\n";
close $fh;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');
is($node->safe_psql('postgres', 'SHOW flake.serial_default'), 'randflake_next',
	'a valid flake.serial_default in postgresql.conf is taken');

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

# explicit nodes are limited to flake.nodes
($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_next(4)");
like($stderr, qr/ERROR:  22023: node 4 is not in flake.nodes\nDETAIL:  This server generates on nodes "3,8-9" only/,
	'flake_next(node) refuses a node outside flake.nodes, naming the range');
like($stderr, qr/HINT:  .*flake.nodes/, 'the hint points to flake.nodes');
is($node->safe_psql('postgres', 'SELECT flake_node(flake_next(9)), flake_node(flake_next(3))'), '9|3',
	'flake_next(node) works on the nodes of flake.nodes, leased or not');

# a reload with an invalid value is refused as PostgreSQL refuses any
# other: the server keeps running with the old value
my $log_start = -s $node->logfile;
$node->append_conf('postgresql.conf', "flake.max_borrow = '2h'\nflake.randflake_secret = ' $other'\n");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_file_settings WHERE name IN ('flake.max_borrow', 'flake.randflake_secret') AND error IS NOT NULL"),
	'the reload read the invalid values');
is($node->safe_psql('postgres', 'SHOW flake.max_borrow'), '2s', 'flake.max_borrow keeps its value');
is($node->safe_psql('postgres', 'SHOW flake.randflake_secret'), $secret, 'flake.randflake_secret keeps its value');
is($node->safe_psql('postgres', 'SELECT count(flake_next()) + count(randflake_next()) FROM generate_series(1, 10)'),
	'20', 'and the server generates on');
my $log = substr(slurp_file($node->logfile), $log_start);
like($log, qr/LOG:  22023: 7200000 ms is outside the valid range for parameter "flake.max_borrow"/,
	'the log reports the refused flake.max_borrow');
like($log, qr/LOG:  22023: invalid value for parameter "flake.randflake_secret"/,
	'the log reports the refused secret');
unlike($log, qr/FATAL/, 'nothing stops');
unlike($log, qr/$other/, 'the refused secret is not in the log');

$node->stop;
done_testing();
