# flake_guard() on a real subscription from a server whose node ranges
# overlap this one's (issue 12): for each family, the apply worker's first
# row is refused with the error naming the node (or sid) and this server's
# range, the subscription is disabled (disable_on_error) and no row arrives.
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

$publisher->stop;
$subscriber->stop;
done_testing();
