# flake on a Citus cluster (issue 19): a coordinator and two workers that
# preload citus and flake and are configured with nothing else (the same
# randflake secret, which is not a node setting) get ids that are unique on
# every insert path, from all three families: each Citus group generates on
# its own share of the node spaces (and as its own ulidflake sid).  Then the
# same with explicit, disjoint flake.nodes and flake.randflake_nodes, which
# win over the groups.  Also: a worker not added yet refuses to generate; a
# session whose group changed under it (node removed and added again)
# refuses; the cluster check; tables created with flake.serial_default
# on.  flake_migrate and flake_guard on a cluster: 061.
#
# Needs Citus installed into the PostgreSQL under test (make check-citus, or
# ../shared/citus in CI); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

citus_required();

my $rows = 4000;    # per path and server

my @servers = citus_cluster(add_workers => 0);
my ($coord, $w1, $w2) = @servers;
my ($rc, $stdout, $stderr);

# --- before a node is added: group 0 without nodes refuses
foreach my $gen ('flake_next()', 'randflake_next()', 'ulidflake_next()')
{
	my ($rc, $out, $err) = $w2->psql('postgres', "SELECT $gen");
	like($err, qr/cannot know its node range: this server is not part of a Citus cluster yet/,
		"$gen refuses on a server not yet added");
}

citus_add_workers(@servers);
is($w2->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group'), '2', 'worker2 is group 2');

# --- a session whose group changes under it refuses; a new one uses the new group
my ($in, $out) = ('', '');
my $session = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-d', $w2->connstr('postgres') ],
	'<', \$in, '>&', \$out, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
sub session_query
{
	my ($sql) = @_;
	$out = '';
	$in .= "$sql;\n\\echo END\n";
	$session->pump until $out =~ /^END$/m;
	$out =~ s/^END\n//m;
	return $out;
}
like(session_query('SELECT flake_node(flake_next()) >> 4, ulidflake_sid(ulidflake_next())'),
	qr/^2\|2$/m, 'worker2 generates in group 2');
$coord->safe_psql('postgres', "SELECT citus_remove_node('127.0.0.1', " . $w2->port . ')');
$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $w2->port . ')');
is($w2->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group'), '3', 'worker2 is group 3 when added again');
foreach my $gen ('flake_next()', 'randflake_next()', 'ulidflake_next()')
{
	like(session_query("SELECT $gen"),
		qr/refuses to generate: database "postgres" changed from Citus group 2 to Citus group 3/,
		"$gen refuses in a session whose group changed");
}
$in .= "\\q\n";
$session->finish;
is($w2->safe_psql('postgres', 'SELECT flake_node(flake_next()) >> 4'), '3', 'a new session generates in group 3');

# --- the tables: one distributed by tenant with the key (tenant, f), one
# by its flake_next() key; sources local, reference, co-located and not
$coord->safe_psql('postgres', qq{
	CREATE TABLE by_tenant (tenant int NOT NULL, path text NOT NULL,
		f bigint NOT NULL DEFAULT flake_next(),
		r bigint NOT NULL DEFAULT randflake_next(),
		u ulidflake NOT NULL DEFAULT ulidflake_next(),
		PRIMARY KEY (tenant, f));
	SELECT create_distributed_table('by_tenant', 'tenant', shard_count => 4);
	CREATE TABLE by_id (f bigint PRIMARY KEY DEFAULT flake_next(), path text NOT NULL,
		r bigint NOT NULL DEFAULT randflake_next(),
		u ulidflake NOT NULL DEFAULT ulidflake_next());
	SELECT create_distributed_table('by_id', 'f', shard_count => 4);
	CREATE TABLE local_src AS SELECT g FROM generate_series(1, $rows) g;
	CREATE TABLE ref_src AS SELECT g FROM generate_series(1, $rows) g;
	SELECT create_reference_table('ref_src');
	CREATE TABLE coloc_src (tenant int, g int);
	SELECT create_distributed_table('coloc_src', 'tenant', colocate_with => 'by_tenant');
	INSERT INTO coloc_src SELECT g % 16, g FROM generate_series(1, $rows) g;
	CREATE TABLE other_src (g int);
	SELECT create_distributed_table('other_src', 'g', shard_count => 3, colocate_with => 'none');
	INSERT INTO other_src SELECT g FROM generate_series(1, $rows) g;
	CREATE FUNCTION add_rows(t int, n int) RETURNS void LANGUAGE plpgsql
		AS \$\$ BEGIN INSERT INTO by_tenant (tenant, path) SELECT t, 'function' FROM generate_series(1, n); END \$\$;
	SELECT create_distributed_function('add_rows(int,int)', 't', colocate_with => 'by_tenant');
});

my $multi = "INSERT INTO by_tenant (tenant, path) VALUES "
  . join(', ', map { "($_ % 16, 'multi-row')" } 1 .. $rows) . ";\n";
my $copy = "COPY by_tenant (tenant, path) FROM STDIN;\n"
  . join('', map { ($_ % 16) . "\tcopy\n" } 1 .. $rows) . "\\.\n";
my %paths = (
	'single-row' => [ [ $coord, "DO \$\$ BEGIN FOR i IN 1..$rows / 4 LOOP INSERT INTO by_tenant (tenant, path) VALUES (i % 16, 'single-row'); END LOOP; END \$\$;" ] ],
	'multi-row' => [ [ $coord, $multi ] ],
	'copy' => [ [ $coord, $copy ] ],
	'from local' => [ [ $coord, "INSERT INTO by_tenant (tenant, path) SELECT g % 16, 'from local' FROM local_src;" ] ],
	'from reference' => [ [ $coord, "INSERT INTO by_tenant (tenant, path) SELECT g % 16, 'from reference' FROM ref_src;" ] ],
	'from co-located' => [ [ $coord, "INSERT INTO by_tenant (tenant, path) SELECT tenant, 'from co-located' FROM coloc_src;" ] ],
	'from not co-located' => [ [ $coord, "INSERT INTO by_tenant (tenant, path) SELECT g % 16, 'from not co-located' FROM other_src;" ] ],
	'by id from distributed' => [ [ $coord, "INSERT INTO by_id (path) SELECT 'by id from distributed' FROM coloc_src; INSERT INTO by_id (path) SELECT 'by id from distributed' FROM other_src;" ] ],
	'on workers' => [ map { [ $_, "INSERT INTO by_tenant (tenant, path) SELECT g % 16, 'on workers' FROM generate_series(1, $rows) g; INSERT INTO by_id (path) SELECT 'on workers' FROM generate_series(1, $rows);" ] } ($w1, $w2) ],
	'function' => [ [ $coord, join('', map { "SELECT add_rows($_, " . int($rows / 16) . ");\n" } 0 .. 15) ] ],
);

# Every path, then all of them at once; then the duplicates of each family
# by path (a row counts when another row has its id)
sub run_paths
{
	my ($label) = @_;
	$coord->safe_psql('postgres', 'TRUNCATE by_tenant, by_id');
	foreach my $path (sort keys %paths)
	{
		is(citus_concurrently(@{ $paths{$path} }), 0, "$label: $path: no error");
	}
	is(citus_concurrently(map { @$_ } values %paths), 0, "$label: every path at once: no error");
	foreach my $col ('f', 'r', 'u')
	{
		my $dups = $coord->safe_psql('postgres', qq{
			WITH a AS (SELECT path, $col AS id FROM by_tenant UNION ALL SELECT path, $col FROM by_id)
			SELECT coalesce(string_agg(path || ': ' || n, ', ' ORDER BY path), '')
			FROM (SELECT path, count(*) AS n FROM a
			      WHERE id IN (SELECT id FROM a GROUP BY id HAVING count(*) > 1) GROUP BY path) s});
		is($dups, '', "$label: no duplicate $col on any path");
	}
	note "$label: " . $coord->safe_psql('postgres',
		"SELECT string_agg(path || ' ' || n, ', ') FROM (SELECT path, count(*) n FROM (SELECT path FROM by_tenant UNION ALL SELECT path FROM by_id) a GROUP BY path ORDER BY path) s");
}

# The rows of distributed functions, with the group of the worker that ran
# the function (the one holding the tenant's shard)
my $rows_by_group = q{
	WITH rows AS MATERIALIZED (SELECT tenant, f, r, u FROM by_tenant WHERE path = 'function'),
	rows_by_group AS (
		SELECT p.groupid, rows.* FROM rows, pg_dist_placement p
		WHERE p.shardid = get_shard_id_for_distribution_column('by_tenant', rows.tenant))
};

run_paths('default settings');
is($coord->safe_psql('postgres', "SELECT string_agg(DISTINCT (flake_node(f) >> 4)::text, ',') FROM by_tenant WHERE path = 'multi-row'"),
	'0', 'default settings: the coordinator generates in group 0');
($rc, $stdout, $stderr) = $coord->psql('postgres', 'SELECT flake_next(16)');
like($stderr, qr/node 16 is not in this server's Citus node range/, 'flake_next(node) refuses a node of another group');
is($coord->safe_psql('postgres', 'SELECT flake_node(flake_next(15))'), '15', 'flake_next(node) takes a node of its group');
is($coord->safe_psql('postgres', $rows_by_group . q{
	SELECT string_agg(g, ';' ORDER BY g) FROM (
		SELECT t.groupid::text || ':' || string_agg(DISTINCT (flake_node(t.f) >> 4)::text || '/' || ((randflake_decode(t.r)).node >> 8)::text || '/' || ulidflake_sid(t.u)::text, ',') AS g
		FROM rows_by_group t
		GROUP BY t.groupid) x}),
	'1:1/1/1;3:3/3/3', 'default settings: distributed functions generate in the group of the worker they run on (flake / randflake / ulidflake)');

is($coord->safe_psql('postgres', 'SELECT count(*) FROM flake_citus_check()'), '0',
	'default settings: the cluster check finds nothing');

# --- flake.serial_default (issue 30): a table an application creates with
# the setting on has its default before create_distributed_table, which
# copies it to the shards: rows made on the coordinator and on the workers
# get flake ids of their groups, the foreign key between co-located tables
# holds, and no sequence is made anywhere.  An identity table made before
# the setting keeps its identity on the workers when they have the setting
# on: Citus's DDL for their shell tables gives the sequence's options.
$coord->safe_psql('postgres', q{
	SET flake.serial_default = 'flake_next';
	CREATE TABLE sd_orders (id bigserial PRIMARY KEY, item text);
	SELECT create_distributed_table('sd_orders', 'id');
	CREATE TABLE sd_lines (id bigint GENERATED BY DEFAULT AS IDENTITY, order_id bigint NOT NULL,
		PRIMARY KEY (order_id, id), FOREIGN KEY (order_id) REFERENCES sd_orders (id));
	SELECT create_distributed_table('sd_lines', 'order_id', colocate_with => 'sd_orders');
});
foreach my $node (@servers)
{
	$node->safe_psql('postgres', q{
		INSERT INTO sd_orders (item) SELECT 'x' FROM generate_series(1, 100);
		INSERT INTO sd_lines (order_id) SELECT id FROM sd_orders WHERE item = 'x'});
	$node->safe_psql('postgres', q{UPDATE sd_orders SET item = 'done' WHERE item = 'x'});
}
is($coord->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT id), string_agg(DISTINCT (flake_node(id) >> 4)::text, ','),
		   bool_and(flake_timestamp(id) > now() - interval '5 minutes'), pg_get_serial_sequence('sd_orders', 'id')
	FROM sd_orders;
	SELECT count(*), count(DISTINCT id) FROM sd_lines}),
	"300|300|0,1,3|t|
300|300",
	'flake.serial_default: a distributed table gets flake ids of each group that inserts, and no sequence');
($rc, $stdout, $stderr) = $w1->psql('postgres', 'INSERT INTO sd_lines (order_id) VALUES (1)');
like($stderr, qr/violates foreign key constraint/, 'flake.serial_default: the foreign key between the tables holds');
foreach my $node (@servers)
{
	is($node->safe_psql('postgres', q{
		SET citus.override_table_visibility = off;
		SELECT count(*) FILTER (WHERE c.relkind = 'S'),
			   string_agg(DISTINCT pg_get_expr(d.adbin, d.adrelid), ',')
		FROM pg_class c LEFT JOIN pg_attrdef d ON d.adrelid = c.oid
		WHERE c.relname LIKE 'sd\_orders%' OR c.relname LIKE 'sd\_lines%'}),
		'0|flake_next()', 'flake.serial_default: ' . $node->name . ': tables and shards have the default, no sequence');
}
$coord->safe_psql('postgres', 'CREATE TABLE sd_old (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v text)');
$_->safe_psql('postgres', q{SET citus.enable_ddl_propagation = off;
	ALTER DATABASE postgres SET flake.serial_default = 'flake_next'}) foreach ($w1, $w2);
$coord->safe_psql('postgres', q{
	SELECT create_distributed_table('sd_old', 'id');
	INSERT INTO sd_old (v) SELECT 'x' FROM generate_series(1, 10)});
is($w1->safe_psql('postgres', q{SELECT attidentity FROM pg_attribute WHERE attrelid = 'sd_old'::regclass AND attname = 'id'})
	. '|' . $coord->safe_psql('postgres', 'SELECT max(id) FROM sd_old'),
	'd|10', 'flake.serial_default: the shell table that a worker with the setting on makes of an identity table keeps the identity');
$_->safe_psql('postgres', 'SET citus.enable_ddl_propagation = off; ALTER DATABASE postgres RESET flake.serial_default')
  foreach ($w1, $w2);

# --- explicit ranges win over the groups
my %explicit = ($coord => '0-99', $w1 => '100-199', $w2 => '200-299');
foreach my $node (@servers)
{
	$node->append_conf('postgresql.conf', "flake.nodes = '$explicit{$node}'\nflake.randflake_nodes = '$explicit{$node}'\n");
	$node->restart;
}
run_paths('explicit ranges');
is($coord->safe_psql('postgres', $rows_by_group . q{
	SELECT string_agg(g, ';' ORDER BY g) FROM (
		SELECT t.groupid::text || ':' || min(flake_node(t.f)) / 100 || '-' || max(flake_node(t.f)) / 100
		       || '/' || min((randflake_decode(t.r)).node) / 100 || '-' || max((randflake_decode(t.r)).node) / 100 AS g
		FROM rows_by_group t
		GROUP BY t.groupid) x}),
	'1:1-1/1-1;3:2-2/2-2', 'explicit ranges: each worker generates on its own flake.nodes and flake.randflake_nodes');

is($coord->safe_psql('postgres', 'SELECT count(*) FROM flake_citus_check()'), '0',
	'explicit ranges: the cluster check finds nothing');

# --- a group beyond the layout: with 5 node bits, flake_next() has 2 groups.
# The sequence takes the 5 bits the nodes give up, so that the layout keeps
# every new id above those this worker issued (else flake_next() refuses
# the layout first: t/084).
$w2->append_conf('postgresql.conf', "flake.nodes = ''\nflake.randflake_nodes = '0-131071'\nflake.node_bits = 5\nflake.sequence_bits = 17\n");
$w2->restart;
($rc, $stdout, $stderr) = $w2->psql('postgres', 'SELECT flake_next()');
like($stderr, qr/flake_next\(\) cannot know its node range: Citus group 3 is beyond the groups its node space holds/,
	'flake_next() refuses a group beyond the layout');
is($w2->safe_psql('postgres', 'SELECT (randflake_decode(randflake_next())).node >> 8'), '3',
	'randflake_next() still has room for the group');

# --- the cluster check: an overlap and a layout mismatch, one row each per node
$w2->append_conf('postgresql.conf', "flake.node_bits = 10\nflake.nodes = '150-250'\nflake.sequence_bits = 11\n");
$w2->restart;
my ($p1, $p2) = ($w1->port, $w2->port);
is($coord->safe_psql('postgres', 'SELECT node, problem FROM flake_citus_check()'),
	"127.0.0.1:$p1|flake_next() node ranges overlap\n127.0.0.1:$p2|flake_next() node ranges overlap\n127.0.0.1:$p2|layout differs",
	'the cluster check reports the overlap on both nodes and the layout on the one that differs');
$coord->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
($rc, $stdout, $stderr) = $coord->psql('postgres', 'SELECT * FROM flake_citus_check()', extra_params => [ '-U', 'plain' ]);
like($stderr, qr/permission denied for function flake_citus_check/, 'the cluster check is not for every role');

$_->stop foreach @servers;
done_testing();
