# The horizon (issue 39): 16 pgbench writers insert rows keyed by
# flake_next() and ulidflake_next(), each transaction waiting 0-300 ms
# before it ends, some rolled back, some in a rolled back savepoint, some
# prepared and then committed or rolled back; three pollers read "id >
# last" at the same time, one below flake_horizon(), one below
# ulidflake_horizon(), one with no bound.  The pollers with the horizon
# read every committed row exactly once; the one without misses rows.
# Then: a transaction left open, and a prepared one across a restart,
# hold the horizon, and flake_horizon_holders shows them; a standby
# refuses.
#
# FLAKE_HORIZON_ROWS sets about how many rows commit (50000 here; the
# issue's figure, 1000000, takes about two minutes on two cores).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rows = $ENV{FLAKE_HORIZON_ROWS} || 50_000;
my $clients = 16;
my $max_batch = 400;
# 8 transactions in 10 commit their rows, half a batch each on average
my $per_client = int($rows / ($clients * 0.8 * $max_batch / 2)) + 1;

my $node = PostgreSQL::Test::Cluster->new('horizon');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
max_connections = 40
max_prepared_transactions = 20
});
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT flake_next(),
						 u ulidflake NOT NULL UNIQUE DEFAULT ulidflake_next(),
						 writer int NOT NULL);
	CREATE TABLE done ();
	CREATE UNLOGGED TABLE seen (poller text, id bigint);
	-- read what lies above the last id read and below the bound, in
	-- batches, each statement on a snapshot taken after the bound, until
	-- the writers are done and nothing is left
	CREATE PROCEDURE poll(poller text) LANGUAGE plpgsql AS $$
	DECLARE
		last bigint := 0;
		bound bigint;
		n bigint;
		m bigint;
		finished boolean;
	BEGIN
		LOOP
			finished := EXISTS (SELECT FROM done);
			bound := CASE poller WHEN 'flake_horizon' THEN flake_horizon()
								 WHEN 'ulidflake_horizon' THEN ulidflake_horizon()::bigint
								 ELSE 9223372036854775807 END;
			IF poller = 'ulidflake_horizon' THEN
				WITH r AS (SELECT u::bigint AS v FROM events
						   WHERE u > last::ulidflake AND u < bound::ulidflake ORDER BY u LIMIT 5000),
					 i AS (INSERT INTO seen SELECT poller, v FROM r)
				SELECT count(*), max(v) INTO n, m FROM r;
			ELSE
				WITH r AS (SELECT id AS v FROM events
						   WHERE id > last AND id < bound ORDER BY id LIMIT 5000),
					 i AS (INSERT INTO seen SELECT poller, v FROM r)
				SELECT count(*), max(v) INTO n, m FROM r;
			END IF;
			COMMIT;
			IF n > 0 THEN
				last := m;
			ELSIF finished THEN
				EXIT;
			ELSE
				PERFORM pg_sleep(0.01);
			END IF;
		END LOOP;
	END
	$$;
});

my $script = $node->basedir . '/write.sql';
append_to_file($script, qq{\\set k random(1, $max_batch)
\\set d random(0, 300)
\\set d2 random(0, 300)
\\set r random(1, 10)
BEGIN;
INSERT INTO events (writer) SELECT :client_id FROM generate_series(1, :k);
SAVEPOINT s;
INSERT INTO events (writer) SELECT :client_id FROM generate_series(1, 5);
\\if :r = 4
ROLLBACK TO SAVEPOINT s;
\\endif
\\sleep :d ms
\\if :r = 1
ROLLBACK;
\\elif :r = 2
PREPARE TRANSACTION 'horizon_:client_id';
\\sleep :d2 ms
COMMIT PREPARED 'horizon_:client_id';
\\elif :r = 3
PREPARE TRANSACTION 'horizon_:client_id';
\\sleep :d2 ms
ROLLBACK PREPARED 'horizon_:client_id';
\\else
COMMIT;
\\endif
});

my @pollers;
for my $poller (qw(flake_horizon ulidflake_horizon unbounded))
{
	my ($out, $err) = ('', '');
	push @pollers,
	  [
		$poller,
		IPC::Run::start(
			[
				'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-c', "CALL poll('$poller')",
				'-h', $node->host, '-p', $node->port, 'postgres'
			],
			'>', \$out, '2>', \$err),
		\$err
	  ];
}

$node->command_ok(
	[
		'pgbench', '--no-vacuum', '--client' => $clients, '--jobs' => $clients,
		'--transactions' => $per_client, '--file' => $script, 'postgres'
	],
	"$clients writers, $per_client transactions each");
$node->safe_psql('postgres', 'INSERT INTO done DEFAULT VALUES');
for my $p (@pollers)
{
	my ($poller, $run, $err) = @$p;
	ok($run->finish, "poller $poller ended") or diag $$err;
}

my $committed = $node->safe_psql('postgres', 'SELECT count(*) FROM events');
cmp_ok($committed, '>=', $rows / 2, "$committed rows committed");
note "rows committed: $committed";

# missed: committed but not read; twice: read more than once; extra: read
# but not committed
my %key = (flake_horizon => 'id', ulidflake_horizon => 'u::bigint', unbounded => 'id');
my %result;
for my $poller (keys %key)
{
	$result{$poller} = $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM events e
				WHERE NOT EXISTS (SELECT FROM seen s WHERE s.poller = '$poller' AND s.id = e.$key{$poller})),
			   (SELECT count(*) - count(DISTINCT id) FROM seen WHERE poller = '$poller'),
			   (SELECT count(*) FROM seen s
				WHERE poller = '$poller' AND NOT EXISTS (SELECT FROM events e WHERE e.$key{$poller} = s.id))});
	note "$poller: missed|twice|extra = $result{$poller}";
}
is($result{flake_horizon}, '0|0|0', 'below flake_horizon(), every committed row is read once');
is($result{ulidflake_horizon}, '0|0|0', 'below ulidflake_horizon(), every committed row is read once');
my ($missed) = split /\|/, $result{unbounded};
cmp_ok($missed, '>', 0, "without the horizon, the same poller misses rows ($missed)");

# An open transaction holds the horizon at or below its ids, and the view
# names its backend; the horizon moves on once it ends.
my $open = $node->background_psql('postgres');
my ($open_id, $open_u) = split /\|/,
  $open->query_safe('BEGIN; INSERT INTO events (writer) VALUES (-1) RETURNING id, u;');
my $open_pid = $open->query_safe('SELECT pg_backend_pid()');
cmp_ok($node->safe_psql('postgres', 'SELECT flake_horizon()'), '<=', $open_id,
	'an open transaction holds the horizon at or below its id');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM flake_horizon_holders WHERE pid = $open_pid AND since <= CASE generator
			WHEN 'flake_next' THEN flake_timestamp($open_id) ELSE flake_timestamp('$open_u'::ulidflake) END"),
	'2', 'flake_horizon_holders shows its backend, for both families');
$open->query_safe('COMMIT');
$open->quit;
cmp_ok($node->safe_psql('postgres', 'SELECT flake_horizon()'), '>', $open_id,
	'once it commits, the horizon is past its id');

# A prepared transaction holds the horizon, also across a restart.
my $prepared_id = $node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO events (writer) VALUES (-2) RETURNING id;
	PREPARE TRANSACTION 'held';
});
$node->restart;
cmp_ok($node->safe_psql('postgres', 'SELECT flake_horizon()'), '<=', $prepared_id,
	'a prepared transaction holds the horizon across a restart');
is($node->safe_psql('postgres', "SELECT count(*) FROM flake_horizon_holders WHERE gid = 'held'"),
	'2', 'flake_horizon_holders shows it by its gid');
$node->safe_psql('postgres', "COMMIT PREPARED 'held'");
cmp_ok($node->safe_psql('postgres', 'SELECT flake_horizon()'), '>', $prepared_id,
	'once it is committed, the horizon is past its id');
is($node->safe_psql('postgres', 'SELECT count(*) FROM flake_horizon_holders'),
	'0', 'no transaction holds the horizon');

# A standby does not see its primary's open transactions: it refuses.
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
my ($ret, $out, $err) = $standby->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_horizon()");
like($err, qr/ERROR:  55000: cannot execute flake_horizon\(\) during recovery/, 'a standby refuses flake_horizon() with 55000');
$standby->stop;

done_testing();
