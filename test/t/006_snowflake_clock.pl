# The server's wall clock steps back (libfaketime, changed at run time
# through its timestamp file): while running, across a restart and across a
# crash.  flake_next() never repeats an id and ids keep increasing; with a
# small flake.max_borrow the step back is refused with 55000 instead.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;

my $node = PostgreSQL::Test::Cluster->new('snowflake_clock');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.max_borrow = '60s'\nrestart_after_crash = on\n");

# every process started from here on runs on the faked clock
my $clock = FlakeClock->new($node);
$node->start;

sub server_time
{
	return $node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())');
}

my $phase = 0;
sub generate
{
	$phase++;
	$node->safe_psql('postgres',
		"INSERT INTO ids (phase, id) SELECT $phase, flake_next() FROM generate_series(1, 20000)");
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, phase int NOT NULL, id bigint NOT NULL UNIQUE);
});
generate();

# 1. while running
my $before = server_time();
$clock->set('-10s');
cmp_ok(server_time(), '<', $before - 5, 'the server clock went back 10 s');
generate();

# with flake.max_borrow below the step, the clock is reported, not absorbed
$node->append_conf('postgresql.conf', "flake.max_borrow = '1s'\n");
$node->reload;
$node->poll_query_until('postgres', 'SHOW flake.max_borrow', '1s') or die 'reload failed';
# (the node's current millisecond may still have sequence numbers to use;
# the next millisecond would be borrowed 10 s ahead of the clock)
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(flake_next()) FROM generate_series(1, 10000)");
isnt($ret, 0, 'flake_next() fails while the clock is 10 s behind its last id');
like($stderr, qr/ERROR:  55000: the system clock is \d+ ms behind the last id of flake node \d+/,
	'55000 explains the clock');
$node->append_conf('postgresql.conf', "flake.max_borrow = '60s'\n");
$node->reload;
$node->poll_query_until('postgres', 'SHOW flake.max_borrow', '1min') or die 'reload failed';

# 2. across a clean restart with the clock further back
$clock->set('-20s');
$node->restart;
generate();

# 3. across a crash with the clock further back still
$clock->set('-30s');
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
back_after_crash($node);
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through crash recovery');
generate();

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'),
	'80000|80000', 'no id repeated');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', 'ids keep increasing through every step back');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(phase::text, ',' ORDER BY phase) FROM (
			SELECT phase, min(id) > (SELECT coalesce(max(id), -1) FROM ids e WHERE e.phase < p.phase) AS above
			FROM ids p GROUP BY phase) s
		WHERE above}),
	'1,2,3,4', 'each phase is above every id of the phases before it');

$clock->set('+0');
$victim->quit;
$node->stop;
done_testing();
