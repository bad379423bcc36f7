# Data that moves between running servers with default settings (issue
# 37): ids that arrive raise the receiving server's marks, so that it
# never issues them again.
#
# Blue/green: two servers with default nodes and one randflake secret,
# their clocks faked (stopped) apart; green has blue's schema (pg_dump -s).
# Per clock gap (0, 2 s, 30 s): green subscribes to blue (FOR TABLE,
# initial copy), blue writes, green catches up; cutover: green, its clock
# behind by the gap, writes, replicated back to blue (FOR ALL TABLES);
# rollback: blue, its clock now behind green's, writes again.  A table per family (flake_next, ulidflake_next,
# randflake_next); the writers insert with ON CONFLICT DO NOTHING, so that
# an id issued again shows as a row missing.  0 repeated ids, and each
# ulidflake comes after every one the server received.  With the clock
# behind, flake_next() and ulidflake_next() refuse (the error names the
# clock) until the clock is put right, then go on with 0 repeats.
#
# Restore: a dump of blue, running and generating, restored on a third
# server: generation is refused until flake_take_over_ids(), which needs
# nothing of blue's; then 0 of the dump's ids are issued again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;

my $rows = 2000;
my %generator = (tf => 'flake_next()', tu => 'ulidflake_next()', tr => 'randflake_next()');
my %type = (tf => 'bigint', tu => 'ulidflake', tr => 'bigint');

# a server with default settings but the randflake secret, its clock faked
sub server
{
	my ($name) = @_;
	my $node = flake_cluster($name, "flake.randflake_secret = '$flake_secret'\n",
		allows_streaming => 'logical');
	my $clock = FlakeClock->new($node);
	$node->start;
	return ($node, $clock);
}

# A clock stopped at a time, in seconds from the test's start: ids made
# at one time on two servers meet on the same node and sequence.
my $start = time() + 10;
sub set_clock
{
	my ($clock, $seconds) = @_;
	$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($start + $seconds)));
}

# A clock running from that time on: set at the start of a real second.
sub set_clock_running
{
	my ($clock, $seconds) = @_;
	my $now = Time::HiRes::time();
	Time::HiRes::sleep(1 - ($now - int($now)));
	$clock->set(sprintf('%+ds', $start + $seconds - int(Time::HiRes::time())));
}

# Blue with the tables, and green with blue's schema (pg_dump -s), each
# with both kinds of publication.
sub blue_green
{
	my ($blue, $blue_clock) = server('blue');
	my ($green, $green_clock) = server('green');

	$blue->safe_psql('postgres', 'CREATE EXTENSION flake');
	$blue->safe_psql('postgres',
		"CREATE TABLE $_ (id $type{$_} PRIMARY KEY DEFAULT $generator{$_}, side text NOT NULL)")
	  foreach sort keys %generator;
	my $schema = $blue->basedir . '/schema.sql';
	command_ok([ 'pg_dump', '-s', '-f', $schema, '-d', $blue->connstr('postgres') ],
		'pg_dump -s of blue');
	$green->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $schema, '-d', $green->connstr('postgres') ],
		"blue's schema on green");
	foreach my $node ($blue, $green)
	{
		$node->safe_psql('postgres', q{
			CREATE PUBLICATION tables FOR TABLE tf, tu, tr;
			CREATE PUBLICATION everything FOR ALL TABLES;
		});
	}
	return ($blue, $blue_clock, $green, $green_clock);
}

# Insert rows with ids of the table's generator; how many were not
# inserted because their id was there already, or the error.
sub write_rows
{
	my ($node, $table, $side) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		WITH ins AS (
			INSERT INTO $table (side) SELECT '$side' FROM generate_series(1, $rows)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
	return $ret == 0 ? $rows - $out : $err;
}

# the newest ulidflake of a side
sub newest_ulid
{
	my ($node, $side) = @_;
	return $node->safe_psql('postgres', "SELECT max(id) FROM tu WHERE side = '$side'");
}

sub subscribe
{
	my ($node, $from, $name, $publication, $copy) = @_;
	my $connstr = $from->connstr . ' dbname=postgres';
	$node->safe_psql('postgres',
		"CREATE SUBSCRIPTION $name CONNECTION '$connstr' PUBLICATION $publication WITH (copy_data = $copy)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
	  or die "initial copy of $name timed out";
}

# Write on a server after the writes moved to it: 0 repeats per family.
# Where its clock is far behind, the families whose ids then run ahead of
# it refuse, naming the clock, until the clock is put right (fix_clock);
# returns those.
sub write_after_move
{
	my ($node, $side, $received, $what, $fix_clock) = @_;
	my %got = map { $_ => write_rows($node, $_, $side) } sort keys %generator;
	my %refused = map { $_ => 1 } grep { $got{$_} =~ /behind the last/ } sort keys %generator;
	if (%refused)
	{
		$fix_clock->();
		$got{$_} = write_rows($node, $_, $side) foreach keys %refused;
	}
	is($got{$_}, 0, "$what: no $generator{$_} id repeated") foreach sort keys %generator;
	cmp_ok(newest_ulid($node, $side), 'gt', $received,
		"$what: ulidflake_next() continues above the ids received");
	return \%refused;
}

# Each phase stops the clocks at a later time than every id made before
# it, so that only the ids received can keep a server from issuing them
# again.  The sender writes at two times, the gap apart: the receiver's
# clock stands at the first when it takes over the writes.  Stopped
# clocks cannot catch up: where generation refuses, the clock is put
# right (set running from the second time).  (Not
# more than a few minutes ahead of the real clock: a subscription's
# workers may see that one.)  The cutover replicates through a
# publication FOR TABLE, the rollback through one FOR ALL TABLES.
my ($blue, $blue_clock, $green, $green_clock) = blue_green();
my $base = 0;

# the sender writes at base - gap and at base; the receiver's clock stands
# at base - gap (runs from base, with no gap)
sub write_across_gap
{
	my ($node, $clock, $receiver_clock, $gap, $side, $what) = @_;
	foreach my $at ($base - $gap, $base)
	{
		set_clock($clock, $at);
		is(write_rows($node, $_, "$side$at"), 0, "$what: $side writes $_ at +$at s")
		  foreach sort keys %generator;
	}
	# a stopped clock would wait for ever where ids run ahead of it by
	# less than flake.max_borrow and a second
	if ($gap > 0)
	{
		set_clock($receiver_clock, $base - $gap);
	}
	else
	{
		set_clock_running($receiver_clock, $base);
	}
}

foreach my $gap (0, 2, 30)
{
	my $what = "gap $gap s";
	$base += 40;

	# green gets blue's data
	$green->safe_psql('postgres', 'TRUNCATE tf, tu, tr');
	subscribe($green, $blue, "green$gap", 'tables', 'true');
	write_across_gap($blue, $blue_clock, $green_clock, $gap, 'blue', $what);
	applied_by($blue, "green$gap");
	my $received = newest_ulid($green, "blue$base");

	# cutover: green writes, blue follows it for a rollback
	$green->safe_psql('postgres', "DROP SUBSCRIPTION green$gap");
	subscribe($blue, $green, "blue$gap", 'everything', 'false');
	my $refused = write_after_move($green, "green$gap", $received, "$what, cutover",
		sub { set_clock_running($green_clock, $base + 1) });
	is_deeply([ sort keys %$refused ], $gap > 1 ? [ 'tf', 'tu' ] : [],
		"$what, cutover: refused only with the clock behind");

	# rollback: green wrote, blue's clock behind by the gap
	$base += 40;
	write_across_gap($green, $green_clock, $blue_clock, $gap, 'green', $what);
	applied_by($green, "blue$gap");
	$received = newest_ulid($blue, "green$base");
	$blue->safe_psql('postgres', "DROP SUBSCRIPTION blue$gap");
	$refused = write_after_move($blue, "blue$gap+", $received, "$what, rollback",
		sub { set_clock_running($blue_clock, $base + 1) });
	is_deeply([ sort keys %$refused ], $gap > 1 ? [ 'tf', 'tu' ] : [],
		"$what, rollback: refused only with the clock behind");
}

is( $blue->safe_psql('postgres',
		q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
		  FROM pg_trigger WHERE tgname = 'flake_raise_marks'}),
	'tf:R,tr:R,tu:R',
	'the subscribed tables have the trigger, for replica sessions only');

# --- a dump of blue, running, restored on staging
$base += 40;
set_clock($blue_clock, $base);
my ($staging, $staging_clock) = server('staging');
set_clock($staging_clock, $base);
is(write_rows($blue, $_, 'dumped'), 0, "blue writes $_ before the dump") foreach sort keys %generator;
my $dump = $blue->basedir . '/blue.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $blue->connstr('postgres') ], 'pg_dump of blue, running');
is(write_rows($blue, $_, 'after dump'), 0, "blue goes on writing $_") foreach sort keys %generator;
$staging->safe_psql('postgres', 'CREATE DATABASE copy');
$staging->command_ok([ 'pg_restore', '-d', $staging->connstr('copy'), $dump ], 'restored on staging');
my ($ret, $out, $err) = $staging->psql('copy', 'SELECT flake_next()');
like($err, qr/holds ids of another server.*flake_take_over_ids/s,
	'generation is refused in the restored database, with the step');
is( $staging->safe_psql('copy', q{
		SELECT cardinality(servers),
			   ids = (SELECT count(*) FROM tf) + (SELECT count(*) FROM tu) + (SELECT count(*) FROM tr)
		FROM flake_take_over_ids()}),
	'1|t',
	"flake_take_over_ids() takes blue over from the ids, without blue's data directory");
my $received = $staging->safe_psql('copy', 'SELECT max(id) FROM tu');
foreach my $table (sort keys %generator)
{
	my ($r, $o, $e) = $staging->psql('copy', qq{
		WITH ins AS (
			INSERT INTO $table (side) SELECT 'staging' FROM generate_series(1, $rows)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
	is($r == 0 ? $rows - $o : $e, 0, "restore: no $generator{$table} id of the dump repeated");
}
cmp_ok($staging->safe_psql('copy', "SELECT max(id) FROM tu WHERE side = 'staging'"),
	'gt', $received, 'restore: ulidflake_next() continues above the ids restored');

done_testing();
