# A column that holds ids on the publisher but has no flake default on the
# subscriber (DDL is not replicated: blue's default set after green's
# schema was copied, or green's table made without it) receives blue's
# ids; flake on green counted only columns of its own defaults and, after
# the cutover, issued them again from its other tables, silently (make
# explore, seeds 61358022 and 61358038).  Now green asks the publisher at
# every subscription command, the cutover's DISABLE or DROP included,
# names those columns in the trigger, reads them and warns.
#  1. green's tables made without defaults, then subscribed.
#  2. blue's defaults set after the subscription, no REFRESH; the cutover
#     by ALTER SUBSCRIPTION ... DISABLE.
#  3. the same, the cutover by DROP SUBSCRIPTION.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeMove;
use FlakeTest;

my ($blue, $blue_clock) = move_server('blue');
my ($green, $green_clock) = move_server('green');

# green's own tables of each family, written after the cutover: none of
# their ids may be one of blue's that green received
sub green_issues_none_of_blues
{
	my ($db, $what) = @_;
	foreach my $t (sort keys %move_generator)
	{
		$green->safe_psql($db, "CREATE TABLE own_$t (id bigint PRIMARY KEY DEFAULT $move_generator{$t}, side text);
			INSERT INTO own_$t (side) SELECT 'green' FROM generate_series(1, $move_rows)");
		is($green->safe_psql($db, "SELECT count(*) FROM own_$t JOIN $t USING (id)"), 0,
			"$what: green issues none of blue's $move_generator{$t} ids again");
	}
}

sub trigger_args
{
	my ($db) = @_;
	return $green->safe_psql($db, q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text || ':'
		|| encode(tgargs, 'escape'), ',' ORDER BY tgrelid::regclass::text)
		FROM pg_trigger WHERE tgname = 'flake_raise_marks'});
}

# 1. green's tables without defaults
stop_clocks(1, $blue_clock, $green_clock);
$_->safe_psql('postgres', 'CREATE DATABASE bare') foreach ($blue, $green);
$blue->safe_psql('bare', 'CREATE EXTENSION flake;' . move_tables() . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
$green->safe_psql('bare', 'CREATE EXTENSION flake;' . move_tables(1));
my $warnings = subscribe($green, 'bare', $blue, 'bare', 'p');
like($warnings, qr/WARNING:  column "id" of table public\.tf has no flake default here, but its publisher's calls flake_next\(\).*HINT:  Before this server takes the writes, run ALTER TABLE public\.tf ALTER COLUMN id SET DEFAULT flake_next\(\), as on the publisher\./s,
	'a column whose default is on the publisher only: a warning with the step');
is(trigger_args('bare'), 'tf:R:id=flake_next\000,tr:R:id=randflake_next\000',
	"the trigger names the publisher's columns of ids");
is(write_rows($blue, 'bare', $_, 'blue'), 0, "blue writes $_") foreach sort keys %move_generator;
applied_by($blue, 'bare');
$green->safe_psql('bare', 'ALTER SUBSCRIPTION bare DISABLE');
green_issues_none_of_blues('bare', 'no default on green');

# 2. and 3. blue's defaults after the subscription, no REFRESH
foreach my $case ([ 2, 'disable', 'ALTER SUBSCRIPTION disable DISABLE' ], [ 3, 'dropped', 'DROP SUBSCRIPTION dropped' ])
{
	my ($n, $db, $cutover) = @$case;
	stop_clocks($n, $blue_clock, $green_clock);
	$_->safe_psql('postgres', "CREATE DATABASE $db") foreach ($blue, $green);
	$blue->safe_psql($db, 'CREATE EXTENSION flake;' . move_tables(1) . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
	$green->safe_psql($db, 'CREATE EXTENSION flake;' . move_tables(1));
	subscribe($green, $db, $blue, $db, 'p');
	$blue->safe_psql($db, join '', map { "ALTER TABLE $_ ALTER COLUMN id SET DEFAULT $move_generator{$_};" } sort keys %move_generator);
	is(write_rows($blue, $db, $_, 'blue'), 0, "$db: blue writes $_") foreach sort keys %move_generator;
	applied_by($blue, $db);
	my ($ret, $out, $err) = $green->psql($db, $cutover);
	is($ret, 0, "$db: $cutover");
	like($err, qr/has no flake default here/, "$db: the cutover warns of the publisher's default");
	green_issues_none_of_blues($db, "blue's default set after subscribing, $cutover");
}

# a publisher that cannot be asked (slot_name = NONE, as when it is gone):
# DROP SUBSCRIPTION does not try
$green->safe_psql('bare', "ALTER SUBSCRIPTION bare SET (slot_name = NONE)");
$blue->stop;
$green->safe_psql('bare', 'DROP SUBSCRIPTION bare');
is(trigger_args('bare'), 'tf:R:id=flake_next\000,tr:R:id=randflake_next\000',
	'the columns stay named after the subscription is dropped');

done_testing();
