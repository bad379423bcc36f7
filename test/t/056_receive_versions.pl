# Ids that arrived while flake was older count once it is updated, and a
# subscriber at a newer flake than its publisher says so (issue 43).  Both
# servers' clocks stopped at the same second per case.
#  1. green subscribed while it ran 1.3 (no trigger then); ALTER EXTENSION
#     flake UPDATE gives the tables the trigger and reads the rows received
#     before.
#  2. blue/green for an upgrade, blue left at 1.3: green's CREATE
#     SUBSCRIPTION warns, naming ALTER EXTENSION flake UPDATE on blue; a
#     rollback onto blue after that step issues none of green's ids again.
#  3. green left at 1.3 under this library, never updated: the cutover's
#     ALTER SUBSCRIPTION ... DISABLE reads what arrived (make explore, seed
#     61250757: 1.5 until then issued blue's ids again).
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
my $tables = q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
	FROM pg_trigger WHERE tgname = 'flake_raise_marks'};

# 1. green subscribed at 1.3, then updated
stop_clocks(1, $blue_clock, $green_clock);
$_->safe_psql('postgres', 'CREATE DATABASE updated') foreach ($blue, $green);
$blue->safe_psql('updated', 'CREATE EXTENSION flake;' . move_tables() . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
$green->safe_psql('updated', q{CREATE EXTENSION flake VERSION '1.3';} . move_tables());
like(subscribe($green, 'updated', $blue, 'updated', 'p'),
	qr/WARNING:  flake in this database is older than 1\.4: the ids its subscriptions bring are read only at subscription and extension commands.*HINT:  Run ALTER EXTENSION flake UPDATE/s,
	'CREATE SUBSCRIPTION where the extension is older than 1.4 says when its ids are read, naming the update');
is(write_rows($blue, 'updated', $_, 'blue'), 0, "blue writes $_") foreach sort keys %move_generator;
applied_by($blue, 'updated');
is($green->safe_psql('updated', $tables), '', 'at 1.3 the subscribed tables have no trigger');
$green->safe_psql('updated', 'ALTER EXTENSION flake UPDATE');
is($green->safe_psql('updated', $tables), 'tf:R,tr:R', 'ALTER EXTENSION flake UPDATE adds the trigger');
$green->safe_psql('updated', 'DROP SUBSCRIPTION updated');
is(write_rows($green, 'updated', $_, 'green'), 0,
	"subscribed at 1.3, then updated: green issues none of blue's $move_generator{$_} ids again")
  foreach sort keys %move_generator;

# 2. a rollback onto a blue left at 1.3
stop_clocks(2, $blue_clock, $green_clock);
$_->safe_psql('postgres', 'CREATE DATABASE rollback') foreach ($blue, $green);
$blue->safe_psql('rollback', q{CREATE EXTENSION flake VERSION '1.3';} . move_tables()
	  . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
$green->safe_psql('rollback', 'CREATE EXTENSION flake;' . move_tables() . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
my $warning = subscribe($green, 'rollback', $blue, 'green', 'p');
like($warning, qr/WARNING:  the publisher of subscription "green" runs flake 1\.3, older than this server's .*HINT:  .*ALTER EXTENSION flake UPDATE/s,
	"green's CREATE SUBSCRIPTION warns that blue runs an older flake, naming the step");
is(write_rows($blue, 'rollback', $_, 'blue'), 0, "blue at 1.3 writes $_") foreach sort keys %move_generator;
applied_by($blue, 'green');
$green->safe_psql('rollback', 'DROP SUBSCRIPTION green');
subscribe($blue, 'rollback', $green, 'blue', 'p', 'copy_data = false');
# green writes at a later second: blue, on its clock, gets there too
stop_clocks(3, $blue_clock, $green_clock);
is(write_rows($green, 'rollback', $_, 'green'), 0, "cutover: green writes $_") foreach sort keys %move_generator;
applied_by($green, 'blue');
# the hint's step, before the rollback
$blue->safe_psql('rollback', 'ALTER EXTENSION flake UPDATE');
$blue->safe_psql('rollback', 'DROP SUBSCRIPTION blue');
is(write_rows($blue, 'rollback', $_, 'blue again'), 0,
	"rollback onto blue updated after the warning: none of green's $move_generator{$_} ids issued again")
  foreach sort keys %move_generator;

# 3. green never updated: the cutover's DISABLE reads what arrived
stop_clocks(4, $blue_clock, $green_clock);
$_->safe_psql('postgres', 'CREATE DATABASE stale') foreach ($blue, $green);
$blue->safe_psql('stale', 'CREATE EXTENSION flake;' . move_tables() . 'CREATE PUBLICATION p FOR TABLE tf, tr;');
$green->safe_psql('stale', q{CREATE EXTENSION flake VERSION '1.3';} . move_tables());
subscribe($green, 'stale', $blue, 'stale', 'p');
is(write_rows($blue, 'stale', $_, 'blue'), 0, "left at 1.3: blue writes $_") foreach sort keys %move_generator;
applied_by($blue, 'stale');
my ($ret, $out, $err) = $green->psql('stale', 'ALTER SUBSCRIPTION stale DISABLE');
like($err, qr/older than 1\.4/, 'the cutover at 1.3 warns');
is(write_rows($green, 'stale', $_, 'green'), 0,
	"left at 1.3, cutover by DISABLE: green issues none of blue's $move_generator{$_} ids again")
  foreach sort keys %move_generator;

done_testing();
