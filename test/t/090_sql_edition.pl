# The SQL edition (make sql-edition) on a server where the C edition is
# neither installed nor loaded: a role that is not a superuser installs it
# through pg_tle, and separately with the plain script; its ids decode
# with the C edition's functions and the C edition's with its own, bit for
# bit; what other roles may not do to its state.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle, $plain) = sql_edition_scripts();
my $node = sql_edition_server('sql_edition', $install);
my $owner = $sql_edition_owner;

is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = '$owner'"),
	'f', 'the owner is not a superuser');
is( $node->safe_psql('postgres', q{
		SELECT current_setting('shared_preload_libraries'),
			(SELECT count(*) FROM pg_available_extension_versions WHERE name = 'flake')}),
	'pg_tle|0', 'the C edition is neither loaded nor installed');

# 1. through pg_tle
sql_edition_install_tle($node, $tle);
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'flake'
	WHERE p.prolang NOT IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql'))}),
	'0', 'every function of the edition is SQL or PL/pgSQL');
is($node->safe_psql('postgres', q{
	SELECT extowner::regrole FROM pg_extension WHERE extname = 'flake'}),
	$owner, 'the owner created the extension');

# the names and signatures users write
$node->safe_psql('postgres', q{
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT flake_next(), item text NOT NULL);
	INSERT INTO orders (item) VALUES ('coffee'), ('tea');
	INSERT INTO orders (item) SELECT 'bulk' FROM generate_series(1, 5000);
	INSERT INTO orders (id, item) SELECT flake_next(7), 'node 7' FROM generate_series(1, 100);
	GRANT SELECT ON orders TO PUBLIC;
}, extra_params => [ '-U', $owner ]);
is($node->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT id),
		bool_and(flake_timestamp(id) BETWEEN now() - interval '1 min' AND clock_timestamp() + interval '1 s'),
		count(*) FILTER (WHERE flake_node(id) = 7), count(*) FILTER (WHERE flake_node(id) = flake_node())
	FROM orders}),
	'5102|5102|t|100|5002', 'flake_next() and flake_next(7) make ids of now, on their nodes');
is($node->safe_psql('postgres', q{
	SELECT bool_and((flake_decode(id)).ts = flake_timestamp(id)
		AND (flake_decode(id)).node = flake_node(id) AND (flake_decode(id)).sequence = flake_sequence(id)
		AND id BETWEEN flake_from_timestamp(flake_timestamp(id)) AND flake_upper_bound(flake_timestamp(id)))
	FROM orders}),
	't', 'the decoders agree, and every id lies within the bounds of its millisecond');

# errors, as the C edition's
sub sqlstate
{
	my ($sql, $db) = @_;
	my ($ret, $out, $err) = $node->psql($db // 'postgres', "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : "no error ($out)";
}
is(sqlstate('SELECT flake_timestamp(-1)'), '22003', 'a negative id is refused');
is(sqlstate("SELECT flake_from_timestamp('2014-12-31 23:59:59+00')"), '22003', 'a time before the epoch is refused');
is(sqlstate("SELECT flake_upper_bound('infinity')"), '22003', 'infinity is refused');
is(sqlstate('SELECT flake_next(1024)'), '22023', 'a node outside the range is refused');

# another role generates, but cannot move a node's sequence or the settings
$node->safe_psql('postgres', 'CREATE ROLE other LOGIN');
is($node->safe_psql('postgres', 'SELECT flake_next() > 0, flake_next(3) > 0', extra_params => [ '-U', 'other' ]),
	't|t', 'another role generates');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT setval('flake_internal.node_0', 1)",
	extra_params => [ '-U', 'other' ]);
like($err, qr/permission denied/, 'another role cannot set a node back');
($ret, $out, $err) = $node->psql('postgres', 'UPDATE flake_internal.settings SET first_node = 5',
	extra_params => [ '-U', 'other' ]);
like($err, qr/permission denied/, 'nor change the nodes');
($ret, $out, $err) = $node->psql('postgres', 'SELECT flake_internal.set_nodes(5, 9)',
	extra_params => [ '-U', 'other' ]);
like($err, qr/permission denied/, 'nor through set_nodes()');

# the owner sets the nodes, as flake.nodes does: flake_next() moves to the first
$node->safe_psql('postgres', 'SELECT flake_internal.set_nodes(512, 1023)', extra_params => [ '-U', $owner ]);
is($node->safe_psql('postgres', 'SELECT flake_node(flake_next()), flake_node()'),
	'512|512', 'flake_next() generates on the first node set');
is(sqlstate('SELECT flake_next(7)'), '22023', 'a node below the range is refused');
is($node->safe_psql('postgres', 'SELECT max(id) < flake_next() FROM orders'),
	't', 'ids continue above those of other nodes');

# 2. the plain script, into a database of its own, as the same role
$node->safe_psql('postgres', "CREATE DATABASE plain OWNER $owner");
sql_edition_install_plain($node, $plain, 'plain');
is($node->safe_psql('plain', q{
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT flake_next(), n int);
	INSERT INTO t (n) SELECT g FROM generate_series(1, 1000) g;
	SELECT count(DISTINCT id), bool_and(flake_node(id) = 0), (SELECT count(*) FROM pg_extension WHERE extname = 'flake')
	FROM t}, extra_params => [ '-U', $owner ]),
	'1000|t|0', 'the plain script installs the same functions, without an extension');

# 3. bit for bit with the C edition: its ids, decoded here, and these, there
my $c = PostgreSQL::Test::Cluster->new('sql_edition_c');
$c->init;
$c->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$c->start;
$c->safe_psql('postgres', 'CREATE EXTENSION flake');

my $probe = q{
	SELECT string_agg(format('%s %s %s %s %s', id, flake_timestamp(id), flake_node(id), flake_sequence(id), flake_decode(id)), E'\n' ORDER BY id)
	FROM unnest('{%s}'::bigint[]) id};
my $extremes = '0,1,4095,4096,4194303,4194304,9223372036854775807,1579312903834566656';
my $ids = $node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM (SELECT id FROM orders ORDER BY id LIMIT 2000) s');
my $c_ids = $c->safe_psql('postgres', q{SELECT string_agg(flake_next()::text, ',') FROM generate_series(1, 2000)});
for my $set ([ 'the SQL edition', $ids ], [ 'the C edition', $c_ids ], [ 'the layout\'s extremes', $extremes ])
{
	my $sql = sprintf($probe, $set->[1]);
	my $there = $c->safe_psql('postgres', "SET TimeZone = 'UTC'; $sql");
	my $here = $node->safe_psql('postgres', "SET TimeZone = 'UTC'; $sql");
	is($here, $there, "ids of $set->[0] decode the same with both editions");
}
my $times = q{
	SELECT string_agg(format('%s %s', flake_from_timestamp(t), flake_upper_bound(t)), E'\n' ORDER BY t)
	FROM unnest('{2015-01-01 00:00:00+00, 2015-01-01 00:00:00.0019+00, 2026-12-07 01:02:03.456789+00,
				  2020-02-29 23:59:59.9995-00:30, 2084-09-06 15:47:35.551+00}'::timestamptz[]) t};
is($node->safe_psql('postgres', $times), $c->safe_psql('postgres', $times),
	'flake_from_timestamp() and flake_upper_bound() agree with the C edition');

$c->stop;
$node->stop;
done_testing();
