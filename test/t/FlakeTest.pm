# What several TAP tests share: a cluster with flake preloaded, the test
# secret, and the check that each randflake node's ids keep increasing;
# the state file tests' schema and bursts; the online migration's program
# and tables; the Citus tests' cluster.
package FlakeTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use POSIX qw(strftime);
use FlakeClock;

our @EXPORT = qw(flake_cluster flake_server back_after_crash randflake_backwards crc32c $flake_secret
  $carry_conf %family_next rekey_tables frozen_server online_run online_hold online_start
  online_server online_parent_and_child $online_sessions_gone online_psql_as online_role
  online_owned_tables online_leftovers citus_server citus_cluster citus_add_workers citus_concurrently
  citus_required state_schema state_burst state_outcomes_query write_state_file applied_by);

# The flake.randflake_secret of the tests.
our $flake_secret = '000102030405060708090a0b0c0d0e0f';

# The settings of the tests that carry ids and claims between servers:
# live and rekey nodes apart, the secret, and room for ids ahead of a
# frozen clock.
our $carry_conf = qq{flake.nodes = '0-1015'
flake.rekey_nodes = '1016-1023'
flake.randflake_secret = '$flake_secret'
flake.max_borrow = '60s'
};

# Each family's next id, as a bigint.
our %family_next = (
	flake     => 'flake_next()',
	ulidflake => 'ulidflake_next()::bigint',
	randflake => 'randflake_next()',
);

# The tables of the tests that carry rekey claims to another server, made
# by the SQL returned: orders, rekeyed from its times (a claim), and
# invoices of the same times, still serial, to rekey once carried.
sub rekey_tables
{
	my ($rows) = @_;
	return qq{
	CREATE TABLE orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
	CREATE TABLE invoices (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO orders (at)
	SELECT '2020-01-01'::timestamptz + n * interval '1 min' FROM generate_series(1, $rows) n;
	INSERT INTO invoices (at) SELECT at FROM orders;
	SELECT count(*) FROM flake_migrate('orders', rekey_from => 'at');
};
}

# The schema of the state file tests (043, 044), made by the SQL returned:
# the extension; ids, where state_burst keeps each family's ids by phase;
# rekey_tables' orders and invoices of $rows rows; and outcome(q), which
# runs a statement and returns 'ok' or its SQLSTATE and message, so that
# one query reports what many calls do while a state file is damaged.
sub state_schema
{
	my ($rows) = @_;
	return q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase int NOT NULL, family text NOT NULL, id bigint NOT NULL);
} . rekey_tables($rows) . q{
	CREATE FUNCTION outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		EXECUTE q;
		RETURN 'ok';
	EXCEPTION WHEN others THEN
		RETURN SQLSTATE || ' ' || SQLERRM;
	END $$;
};
}

# A burst of 2000 ids of each family into state_schema's ids, as the phase
# after the last one there: how many of them equal an id of an earlier
# phase (the state files' promise is 0 after every repair).
sub state_burst
{
	my ($node) = @_;
	my $phase = $node->safe_psql('postgres', 'SELECT coalesce(max(phase), 0) + 1 FROM ids');
	$node->safe_psql('postgres', join '',
		map { "INSERT INTO ids SELECT $phase, '$_', $family_next{$_} FROM generate_series(1, 2000);\n" }
		  sort keys %family_next);
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM ids a JOIN ids b ON b.family = a.family AND b.id = a.id
		WHERE a.phase = $phase AND b.phase < $phase});
}

# The query that runs each statement given through state_schema's
# outcome(): what each does, one line each, in order.
sub state_outcomes_query
{
	my @calls = @_;
	return 'SELECT string_agg(outcome(q), E\'\n\' ORDER BY n) FROM (VALUES '
	  . join(', ', map { "($_, \$q\$$calls[$_]\$q\$)" } 0 .. $#calls) . ') v(n, q)';
}

# Write a file whole, in binary, readable by the server alone (as it keeps
# its state files), to put a state file in place: damaged, intact, of an
# older format, or an import.
sub write_state_file
{
	my ($path, $contents) = @_;
	open my $fh, '>', $path or die "could not write $path: $!";
	binmode $fh;
	print $fh $contents;
	close $fh or die "could not write $path: $!";
	chmod 0600, $path;
}

# The old server of the tests that carry ids and claims to another server
# (flake_cluster with the given settings), started with its clock frozen
# at the current second.  Every process started after it (servers, psql,
# pgbench) reads its wall clock from the FlakeClock returned with it, so
# the servers started later are behind every id the old one issues.
sub frozen_server
{
	my ($name, $conf) = @_;
	my $node = flake_cluster($name, $conf);
	my $clock = FlakeClock->new($node);
	$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time())));
	$node->start;
	return ($node, $clock);
}

# A new cluster with flake in shared_preload_libraries and the given lines
# of postgresql.conf, initialized (with init's options) but not started,
# so that a test can fake its clock first (FlakeClock).
sub flake_cluster
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'flake'\n" . ($conf // ''));
	return $node;
}

# Wait until a server that went through crash recovery (a backend killed)
# answers again.  poll_query_until writes its query to psql's standard
# input, and a psql that finds the server restarting may exit before it
# reads it: IPC::Run then dies of the broken pipe.  That try is repeated.
sub back_after_crash
{
	my ($node) = @_;
	foreach my $try (1 .. $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 if eval { $node->poll_query_until('postgres', 'SELECT 1', '1') };
		die "the server did not come back after the crash: $@" unless $@ =~ /Broken pipe/;
		sleep 1;
	}
	die 'the server did not come back after the crash';
}

# Wait until subscription $subscription has applied all that $publisher
# wrote so far: until its worker reports as received (write_lsn) the
# publisher's present WAL position, which it does only after applying what
# came before.  Not until it reports that as applied (replay_lsn, what
# wait_for_catchup waits for): the worker commits asynchronously and says
# a position is applied once its own commit is flushed.  The WAL writer
# flushes such commits after wal_writer_delay by the wall clock, which a
# stopped FlakeClock never lets pass; a record of no transaction after the
# last commit (a running-xacts one) was then never reported, and the wait
# timed out after 180 s (t/056 on PostgreSQL 17 in CI, and on 19).
sub applied_by
{
	my ($publisher, $subscription) = @_;
	$publisher->wait_for_catchup($subscription, 'write');
}

# A started server for logical replication that generates on nodes (both
# families) and sids of its own, with the extension created.
sub flake_server
{
	my ($name, $nodes) = @_;
	my $node = flake_cluster($name, qq{flake.nodes = '$nodes'
flake.randflake_nodes = '$nodes'
flake.randflake_secret = '$flake_secret'
}, allows_streaming => 'logical');
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flake');
	return $node;
}

# How many ids of a table's randflake column id, in the order of its column
# n, come at or below the one before them on their node: 0 when each node's
# ids strictly increase.
sub randflake_backwards
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
			SELECT (d.ts, d.sequence) <= (lag(d.ts) OVER w, lag(d.sequence) OVER w) AS back
			FROM $table, randflake_decode(id) d
			WINDOW w AS (PARTITION BY d.node ORDER BY n)) s
		WHERE back});
}

# The CRC-32C of a string, as flake's files in the data directory carry
# it: for tests that write such files in the formats of other releases.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack('C*', $data))
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

# The server of the online migration's tests, started, with the
# extension: nodes for flake_next() and randflake_next(), and the secret.
sub online_server
{
	my ($name) = @_;
	my $node = flake_cluster($name,
		"flake.nodes = '0-1015'\nflake.randflake_nodes = '0-1015'\nflake.randflake_secret = '$flake_secret'\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flake');
	return $node;
}

# A table $t of $n rows, and ${t}c, a child for each, by an indexed
# foreign key.
sub online_parent_and_child
{
	my ($node, $t, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $t (id serial PRIMARY KEY, v int NOT NULL);
		CREATE TABLE ${t}c (id bigserial PRIMARY KEY, ${t}_id int NOT NULL REFERENCES $t, v int NOT NULL);
		CREATE INDEX ON ${t}c (${t}_id);
		INSERT INTO $t (v) SELECT n FROM generate_series(1, $n) n;
		INSERT INTO ${t}c (${t}_id, v) SELECT id, id FROM $t;
	});
}

# No session of the program is left, for poll_query_until (a backend ends
# a moment after its client closes the connection).
our $online_sessions_gone =
  q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'flake_migrate_online'};

# psql as a role (logged in as it) on a node: exit code, stdout, stderr.
sub online_psql_as
{
	my ($node, $role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return ($rc, $out, $err);
}

# A role that logs in and may create in the schema public.
sub online_role
{
	my ($node, $role) = @_;
	$node->safe_psql('postgres', "CREATE ROLE $role LOGIN; GRANT CREATE ON SCHEMA public TO $role");
}

# An owner role's tables: NAME (a serial key) with N rows and NAME_lines
# referencing it.
sub online_owned_tables
{
	my ($node, $role, $name, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $name (id serial PRIMARY KEY, v int);
		CREATE TABLE ${name}_lines (id serial PRIMARY KEY, ${name}_id int NOT NULL REFERENCES $name, v int);
		INSERT INTO $name (v) SELECT n FROM generate_series(1, $n) n;
		INSERT INTO ${name}_lines (${name}_id, v) SELECT id, id FROM $name;
		ALTER TABLE $name OWNER TO $role; ALTER TABLE ${name}_lines OWNER TO $role;
		ALTER SEQUENCE ${name}_id_seq OWNER TO $role; ALTER SEQUENCE ${name}_lines_id_seq OWNER TO $role;
	});
}

# How many copies, logs or lists of the migration are left for the tables
# NAME*.
sub online_leftovers
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_class WHERE relname LIKE '${name}%\\_\\_flake\\_%'});
}

# Skip the test unless Citus is installed into the PostgreSQL under test:
# the Citus tests are optional, as a build of Citus for it is.
sub citus_required
{
	my $pkglibdir = `pg_config --pkglibdir`;
	chomp $pkglibdir;
	my $major = `pg_config --version` =~ /(\d+)/ ? $1 : 'NN';
	plan skip_all => "Citus is not installed in $pkglibdir (a postgresql-$major-citus-* package, from Citus's apt repository: Debian has none; or see docs/development.md, Citus)"
	  unless -e "$pkglibdir/citus.so";
}

# A server of the cluster: TCP on 127.0.0.1 only, trusted there, as Citus
# connects to its nodes by host and port.
sub citus_server
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'citus,flake'
listen_addresses = '127.0.0.1'
max_worker_processes = 16
max_connections = 100
citus.node_conninfo = 'sslmode=disable'
citus.log_remote_commands = off
flake.randflake_secret = '$flake_secret'
} . ($conf // ''));
	$node->append_conf('pg_hba.conf', "host all all 127.0.0.1/32 trust\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION flake');
	return $node;
}

# A Citus cluster for the tests: a coordinator and two workers, all
# preloading citus and flake with the test secret and conf added.  With
# add_workers => 0 the workers are not added (citus_add_node) yet.
sub citus_cluster
{
	my (%opt) = @_;
	my @servers = map { citus_server($_, $opt{conf}) } ('coordinator', 'worker1', 'worker2');
	citus_add_workers(@servers) if $opt{add_workers} // 1;
	return @servers;
}

# Make the coordinator one, and add the workers: groups 1 and 2.
sub citus_add_workers
{
	my ($coord, @workers) = @_;
	$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') foreach @workers;
}

# Run statements on several servers at once ([server, SQL], ...), each in
# its own session; returns the number that failed.
sub citus_concurrently
{
	my @jobs = @_;
	my @h;
	foreach my $job (@jobs)
	{
		my ($node, $sql) = @$job;
		my ($o, $e) = ('', '');
		push @h, [ IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
			'<', \$sql, '>', \$o, '2>', \$e, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default)), \$e ];
	}
	my $failed = 0;
	foreach my $h (@h)
	{
		$h->[0]->finish;
		if ($h->[0]->result != 0)
		{
			$failed++;
			diag ${ $h->[1] };
		}
	}
	return $failed;
}

# The online migration's program (flake_migrate_online) on a node's
# database postgres (or dbname => DB), as the user postgres or with
# user => ROLE: its exit code, stdout and stderr.
sub online_run
{
	my ($node, $args, %opt) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ online_command($node, $args, %opt) ], '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

sub online_command
{
	my ($node, $args, %opt) = @_;
	my $conn = $node->connstr($opt{dbname} // 'postgres') . (defined $opt{user} ? " user=$opt{user}" : '');
	return ($node->config_data('--bindir') . '/flake_migrate_online', '-d', $conn, @$args);
}

# A session that runs $sql in a transaction left open (holding its locks)
# until the sub returned is called, which ends it with ROLLBACK or with
# the statement it is given (COMMIT); or that has ended, when $sql failed.
sub online_hold
{
	my ($node, $sql) = @_;
	my ($in, $out) = ("BEGIN; $sql; SELECT 'held';\n", '');
	my $h = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
		'<', \$in, '>', \$out, '2>', \my $err);
	$h->pump until $out =~ /held/ || !$h->pumpable;
	return sub { $in .= ($_[0] // 'ROLLBACK') . ";\n\\q\n"; eval { $h->finish }; };
}

# The program started with @$args (options as online_run's), once it waits
# for a lock (or has ended): its IPC::Run handle and its stdout and stderr,
# by reference.  With phase => PHASE, once its output shows it in that
# phase too.
sub online_start
{
	my ($node, $args, %opt) = @_;
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start([ online_command($node, $args, %opt) ], '>', \$o, '2>', \$e);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	until (!$h->pumpable || time > $deadline
		|| $node->safe_psql('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
			WHERE application_name = 'flake_migrate_online' AND wait_event_type = 'Lock'}) eq 't')
	{
		$h->pump_nb;
		select(undef, undef, undef, 0.1);
	}
	$h->pump_nb until !$h->pumpable || !defined $opt{phase}
	  || $o =~ /\($opt{phase}: [^\n]*\n(  [^\n]*\n)*\z/ || time > $deadline;
	return ($h, \$o, \$e);
}

1;
