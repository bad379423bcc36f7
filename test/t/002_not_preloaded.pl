# Without shared_preload_libraries: CREATE EXTENSION warns, in the session
# and in the server log; the ulidflake type works and ulidflake_next() keeps
# its state per backend; flake_next() and randflake_next() refuse with a
# hint to add flake to the libraries already listed; decoders work;
# flake.serial_default changes nothing.
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
my $log_start = -s $node->logfile;
my ($created, $out, $warning) =
  $node->psql('postgres', "\\set VERBOSITY verbose\nCREATE EXTENSION flake");
is($created, 0, 'CREATE EXTENSION succeeds');
like($warning, qr/WARNING:  55000: flake is not loaded through shared_preload_libraries\n.*flake_leases stays empty/s,
	'CREATE EXTENSION warns that flake is not preloaded');
like($warning, qr/HINT:  Add flake to shared_preload_libraries in postgresql.conf, after the libraries already listed/,
	'the hint says to add flake to the libraries already listed');
like(substr(slurp_file($node->logfile), $log_start),
	qr/WARNING:  flake is not loaded through shared_preload_libraries/,
	'the warning reaches the server log');

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
	like($stderr, qr/HINT:  Add flake to shared_preload_libraries in postgresql.conf, after the libraries already listed \(for example shared_preload_libraries = 'pg_stat_statements,flake'\), and restart the server./,
		"$call: the hint says to add flake to the libraries already listed");
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

# flake.serial_default acts only where flake is preloaded: a session that
# loaded the library later still makes PostgreSQL's sequences
is( $node->safe_psql('postgres', q{
		SELECT flake_node();
		SET flake.serial_default = 'flake_next';
		CREATE TABLE keyed (id bigserial);
		SELECT pg_get_serial_sequence('keyed', 'id')}),
	"\npublic.keyed_id_seq", 'flake.serial_default changes nothing without preloading');

$node->stop;
done_testing();
