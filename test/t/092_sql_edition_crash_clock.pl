# The SQL edition across a crash (a backend killed with SIGKILL), an
# immediate stop, a wall clock stepped back 5 s (libfaketime) while
# running, 15 s across a restart, and a standby promoted with its clock
# behind the primary's ids: no id is issued again, ids keep
# increasing, and a clock further behind the last id than max_borrow_ms
# plus one second is refused with 55000, as the C edition does.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle) = sql_edition_scripts();
my $clock;
my $node = sql_edition_server('sql_edition_crash_clock', $install, "wal_level = replica\nmax_wal_senders = 4\n",
	sub { $clock = FlakeClock->new(shift) });
sql_edition_install_tle($node, $tle);
my $owner = $sql_edition_owner;

$node->safe_psql('postgres', q{
	CREATE TABLE ids (phase int NOT NULL, n bigserial, id bigint NOT NULL UNIQUE);
	GRANT INSERT, SELECT ON ids TO PUBLIC;
	GRANT USAGE ON SEQUENCE ids_n_seq TO PUBLIC;
});
my $phase = 0;
sub generate
{
	$phase++;
	$node->safe_psql('postgres',
		"INSERT INTO ids (phase, id) SELECT $phase, flake_next() FROM generate_series(1, 20000);"
		  . "INSERT INTO ids (phase, id) SELECT $phase, flake_next(9) FROM generate_series(1, 2000)");
}
sub server_time
{
	return $node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())');
}
sub set_max_borrow
{
	$node->safe_psql('postgres', "UPDATE flake_internal.settings SET max_borrow_ms = $_[0]",
		extra_params => [ '-U', $owner ]);
}
generate();

# 1. a backend killed while it generates: crash recovery
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_until(qr/started/, q{\echo started
	SELECT count(flake_next()) FROM generate_series(1, 100000000);
});
kill 'KILL', $pid;
back_after_crash($node);
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through crash recovery');
generate();

# 2. an immediate stop, as a power cut
$node->stop('immediate');
$node->start;
generate();

# 3. the clock 5 s back while running: refused beyond max_borrow_ms + 1 s
my $before = server_time();
$clock->set('-5s');
cmp_ok(server_time(), '<', $before - 3, 'the server clock went back 5 s');
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(flake_next()) FROM generate_series(1, 10000)");
isnt($ret, 0, 'flake_next() fails while the clock is 5 s behind its last id');
like($stderr, qr/ERROR:  55000: the system clock is \d+ ms behind the last id of flake node 0/,
	'55000 explains the clock');
# with room to borrow, ids continue above the last, ahead of the clock
set_max_borrow(60000);
generate();
set_max_borrow(1000);

# 4. across a restart with the clock further behind, then caught up
$clock->set('-15s');
$node->restart;
($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(flake_next(9)) FROM generate_series(1, 10000)");
like($stderr, qr/ERROR:  55000: the system clock is \d+ ms behind the last id of flake node 9/,
	'after a restart too');
$clock->set('+0');
generate();

# 5. a standby, promoted after it replayed the primary's ids, with its
# clock 10 s behind them: it continues above them, from the sequences'
# records it replayed, as the C edition does from its marks
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('sql_edition_standby', install_path => $install);
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
set_max_borrow(60000);
generate();
$node->wait_for_catchup($standby);
$node->stop;
$clock->set('-10s');
$standby->promote;
$node = $standby;
generate();
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM ids i
	JOIN (SELECT flake_node(id) AS node, max(id) AS last FROM ids WHERE phase < $phase GROUP BY 1) e
		ON e.node = flake_node(i.id)
	WHERE i.phase = $phase AND i.id <= e.last}),
	'0', 'the promoted standby continues above the ids the primary issued, with its clock behind them');

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'),
	join('|', 22000 * $phase, 22000 * $phase), 'no id repeated');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (PARTITION BY flake_node(id) ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', "each node's ids increase across the crash, the stop, the clock's steps and the promotion");

$node->stop;
done_testing();
