# make explore: operations on the topology around blue (loaded by
# explore.pl after its %op; docs/development.md, "Exploring orders of
# steps").
#
# - a streaming standby of blue (pg_basebackup), its promotion after blue
#   stops (a failover: the promoted server is blue from then on, as a
#   Patroni leader takes its name), and pg_rewind of the old primary to
#   follow it as the next standby.  The operator waits for the standby to
#   replay blue's WAL before the failover, so every committed row must be
#   on the promoted server (docs/upgrading.md, "Failover under an HA
#   manager": synchronous replication covers committed ids);
# - a serial table of a database of its own on blue (legacy), migrated
#   by flake_migrate() or by the program flake_migrate_online while a
#   writer inserts: no row lost, no id of the migrated table in another
#   table of its family;
# - writers sharing nodes: leased flake_next() and flake_next(node) of
#   the same nodes at once.
#
# The model: standby (a standby streams from blue), old_primary (the
# stopped primary of the last failover, until rewound), legacy
# ({ migrated }).  The world: node{standby}, node{old_primary}, and
# clock_of{...}: the clock a standby was started with (blue's, or green's
# behind it).
use strict;
use warnings;

our (%op, $rows, $run_dir, $world_count, $max_prepared);

# every table of the public schema of blue's databases with its rows
sub topology_counts
{
	my ($w) = @_;
	my %count;
	foreach my $db (sort grep { $w->{server_of}{$_} eq 'blue' && !m{/postgres$} } keys %{ $w->{server_of} })
	{
		my ($out, $err) = query($w, $db, q{
			SELECT string_agg(format('%s=%s', relname,
				(xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I', relname), false, true, '')))[1]::text),
				' ' ORDER BY relname)
			FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition});
		next if $err;
		$count{"$db.$1"} = $2 while ($out // '') =~ /(\w+)=(\d+)/g;
	}
	return \%count;
}

# the standby has replayed everything blue wrote until now, or a stall
sub topology_replayed
{
	my ($w) = @_;
	my ($lsn, $err) = query($w, 'blue/postgres', 'SELECT pg_current_wal_lsn()');
	return $err if $err;
	my $standby = $w->{node}{standby};
	# as the standby reports it to blue (its own replay position stops
	# short of a segment switch)
	for (1 .. 600)
	{
		my ($ok) = query($w, 'blue/postgres', qq{SELECT bool_or(replay_lsn >= '$lsn') FROM pg_stat_replication r
			WHERE NOT EXISTS (SELECT FROM pg_replication_slots s WHERE s.active_pid = r.pid AND s.slot_type = 'logical')});
		return undef if ($ok // '') eq 't';
		sleep 0.1;
	}
	return { sqlstate => 'stall', message => "the standby did not replay blue's WAL up to $lsn:\n" . slurp_tail($standby->logfile) };
}

sub topology_start
{
	my ($w, $role) = @_;
	my $node = $w->{node}{$role};
	$ENV{FAKETIME_TIMESTAMP_FILE} = $w->{clock}{ $w->{clock_of}{$role} }{file};
	# a standby is started once it is consistent, which may wait on WAL
	# streamed from blue: on a busy machine that took 52 s of pg_ctl's 60
	local $ENV{PGCTLTIMEOUT} = 180;
	return undef if $node->start(fail_ok => 1);
	finding($w, 'no start', undef, "the $role did not start:\n" . slurp_tail($node->logfile));
	return { sqlstate => 'start', message => "the $role did not start" };
}

# the lock file of a stopped server's socket, left by a postmaster that
# no init reaps (a zombie in a container): stale
sub topology_unlock
{
	my ($node) = @_;
	unlink $node->host . '/.s.PGSQL.' . $node->port . '.lock' unless -e $node->data_dir . '/postmaster.pid';
}

# a client program: undef, or its refusal
sub topology_program
{
	my ($what, @cmd) = @_;
	my ($out, $err) = ('', '');
	my $ok = eval { IPC::Run::run(\@cmd, '>', \$out, '2>', \$err, IPC::Run::timeout(120)) };
	return undef if $ok;
	my ($hint) = $err =~ /HINT:\s+(.*)/;
	return { sqlstate => $what, message => "$what: exit " . ($? >> 8) . ': ' . ($@ || $err || $out), hint => $hint };
}

sub topology_bindir
{
	my $bindir = `pg_config --bindir`;
	chomp $bindir;
	return $bindir;
}

# the ids of the legacy serial table, after its migration, are in no other
# table of the flake family
sub legacy_overlap
{
	my ($w, $step) = @_;
	my ($n) = query($w, 'blue/legacy', 'SELECT count(*) FROM ts JOIN tf USING (id)');
	finding($w, 'repeat', $step, "$n flake ids in both blue/legacy.ts and blue/legacy.tf") if $n;
}

# rows inserted concurrently by pgbench: every transaction it reports as
# processed left its row, and no insert met its own key
sub legacy_writer
{
	my ($w, $step) = @_;
	my $node = $w->{node}{blue};
	my $script = "$run_dir/w$world_count.$step.writer.sql";
	open my $fh, '>', $script or die "$script: $!";
	print $fh "INSERT INTO ts (tag) VALUES ('writer:$step');\n";
	close $fh;
	my %out = (out => '', err => '');
	local $ENV{PGOPTIONS} = '-c statement_timeout=10s';
	my $h = IPC::Run::start(
		[ 'pgbench', '--no-vacuum', '--client' => 2, '--transactions' => 300, '--file' => $script,
		  '--host' => $node->host, '--port' => $node->port, 'legacy' ],
		'>', \$out{out}, '2>', \$out{err}, IPC::Run::timeout(180));
	return { handle => $h, out => \%out };
}

sub legacy_writer_done
{
	my ($w, $writer, $step) = @_;
	eval { $writer->{handle}->finish; 1 } or $writer->{handle}->kill_kill;
	my $o = $writer->{out};
	finding($w, 'repeat', $step, "a writer of blue/legacy.ts met an id issued before: "
		  . join(' | ', grep { /duplicate key/ } split /\n/, $o->{err}))
	  if $o->{err} =~ /duplicate key/;
	my ($processed) = $o->{out} =~ /actually processed: (\d+)/;
	return unless defined $processed;
	push @{ $w->{log} }, "    writer: $processed rows committed meanwhile";
	my ($n) = query($w, 'blue/legacy', "SELECT count(*) FROM ts WHERE tag = 'writer:$step'");
	finding($w, 'lost', $step, "$processed rows committed by the writer, $n in blue/legacy.ts")
	  if defined $n && $n != $processed;
}

# the serial table migrated, by flake_migrate() or flake_migrate_online,
# its statements cancelled after 20 s (a wait on the stopped clock)
sub legacy_migrate
{
	my ($w, $how) = @_;
	local $ENV{PGOPTIONS} = '-c statement_timeout=20s';
	return sql($w, 'blue/legacy', q{SELECT count(*) FROM flake_migrate('ts')}) if $how eq 'sql';
	return topology_program('online', topology_bindir() . '/flake_migrate_online',
		'-d', $w->{node}{blue}->connstr('legacy'), '-t', 'ts');
}

%op = (
	%op,

	# a streaming standby of blue, from pg_basebackup; its clock blue's or
	# green's (behind blue's by the lag)
	standby_create => {
		group  => 'standby',
		needs_blue => 1,
		weight => 2,
		args   => sub {
			my ($m) = @_;
			return () unless $op{standby_create}{pre}->($m, {});
			return map { { clock => $_ } } qw(blue green);
		},
		pre   => sub { my ($m) = @_; return !$m->{standby} },
		apply => sub { my ($m) = @_; $m->{standby} = 1 },
		run   => sub {
			my ($w, $a, $step) = @_;
			my $blue = $w->{node}{blue};
			my $backup = "standby$step";
			# WAL kept for pg_rewind after a failover, as an operator sets it
			# (the standby copies it)
			my $err = sql($w, 'blue/postgres', "ALTER SYSTEM SET wal_keep_size = '256MB'; SELECT pg_reload_conf()");
			return $err if $err;
			eval { $blue->backup($backup); 1 }
			  or return { sqlstate => 'backup', message => "pg_basebackup failed: $@" };
			# a standby left by a step that stalled: stopped, for end_world
			if (my $stalled = delete $w->{node}{standby})
			{
				$stalled->stop('immediate', fail_ok => 1);
				$w->{node}{"stopped_$step"} = $stalled;
			}
			my $node = PostgreSQL::Test::Cluster->new("standby_${world_count}_$step");
			$node->init_from_backup($blue, $backup, has_streaming => 1);
			$w->{node}{standby} = $node;
			$w->{clock_of}{standby} = $a->{clock};
			return topology_start($w, 'standby') // topology_replayed($w);
		},
	},

	# a failover: the standby has replayed blue's WAL (as synchronous
	# replication, or an operator's switchover, ensures); blue stops (fast,
	# or immediate as a crash), the standby is promoted and is blue from
	# then on.  Every row blue committed is on it.  Logical replication
	# from or to blue is not carried over (PostgreSQL 15 keeps no slot on a
	# standby): no subscription live on either side.
	failover => {
		group  => 'standby',
		needs_blue => 1,
		weight => 6,
		args   => sub {
			my ($m) = @_;
			return () unless $op{failover}{pre}->($m, {});
			return map { { mode => $_ } } qw(fast immediate);
		},
		pre => sub {
			my ($m) = @_;
			return $m->{standby} && !($m->{sub} && !$m->{cutovers}) && !$m->{rsub};
		},
		apply => sub {
			my ($m) = @_;
			$m->{standby}     = 0;
			$m->{old_primary} = 1;
		},
		run => sub {
			my ($w, $a, $step) = @_;
			my $before = topology_counts($w);
			my $err = topology_replayed($w);
			return $err if $err;
			$w->{node}{blue}->stop($a->{mode}, fail_ok => 1);
			my $standby = $w->{node}{standby};
			eval { $standby->promote; 1 }
			  or return { sqlstate => 'promote', message => "pg_ctl promote failed: $@" };
			# as after a restart, the promoted server waits for its clock to
			# pass the ids blue issued (borrowed ahead of the stopped clock)
			set_clock($w, 2);
			# the old primary stopped, beside the new one (an older one left
			# stopped: end_world removes it)
			$w->{node}{"stopped_$step"} = $w->{node}{old_primary} if $w->{node}{old_primary};
			$w->{old_primary_mode}      = $a->{mode};
			$w->{node}{old_primary}     = $w->{node}{blue};
			$w->{clock_of}{old_primary} = $w->{clock_of}{blue} // 'blue';
			$w->{node}{blue}            = $standby;
			$w->{clock_of}{blue}        = $w->{clock_of}{standby};
			delete $w->{node}{standby};
			for (1 .. 300)
			{
				my ($primary) = query($w, 'blue/postgres', 'SELECT NOT pg_is_in_recovery()');
				last if ($primary // '') eq 't';
				sleep 0.1;
			}
			my $after = topology_counts($w);
			my $carried = 0;
			$carried += $_ foreach values %$before;
			push @{ $w->{log} }, sprintf('    failover: %d rows of %d tables carried', $carried, scalar keys %$before);
			foreach my $t (sort keys %$before)
			{
				finding($w, 'lost', $step, "failover: $before->{$t} rows of $t before, " . ($after->{$t} // 'none') . ' after')
				  if ($after->{$t} // 0) < $before->{$t};
			}
			return undef;
		},
	},

	# pg_rewind of the old primary onto the promoted one, which it then
	# follows as its standby (started with its own clock)
	rewind => {
		group  => 'standby',
		needs_blue => 1,
		weight => 4,
		args   => sub { my ($m) = @_; return $op{rewind}{pre}->($m, {}) ? ({}) : () },
		pre    => sub { my ($m) = @_; return $m->{old_primary} && !$m->{standby} },
		apply  => sub {
			my ($m) = @_;
			$m->{old_primary} = 0;
			$m->{standby}     = 1;
		},
		run => sub {
			my ($w, $a, $step) = @_;
			# (an earlier rewind that stalled rewound it already)
			my $old = $w->{node}{old_primary}
			  or return { sqlstate => 'stall', message => 'the old primary was rewound already' };
			my $blue = $w->{node}{blue};
			# the promoted server's timeline in its control file
			my $err = sql($w, 'blue/postgres', 'CHECKPOINT');
			return $err if $err;
			# a server stopped as by a crash first finishes its recovery, then
			# stops (pg_rewind would run the postgres it finds beside itself)
			$ENV{FAKETIME_TIMESTAMP_FILE} = $w->{clock}{ $w->{clock_of}{old_primary} }{file};
			topology_unlock($old);
			if ($w->{old_primary_mode} eq 'immediate')
			{
				$old->start(fail_ok => 1) or return { sqlstate => 'start', message => 'the old primary did not start' };
				$old->stop('fast', fail_ok => 1) or $old->stop('immediate', fail_ok => 1);
				topology_unlock($old);
			}
			$err = topology_program('pg_rewind', 'pg_rewind', '--target-pgdata', $old->data_dir,
				'--source-server', $blue->connstr('postgres'));
			return $err if $err;
			# pg_rewind copied the promoted server's postgresql.conf: its port
			# too, and settings changed there since it started.  A standby
			# replays the WAL of a primary whose max_prepared_transactions
			# was higher before it was lowered (lower_max_prepared), so it
			# takes the highest there was, as an operator's standby does
			$old->append_conf('postgresql.conf', 'port = ' . $old->port . "\n"
				  . "max_prepared_transactions = $max_prepared\n");
			$old->enable_streaming($blue);
			$w->{node}{standby} = $old;
			$w->{clock_of}{standby} = $w->{clock_of}{old_primary};
			delete $w->{node}{old_primary};
			return topology_start($w, 'standby') // topology_replayed($w);
		},
	},

	# a database of its own on blue with a serial table (rows in it) and a
	# table of the flake family
	legacy_create => {
		group  => 'migrations',
		needs_blue => 1,
		weight => 2,
		args   => sub { my ($m) = @_; return $m->{legacy} ? () : ({}) },
		pre    => sub { my ($m) = @_; return !$m->{legacy} },
		apply  => sub { my ($m) = @_; $m->{legacy} = { migrated => 0 } },
		run    => sub {
			my ($w) = @_;
			$w->{server_of}{'blue/legacy'} = 'blue';
			return sql($w, 'blue/postgres', 'CREATE DATABASE legacy')
			  // sql($w, 'blue/legacy', qq{CREATE EXTENSION flake;
				CREATE TABLE ts (id bigserial PRIMARY KEY, tag text NOT NULL);
				CREATE TABLE tf (id bigint PRIMARY KEY DEFAULT flake_next(), tag text NOT NULL);
				INSERT INTO ts (tag) SELECT 'legacy' FROM generate_series(1, $rows);});
		},
	},

	legacy_write => {
		group  => 'migrations',
		needs_blue => 1,
		weight => 3,
		args   => sub { my ($m) = @_; return $m->{legacy} ? map { { table => $_ } } qw(ts tf) : () },
		pre    => sub { my ($m) = @_; return $m->{legacy} },
		apply  => sub { },
		run    => sub {
			my ($w, $a, $step) = @_;
			my $err = write_rows($w, { db => 'blue/legacy', table => $a->{table} }, $step);
			legacy_overlap($w, $step);
			return $err;
		},
	},

	# the serial table migrated while pgbench inserts into it: by
	# flake_migrate() (its ACCESS EXCLUSIVE lock makes the writer wait) or
	# by flake_migrate_online (docs/migrating.md)
	migrate => {
		group  => 'migrations',
		needs_blue => 1,
		weight => 3,
		args   => sub {
			my ($m) = @_;
			return () unless $op{migrate}{pre}->($m, {});
			return map { { how => $_ } } qw(sql online);
		},
		pre   => sub { my ($m) = @_; return $m->{legacy} && !$m->{legacy}{migrated} },
		apply => sub { my ($m, $a) = @_; $m->{legacy}{migrated} = $a->{how} },
		run   => sub {
			my ($w, $a, $step) = @_;
			my $writer = legacy_writer($w, $step);
			my $err = legacy_migrate($w, $a->{how});
			# waiting on the stopped clock (ids ahead of it): time passes, and
			# the operator runs it again
			if ($err && ($err->{message} // '') =~ /statement timeout/)
			{
				set_clock($w, 2 + $w->{lag});
				$err = legacy_migrate($w, $a->{how});
			}
			legacy_writer_done($w, $writer, $step);
			legacy_overlap($w, $step);
			return $err;
		},
	},

	# writers sharing nodes at once: two leasing flake_next(), two calling
	# flake_next(0) and flake_next(1), the nodes the first leases take
	write_shared => {
		weight => 3,
		args   => sub {
			my ($m) = @_;
			return grep { $op{write_shared}{pre}->($m, $_) } map { { db => $_ } } sort keys %{ $m->{dbs} };
		},
		pre => sub {
			my ($m, $a) = @_;
			return $op{write}{pre}->($m, { db => $a->{db}, table => 'tf' });
		},
		apply => sub {
			my ($m, $a) = @_;
			$op{write}{apply}->($m, { db => $a->{db}, table => 'tf' }) for 1 .. 4;
		},
		run => sub {
			my ($w, $a, $step) = @_;
			my $node = $w->{node}{ $w->{server_of}{ $a->{db} } };
			my @writers;
			foreach my $gen ('flake_next()', 'flake_next()', 'flake_next(0)', 'flake_next(1)')
			{
				my %o = (out => '', err => '');
				my $tag = "$a->{db}:$step:" . scalar(@writers) . ':';
				my $h = IPC::Run::start([ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr(dbname($a->{db})),
						'-c', qq{WITH ins AS (INSERT INTO tf (id, tag) SELECT $gen, '$tag' || g FROM generate_series(1, $rows) g
							ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM ins} ],
					'>', \$o{out}, '2>', \$o{err}, IPC::Run::timeout(90));
				push @writers, [ $gen, $h, \%o ];
			}
			my $refused;
			foreach my $writer (@writers)
			{
				my ($gen, $h, $o) = @$writer;
				if (!eval { $h->finish; 1 })
				{
					$h->kill_kill;
					$refused //= { sqlstate => 'stall', message => "a writer of $gen did not end" };
					next;
				}
				if (my ($state, $message) = $o->{err} =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):\s+(.*)/)
				{
					my ($hint) = $o->{err} =~ /HINT:\s+(.*)/;
					$refused //= { sqlstate => $state, message => $message, hint => $hint };
					next;
				}
				chomp(my $n = $o->{out});
				finding($w, 'repeat', $step, sprintf('%d of %d ids of %s (shared nodes) in %s.tf issued again',
					$rows - $n, $rows, $gen, $a->{db}))
				  if $n =~ /^\d+$/ && $n != $rows;
			}
			return $refused;
		},
	},
);

1;
