# A streaming standby: it refuses every generator with 25006 while in
# recovery and still decodes; the high-water marks reach it in WAL (flake's
# resource manager), so once promoted with its clock several seconds behind
# the primary's, it issues no id the primary issued, in any family, on
# leased or explicit nodes.  Without flake preloaded, the standby cannot
# replay flake's records; with it back, it can.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use POSIX qw(strftime);
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'
flake.max_borrow = '60s'
});
my $primary_clock = FlakeClock->new($primary);
$primary->start;

# one row per id: ulidflake values as bigint
my %generators = (
	flake    => ['flake_next()', 'flake_next(7)'],
	ulid     => ['ulidflake_next()::bigint', 'ulidflake_next(3)::bigint'],
	randflake => ['randflake_next()'],
);

sub generate
{
	my ($node, $phase) = @_;
	my $sql = '';
	for my $family (sort keys %generators)
	{
		$sql .= "INSERT INTO ids SELECT '$phase', '$family', $_ FROM generate_series(1, 10000);\n"
		  for @{ $generators{$family} };
	}
	$node->safe_psql('postgres', $sql);
}

$primary->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
});
generate($primary, 'before backup');

# the standby gets the flake.hwm of this moment
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
my $standby_clock = FlakeClock->new($standby);
$standby->start;

# the primary moves on, its clock frozen 30 s ahead
my $ahead = time() + 30;
$primary_clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($ahead)));
generate($primary, 'primary 1');
$primary->wait_for_catchup($standby);

# in recovery: generators refuse, decoders work
for my $call (map { @$_ } values %generators)
{
	my ($ret, $stdout, $stderr) =
	  $standby->psql('postgres', "\\set VERBOSITY verbose\nSELECT $call");
	like($stderr, qr/ERROR:  25006: cannot execute \S+ during recovery.*HINT:  Generate ids on the primary/s,
		"$call refuses with 25006 on the standby");
}
is( $standby->safe_psql('postgres', q{
		SELECT count(flake_decode(id)) FILTER (WHERE family = 'flake'),
			   count(flake_timestamp(id::ulidflake)) FILTER (WHERE family = 'ulid'),
			   count(randflake_decode(id)) FILTER (WHERE family = 'randflake')
		FROM ids}),
	'40000|40000|20000', 'the standby decodes the replicated ids');

# without flake preloaded, flake's WAL records cannot be replayed
$standby->stop;
$standby->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
my $log_offset = -s $standby->logfile;
ok(!$standby->start(fail_ok => 1), 'without flake preloaded the standby does not start');
like(substr(slurp_file($standby->logfile), $log_offset),
	qr/resource manager with ID 211 not registered/, 'it names flake\'s resource manager');
$standby->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$standby->start;

# the standby's shared memory is now set up from the marks of 'primary 1';
# the primary moves 15 s further, which the standby only replays
$primary_clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($ahead + 15)));
generate($primary, 'primary 2');
$primary->wait_for_catchup($standby);

# promoted with its clock 15 s behind the primary's last ids
$standby_clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($ahead)));
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'promotion failed';
generate($standby, 'promoted');

is( $standby->safe_psql('postgres', q{
		SELECT string_agg(family || ' ' || n, ', ' ORDER BY family) FROM (
			SELECT family, count(*) AS n FROM ids GROUP BY family) s}),
	'flake 80000, randflake 40000, ulid 80000', 'ids from the primary and the promoted standby');
is( $standby->safe_psql('postgres', q{
		SELECT count(*) FROM ids p JOIN ids s USING (family, id)
		WHERE p.phase <> 'promoted' AND s.phase = 'promoted'}),
	'0', 'the promoted standby issued no id the primary issued');
is( $standby->safe_psql('postgres', q{
		SELECT count(promoted), count(*) FILTER (WHERE promoted <= primary_max) FROM (
			SELECT min(id) FILTER (WHERE phase = 'promoted') AS promoted,
				   max(id) FILTER (WHERE phase <> 'promoted') AS primary_max
			FROM ids WHERE family = 'flake' GROUP BY flake_node(id)) s}),
	'2|0', 'on the leased node and the explicit node, the promoted standby continues above the primary');
is( $standby->safe_psql('postgres', q{
		SELECT min(id) FILTER (WHERE phase = 'promoted') > max(id) FILTER (WHERE phase <> 'promoted')
		FROM ids WHERE family = 'ulid'}),
	't', 'ulidflake values continue above the primary\'s');
is( $standby->safe_psql('postgres', q{
		SELECT min(d.ts) FILTER (WHERE phase = 'promoted') > max(d.ts) FILTER (WHERE phase <> 'promoted')
		FROM ids, randflake_decode(id) d WHERE family = 'randflake'}),
	't', 'randflake ids continue above the primary\'s seconds');

$primary_clock->set('+0');
$standby_clock->set('+0');
$standby->stop;
$primary->stop;
done_testing();
