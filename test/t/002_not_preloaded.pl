# Without shared_preload_libraries: the ulidflake type works and
# ulidflake_next() keeps its state per backend; flake_next() and
# randflake_next() refuse with a hint showing the postgresql.conf line;
# decoders work.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->append_conf('postgresql.conf', "flake.randflake_secret = 'dffd6021bb2bd5b0af676290809ec3a5'\n");
$node->start;

is($node->safe_psql('postgres', q{SHOW shared_preload_libraries}), '', 'flake is not preloaded');
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

is( $node->safe_psql('postgres', q{
		WITH g AS MATERIALIZED (SELECT n, ulidflake_next() AS v FROM generate_series(1, 200000) n)
		SELECT count(*) FILTER (WHERE v <= prev), count(DISTINCT v)
		FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev FROM g) s}),
	'0|200000', '200k ulidflake values from one backend strictly increasing');

is( $node->safe_psql('postgres', q{
		WITH g AS MATERIALIZED (SELECT n, ulidflake_next(9) AS v FROM generate_series(1, 1000) n)
		SELECT count(*) FILTER (WHERE v <= prev), bool_and(ulidflake_sid(v) = 9)
		FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev FROM g) s}),
	'0|t', 'scalable form works too');

is( $node->safe_psql('postgres', q{
		SELECT '00CMXB6TAK4SA'::ulidflake::bigint, flake_timestamp('00CMXB6TAK4SA'::ulidflake) AT TIME ZONE 'UTC'}),
	'14246757444195114|2024-06-06 06:06:06.666', 'ulidflake type, casts and accessors');

foreach my $call ('flake_next()', 'flake_next(5)', 'randflake_next()')
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT $call");
	isnt($ret, 0, "$call fails");
	like($stderr, qr/ERROR:  55000: flake is not loaded through shared_preload_libraries/,
		"$call: 55000 names the missing preload");
	like($stderr, qr/HINT:  Add this line to postgresql.conf and restart the server:\nshared_preload_libraries = 'flake'/,
		"$call: the hint shows the line to add");
}

is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		SELECT flake_decode(175928847299117063), flake_node(), (SELECT count(*) FROM flake_leases)}),
	'("2016-04-30 11:18:25.796+00",32,7)||0', 'decoders, flake_node() and flake_leases work');

is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		SELECT randflake_decode(4594531474933654033),
			   randflake_decode(4594531474933654033, decode('dffd6021bb2bd5b0af676290809ec3a5', 'hex')),
			   randflake_encode(4594531474933654033), randflake_parse('3vgoe12ccb8gh')}),
	'("2024-12-09 01:04:57+00",42,1)|("2024-12-09 01:04:57+00",42,1)|3vgoe12ccb8gh|4594531474933654033',
	'randflake decoding (with the server secret too) and text form work');

$node->stop;
done_testing();
