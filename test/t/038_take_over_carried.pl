# Where a take-over by flake_take_over_ids() counts (issue 43): on the
# server that ran it, in that database, and wherever that server's whole
# state is taken over; nowhere else.  Every clock frozen at one second,
# moved forward before the old server's second dump, so that no server's
# clock is ahead of the ids of the ones before.
#
# Two dumps of the old server restored on a new one into two databases,
# the first taken over (carried), the newer one not (other): a standby of the new server, promoted, generates
# in it and is refused in the other, as the new server is.  The carried
# database dumped and restored on a third server: refused there, and the
# old server's dump too.  The new server stopped and its data directory
# taken over there (flake_take_over(), as after pg_upgrade): the carried
# database generates (its take-over was the new server's, whose state the
# third server now holds), none of its ids issued again; the old server's
# dump, which the new server never took over, is still refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $rows = 2000;

my ($old, $clock) = frozen_server('old', $carry_conf);
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT flake_next(), side text NOT NULL);});

# the old server writes, then is dumped
sub dump_old
{
	my ($name) = @_;
	$old->safe_psql('postgres', "INSERT INTO t (side) SELECT 'old' FROM generate_series(1, $rows)");
	my $dump = $old->basedir . "/$name.dump";
	command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $old->connstr('postgres') ], "pg_dump of the old server: $name");
	return $dump;
}
my $first_dump = dump_old('first');
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 5)));
my $old_dump = dump_old('newer');

sub restore
{
	my ($node, $db, $dump) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr($db), $dump ],
		$node->name . ": restored into $db");
}

# how many of the ids a database holds a server issues again
sub issued_again
{
	my ($node, $db) = @_;
	return $rows - $node->safe_psql($db, qq{
		WITH ins AS (
			INSERT INTO t (side) SELECT '${\ $node->name}' FROM generate_series(1, $rows)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
}

# refused with the step, or how many ids it issued again
sub refused
{
	my ($node, $db, $what) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\nSELECT flake_next()");
	if ($ret == 0)
	{
		fail("$what: refused (it was not: " . issued_again($node, $db) . ' ids issued again)');
		return;
	}
	like($err, qr/ERROR:  55000: this database holds ids of another server.*HINT:  .*flake_take_over_ids\(\)/s,
		"$what: refused, the hint naming the take-over");
}

my $new = flake_cluster('new', $carry_conf, allows_streaming => 1);
$new->start;
$new->backup('before');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($new, 'before', has_streaming => 1);
$standby->start;
restore($new, 'carried', $first_dump);
restore($new, 'other', $old_dump);
is($new->safe_psql('carried', 'SELECT ids FROM flake_take_over_ids()'), $rows,
	'new: the old server\'s ids taken over in carried');
refused($new, 'other', 'new: the other database from the old server');

# a standby follows: the record is in the database, the marks in WAL
$new->wait_for_catchup($standby);
$standby->promote;
is(issued_again($standby, 'carried'), 0, 'the standby, promoted: carried generates, none issued again');
refused($standby, 'other', 'the standby, promoted: the other database');
$standby->stop;

# carried, dumped and restored on a third server
is(issued_again($new, 'carried'), 0, 'new: carried generates, none issued again');
my $carried_dump = $new->basedir . '/carried.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $carried_dump, '-d', $new->connstr('carried') ], 'pg_dump of carried');
my $third = flake_cluster('third', $carry_conf);
$third->start;
$third->safe_psql('postgres', 'CREATE EXTENSION flake');
restore($third, 'carried', $carried_dump);
restore($third, 'other', $old_dump);
refused($third, 'carried', 'third: carried, taken over on the new server');
refused($third, 'other', 'third: the old server\'s dump');

# the new server's whole state taken over: what it took over in carried
# counts, not the old server's other databases
$new->stop;
is( $third->safe_psql('postgres', sprintf(q{SELECT cardinality(servers) FROM flake_take_over('%s')},
		$new->data_dir)),
	'1', 'third: the new server\'s data directory taken over, naming only the new server');
is(issued_again($third, 'carried'), 0, 'third: carried generates, none issued again');
refused($third, 'other', 'third: the old server\'s dump, which the new server took over only in carried');

$_->stop foreach ($old, $third);
done_testing();
