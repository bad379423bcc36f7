# The nodes of rekeys: flake_migrate() gives existing rows ids on nodes of
# flake.rekey_nodes, which flake.nodes must leave out, each rekey claiming a
# node for its milliseconds in a file that survives restarts; without such
# nodes, or without the right to claim one, rekeying is refused before
# anything changes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('rekey_nodes');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE rentals (id serial PRIMARY KEY, at timestamptz NOT NULL);
	CREATE TABLE payments (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO rentals (at) SELECT '2023-03-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 1000) n;
	INSERT INTO payments (at) SELECT at FROM rentals;
});

# no nodes reserved: refused, and shown as blocked in a dry run
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT * FROM flake_migrate('rentals', rekey_from => 'at')});
like($stderr, qr/ERROR:  55000: flake.rekey_nodes is empty/, 'without flake.rekey_nodes, rekeying is refused');
like($stderr, qr/HINT:  Leave some nodes out of flake.nodes/, 'the hint shows what to set');
is( $node->safe_psql('postgres', q{
		SELECT detail FROM flake_migrate('rentals', rekey_from => 'at', dry_run => true) WHERE action = 'blocked'}),
	'flake.rekey_nodes is empty (SQLSTATE 55000). Hint: Leave some nodes out of flake.nodes, here and on every server that shares keys, and name them in flake.rekey_nodes, for example flake.nodes = \'0-1015\' and flake.rekey_nodes = \'1016-1023\'; then restart the server. Detail: Rekeyed ids lie in the past, where live ids may exist on every node of flake.nodes, so they are made on nodes reserved for rekeys.',
	'a dry run lists it as blocked, leading with what to set');
is( $node->safe_psql('postgres', q{
		SELECT step, action FROM flake_migrate('rentals', rekey_from => 'at', dry_run => true)
		WHERE detail LIKE '%public.rentals_flake_map%' ORDER BY step LIMIT 1}),
	'3|create map', 'and the plan below it names the mapping table (1.4 left its name blank)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM flake_migrate('rentals', dry_run => true)}),
	'5', 'migrating without rekeying needs no reserved node');

# reserved nodes that live generation may lease: the server does not start
$node->stop;
$node->append_conf('postgresql.conf', "flake.rekey_nodes = '1020-1023'\n");
ok(!$node->start(fail_ok => 1), 'flake.rekey_nodes inside flake.nodes stops the server');
like(slurp_file($node->logfile), qr/FATAL:  node 1020 is in both flake.nodes and flake.rekey_nodes/,
	'the log names the node');

$node->append_conf('postgresql.conf', "flake.nodes = '0-1019'\n");
$node->start;

is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE action = 'rekey') FROM flake_migrate('rentals', rekey_from => 'at')}),
	'1', 'rentals rekeyed');

# the claim holds across a restart: payments with the same times get the
# next node
$node->restart;
is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE action = 'rekey') FROM flake_migrate('payments', rekey_from => 'at')}),
	'1', 'payments rekeyed after a restart');
is( $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM rentals r JOIN payments p ON p.id = r.id),
			   (SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM rentals),
			   (SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM payments),
			   (SELECT count(*) FROM rentals r JOIN payments p ON flake_timestamp(p.id) = flake_timestamp(r.id))}),
	'0|1020|1021|1000', 'the same times, no id in common: each rekey on a node of its own');

# in another database, rentals of the same times get yet another node
$node->safe_psql('postgres', 'CREATE DATABASE other');
is( $node->safe_psql('other', q{
		CREATE EXTENSION flake;
		CREATE TABLE rentals (id serial PRIMARY KEY, at timestamptz NOT NULL);
		INSERT INTO rentals (at) SELECT '2023-03-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 1000) n;
		SELECT count(*) FROM flake_migrate('rentals', rekey_from => 'at');
		SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM rentals}),
	"9\n1022", 'claims are server-wide');

# a role that owns its tables needs the right to claim a node
$node->safe_psql('postgres', q{
	CREATE ROLE owner LOGIN;
	GRANT CREATE ON SCHEMA public TO owner;
	CREATE TABLE visits (id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT '2023-03-01 00:00:05');
	INSERT INTO visits DEFAULT VALUES;
	ALTER TABLE visits OWNER TO owner;
});
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	SELECT * FROM flake_migrate('visits', rekey_from => 'at')},
	extra_params => [ '-U', 'owner' ]);
like($stderr, qr/ERROR:  permission denied for function flake_rekey_claim\n.*HINT:  Rekey as a superuser, or GRANT EXECUTE/s,
	'without EXECUTE on flake_rekey_claim, a rekey is refused beforehand');
$node->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) TO owner');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM flake_migrate('visits', rekey_from => 'at') WHERE action = 'rekey'},
		extra_params => [ '-U', 'owner' ]),
	'1', 'with it, the owner rekeys');

# every node used for these times: the next rekey is refused, and rolls back
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	CREATE TABLE late (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO late (at) SELECT '2023-03-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 10) n;
	SELECT * FROM flake_migrate('late', rekey_from => 'at');});
like($stderr, qr/every node of flake.rekey_nodes has been used by rekeys of these times/,
	'no node left for these times');
is($node->safe_psql('postgres', q{SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'late'::regclass AND attname = 'id'}),
	'integer', 'the table is as it was');

$node->stop;
done_testing();
