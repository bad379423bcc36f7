# randflake_next() against the clock, under libfaketime (changed at run time
# through its timestamp file): a frozen clock uses up a node's 131072 ids of
# a second and the backend moves on to further nodes (or seconds); the clock stepped back
# while running, across a restart and across a crash.  No id repeats, and
# the ids of each node keep increasing through all of it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use POSIX qw(strftime);
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;
use FlakeClock;

my $node = flake_cluster('randflake_clock', qq{flake.randflake_secret = '$flake_secret'
restart_after_crash = on
});

# every process started from here on runs on the faked clock
my $clock = FlakeClock->new($node);
$node->start;

my $phase = 0;
sub generate
{
	my ($count) = @_;
	$phase++;
	$node->safe_psql('postgres',
		"INSERT INTO ids (phase, id) SELECT $phase, randflake_next() FROM generate_series(1, $count)");
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (n bigserial, phase int NOT NULL, id bigint NOT NULL UNIQUE);
});
generate(10000);

# 1. a frozen clock, 5 s ahead: one statement needs three nodes' worth of a second
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 5)));
generate(300000);
# (a node moves on to the next second only a real second after it entered
# its second, which a fast run does not wait for)
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE n > 131072), count(*) >= 3, max(last_sequence)
		FROM (SELECT count(*) AS n, max(d.sequence) AS last_sequence
			  FROM ids, randflake_decode(id) d WHERE phase = $phase
			  GROUP BY d.ts, d.node) s}),
	'0|t|131071', 'sequence exhaustion within a second moves on to further nodes or seconds');

# 2. back to the real clock: 5 s back from the frozen one
$clock->set('+0');
generate(20000);

# 3. while running, 10 s back
$clock->set('-10s');
generate(20000);

# 4. across a clean restart with the clock further back
$clock->set('-20s');
$node->restart;
generate(20000);

# 5. across a crash with the clock further back still
$clock->set('-30s');
my $victim = $node->background_psql('postgres');
$victim->query_safe('SELECT randflake_next()');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
back_after_crash($node);
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through crash recovery');
generate(20000);

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'),
	'390000|390000', 'no id repeated');
is(randflake_backwards($node, 'ids'), '0', 'the ids of each node keep increasing through every step back');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(phase::text, ',' ORDER BY phase) FROM (
			SELECT phase, min(d.ts) >= (SELECT max(e.ts) FROM ids, randflake_decode(id) e WHERE phase < 5) AS above
			FROM ids, randflake_decode(id) d WHERE phase >= 5 GROUP BY phase) s
		WHERE above}),
	'5,6', 'after a restart or crash, ids continue at or above every earlier second');

# after 2041-10-31 the raw value has its top bit set; it still decodes
$clock->set('2042-01-01 00:00:00');
is( $node->safe_psql('postgres', q{
		SET timezone = 'UTC';
		SELECT d.ts, d.node >= 0 FROM randflake_decode(randflake_next()) d}),
	'2042-01-01 00:00:00+00|t', 'ids from 2042 (raw top bit set) decode to their time');

# after 2058-11-05 the 30 bits of seconds have run out
$clock->set('2058-11-06 00:00:00');
my ($ret, $stdout, $stderr) =
  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT randflake_next()");
like($stderr, qr/ERROR:  22003: randflake_next\(\) timestamp overflow.*2058-11-05/s,
	'22003 names the end of the randflake lifetime');

$clock->set('+0');
$victim->quit;
$node->stop;
done_testing();
