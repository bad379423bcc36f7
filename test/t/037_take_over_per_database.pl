# flake_take_over_ids() takes over the ids of the database it runs in, not
# the old server (issue 43).  Dumps of a running server restored into two
# databases of a new server (every clock frozen at one second, moved
# forward between the dumps: the new server's clock is never ahead of the
# old one's ids): taken over in one, the other, from a newer dump, is
# still refused (55000, the hint naming flake_take_over_ids()) until taken
# over there too.  The next refresh of the first from a newer dump (DROP
# DATABASE, CREATE DATABASE, pg_restore) is refused again until taken
# over.  (1.4 refused neither, and issued every id of the newer dumps
# again.)  A copy of a taken-over database (CREATE DATABASE ...
# TEMPLATE) holds only ids taken over: it generates.  After each take-over,
# none of the restored ids is issued again.  Non-superusers can neither
# take over (even with EXECUTE granted) nor write the record.
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
my %generator = (tf => 'flake_next()', tu => 'ulidflake_next()');
my %type = (tf => 'bigint', tu => 'ulidflake');

my ($old, $clock) = frozen_server('old', $carry_conf);
my $frozen = time();
$old->safe_psql('postgres', 'CREATE EXTENSION flake');
$old->safe_psql('postgres',
	"CREATE TABLE $_ (id $type{$_} PRIMARY KEY DEFAULT $generator{$_}, side text NOT NULL)")
  foreach sort keys %generator;

# rows written by a server into both tables, as side
sub write_rows
{
	my ($node, $db, $side) = @_;
	$node->safe_psql($db, "INSERT INTO $_ (side) SELECT '$side' FROM generate_series(1, $rows)")
	  foreach sort keys %generator;
}

my $number = 0;
sub dump_old
{
	# every server's clock a few seconds on, still frozen
	$frozen += 5;
	$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($frozen)));
	write_rows($old, 'postgres', 'old');
	my $dump = $old->basedir . '/old' . ++$number . '.dump';
	command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $old->connstr('postgres') ],
		"pg_dump $number of the old server, running");
	return $dump;
}

my $new = flake_cluster('new', $carry_conf);
$new->start;

sub restore
{
	my ($db, $dump) = @_;
	$new->safe_psql('postgres', "CREATE DATABASE $db");
	$new->command_ok([ 'pg_restore', '--exit-on-error', '-d', $new->connstr($db), $dump ],
		"restored into $db");
}

# refused with the step, or (where it is not) how many of the restored
# ids the new server issues again in that database
sub refused
{
	my ($db, $what) = @_;
	my ($ret, $out, $err) = $new->psql($db, "\\set VERBOSITY verbose\nSELECT flake_next()");
	if ($ret == 0)
	{
		fail("$what: refused (it was not: " . issued_again($db) . ' restored ids issued again)');
		return;
	}
	like($err,
		qr/ERROR:  55000: this database holds ids of another server.*HINT:  .*SELECT flake_take_over_ids\(\) in this database/s,
		"$what: refused, the hint naming flake_take_over_ids()");
}

# the new server's rows written into a database: how many of the
# restored ids it issued again (rows missing, ON CONFLICT DO NOTHING)
sub issued_again
{
	my ($db) = @_;
	my $again = 0;
	foreach my $table (sort keys %generator)
	{
		$again += $rows - $new->safe_psql($db, qq{
			WITH ins AS (
				INSERT INTO $table (side) SELECT 'new' FROM generate_series(1, $rows)
				ON CONFLICT DO NOTHING RETURNING 1)
			SELECT count(*) FROM ins});
	}
	return $again;
}

sub take_over
{
	my ($db, $what) = @_;
	is( $new->safe_psql($db, q{
			SELECT ids = (SELECT count(*) FROM tf) + (SELECT count(*) FROM tu)
			FROM flake_take_over_ids()}),
		't', "$what: flake_take_over_ids() reads the database's ids");
	is(issued_again($db), 0, "$what: then none of the restored ids is issued again");
}

restore('staging', dump_old());
refused('staging', 'staging restored');
take_over('staging', 'staging');

# a newer dump in another database: its take-over is its own
restore('reports', dump_old());
refused('reports', 'another database restored from the same server, after the take-over of staging');

# non-superusers: neither the take-over nor the record
$new->safe_psql('postgres', q{
	CREATE ROLE owner LOGIN;
	ALTER DATABASE reports OWNER TO owner;});
$new->safe_psql('reports', 'GRANT EXECUTE ON FUNCTION flake_take_over_ids() TO owner');
my ($ret, $out, $err) = $new->psql('reports', 'SELECT * FROM flake_take_over_ids()',
	extra_params => [ '-U', 'owner' ]);
like($err, qr/permission denied to take over another server's flake state/,
	'the database owner may not take over, even with EXECUTE granted');
($ret, $out, $err) = $new->psql('reports',
	q{UPDATE flake_internal.flake_origin SET taken_over_by = (SELECT system_identifier FROM pg_control_system())},
	extra_params => [ '-U', 'owner' ]);
like($err, qr/permission denied for table flake_origin/, 'nor write the record');
refused('reports', 'reports, after the owner tried');
take_over('reports', 'reports');

# a copy of a taken-over database holds only ids taken over
$new->safe_psql('postgres', 'CREATE DATABASE copied TEMPLATE reports');
is(issued_again('copied'), 0, 'a copy of a taken-over database generates, none issued again');

# the next refresh of staging, from a newer dump: refused again
$new->safe_psql('postgres', 'DROP DATABASE staging');
restore('staging', dump_old());
refused('staging', 'staging refreshed from a newer dump');
take_over('staging', 'staging refreshed');

# the take-over is recorded in the database, not in flake.hwm
is( $new->safe_psql('staging', q{
		SELECT count(*) FILTER (WHERE taken_over_by = (SELECT system_identifier FROM pg_control_system())),
			   count(*)
		FROM flake_internal.flake_origin}),
	'2|2', 'every row of staging\'s flake_origin names this server as the one that took it over');

$_->stop foreach ($old, $new);
done_testing();
