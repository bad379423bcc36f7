# Without shared_preload_libraries, the type works and ulidflake_next() keeps
# its state per backend: strictly increasing within a session.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('ulid_not_preloaded');
$node->init;
$node->start;

is($node->safe_psql('postgres', q{SHOW shared_preload_libraries}), '', 'flake is not preloaded');
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

is( $node->safe_psql('postgres', q{
		WITH g AS MATERIALIZED (SELECT n, ulidflake_next() AS v FROM generate_series(1, 200000) n)
		SELECT count(*) FILTER (WHERE v <= prev), count(DISTINCT v)
		FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev FROM g) s}),
	'0|200000', '200k values from one backend strictly increasing');

is( $node->safe_psql('postgres', q{
		WITH g AS MATERIALIZED (SELECT n, ulidflake_next(9) AS v FROM generate_series(1, 1000) n)
		SELECT count(*) FILTER (WHERE v <= prev), bool_and(ulidflake_sid(v) = 9)
		FROM (SELECT v, lag(v) OVER (ORDER BY n) AS prev FROM g) s}),
	'0|t', 'scalable form works too');

is( $node->safe_psql('postgres', q{
		SELECT '00CMXB6TAK4SA'::ulidflake::bigint, flake_timestamp('00CMXB6TAK4SA'::ulidflake) AT TIME ZONE 'UTC'}),
	'14246757444195114|2024-06-06 06:06:06.666', 'type, casts and accessors');

$node->stop;
done_testing();
