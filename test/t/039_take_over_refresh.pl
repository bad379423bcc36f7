# A database taken over with flake_take_over_ids(), then refreshed in
# place from a newer dump of the old server, still running (issue 43):
# with pg_restore --clean (the extension dropped and created again, its
# record with it), with its tables emptied and pg_restore --data-only
# (flake_origin's rows come again, without the record), and with a plain
# dump made with --clean run by psql.  Each is refused again (55000, the
# hint naming flake_take_over_ids()) until taken over again; then none of
# the newer dump's ids is issued again.  Every clock frozen at one second,
# moved forward before each dump: the new server's clock is never ahead
# of the old one's ids.  (1.4 refused none, and issued every id of the
# newer dumps again.)  A database whose flake is still at 1.4 has no
# column for the record: flake_take_over_ids() refuses there, naming
# ALTER EXTENSION flake UPDATE, and takes over once updated.
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
my $frozen = time();
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT flake_next(), side text NOT NULL);});

my $new = flake_cluster('new', $carry_conf);
$new->start;
$new->safe_psql('postgres', 'CREATE DATABASE staging');

# the old server writes, then is dumped (custom, or plain with --clean)
my $number = 0;
sub dump_old
{
	my ($plain) = @_;
	$frozen += 5;
	$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($frozen)));
	$old->safe_psql('postgres', "INSERT INTO t (side) SELECT 'old' FROM generate_series(1, $rows)");
	my $dump = $old->basedir . '/old' . ++$number . ($plain ? '.sql' : '.dump');
	command_ok([ 'pg_dump', $plain ? ('--clean', '--if-exists') : ('-Fc'), '-f', $dump,
			'-d', $old->connstr('postgres') ], "pg_dump $number of the old server, running");
	return $dump;
}

# how many of the ids staging holds the new server issues again
sub issued_again
{
	return $rows - $new->safe_psql('staging', qq{
		WITH ins AS (
			INSERT INTO t (side) SELECT 'new' FROM generate_series(1, $rows)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
}

# refused with the step, then taken over: none issued again
sub refused_then_taken_over
{
	my ($what) = @_;
	my ($ret, $out, $err) = $new->psql('staging', "\\set VERBOSITY verbose\nSELECT flake_next()");
	if ($ret == 0)
	{
		fail("$what: refused (it was not: " . issued_again() . ' ids issued again)');
	}
	else
	{
		like($err,
			qr/ERROR:  55000: this database holds ids of another server.*HINT:  .*SELECT flake_take_over_ids\(\) in this database/s,
			"$what: refused, the hint naming flake_take_over_ids()");
	}
	$new->safe_psql('staging', 'SELECT * FROM flake_take_over_ids()');
	is(issued_again(), 0, "$what: taken over again, none of the ids restored issued again");
}

$new->command_ok([ 'pg_restore', '--exit-on-error', '-d', $new->connstr('staging'), dump_old() ],
	'staging restored');
refused_then_taken_over('staging');

$new->command_ok(
	[ 'pg_restore', '--exit-on-error', '--clean', '--if-exists', '-d', $new->connstr('staging'), dump_old() ],
	'staging refreshed: pg_restore --clean');
refused_then_taken_over('pg_restore --clean');

$new->safe_psql('staging', 'TRUNCATE t');
$new->command_ok(
	[ 'pg_restore', '--exit-on-error', '--data-only', '-d', $new->connstr('staging'), dump_old() ],
	'staging refreshed: its tables emptied, pg_restore --data-only');
refused_then_taken_over('pg_restore --data-only');

$new->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $new->connstr('staging'), '-f', dump_old(1) ],
	'staging refreshed: a plain dump made with --clean, run by psql');
refused_then_taken_over('plain dump with --clean');

# a database at 1.4 naming the old server (as pg_upgrade leaves one)
my $old_system = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
$new->safe_psql('postgres', 'CREATE DATABASE legacy');
$new->safe_psql('legacy', qq{
	CREATE EXTENSION flake VERSION '1.4';
	INSERT INTO flake_internal.flake_origin VALUES ($old_system);});
my ($ret, $out, $err) = $new->psql('legacy', "\\set VERBOSITY verbose\nSELECT * FROM flake_take_over_ids()");
like($err,
	qr/ERROR:  55000: the extension flake in this database is at a version before 1.5.*HINT:  Update it \(ALTER EXTENSION flake UPDATE\)/s,
	'a database at 1.4: flake_take_over_ids() refused, naming the update');
($ret, $out, $err) = $new->psql('legacy', 'SELECT flake_next()');
like($err, qr/holds ids of another server/, 'a database at 1.4: still refused');
$new->safe_psql('legacy', 'ALTER EXTENSION flake UPDATE');
$new->safe_psql('legacy', 'SELECT * FROM flake_take_over_ids()');
($ret, $out, $err) = $new->psql('legacy', 'SELECT flake_next()');
is($ret, 0, 'updated and taken over: it generates');

$_->stop foreach ($old, $new);
done_testing();
