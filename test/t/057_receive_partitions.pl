# Ids that arrive into partitioned tables and into columns of a domain
# over bigint count before the subscriber generates (issue 43).  Both
# servers' clocks stopped at the same second per case.
#  1. tables partitioned by their id, published WITH
#     (publish_via_partition_root = true): the root gets the trigger, its
#     partitions its clones.
#  2. published per partition, green's partitions attached without
#     defaults of their own: their root's default makes their id columns.
#  3. id columns typed as a domain over bigint.
# flake_take_over_ids() reads the ids of 2 and 3 too.
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
my $triggers = q{SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
	FROM pg_trigger WHERE tgname = 'flake_raise_marks'};

# tf and tr partitioned by hash of their id, in two partitions
sub partitioned
{
	my ($defaults) = @_;
	my $sql = '';
	foreach my $t (sort keys %move_generator)
	{
		$sql .= "CREATE TABLE $t (id bigint DEFAULT $move_generator{$t}, side text NOT NULL, PRIMARY KEY (id)) PARTITION BY HASH (id);";
		foreach my $r (0, 1)
		{
			$sql .= $defaults
			  ? "CREATE TABLE ${t}_$r PARTITION OF $t FOR VALUES WITH (MODULUS 2, REMAINDER $r);"
			  : "CREATE TABLE ${t}_$r (id bigint NOT NULL, side text NOT NULL);
				 ALTER TABLE $t ATTACH PARTITION ${t}_$r FOR VALUES WITH (MODULUS 2, REMAINDER $r);";
		}
	}
	return $sql;
}

# blue and green with the SQL, blue publishing $publication; green
# subscribes, blue writes, cutover: green writes, 0 repeats
sub case
{
	my ($db, $blue_sql, $green_sql, $publication, $what, $trigger) = @_;
	$_->safe_psql('postgres', "CREATE DATABASE $db") foreach ($blue, $green);
	$blue->safe_psql($db, "CREATE EXTENSION flake; $blue_sql $publication");
	$green->safe_psql($db, "CREATE EXTENSION flake; $green_sql");
	subscribe($green, $db, $blue, $db, 'p');
	is($green->safe_psql($db, $triggers), $trigger, "$what: the trigger");
	is(write_rows($blue, $db, $_, 'blue'), 0, "$what: blue writes $_") foreach sort keys %move_generator;
	applied_by($blue, $db);
	$green->safe_psql($db, "DROP SUBSCRIPTION $db");
	is(write_rows($green, $db, $_, 'green'), 0, "$what: green issues none of blue's $move_generator{$_} ids again")
	  foreach sort keys %move_generator;
}

stop_clocks(1, $blue_clock, $green_clock);
case('viaroot', partitioned(1), partitioned(1),
	'CREATE PUBLICATION p FOR TABLE tf, tr WITH (publish_via_partition_root = true);',
	'published via the partition root', 'tf:R,tf_0:R,tf_1:R,tr:R,tr_0:R,tr_1:R');

stop_clocks(2, $blue_clock, $green_clock);
case('attached', partitioned(1), partitioned(0),
	'CREATE PUBLICATION p FOR TABLE tf, tr;',
	'partitions attached without defaults', 'tf_0:R,tf_1:R,tr_0:R,tr_1:R');
is($green->safe_psql('attached', 'SELECT ids FROM flake_take_over_ids()'), 4 * $move_rows,
	'flake_take_over_ids() reads partitions attached without defaults');

stop_clocks(3, $blue_clock, $green_clock);
my $domain = 'CREATE DOMAIN fid AS bigint;' . move_tables(0, 'fid');
case('domain', $domain, $domain, 'CREATE PUBLICATION p FOR TABLE tf, tr;',
	'id columns of a domain over bigint', 'tf:R,tr:R');
is($green->safe_psql('domain', 'SELECT ids FROM flake_take_over_ids()'), 4 * $move_rows,
	'flake_take_over_ids() reads columns of a domain over bigint');

done_testing();
