# flake_guard() on a real subscription from a server whose node ranges
# overlap this one's (issue 12): for each family, the apply worker's first
# row is refused with the error naming the node (or sid) and this server's
# range, the subscription is disabled (disable_on_error) and no row arrives.
#
# Two-way replication between servers with disjoint ranges (issue 18): A
# publishes inserts to B, B publishes updates to A (publish = 'insert' and
# 'update', so no change goes round in a loop, also before PostgreSQL 16's
# origin = none), both guarded as the README says.  Rows made on A and
# updated on B come back to A as updates carrying A's own ids in all three
# families: they pass.  An update on B that changes a key to another id of
# A's nodes is refused on A.
#
# A subscription named like a Citus shard move's, owned by a role named
# like Citus's for it, on a server without Citus, is guarded as any other
# (issue 27).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

# the publisher leases its first nodes, 0 up; the subscriber's ranges and
# sid overlap them
my $publisher = flake_server('publisher', '0-9');
my $subscriber = flake_server('subscriber', '0-3');
my %tables = (
	tf => [ 'bigint DEFAULT flake_next()', 'id' ],
	tr => [ 'bigint DEFAULT randflake_next()', 'id:randflake' ],
	tu => [ 'ulidflake DEFAULT ulidflake_next(3)', 'id:ulidflake=3' ]);
foreach my $table (sort keys %tables)
{
	my ($type, $argument) = @{ $tables{$table} };
	$publisher->safe_psql('postgres', qq{
		CREATE TABLE $table (id $type PRIMARY KEY, n int);
		CREATE PUBLICATION pub_$table FOR TABLE $table;
	});
	$subscriber->safe_psql('postgres', qq{
		CREATE TABLE $table (id $type PRIMARY KEY, n int);
		CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON $table
			FOR EACH ROW EXECUTE FUNCTION flake_guard('$argument');
		ALTER TABLE $table ENABLE REPLICA TRIGGER guard;
	});
	my $connstr = $publisher->connstr . ' dbname=postgres';
	$subscriber->safe_psql('postgres',
		"CREATE SUBSCRIPTION sub_$table CONNECTION '$connstr' PUBLICATION pub_$table WITH (copy_data = false, disable_on_error = true)");
	$publisher->safe_psql('postgres', "INSERT INTO $table (n) SELECT generate_series(1, 10)");
}

my %expected = (
	tf => qr/ERROR:  replicated flake id \d+ in column "id" of table "tf" was made on node 0, one of this server's own nodes\n.*DETAIL:  The server it came from has node 0 in its flake.nodes, and so has this server's flake.nodes "0-3"/,
	tr => qr/ERROR:  replicated randflake id -?\d+ in column "id" of table "tr" was made on node 0, one of this server's own nodes\n.*DETAIL:  The server it came from has node 0 in its flake.randflake_nodes, and so has this server's flake.randflake_nodes "0-3"/,
	tu => qr/ERROR:  replicated ulidflake id \w{13} in column "id" of table "tu" has sid 3, one of this server's own sids\n.*DETAIL:  The server it came from generates with sid 3, and so does this server \(sids "3"\)/);
foreach my $table (sort keys %tables)
{
	$subscriber->poll_query_until('postgres', "SELECT NOT subenabled FROM pg_subscription WHERE subname = 'sub_$table'")
	  or die "the subscription of $table was not disabled";
	like(slurp_file($subscriber->logfile), $expected{$table}, "$table: the replicated row is refused, naming the node and this server's range");
	is($subscriber->safe_psql('postgres', "SELECT count(*) FROM $table"), '0', "$table: no row arrived");
}

# A subscription named as Citus names its shard moves', owned by a role
# named as Citus names the role it makes for one (made as Citus makes it: a
# superuser hands it over, and the role is no superuser after), on a server
# without Citus (issue 27): guarded as any other.  Before, the name alone
# let every row past the guard.
$publisher->safe_psql('postgres', q{
	CREATE TABLE tc (id bigint PRIMARY KEY DEFAULT flake_next(), n int);
	CREATE PUBLICATION pub_tc FOR TABLE tc;
});
my $citus_like = 'citus_shard_move_subscription_10_7';
my $citus_like_role = 'citus_shard_move_subscription_role_10_7';
# (from PostgreSQL 16 on, the owner, no superuser, connects without a
# password, as Citus's subscriptions do, and applies as itself)
my $owner_options = $subscriber->pg_version >= 16 ? ', password_required = false, run_as_owner = true' : '';
$subscriber->safe_psql('postgres', qq{
	CREATE TABLE tc (id bigint PRIMARY KEY DEFAULT flake_next(), n int);
	CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON tc FOR EACH ROW EXECUTE FUNCTION flake_guard('id');
	ALTER TABLE tc ENABLE REPLICA TRIGGER guard;
	CREATE USER $citus_like_role SUPERUSER;
	GRANT INSERT, UPDATE, SELECT ON tc TO $citus_like_role;
	CREATE SUBSCRIPTION $citus_like CONNECTION '@{[ $publisher->connstr . ' dbname=postgres' ]}' PUBLICATION pub_tc
		WITH (copy_data = false, disable_on_error = true$owner_options);
	ALTER SUBSCRIPTION $citus_like OWNER TO $citus_like_role;
	ALTER ROLE $citus_like_role NOSUPERUSER;
});
$publisher->safe_psql('postgres', 'INSERT INTO tc (n) SELECT generate_series(1, 10)');
$subscriber->poll_query_until('postgres',
	"SELECT NOT subenabled OR (SELECT count(*) > 0 FROM tc) FROM pg_subscription WHERE subname = '$citus_like'")
  or die 'the subscription named like Citus\'s was neither disabled nor applied a row';
like(slurp_file($subscriber->logfile),
	qr/ERROR:  replicated flake id \d+ in column "id" of table "tc" was made on node \d+, one of this server's own nodes/,
	'a subscription named like a Citus shard move\'s, on a server without Citus: the row is refused');
is($subscriber->safe_psql('postgres', 'SELECT count(*) FROM tc'), '0', 'and no row arrived');

$publisher->stop;
$subscriber->stop;

# --- two-way
my %sid = (a => 1, b => 2);
my $a = flake_server('a', '0-99');
my $b = flake_server('b', '100-199');
foreach my $pair ([ $a, 'a' ], [ $b, 'b' ])
{
	my ($node, $name) = @$pair;
	$node->safe_psql('postgres', qq{
		CREATE TABLE t (
			f bigint PRIMARY KEY DEFAULT flake_next(),
			u ulidflake NOT NULL UNIQUE DEFAULT ulidflake_next($sid{$name}),
			r bigint NOT NULL UNIQUE DEFAULT randflake_next(),
			n int NOT NULL);
		CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON t
			FOR EACH ROW EXECUTE FUNCTION flake_guard('f', 'u:ulidflake=$sid{$name}', 'r:randflake');
		ALTER TABLE t ENABLE ALWAYS TRIGGER guard;
	});
}
$a->safe_psql('postgres', "CREATE PUBLICATION inserts FOR TABLE t WITH (publish = 'insert')");
$b->safe_psql('postgres', "CREATE PUBLICATION updates FOR TABLE t WITH (publish = 'update')");
foreach my $pair ([ $b, $a, 'b_from_a', 'inserts' ], [ $a, $b, 'a_from_b', 'updates' ])
{
	my ($subscriber, $publisher, $name, $publication) = @$pair;
	my $connstr = $publisher->connstr . ' dbname=postgres';
	$subscriber->safe_psql('postgres',
		"CREATE SUBSCRIPTION $name CONNECTION '$connstr' PUBLICATION $publication WITH (copy_data = false, disable_on_error = true)");
}
$a->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 10)');
$a->wait_for_catchup('b_from_a');
$b->safe_psql('postgres', 'UPDATE t SET n = n + 100');
# until the updates arrived or the guard stopped the subscription
$a->poll_query_until('postgres', q{
		SELECT count(*) FILTER (WHERE n > 100) = 10
			OR NOT (SELECT subenabled FROM pg_subscription WHERE subname = 'a_from_b')
		FROM t})
  or die 'the updates did not arrive on A';
my $rows = q{SELECT string_agg(format('%s %s %s %s', f, u, r, n), ',' ORDER BY f) FROM t};
is($a->safe_psql('postgres', $rows), $b->safe_psql('postgres', $rows),
	'two-way: the rows made on A and updated on B are the same on both');
is($a->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE n > 100 AND flake_node(f) < 100 AND ulidflake_sid(u) = 1
								AND (randflake_decode(r)).node < 100)
		FROM t}),
	'10', 'two-way: A took back the updates of its own rows, ids of its own nodes in all three families');
is($a->safe_psql('postgres', "SELECT subenabled FROM pg_subscription WHERE subname = 'a_from_b'"),
	't', "two-way: A's subscription is still enabled");

# a key changed on B to another id of A's nodes is new to A's table
my $kept = $b->safe_psql('postgres', 'SELECT f FROM t WHERE n = 101');
$b->safe_psql('postgres', 'UPDATE t SET f = f + 1 WHERE n = 101');
$a->poll_query_until('postgres', "SELECT NOT subenabled FROM pg_subscription WHERE subname = 'a_from_b'")
  or die "A's subscription was not disabled";
like(slurp_file($a->logfile),
	qr/ERROR:  replicated flake id \d+ in column "f" of table "t" was made on node \d+, one of this server's own nodes/,
	'two-way: an update that changes the key to an id of A\'s nodes is refused');
is($a->safe_psql('postgres', 'SELECT f FROM t WHERE n = 101'), $kept, 'two-way: and not applied');

$a->stop;
$b->stop;
done_testing();
