# What the tests of ids moved between servers in every order of an
# operator's steps share (issue 43): servers with one randflake secret and
# room to borrow ahead of a clock stopped at the same second on both, so
# that a server that has not read the ids it holds issues the very same
# ones again; tables of flake_next() and randflake_next() ids; rows written
# with ON CONFLICT DO NOTHING, so that an id issued again shows as a row
# missing.
package FlakeMove;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use FlakeClock;
use FlakeTest;

our @EXPORT = qw(move_server stop_clocks move_tables write_rows subscribe caught_up $move_rows
  %move_generator);

our $move_rows = 1000;
our %move_generator = (tf => 'flake_next()', tr => 'randflake_next()');

# The second every clock stands at, one per case of a test: ids made on
# two servers at one meet on the same node and sequence.
my $start = time() + 10;

sub stop_clocks
{
	my ($case, @clocks) = @_;
	$_->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($start + 20 * $case))) foreach @clocks;
}

# A started server for logical replication, its clock stopped at the
# first second, default nodes, the tests' secret, and flake.max_borrow room for
# the ids ahead of its clock that it reads.
sub move_server
{
	my ($name) = @_;
	my $node = flake_cluster($name, "flake.randflake_secret = '$flake_secret'\nflake.max_borrow = '60s'\n",
		allows_streaming => 'logical');
	my $clock = FlakeClock->new($node);
	stop_clocks(0, $clock);
	$node->start;
	return ($node, $clock);
}

# The SQL that makes the tables, their ids of type $type (bigint or a
# domain over it), each with its generator as default unless $bare.
sub move_tables
{
	my ($bare, $type) = @_;
	$type //= 'bigint';
	return join '',
	  map { "CREATE TABLE $_ (id $type PRIMARY KEY" . ($bare ? '' : " DEFAULT $move_generator{$_}") . ", side text NOT NULL);\n" }
	  sort keys %move_generator;
}

# Insert rows with ids of the table's default; how many were not inserted
# because their id was there already, or the error.
sub write_rows
{
	my ($node, $db, $table, $side) = @_;
	my ($ret, $out, $err) = $node->psql($db, qq{
		WITH ins AS (
			INSERT INTO $table (side) SELECT '$side' FROM generate_series(1, $move_rows)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
	return $ret == 0 ? $move_rows - $out : $err;
}

# Subscribe $node's database $db to $from's publication; wait for the
# initial copy; the statement's warnings.
sub subscribe
{
	my ($node, $db, $from, $name, $publication, $options) = @_;
	my $connstr = $from->connstr . " dbname=$db";
	my ($ret, $out, $err) = $node->psql($db,
		"CREATE SUBSCRIPTION $name CONNECTION '$connstr' PUBLICATION $publication"
		  . ($options ? " WITH ($options)" : ''));
	die "CREATE SUBSCRIPTION $name: $err" if $ret != 0;
	caught_up($node, $db);
	return $err;
}

# Wait until every table of $node's subscriptions is ready.
sub caught_up
{
	my ($node, $db) = @_;
	$node->poll_query_until($db,
		"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
	  or die 'initial copy timed out';
}

1;
