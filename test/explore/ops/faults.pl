# The machine's faults and an operator's settings, for make explore
# (test/explore/explore.pl; docs/development.md, "Exploring orders of
# steps"): one server's clock stepped back or forward, settings changed
# across a restart (flake.max_borrow, the layout, the node sets), and
# flake's state files damaged, missing or replaced by an older copy of
# themselves while the server is stopped.
#
# What flake may answer: wait, borrow up to flake.max_borrow, or refuse
# with SQLSTATE and hint (a correct outcome); never an id issued twice.
# A generator whose flake.hwm or flake.layout is damaged or lost must
# refuse: an id it issues is the finding "damage unseen".
# The model follows what docs/guarantees.md says flake does, so that a
# history goes on with steps that can succeed: a layout refused at the
# first flake_next() ("The layout") takes the flake_next() writes of its
# server out of the draw until a later step sets one it accepts.
use strict;
use warnings;

our (%op, $run_dir, $world_count);

# --- the layouts: each with its settings, and its rank.  Every id of a
# layout of a higher rank lies above every id of a lower one at the same
# mark (an earlier epoch, more node bits); ranks equal are the same ids
# (a smaller flake.id_bits ends earlier, issues the same).  flake accepts a
# layout whose rank is at least that of the layout that issued ids, and
# refuses one below it with 55000.  The later epoch is 4 s later: its ids
# equal those issued 4 s before (two restarts move the clocks on by 4 s),
# so a layout accepted wrongly shows as ids issued again.
my %layout = (
	default       => { rank => 1, conf => '' },
	id_bits_62    => { rank => 1, conf => "flake.id_bits = 62\n" },
	epoch_earlier => { rank => 2, conf => "flake.epoch = '2014-12-31 23:59:56+00'\n" },
	node_bits_12  => { rank => 3, conf => "flake.node_bits = 12\n" },
	epoch_later   => { rank => 0, conf => "flake.epoch = '2015-01-01 00:00:04+00'\n" },
);

# the settings an operator changes across a restart, each with the values
# drawn ('' is the default: the setting left out)
my %setting = (
	'flake.max_borrow'      => [ '', '0', '10s', '1min' ],
	'flake.nodes'           => [ '', '0-511', '512-1023' ],
	'flake.randflake_nodes' => [ '', '0-1023', '1024-2047' ],
	layout                  => [ sort keys %layout ],
);

# flake's files in the data directory (src/hwm.c, claims.c, datafile.c,
# layout.c, horizon.c) and what is done to them
my @state_files = qw(flake.hwm flake.rekeys flake.written flake.layout flake.prepared);
my @damages = qw(truncate zero delete older);
# the files an older flake does not have, which it neither reads nor
# writes (flake.layout came with 1.5): their damage is none of its state
my %state_file_since = ('flake.layout' => '1.5');

# whether the flake installed has a file of flake's state
sub faults_has_file
{
	my ($w, $server, $file) = @_;
	my $since = $state_file_since{$file} or return 1;
	$w->{flake_version} //= (query($w, "$server/postgres",
			q{SELECT default_version FROM pg_available_extensions WHERE name = 'flake'}))[0] // '';
	my @have = split /\./, $w->{flake_version};
	my @need = split /\./, $since;
	my $order = ($have[0] // 0) <=> $need[0] || ($have[1] // 0) <=> $need[1];
	return $order >= 0;
}

# the model's settings of a server
sub faults_conf
{
	my ($m, $server) = @_;
	return $m->{conf}{$server} //= { layout => 'default' };
}

# whether flake_next() refuses on a server: a layout set below the one
# that issued its ids
sub faults_layout_refused
{
	my ($m, $server) = @_;
	my $recorded = $m->{recorded_layout}{$server};
	return defined $recorded && $layout{ faults_conf($m, $server)->{layout} }{rank} < $recorded;
}

sub faults_server_of { my ($m, $db) = @_; return $m->{dbs}{$db} && $m->{dbs}{$db}{server} }

sub faults_flake_next_table { my ($t) = @_; return $t eq 'tf' || $t eq 'tp' }

# flake_next() writes: drawn only where the layout is accepted; the first
# records the layout of its server
foreach my $name (qw(write write_prepared))
{
	my ($pre, $apply) = @{ $op{$name} }{qw(pre apply)};
	$op{$name}{pre} = sub {
		my ($m, $a) = @_;
		return 0 if faults_flake_next_table($a->{table}) && faults_layout_refused($m, faults_server_of($m, $a->{db}) // '');
		return $pre->($m, $a);
	};
	$op{$name}{apply} = sub {
		my ($m, $a) = @_;
		my $server = faults_server_of($m, $a->{db});
		$m->{recorded_layout}{$server} = $layout{ faults_conf($m, $server)->{layout} }{rank}
		  if faults_flake_next_table($a->{table});
		# the files flake has written on the server by now
		$m->{written}{$server}{$_} = 1 foreach qw(flake.hwm flake.written), faults_flake_next_table($a->{table}) ? 'flake.layout' : ();
		$m->{written}{$server}{'flake.prepared'} = 1 if $name eq 'write_prepared';
		return $apply->($m, $a);
	};
}

# green's clock put behind blue's: ids of green may then lie ahead of its clock
{
	my $apply = $op{green_clock_behind}{apply};
	$op{green_clock_behind}{apply} = sub {
		my ($m, $a) = @_;
		$m->{clock_moved}{green} = 1;
		return $apply->($m, $a);
	};
}

# Whether a server's clock has passed every id it issued once it restarts
# (restarts move the clocks on by 2 s; ids run at most flake.max_borrow,
# 1 s, ahead): its clock never stepped, never behind another's ids it
# received, flake.max_borrow never raised.  Only then is an older
# flake.hwm harmless; elsewhere docs/guarantees.md says it lets ids
# repeat ("What does not hold").
sub faults_clock_past_ids
{
	my ($m, $server) = @_;
	return 0 if $m->{clock_moved}{$server} || $m->{borrow_raised}{$server};
	return 0 if $server eq 'green' && $m->{sub} && ($m->{lag} // 0);
	return 0 if $server eq 'blue' && $m->{rsub};
	return 1;
}

# the settings file of the explorer's own, included by postgresql.conf
sub faults_write_settings
{
	my ($w, $server) = @_;
	my $node = $w->{node}{$server};
	my $conf = $w->{conf}{$server} //= { layout => 'default' };
	my $file = $node->data_dir . '/explore_faults.conf';
	$node->append_conf('postgresql.conf', "include_if_exists 'explore_faults.conf'\n") unless -e $file;
	open my $fh, '>', $file or die "$file: $!";
	print $fh $layout{ $conf->{layout} }{conf};
	print $fh "$_ = '$conf->{$_}'\n" foreach grep { $_ ne 'layout' && $conf->{$_} ne '' } sort keys %$conf;
	close $fh or die "$file: $!";
}

sub faults_slurp
{
	my ($file) = @_;
	open my $fh, '<:raw', $file or return undef;
	local $/;
	my $data = <$fh>;
	close $fh;
	return $data;
}

sub faults_put
{
	my ($file, $data) = @_;
	if (!defined $data)
	{
		unlink $file;
		return;
	}
	open my $fh, '>:raw', $file or die "$file: $!";
	print $fh $data;
	close $fh or die "$file: $!";
	chmod 0600, $file;
}

# a refusal of flake after a fault: its SQLSTATE and hint
sub faults_probe
{
	my ($w, $m, $server, $what) = @_;
	my $db = "$server/app";
	return unless ($m->{dbs}{$db}{ext} // '') eq 'current';
	my (undef, $err) = query($w, $db, "SELECT $what");
	return $err;
}

%op = (
	%op,

	# one server's clock stepped to an offset from where it was (-60 s to
	# +60 s): back, forward, or back to right
	clock_step => {
		group  => 'clock',
		weight => 2,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $server (qw(blue green))
			{
				push @a, map { { server => $server, to => $_ } }
				  grep { $_ != ($m->{skew}{$server} // 0) } (-60, -5, -1, 0, 0, 5, 60);
			}
			return @a;
		},
		pre   => sub { my ($m, $a) = @_; return $a->{to} != ($m->{skew}{ $a->{server} } // 0) },
		apply => sub {
			my ($m, $a) = @_;
			$m->{skew}{ $a->{server} } = $a->{to};
			$m->{clock_moved}{ $a->{server} } = 1;
		},
		run => sub {
			my ($w, $a) = @_;
			$w->{skew}{ $a->{server} } = $a->{to};
			set_clock($w, 0);
			return undef;
		},
	},

	# a setting changed across a restart (a fast one): flake.max_borrow,
	# the layout, flake.nodes, flake.randflake_nodes; back to the default
	# too
	change_setting => {
		group  => 'settings',
		weight => 2,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $server (qw(blue green))
			{
				foreach my $name (sort keys %setting)
				{
					push @a, map { { server => $server, setting => $name, value => $_ } }
					  grep { $_ ne (faults_conf($m, $server)->{$name} // $setting{$name}[0]) } @{ $setting{$name} };
				}
			}
			return @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			return $a->{value} ne (faults_conf($m, $a->{server})->{ $a->{setting} } // $setting{ $a->{setting} }[0]);
		},
		apply => sub {
			my ($m, $a) = @_;
			faults_conf($m, $a->{server})->{ $a->{setting} } = $a->{value};
			$m->{borrow_raised}{ $a->{server} } = 1 if $a->{setting} eq 'flake.max_borrow' && $a->{value} =~ /^(10s|1min)$/;
		},
		run => sub {
			my ($w, $a) = @_;
			($w->{conf}{ $a->{server} } //= { layout => 'default' })->{ $a->{setting} } = $a->{value};
			faults_write_settings($w, $a->{server});
			return stop($w, $a->{server}, 'fast') // start($w, $a->{server});
		},
	},

	# flake's files of a server saved as they are now, for an older copy
	# put back later
	save_state_files => {
		group  => 'files',
		weight => 1,
		args   => sub { my ($m) = @_; return map { { server => $_ } } grep { $m->{written}{$_} } qw(blue green) },
		pre    => sub { my ($m, $a) = @_; return $m->{written}{ $a->{server} } },
		apply  => sub {
			my ($m, $a) = @_;
			$m->{saved}{ $a->{server} } = { layout => $m->{recorded_layout}{ $a->{server} } };
		},
		run    => sub {
			my ($w, $a) = @_;
			my $dir = $w->{node}{ $a->{server} }->data_dir;
			$w->{saved}{ $a->{server} } = { map { $_ => faults_slurp("$dir/$_") } @state_files };
			return undef;
		},
	},

	# one of flake's files damaged (truncated, zeroed), deleted, or
	# replaced by the copy saved earlier, while its server is stopped.
	# flake must start; where it refuses, with SQLSTATE and hint, the step
	# does the repair its hint names (the intact copy put back), so that
	# the history goes on.
	state_file => {
		group  => 'files',
		weight => 2,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $server (qw(blue green))
			{
				foreach my $file (@state_files)
				{
					push @a, map { { server => $server, file => $file, damage => $_ } } @damages;
				}
			}
			return grep { $op{state_file}{pre}->($m, $_) } @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			# once the server issued ids; a file flake has not written (flake.rekeys
			# until a rekey) is damaged by a file put where there was none
			return 0 unless $m->{written}{ $a->{server} }{'flake.hwm'};
			return 0 if $a->{damage} eq 'delete' && !$m->{written}{ $a->{server} }{ $a->{file} };
			return 1 unless $a->{damage} eq 'older';
			return 0 unless $m->{saved}{ $a->{server} };
			# an older flake.hwm lets ids repeat where the clock is behind them,
			# and an older flake.layout where the layout changed since (docs/
			# guarantees.md, "What does not hold": a copy older than the damage)
			return 0 if $a->{file} eq 'flake.hwm' && !faults_clock_past_ids($m, $a->{server});
			return 0 if $a->{file} eq 'flake.layout'
			  && ($m->{saved}{ $a->{server} }{layout} // -1) != ($m->{recorded_layout}{ $a->{server} } // -1);
			return 1;
		},
		apply => sub { },
		run => sub {
			my ($w, $a, $step, $m) = @_;
			my $node = $w->{node}{ $a->{server} };
			my $path = $node->data_dir . "/$a->{file}";
			my $err = stop($w, $a->{server}, 'fast');
			return $err if $err;
			my $intact = faults_slurp($path);
			# where there was none: an empty file (truncated), or zeros
			faults_put($path,
				  $a->{damage} eq 'older'  ? $w->{saved}{ $a->{server} }{ $a->{file} }
				: $a->{damage} eq 'delete' ? undef
				: $a->{damage} eq 'zero'   ? "\0" x (defined $intact ? length($intact) : 64)
				:                            substr($intact // '', 0, int(length($intact // '') / 2)));
			$err = start($w, $a->{server});
			return $err if $err;
			push @{ $w->{log} }, "    $a->{file} " . (defined $intact ? length($intact) . ' bytes' : 'absent') . ' before';
			# what flake must take for damage: not an older copy, nor the
			# deletion of a file that was not there
			my $damaged = $a->{damage} ne 'older' && (defined $intact || $a->{damage} ne 'delete');
			my $refused;
			# the generators refuse where flake.hwm or flake.layout cannot be
			# read (ulidflake_next() reads the marks and records no layout)
			if ($a->{file} =~ /^flake\.(hwm|layout)$/ && (defined $intact || $damaged))
			{
				$refused = faults_probe($w, $m, $a->{server}, $a->{file} eq 'flake.hwm' ? 'ulidflake_next()' : 'flake_next()');
				if ($refused)
				{
					push @{ $w->{log} }, "    $refused->{sqlstate}: $refused->{message}"
					  . ($refused->{hint} ? "; HINT: $refused->{hint}" : '');
					finding($w, 'no hint', $step, "$a->{file} $a->{damage}: $refused->{message}")
					  if ($refused->{sqlstate} // '') =~ /^[0-9A-Z]{5}$/ && !$refused->{hint};
				}
				elsif ($damaged && ($m->{dbs}{"$a->{server}/app"}{ext} // '') eq 'current'
					&& faults_has_file($w, $a->{server}, $a->{file})
					&& ($a->{file} eq 'flake.hwm' || !defined $intact || defined $m->{recorded_layout}{ $a->{server} }))
				{
					finding($w, 'damage unseen', $step, "an id issued with $a->{file} $a->{damage}");
				}
			}
			# the repair the hints name: the intact copy put back (flake.hwm
			# and flake.rekeys are read again at the next call; flake.layout
			# at the next start).  An older copy flake took stays.
			return undef if $a->{damage} eq 'older' && !$refused;
			return undef if $a->{damage} eq 'delete' && $a->{file} eq 'flake.written';
			# a flake.written that cannot be read stands for both files
			# written: a flake.rekeys never written is then "missing", and
			# take-overs are refused until it is put back
			return undef unless $a->{file} =~ /^flake\.(hwm|rekeys|layout|written)$/;
			faults_put($path, $intact);
			return undef unless $a->{file} eq 'flake.layout';
			return stop($w, $a->{server}, 'fast') // start($w, $a->{server});
		},
	},
);

1;
