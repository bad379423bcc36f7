# What several TAP tests share: a cluster with flake preloaded, the test
# secret, and the check that each randflake node's ids keep increasing.
package FlakeTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use IPC::Run;

our @EXPORT = qw(flake_cluster flake_server flake_migrate_online randflake_backwards crc32c $flake_secret);

# The flake.randflake_secret of the tests.
our $flake_secret = '000102030405060708090a0b0c0d0e0f';

# A new cluster with flake in shared_preload_libraries and the given lines
# of postgresql.conf, initialized (with init's options) but not started,
# so that a test can fake its clock first (FlakeClock).
sub flake_cluster
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'flake'\n" . ($conf // ''));
	return $node;
}

# A started server for logical replication that generates on nodes (both
# families) and sids of its own, with the extension created.
sub flake_server
{
	my ($name, $nodes) = @_;
	my $node = flake_cluster($name, qq{flake.nodes = '$nodes'
flake.randflake_nodes = '$nodes'
flake.randflake_secret = '$flake_secret'
}, allows_streaming => 'logical');
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flake');
	return $node;
}

# The program flake_migrate_online with the arguments in $args, connected
# to a node's database (as user => ROLE, or the test's user): its exit
# code, stdout and stderr.
sub flake_migrate_online
{
	my ($node, $dbname, $args, %opt) = @_;
	my ($out, $err) = ('', '');
	my $conn = $node->connstr($dbname) . (defined $opt{user} ? " user=$opt{user}" : '');
	IPC::Run::run([ $node->config_data('--bindir') . '/flake_migrate_online', '-d', $conn, @$args ],
		'>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# How many ids of a table's randflake column id, in the order of its column
# n, come at or below the one before them on their node: 0 when each node's
# ids strictly increase.
sub randflake_backwards
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
			SELECT (d.ts, d.sequence) <= (lag(d.ts) OVER w, lag(d.sequence) OVER w) AS back
			FROM $table, randflake_decode(id) d
			WINDOW w AS (PARTITION BY d.node ORDER BY n)) s
		WHERE back});
}

# The CRC-32C of a string, as flake's files in the data directory carry
# it: for tests that write such files in the formats of other releases.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack('C*', $data))
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

1;
