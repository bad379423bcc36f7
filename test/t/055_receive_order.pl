# Ids that arrived before flake could read them count before the
# subscriber generates, whatever the order of the operator's steps (issue
# 43).  Both servers' clocks stopped at the same second per case: green,
# unprotected, would issue blue's ids again.
#  1. green subscribed before its tables had their flake default; then
#     ALTER TABLE ... SET DEFAULT and REFRESH PUBLICATION.
#  2. green subscribed before CREATE EXTENSION flake.
#  3. a backfill with pg_dump --data-only --disable-triggers into a
#     subscribed table: its ENABLE TRIGGER ALL left flake_raise_marks firing
#     outside replica sessions only, and the rows replicated after were not
#     read.
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

# a database per case on both, blue's tables published
sub case_database
{
	my ($db, $green_sql) = @_;
	$_->safe_psql('postgres', "CREATE DATABASE $db") foreach ($blue, $green);
	$blue->safe_psql($db, 'CREATE EXTENSION flake;' . move_tables() . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
	$green->safe_psql($db, $green_sql);
}

# blue writes, green catches up, cutover: green writes; 0 repeats
sub cutover
{
	my ($db, $sub, $what, $before_cutover) = @_;
	is(write_rows($blue, $db, $_, 'blue'), 0, "$what: blue writes $_") foreach sort keys %move_generator;
	applied_by($blue, $sub);
	$before_cutover->() if $before_cutover;
	$green->safe_psql($db, "DROP SUBSCRIPTION $sub");
	is(write_rows($green, $db, $_, 'green'), 0, "$what: green issues none of blue's $move_generator{$_} ids again")
	  foreach sort keys %move_generator;
}

# 1. the defaults after the subscription
stop_clocks(1, $blue_clock, $green_clock);
case_database('defaults', 'CREATE EXTENSION flake;' . move_tables(1));
subscribe($green, 'defaults', $blue, 'defaults', 'p');
cutover('defaults', 'defaults', 'defaults set after subscribing', sub {
	$green->safe_psql('defaults', join '',
		map { "ALTER TABLE $_ ALTER COLUMN id SET DEFAULT $move_generator{$_};" } sort keys %move_generator);
	$green->safe_psql('defaults', 'ALTER SUBSCRIPTION defaults REFRESH PUBLICATION');
});

# 2. the extension after the subscription
stop_clocks(2, $blue_clock, $green_clock);
case_database('extension', move_tables(1));
subscribe($green, 'extension', $blue, 'extension', 'p');
cutover('extension', 'extension', 'extension created after subscribing', sub {
	$green->safe_psql('extension', 'CREATE EXTENSION flake;' . join '',
		map { "ALTER TABLE $_ ALTER COLUMN id SET DEFAULT $move_generator{$_};" } sort keys %move_generator);
	is($green->safe_psql('extension', q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
		FROM pg_trigger WHERE tgname = 'flake_raise_marks'}), 'tf:R,tr:R',
		'extension created after subscribing: the defaults give the subscribed tables the trigger');
});

# 3. a backfill with --disable-triggers into a subscribed table
stop_clocks(3, $blue_clock, $green_clock);
case_database('backfill', 'CREATE EXTENSION flake;' . move_tables());
subscribe($green, 'backfill', $blue, 'backfill', 'p');
$blue->safe_psql('postgres', 'CREATE DATABASE archive');
$blue->safe_psql('archive', 'CREATE EXTENSION flake;' . move_tables());
is(write_rows($blue, 'archive', $_, 'archive'), 0, "blue's archive of $_") foreach sort keys %move_generator;
my $dump = $blue->basedir . '/archive.sql';
command_ok([ 'pg_dump', '--data-only', '--disable-triggers', '-t', 'tf', '-t', 'tr', '-f', $dump,
	'-d', $blue->connstr('archive') ], 'pg_dump --data-only --disable-triggers');
$green->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $dump, '-d', $green->connstr('backfill') ],
	'the backfill into the subscribed tables');
is($green->safe_psql('backfill', q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
	FROM pg_trigger WHERE tgname = 'flake_raise_marks'}), 'tf:R,tr:R',
	'after ENABLE TRIGGER ALL the trigger fires in replica sessions again');
cutover('backfill', 'backfill', 'rows replicated after a --disable-triggers backfill');

done_testing();
