# Rekey claims reach standbys and restores through WAL: a standby made
# before any rekey, then promoted, and a server restored from that base
# backup plus archived WAL, each rekey a table from the times the primary
# rekeyed and get another node, no id in common.  And claims are bounded:
# a role allowed to claim gets nodes only for the milliseconds its own
# table's rows span, so it cannot take every node for all time, and claims
# of one node that touch are kept as one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $primary = flake_cluster('primary', qq{flake.nodes = '0-1015'
flake.rekey_nodes = '1016-1023'
}, allows_streaming => 1, has_archiving => 1);
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
	CREATE TABLE invoices (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO orders (at) SELECT '2020-01-01'::timestamptz + n * interval '1 min' FROM generate_series(1, 5000) n;
	INSERT INTO invoices (at) SELECT at FROM orders;
});

# the backup and the standby know no claim yet
$primary->backup('before_rekeys');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'before_rekeys', has_streaming => 1);
$standby->start;

is( $primary->safe_psql('postgres', q{
		SELECT count(*) FROM flake_migrate('orders', rekey_from => 'at') WHERE action = 'rekey';
		SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM orders}),
	"1\n1016", 'the primary rekeys orders on node 1016');
$primary->wait_for_catchup($standby);

# the WAL up to here, archived, restored onto the backup
my $walfile = $primary->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
$primary->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$walfile' FROM pg_stat_archiver")
  or die 'the WAL was not archived';
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($primary, 'before_rekeys', has_restoring => 1, standby => 0);
$primary->stop;

$standby->promote;
$restored->start;
$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restored server did not finish recovery';

for my $server ($standby, $restored)
{
	my $name = $server->name;
	is( $server->safe_psql('postgres', q{
			SELECT count(*) FROM flake_migrate('invoices', rekey_from => 'at') WHERE action = 'rekey';
			SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM invoices;
			SELECT count(*) FROM orders o JOIN invoices i ON i.id = o.id;
			SELECT count(*) FROM orders o JOIN invoices i ON flake_timestamp(i.id) = flake_timestamp(o.id)}),
		"1\n1017\n0\n5000",
		"$name: invoices of the same times rekeyed on node 1017, no id in common with orders");
}
$standby->stop;
$restored->stop;

# A role allowed to claim: only for its own tables' rows
my $node = flake_cluster('claims', qq{flake.nodes = '0-1015'
flake.rekey_nodes = '1016-1023'
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE ROLE mallory LOGIN;
	GRANT CREATE ON SCHEMA public TO mallory;
	GRANT EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) TO mallory;
	CREATE TABLE orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO orders (at) SELECT '2020-01-01'::timestamptz + n * interval '1 min' FROM generate_series(1, 5000) n;
});
my %as_mallory = (extra_params => [ '-U', 'mallory' ]);
my ($ret, $stdout, $stderr);

($ret, $stdout, $stderr) = $node->psql('postgres',
	'SELECT flake_rekey_claim(0, 9223372036854775807)', %as_mallory);
like($stderr, qr/function flake_rekey_claim\(integer, bigint\) does not exist/,
	'the milliseconds of a claim are not the caller\'s to choose');

($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT flake_rekey_claim('orders', 'at')}, %as_mallory);
like($stderr, qr/ERROR:  42501: must be owner of table orders/,
	'nor are the rows of another role\'s table');

# every node claimed, eight times over, for the two rows of its own table
$node->safe_psql('postgres', q{
	CREATE TABLE mine (id serial PRIMARY KEY, at timestamptz, note text);
	INSERT INTO mine (at) VALUES ('2021-06-01 00:00:00+00'), ('2021-06-01 00:00:00.003+00'), (NULL), ('infinity'), ('1999-01-01');
	ALTER TABLE mine ENABLE ROW LEVEL SECURITY;
	CREATE POLICY hide ON mine USING (false);
}, %as_mallory);
is( $node->safe_psql('postgres', q{
		SELECT string_agg(flake_rekey_claim('mine', 'at')::text, ',') FROM generate_series(1, 8)},
		%as_mallory),
	'1016,1017,1018,1019,1020,1021,1022,1023',
	'a role takes each node, but only for the milliseconds of its rows');
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT flake_rekey_claim('mine', 'at')}, %as_mallory);
like($stderr, qr/ERROR:  53400: every node of flake.rekey_nodes has been used by rekeys of these times/,
	'then those milliseconds have no node left');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM flake_migrate('orders', rekey_from => 'at') WHERE action = 'rekey';
		SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM orders}),
	"1\n1016", 'other times keep every node');
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT flake_rekey_claim('mine', 'note')}, %as_mallory);
like($stderr, qr/ERROR:  42804: column "note" of relation "mine" is of type text/,
	'a claim needs a time column');

# claims of one node that touch are kept as one: 16 bytes of header and
# 24 per claim; orders' claim on node 1016 ends at 11:20:00.001 (5000 rows,
# one a minute from 00:01, 4096 ids per millisecond)
my $size = $node->safe_psql('postgres', q{SELECT size FROM pg_stat_file('flake.rekeys')});
is($size, 16 + 24 * 9, 'nine claims are kept');
$node->safe_psql('postgres', q{
	CREATE TABLE next_ms (id serial PRIMARY KEY, at timestamptz);
	INSERT INTO next_ms (at) VALUES ('2020-01-04 11:20:00.002+00');
	SELECT flake_rekey_claim('next_ms', 'at');
}, %as_mallory);
is($node->safe_psql('postgres', q{SELECT size FROM pg_stat_file('flake.rekeys')}),
	$size, 'a claim touching one of the same node is merged into it');

$node->stop;
done_testing();
