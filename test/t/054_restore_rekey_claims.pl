# A dump of a running server that rekeyed rows, restored on a server with
# the same flake.rekey_nodes: flake_take_over_ids() claims the rekey nodes
# and ulidflake bands the restored ids use, so a rekey there of the same
# times takes another node or band, or is refused when none is left,
# and never gives an id the restored tables hold.  The claims are durable
# and reach a standby.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $conf = "flake.nodes = '0-1015'\nflake.rekey_nodes = '1016-1017'\n";
my $old = flake_cluster('old', $conf);
my $new = flake_cluster('new', $conf, allows_streaming => 1);
$_->start foreach ($old, $new);
$new->backup('new');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($new, 'new', has_streaming => 1);
$standby->start;

# a table of 1000 rows of the same times, in a database
sub rows
{
	my ($node, $db, $table) = @_;
	$node->safe_psql($db, qq{
		CREATE TABLE $table (id serial PRIMARY KEY, at timestamptz NOT NULL);
		INSERT INTO $table (at)
			SELECT '2025-03-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 1000) n});
}

sub rekey
{
	my ($node, $db, $table, $generator) = @_;
	return $node->psql($db, qq{
		SELECT count(*) FROM flake_migrate('$table', generator => '$generator', rekey_from => 'at')});
}

$old->safe_psql('postgres', 'CREATE EXTENSION flake');
rows($old, 'postgres', $_) foreach ('rentals', 'visits');
is((rekey($old, 'postgres', 'rentals', 'flake_next'))[0], 0, 'rentals rekeyed on the old server');
is((rekey($old, 'postgres', 'visits', 'ulidflake_next'))[0], 0, 'visits rekeyed to ulidflake');

my $dump = $old->basedir . '/old.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $old->connstr('postgres') ], 'pg_dump, running');
$new->safe_psql('postgres', 'CREATE DATABASE copy');
$new->command_ok([ 'pg_restore', '-d', $new->connstr('copy'), $dump ], 'restored');
is($new->safe_psql('copy', 'SELECT ids FROM flake_take_over_ids()'), '2000',
	'flake_take_over_ids() reads the rekeyed ids');

# the same times rekeyed on the restored server: node 1017, then none left
rows($new, 'copy', $_) foreach ('payments', 'refunds', 'tags');
is((rekey($new, 'copy', 'payments', 'flake_next'))[0], 0, 'payments rekeyed');
is( $new->safe_psql('copy', q{
		SELECT (SELECT count(*) FROM rentals r JOIN payments p USING (id)),
			   (SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM payments)}),
	'0|1017', 'the same times take the other node: no id of the restored rentals');
my ($ret, $out, $err) = $new->psql('copy', qq{
	\\set VERBOSITY verbose
	SELECT count(*) FROM flake_migrate('refunds', rekey_from => 'at')});
like($err, qr/53400: every node of flake.rekey_nodes has been used/, 'then none is left: refused');

# ulidflake: the band of the restored ids is taken
is((rekey($new, 'copy', 'tags', 'ulidflake_next'))[0], 0, 'tags rekeyed to ulidflake');
is( $new->safe_psql('copy', q{
		SELECT (SELECT count(*) FROM visits v JOIN tags t ON t.id = v.id),
			   (SELECT count(DISTINCT id::bigint & 31) FROM tags),
			   (SELECT count(*) FROM visits v JOIN tags t ON t.id::bigint & 31 = v.id::bigint & 31)}),
	'0|1|0', 'ulidflake: another band, no id of the restored visits');

# the claims are durable, and reached the standby in WAL
$new->restart;
$new->wait_for_catchup($standby);
$standby->promote;
foreach my $node ($new, $standby)
{
	($ret, $out, $err) = $node->psql('copy', qq{
		\\set VERBOSITY verbose
		SELECT count(*) FROM flake_migrate('refunds', rekey_from => 'at')});
	like($err, qr/53400/, $node->name . ': after a restart or promotion, still refused');
}

done_testing();
