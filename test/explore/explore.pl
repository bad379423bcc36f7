# make explore: random histories of an operator's steps and the machine's
# faults, drawn from a seeded PRNG, run on servers of their own, and one
# checker over each whole history (issue 44).  See docs/development.md,
# "Exploring orders of steps".
#
# A history is a list of steps, "op key=value ...".  Each operation below is
# a small named entry of %op: when it may run (pre, on the model of the
# world), what it changes in the model (apply) and what it does to the
# servers (run).  The whole history is drawn first from the seed on the
# model alone, so a seed always gives the same history whatever the servers
# answer; while it runs, a step whose precondition no longer holds (an
# earlier step was refused) is skipped.  The checker's outcomes:
#   repeat     an id issued twice: a write lost rows to its primary key,
#              or a server holds an id under two writes' tags
#   lost       a committed row missing where the history says it must be
#   poller     a poller following docs/consumers.md missed a committed
#              row below its horizon, or read one twice
#   no hint    a refusal (an error of flake, not of the statement or its
#              data: classes 42 and 22) without SQLSTATE or HINT,
#              or a hint that names no step (a command, function,
#              setting or file the README and docs/ name, or an
#              operator's action: give, remove, put back, ...)
#   no start   a server that does not start after a step
#   no stop    a server that had died when a step stops it
#   explorer   a statement of the explorer's own that is wrong (a bug here)
# A refusal with its SQLSTATE and hint is a correct outcome; a repeat never.
#
# Environment: EXPLORE_SEED=n (one history: replay it), EXPLORE_SEEDS="n m"
# (these), EXPLORE_HISTORY=file (replay a history file), EXPLORE_SECONDS
# (new seeds until then; default 300), EXPLORE_SHRINK_SECONDS (default
# 240, a finding, once the search is over), EXPLORE_STEPS (a history's
# length, default 72), EXPLORE_JOBS (histories run at once, default 3),
# EXPLORE_OUT (where the failing histories are written).  Ends with "N
# passed, N failed".
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../t";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use Storable;
use Time::HiRes qw(time sleep);
use FlakeClock;
use PostgreSQL::Test::RecursiveCopy;

Test::More->builder->no_ending(1);
# stopped: PostgreSQL::Test::Cluster's END stops the servers
$SIG{TERM} = $SIG{INT} = sub { kill 'TERM', keys %main::running; exit 1 };
# a statement that waits on the stopped clock is cancelled: a stall
$ENV{PGOPTIONS} = '-c statement_timeout=5s';
# PostgreSQL::Test::Utils sends STDOUT and STDERR to its log: what the
# explorer says goes where Test::More writes
my $say = Test::More->builder->output;
$say->autoflush(1);

our $secret = '000102030405060708090a0b0c0d0e0f';
our %family = (tf => 'flake', tu => 'ulidflake', tr => 'randflake', tp => 'flake');
our %generator = (tf => 'flake_next()', tu => 'ulidflake_next()', tr => 'randflake_next()', tp => 'flake_next()');
our @tables = qw(tf tu tr tp);
our $rows = 200;
# the versions of flake released, each installable with CREATE EXTENSION
our @released = qw(1.0 1.1 1.2 1.3 1.4);

# --- the PRNG: xorshift32, the same sequence on every machine
my $rng_state;
sub rng_seed { $rng_state = (($_[0] * 2654435761) % 4294967296) || 1 }
sub rnd
{
	my ($n) = @_;
	my $x = $rng_state;
	$x ^= ($x << 13) & 0xffffffff;
	$x ^= $x >> 17;
	$x ^= ($x << 5) & 0xffffffff;
	$rng_state = $x;
	return $x % $n;
}
sub pick { return $_[ rnd(scalar @_) ] }

# --- the model: what the history has made of the world, as predicted
#
# dbs: "server/name" => { ext, tables => { t => { default, rows } },
#   restored (from which db, in which form), taken (flake_take_over_ids) }.
# pub: blue's publication; sub: green's subscription to it (tables it has
# synchronized); rpub, rsub: the way back after the cutover; live: the
# server whose app database takes the writes.
sub new_model
{
	return {
		dbs => {
			'blue/app'  => { server => 'blue',  ext => 0, tables => {} },
			'green/app' => { server => 'green', ext => 0, tables => {} },
		},
		live     => 'blue',
		restores => 0,
		cutovers => 0,
	};
}

# whether a database takes writes: the live app database, and every
# restored copy (a staging database of its own)
sub writable
{
	my ($m, $db) = @_;
	my $d = $m->{dbs}{$db};
	return $d->{restored} || $db eq "$m->{live}/app";
}

# the tables blue publishes
sub published
{
	my ($m) = @_;
	return () unless $m->{pub};
	return sort keys %{ $m->{dbs}{'blue/app'}{tables} } if $m->{pub}{all};
	return sort keys %{ $m->{pub}{tables} };
}

# blue's tables that green lacks (a ulidflake column needs the extension)
sub missing_on_green
{
	my ($m) = @_;
	my $green = $m->{dbs}{'green/app'};
	return grep { !$green->{tables}{$_} && ($_ ne 'tu' || $green->{ext}) } sort keys %{ $m->{dbs}{'blue/app'}{tables} };
}

# FOR ALL TABLES publishes the extension's own tables too: the subscriber
# needs them, at the version of the publisher (else CREATE SUBSCRIPTION
# fails on a schema or table PostgreSQL does not find)
sub green_has_flake_tables
{
	my ($m) = @_;
	return !$m->{pub}{all} || same_extension($m);
}

sub same_extension
{
	my ($m) = @_;
	return ($m->{dbs}{'blue/app'}{ext} || 0) eq ($m->{dbs}{'green/app'}{ext} || 0);
}

sub table_sql
{
	my ($t, $default) = @_;
	my $type = $t eq 'tu' ? 'ulidflake' : 'bigint';
	my $def = $default ? " DEFAULT $generator{$t}" : '';
	my $sql = "CREATE TABLE $t (id $type PRIMARY KEY$def, tag text NOT NULL)";
	return $sql unless $t eq 'tp';
	return "$sql PARTITION BY RANGE (id);
		CREATE TABLE tp_old PARTITION OF tp FOR VALUES FROM (MINVALUE) TO (0);
		CREATE TABLE tp_new PARTITION OF tp FOR VALUES FROM (0) TO (MAXVALUE);";
}

# --- the operations
#
# Each: weight; args($m): the argument sets it could take now (each a hash,
# precondition included); pre($m, $a): whether it may run now (checked
# again when the history runs); apply($m, $a): the model after it;
# run($w, $a, $step): what it does, returning undef or the error of a
# refusal.  The generator picks an operation by weight among those with
# arguments, then one of its argument sets.  group: operations of one
# concern, drawn together or not at all in a history (swarm testing).
# before($m, $a) and then($m, $a, $lead): the steps an operator takes
# right before and right after this one (a routine); one of each is drawn
# with it.  Operations of a concern of
# their own (faults of the machine, other topologies) are in
# test/explore/ops/*.pl, each adding its entries to %op.
our %op;

%op = (
	# the extension at the current version, or (one time in two) at a
	# released one (every generator and the ulidflake type since 1.0), a
	# server not yet updated, then update_extension
	create_extension => {
		core   => 1,
		weight => 3,
		args   => sub {
			my ($m) = @_;
			return grep { $op{create_extension}{pre}->($m, $_) }
			  map { my $db = $_; map { { db => $db, version => $_ } } (('current') x 5, @released) } qw(blue/app green/app);
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 if $m->{dbs}{ $a->{db} }{ext};
			# blue's new tables published to a subscriber that has them
			return 1 unless $a->{db} eq 'blue/app' && $m->{sub} && $m->{pub}{all};
			return ($m->{dbs}{'green/app'}{ext} || '') eq ($a->{version} // 'current');
		},
		apply => sub { my ($m, $a) = @_; $m->{dbs}{ $a->{db} }{ext} = $a->{version} // 'current' },
		run   => sub {
			my ($w, $a) = @_;
			my $version = $a->{version} // 'current';
			return sql($w, $a->{db}, 'CREATE EXTENSION flake' . ($version eq 'current' ? '' : " VERSION '$version'"));
		},
	},

	update_extension => {
		weight => 2,
		args   => sub {
			my ($m) = @_;
			return grep { $op{update_extension}{pre}->($m, $_) } map { { db => $_ } } qw(blue/app green/app);
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 unless grep { $_ eq ($m->{dbs}{ $a->{db} }{ext} // 0) } @released;
			return !($a->{db} eq 'blue/app' && $m->{sub} && $m->{pub}{all}) || $m->{dbs}{'green/app'}{ext} eq 'current';
		},
		apply => sub { my ($m, $a) = @_; $m->{dbs}{ $a->{db} }{ext} = 'current' },
		run   => sub { my ($w, $a) = @_; return sql($w, $a->{db}, 'ALTER EXTENSION flake UPDATE') },
	},

	# a table, with its flake default or without (the default set later)
	create_table => {
		core   => 1,
		weight => 4,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $db (qw(blue/app green/app))
			{
				foreach my $t (grep { !$m->{drawn_tables} || $m->{drawn_tables}{$_} } @tables)
				{
					foreach my $default (0, 1)
					{
						my $a = { db => $db, table => $t, default => $default };
						push @a, $a if $op{create_table}{pre}->($m, $a);
					}
				}
			}
			return @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{db} };
			return 0 if $d->{restored} || $d->{tables}{ $a->{table} };
			# no schema changes on green in the cutover's window
			return 0 if $a->{db} eq 'green/app' && $m->{cutovers};
			return 0 if ($a->{default} || $a->{table} eq 'tu') && !$d->{ext};
			# green has a table before blue publishes it to green's subscription
			return 0 if $a->{db} eq 'blue/app' && $m->{sub} && $m->{pub}{all}
			  && !$m->{dbs}{'green/app'}{tables}{ $a->{table} };
			return 0 if $a->{db} eq 'green/app' && $m->{rsub} && !$m->{dbs}{'blue/app'}{tables}{ $a->{table} };
			return 1;
		},
		apply => sub {
			my ($m, $a) = @_;
			$m->{dbs}{ $a->{db} }{tables}{ $a->{table} } = { default => $a->{default}, rows => 0 };
		},
		run => sub { my ($w, $a) = @_; return sql($w, $a->{db}, table_sql($a->{table}, $a->{default})) },
	},

	# blue's schema on green, as pg_dump -s gives it: blue's tables green
	# lacks, with their default where green has the extension
	schema_to_green => {
		core   => 1,
		weight => 3,
		args   => sub { my ($m) = @_; return $op{schema_to_green}{pre}->($m, {}) ? ({}) : () },
		pre    => sub { my ($m) = @_; return !$m->{cutovers} && missing_on_green($m) },
		apply  => sub {
			my ($m) = @_;
			foreach my $t (missing_on_green($m))
			{
				$m->{dbs}{'green/app'}{tables}{$t} = { rows => 0,
					default => $m->{dbs}{'blue/app'}{tables}{$t}{default} && $m->{dbs}{'green/app'}{ext} ? 1 : 0 };
			}
		},
		run => sub {
			my ($w, $a, $step, $m) = @_;
			my $green_ext = $m->{dbs}{'green/app'}{ext};
			return sql($w, 'green/app', join ";\n",
				map { table_sql($_, $m->{dbs}{'blue/app'}{tables}{$_}{default} && $green_ext) } missing_on_green($m));
		},
	},

	set_default => {
		core   => 1,
		weight => 4,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $db (qw(blue/app green/app))
			{
				push @a, map { { db => $db, table => $_ } }
				  grep { $op{set_default}{pre}->($m, { db => $db, table => $_ }) } @tables;
			}
			return @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{db} };
			my $t = $d->{tables}{ $a->{table} };
			return $d->{ext} && $t && !$t->{default};
		},
		apply => sub { my ($m, $a) = @_; $m->{dbs}{ $a->{db} }{tables}{ $a->{table} }{default} = 1 },
		run   => sub {
			my ($w, $a) = @_;
			return sql($w, $a->{db}, "ALTER TABLE $a->{table} ALTER id SET DEFAULT $generator{$a->{table}}");
		},
	},

	# blue's publication: FOR ALL TABLES or FOR TABLE (then add_to_publication)
	publish => {
		core   => 1,
		needs_blue => 1,
		weight => 4,
		args   => sub {
			my ($m) = @_;
			return () if $m->{pub};
			my @t = sort keys %{ $m->{dbs}{'blue/app'}{tables} };
			my @a = map { { all => 1, via_root => $_ } } (0, 1);
			push @a, map { { all => 0, via_root => $_, tables => join(',', @t) } } (0, 1) if @t;
			return @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 if $m->{pub};
			return 1 if $a->{all};
			return !grep { !$m->{dbs}{'blue/app'}{tables}{$_} } split /,/, $a->{tables};
		},
		apply => sub {
			my ($m, $a) = @_;
			$m->{pub} = { all => $a->{all}, tables => { map { $_ => 1 } split /,/, ($a->{tables} // '') } };
		},
		run => sub {
			my ($w, $a) = @_;
			my $what = $a->{all} ? 'ALL TABLES' : "TABLE $a->{tables}";
			return sql($w, 'blue/app',
				"CREATE PUBLICATION pub FOR $what WITH (publish_via_partition_root = $a->{via_root})");
		},
	},

	add_to_publication => {
		needs_blue => 1,
		weight => 2,
		args   => sub {
			my ($m) = @_;
			return () unless $m->{pub} && !$m->{pub}{all};
			return map { { table => $_ } }
			  grep { !$m->{pub}{tables}{$_} && (!$m->{sub} || $m->{dbs}{'green/app'}{tables}{$_}) }
			  sort keys %{ $m->{dbs}{'blue/app'}{tables} };
		},
		pre => sub {
			my ($m, $a) = @_;
			return $m->{pub} && !$m->{pub}{all} && !$m->{pub}{tables}{ $a->{table} }
			  && $m->{dbs}{'blue/app'}{tables}{ $a->{table} }
			  && (!$m->{sub} || $m->{dbs}{'green/app'}{tables}{ $a->{table} });
		},
		apply => sub { my ($m, $a) = @_; $m->{pub}{tables}{ $a->{table} } = 1 },
		run   => sub { my ($w, $a) = @_; return sql($w, 'blue/app', "ALTER PUBLICATION pub ADD TABLE $a->{table}") },
	},

	# green subscribes to blue: green has every table published; with
	# copy_data off only while blue's tables are empty (else green lacks
	# rows: an operator's error, not flake's)
	subscribe => {
		core   => 1,
		needs_blue => 1,
		weight => 5,
		args   => sub {
			my ($m) = @_;
			return grep { $op{subscribe}{pre}->($m, $_) } map { { copy_data => $_ } } (0, 1);
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 if !$m->{pub} || $m->{sub} || $m->{cutovers};
			# a slot waits for blue's prepared transactions to end
			return 0 if $m->{dbs}{'blue/app'}{prepared};
			my @t = published($m);
			return 0 if grep { !$m->{dbs}{'green/app'}{tables}{$_} } @t;
			return 0 unless green_has_flake_tables($m);
			return 0 if !$a->{copy_data} && grep { $m->{dbs}{'blue/app'}{tables}{$_}{rows} } @t;
			return 1;
		},
		apply => sub {
			my ($m, $a) = @_;
			$m->{sub} = { tables => { map { $_ => 1 } published($m) } };
			copy_rows($m, 'blue/app', 'green/app', published($m));
		},
		run => sub {
			my ($w, $a) = @_;
			my $conn = conninfo($w, 'blue');
			return sql($w, 'green/app',
				"CREATE SUBSCRIPTION sub CONNECTION '$conn' PUBLICATION pub WITH (copy_data = $a->{copy_data})")
			  // synced($w, 'green/app');
		},
	},

	refresh_publication => {
		core   => 1,
		needs_blue => 1,
		weight => 4,
		args   => sub {
			my ($m) = @_;
			return grep { $op{refresh_publication}{pre}->($m, $_) } map { { copy_data => $_ } } (0, 1);
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 if !$m->{sub} || $m->{cutovers} || $m->{dbs}{'blue/app'}{prepared};
			my @new = grep { !$m->{sub}{tables}{$_} } published($m);
			return 0 if grep { !$m->{dbs}{'green/app'}{tables}{$_} } @new;
			return 0 unless green_has_flake_tables($m);
			return 0 if !$a->{copy_data} && grep { $m->{dbs}{'blue/app'}{tables}{$_}{rows} } @new;
			return 1;
		},
		apply => sub {
			my ($m, $a) = @_;
			my @new = grep { !$m->{sub}{tables}{$_} } published($m);
			$m->{sub}{tables}{$_} = 1 foreach @new;
			copy_rows($m, 'blue/app', 'green/app', @new);
		},
		run => sub {
			my ($w, $a) = @_;
			return sql($w, 'green/app', "ALTER SUBSCRIPTION sub REFRESH PUBLICATION WITH (copy_data = $a->{copy_data})")
			  // synced($w, 'green/app');
		},
	},

	# rows with the table's default (ON CONFLICT DO NOTHING: an id issued
	# again shows as a row missing)
	write => {
		core   => 1,
		weight => 10,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $db (sort keys %{ $m->{dbs} })
			{
				push @a, map { { db => $db, table => $_ } }
				  grep { $op{write}{pre}->($m, { db => $db, table => $_ }) } @tables;
			}
			return @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			my $t = $m->{dbs}{ $a->{db} } && $m->{dbs}{ $a->{db} }{tables}{ $a->{table} };
			return $t && $t->{default} && writable($m, $a->{db});
		},
		apply => sub {
			my ($m, $a) = @_;
			$m->{dbs}{ $a->{db} }{tables}{ $a->{table} }{rows} += $rows;
			# replicated on: blue's subscribed tables to green, green's to blue after the cutover
			copy_rows($m, 'blue/app', 'green/app', $a->{table})
			  if $a->{db} eq 'blue/app' && $m->{sub} && $m->{sub}{tables}{ $a->{table} } && !$m->{cutovers};
		},
		run => \&write_rows,
	},

	# the cutover: blue stops writing, green catches up, its subscription
	# is disabled, green takes the writes; blue may follow green back
	# (for a rollback)
	cutover => {
		core   => 1,
		needs_blue => 1,
		weight => 8,
		args   => sub {
			my ($m) = @_;
			return grep { $op{cutover}{pre}->($m, $_) } map { { way_back => $_ } } (0, 1);
		},
		pre => sub {
			my ($m, $a) = @_;
			return 0 if !$m->{sub} || $m->{cutovers};
			my $blue = $m->{dbs}{'blue/app'}{tables};
			# an application that wrote, and has no transaction prepared
			return 0 unless grep { $_->{rows} } values %$blue;
			return 0 if $m->{dbs}{'blue/app'}{prepared};
			# green holds every row of blue: each table with rows is subscribed
			return 0 if grep { $blue->{$_}{rows} && !$m->{sub}{tables}{$_} } keys %$blue;
			return 0 if $a->{way_back} && (!same_extension($m)
				|| grep { !$m->{dbs}{'blue/app'}{tables}{$_} } keys %{ $m->{dbs}{'green/app'}{tables} });
			return 1;
		},
		apply => sub {
			my ($m, $a) = @_;
			$m->{cutovers} = 1;
			$m->{live}     = 'green';
			$m->{rsub}     = { tables => { map { $_ => 1 } keys %{ $m->{dbs}{'green/app'}{tables} } } } if $a->{way_back};
		},
		run => sub {
			my ($w, $a) = @_;
			my $err = caught_up($w, 'blue', 'sub', 'green/app') // lost_rows($w, 'blue/app', 'green/app', 'cutover')
			  // sql($w, 'green/app', 'ALTER SUBSCRIPTION sub DISABLE');
			return $err if $err || !$a->{way_back};
			my $conn = conninfo($w, 'green');
			return sql($w, 'green/app', 'CREATE PUBLICATION rpub FOR ALL TABLES')
			  // sql($w, 'blue/app',
				"CREATE SUBSCRIPTION rsub CONNECTION '$conn' PUBLICATION rpub WITH (copy_data = false)");
		},
	},

	rollback => {
		needs_blue => 1,
		weight => 3,
		args   => sub { my ($m) = @_; return $op{rollback}{pre}->($m, {}) ? ({}) : () },
		pre    => sub { my ($m) = @_; return $m->{rsub} && $m->{live} eq 'green' },
		apply  => sub { my ($m) = @_; $m->{live} = 'blue' },
		run    => sub {
			my ($w) = @_;
			return caught_up($w, 'green', 'rsub', 'blue/app') // lost_rows($w, 'green/app', 'blue/app', 'rollback')
			  // sql($w, 'blue/app', 'ALTER SUBSCRIPTION rsub DISABLE');
		},
	},

	# a dump of a database with flake restored as a new database (a
	# staging copy) on blue or green: the forms of pg_dump, the extension
	# created first where the form does not carry it
	dump_restore => {
		group  => 'restores',
		weight => 4,
		args   => sub {
			my ($m) = @_;
			return () if $m->{restores} >= 4;
			my @a;
			# a dump of production (the live app database), the common
			# case, counts twice
			foreach my $src (sort(keys %{ $m->{dbs} }), "$m->{live}/app")
			{
				foreach my $form (qw(fc plain schema_n table_t data_only inserts))
				{
					push @a, map { { src => $src, form => $form, to => $_ } } qw(blue green);
				}
			}
			return grep { $op{dump_restore}{pre}->($m, $_) } @a;
		},
		pre => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{src} };
			return $d && $d->{ext} && grep { $_->{rows} } values %{ $d->{tables} };
		},
		apply => sub {
			my ($m, $a) = @_;
			my $name = "$a->{to}/r" . ++$m->{restores};
			my $d = $m->{dbs}{ $a->{src} };
			$m->{dbs}{$name} = {
				server   => $a->{to},
				ext      => 'current',
				restored => $a,
				tables   => { map { $_ => { %{ $d->{tables}{$_} } } } keys %{ $d->{tables} } },
			};
			$a->{db} = $name;
		},
		# a dump of a running application (it writes up to the dump), then
		# the copy's take-over, or its application's first writes (refused
		# where the copy comes from another server not taken over)
		before => sub { my ($m, $a) = @_; return app_writes($m, $a->{src}) },
		then   => sub {
			my ($m, $a, $lead) = @_;
			my @writes = staging_writes($m, $a->{db}, $lead);
			return ((map { [ 'take_over_ids', { db => $a->{db} } ] } 0 .. ($#writes > 0 ? $#writes : 0)), @writes);
		},
		run => sub {
			my ($w, $a, $step) = @_;
			my $name = "$a->{to}/r" . ($w->{restores} += 1);
			return dump_and_restore($w, $a->{src}, $a->{form}, $name, $step);
		},
	},

	# the next refresh of a staging copy: DROP DATABASE, a new dump of the
	# same source restored in its place
	restore_again => {
		group  => 'restores',
		weight => 5,
		args   => sub {
			my ($m) = @_;
			return map { { db => $_ } } grep { $m->{dbs}{$_}{restored} && $m->{dbs}{ $m->{dbs}{$_}{restored}{src} } }
			  sort keys %{ $m->{dbs} };
		},
		pre => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{db} };
			return $d && $d->{restored} && $m->{dbs}{ $d->{restored}{src} };
		},
		apply => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{db} };
			my $src = $m->{dbs}{ $d->{restored}{src} };
			$d->{tables} = { map { $_ => { %{ $src->{tables}{$_} } } } keys %{ $src->{tables} } };
			delete $d->{taken};
		},
		# a refresh of a copy of a running application: the application
		# writes in production up to the dump, and in the copy as soon as
		# it is back (the same table, the same workload)
		before => sub { my ($m, $a) = @_; return app_writes($m, $m->{dbs}{ $a->{db} }{restored}{src}) },
		then   => sub { my ($m, $a, $lead) = @_; return staging_writes($m, $a->{db}, $lead) },
		run => sub {
			my ($w, $a, $step) = @_;
			my $src = $w->{restored_from}{ $a->{db} } or return undef;
			my $err = sql($w, "$w->{server_of}{ $a->{db} }/postgres", 'DROP DATABASE ' . dbname($a->{db}));
			return $err // dump_and_restore($w, $src->{src}, $src->{form}, $a->{db}, $step);
		},
	},

	take_over_ids => {
		group  => 'restores',
		weight => 4,
		args   => sub {
			my ($m) = @_;
			return map { { db => $_ } } grep { $m->{dbs}{$_}{restored} && !$m->{dbs}{$_}{taken} } sort keys %{ $m->{dbs} };
		},
		pre   => sub { my ($m, $a) = @_; my $d = $m->{dbs}{ $a->{db} }; return $d && $d->{restored} && !$d->{taken} },
		apply => sub { my ($m, $a) = @_; $m->{dbs}{ $a->{db} }{taken} = 1 },
		run   => sub { my ($w, $a) = @_; return sql($w, $a->{db}, 'SELECT flake_take_over_ids()') },
	},

	# a backfill as pg_dump --data-only --disable-triggers writes it: rows
	# of another source (ids far below flake's) between DISABLE and
	# ENABLE TRIGGER ALL
	backfill => {
		weight => 2,
		args   => sub {
			my ($m) = @_;
			my @a;
			foreach my $db (qw(blue/app green/app))
			{
				push @a, map { { db => $db, table => $_ } } grep { $m->{dbs}{$db}{tables}{$_} } qw(tf tr);
			}
			return @a;
		},
		pre   => sub { my ($m, $a) = @_; return $m->{dbs}{ $a->{db} }{tables}{ $a->{table} } },
		apply => sub { },
		run   => sub {
			my ($w, $a, $step) = @_;
			return sql($w, $a->{db}, "ALTER TABLE $a->{table} DISABLE TRIGGER ALL;
				INSERT INTO $a->{table} (id, tag) SELECT $step * 100 + g, 'backfill' FROM generate_series(1, 50) g
				ON CONFLICT DO NOTHING;
				ALTER TABLE $a->{table} ENABLE TRIGGER ALL;");
		},
	},

	# rows of a transaction prepared (two-phase commit), committed later
	write_prepared => {
		weight => 2,
		args   => sub {
			my ($m) = @_;
			return grep { $op{write_prepared}{pre}->($m, $_) } map { { db => $_, table => 'tf' } } qw(blue/app green/app);
		},
		pre => sub {
			my ($m, $a) = @_;
			return $op{write}{pre}->($m, $a) && !$m->{dbs}{ $a->{db} }{prepared};
		},
		apply => sub { my ($m, $a) = @_; $m->{dbs}{ $a->{db} }{prepared} = 1 },
		run   => sub {
			my ($w, $a, $step) = @_;
			my $gid = 'p' . dbname($a->{db}) . $step;
			$w->{prepared}{ $a->{db} } = $gid;
			return sql($w, $a->{db}, qq{BEGIN;
				INSERT INTO $a->{table} (tag) SELECT '$a->{db}:$step:' || g FROM generate_series(1, 10) g;
				PREPARE TRANSACTION '$gid';});
		},
	},

	commit_prepared => {
		weight => 2,
		args   => sub {
			my ($m) = @_;
			return map { { db => $_ } } grep { $m->{dbs}{$_}{prepared} } qw(blue/app green/app);
		},
		pre   => sub { my ($m, $a) = @_; return $m->{dbs}{ $a->{db} }{prepared} },
		apply => sub { my ($m, $a) = @_; delete $m->{dbs}{ $a->{db} }{prepared} },
		run   => sub {
			my ($w, $a) = @_;
			return sql($w, $a->{db}, "COMMIT PREPARED '$w->{prepared}{ $a->{db} }'");
		},
	},

	# a poller as docs/consumers.md says: the horizon first, then the rows
	# below it above the last one read
	poll => {
		needs_blue => 1,
		weight => 3,
		args   => sub {
			my ($m) = @_;
			return $op{poll}{pre}->($m, { db => 'blue/app' }) ? ({ db => 'blue/app' }) : ();
		},
		# blue's own rows, while it takes the writes (rows that arrive by
		# replication are outside the horizon: docs/consumers.md)
		pre => sub {
			my ($m, $a) = @_;
			my $d = $m->{dbs}{ $a->{db} };
			return $a->{db} eq 'blue/app' && !$m->{cutovers} && $d->{tables}{tf} && ($d->{ext} // '') eq 'current';
		},
		apply => sub { },
		run   => \&poll,
	},

	# max_prepared_transactions lowered across a restart (still above the
	# transactions prepared)
	lower_max_prepared => {
		weight => 1,
		args   => sub { my ($m) = @_; return map { { server => $_ } } grep { !$m->{lowered}{$_} } qw(blue green) },
		pre    => sub { my ($m, $a) = @_; return !$m->{lowered}{ $a->{server} } },
		apply  => sub { my ($m, $a) = @_; $m->{lowered}{ $a->{server} } = 1 },
		run    => sub {
			my ($w, $a) = @_;
			my $node = $w->{node}{ $a->{server} };
			$node->append_conf('postgresql.conf', "max_prepared_transactions = 5\n");
			return stop($w, $a->{server}, 'fast') // start($w, $a->{server});
		},
	},

	# time passes: both servers' clocks move on (and stop again)
	time_passes => {
		weight => 2,
		args   => sub { return map { { seconds => $_ } } (2, 5) },
		pre    => sub { 1 },
		apply  => sub { },
		run    => sub { my ($w, $a) = @_; set_clock($w, $a->{seconds}); return undef },
	},

	# green's clock behind blue's (the ordinary case), or level with it
	green_clock_behind => {
		weight => 2,
		args   => sub { my ($m) = @_; return map { { seconds => $_ } } grep { $_ != ($m->{lag} // 0) } (0, 2, 5, 10) },
		pre    => sub { 1 },
		apply  => sub { my ($m, $a) = @_; $m->{lag} = $a->{seconds} },
		run    => sub { my ($w, $a) = @_; $w->{lag} = $a->{seconds}; set_clock($w, 0); return undef },
	},

	restart => {
		weight => 1,
		args   => sub { return map { { server => $_, mode => pick('fast', 'immediate') } } qw(blue green) },
		pre    => sub { 1 },
		apply  => sub { },
		run    => sub {
			my ($w, $a) = @_;
			return stop($w, $a->{server}, $a->{mode}) // start($w, $a->{server});
		},
	},

	crash => {
		weight => 1,
		args   => sub { return map { my $s = $_; map { { server => $s, process => $_ } } qw(backend postmaster) } qw(blue green) },
		pre    => sub { 1 },
		apply  => sub { },
		run    => sub {
			my ($w, $a) = @_;
			my $node = $w->{node}{ $a->{server} };
			if ($a->{process} eq 'backend')
			{
				# a backend killed: the postmaster restarts them all
				my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('app'), '-c', 'SELECT pg_sleep(4)' ],
					'>', \my $o, '2>', \my $e);
				my $pid;
				for (1 .. 50)
				{
					($pid) = query($w, "$a->{server}/postgres",
						q{SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(4)'});
					last if $pid;
					sleep 0.1;
				}
				kill 'KILL', $pid if $pid;
				eval { $h->finish };
				return back_up($w, $a->{server});
			}
			my $pid = $node->{_pid};
			$node->kill9;
			# the postmaster gone (a zombie where no init reaps it): its lock file is stale
			for (1 .. 50)
			{
				last unless -e "/proc/$pid" && slurp_file("/proc/$pid/stat") !~ /^\d+ \S+ Z/;
				sleep 0.1;
			}
			sleep 1;
			unlink $node->data_dir . '/postmaster.pid', $node->host . '/.s.PGSQL.' . $node->port . '.lock';
			return start($w, $a->{server});
		},
	},
);

foreach my $file (sort glob "$FindBin::RealBin/ops/*.pl")
{
	do $file or die "$file: " . ($@ || $!);
}

# a poll as docs/consumers.md says: the horizon H, then the rows above the
# largest id read and below H; each read once, none missed below the
# largest id read
sub poll
{
	my ($w, $a) = @_;
	my $p = $w->{poller}{ $a->{db} } //= { position => 0, read => {} };
	my ($horizon, $err) = query($w, $a->{db}, 'SELECT flake_horizon()');
	return $err if $err;
	my ($ids) = query($w, $a->{db}, "SELECT string_agg(id::text, ' ') FROM tf WHERE id > $p->{position} AND id < $horizon AND tag LIKE '$a->{db}:%'");
	foreach my $id (split ' ', $ids // '')
	{
		finding($w, 'poller', undef, "$a->{db}: id $id read twice") if $p->{read}{$id}++;
		# the largest id read: the next poll reads above it
		$p->{position} = $id if $id > $p->{position};
	}
	return undef;
}

# the writes of a database's application, on each table with its default
# (none where the database takes no writes)
sub app_writes
{
	my ($m, $db) = @_;
	return map { [ 'write', { db => $db, table => $_ } ] }
	  grep { $op{write}{pre}->($m, { db => $db, table => $_ }) } @tables;
}

# the writes of a restored copy's application: on the table production
# wrote before the dump (the routine's lead step), else on any table
sub staging_writes
{
	my ($m, $db, $lead) = @_;
	my @w = app_writes($m, $db);
	my @same = $lead ? grep { $_->[1]{table} eq $lead->[2]{table} } @w : ();
	return @same ? @same : @w;
}

# rows of one table that reach another database (replication), in the model
sub copy_rows
{
	my ($m, $from, $to, @t) = @_;
	foreach my $t (@t)
	{
		next unless $m->{dbs}{$to}{tables}{$t} && $m->{dbs}{$from}{tables}{$t};
		$m->{dbs}{$to}{tables}{$t}{rows} = $m->{dbs}{$from}{tables}{$t}{rows};
	}
}

# --- drawing a history from a seed
sub draw_history
{
	my ($seed, $length) = @_;
	rng_seed($seed);
	my $m = new_model();
	my @steps;
	# swarm testing: each history draws from a part of the operations
	# (the steps of every order stay), so that it goes deeper into them;
	# a quarter, a half or three quarters of them, so that some go deep
	# into the orders of the core and others mix many concerns
	my %drawn;
	my $part = 1 + rnd(3);
	my @ops = grep {
		my $group = $op{$_}{group} // $_;
		$op{$_}{core} || ($drawn{$group} //= rnd(4) < $part)
	} sort keys %op;
	# and from a part of the tables (one at least), each of them written,
	# published and moved in more orders
	$m->{drawn_tables} = { map { $_ => 1 } grep { rnd(2) } @tables };
	$m->{drawn_tables} = { pick(@tables) => 1 } unless %{ $m->{drawn_tables} };
	while (@steps < $length)
	{
		my @choices = map { my $name = $_; map { [ $name, $_ ] } grep { !retired($m, $name, $_) } $op{$name}{args}->($m) } @ops;
		last unless @choices;
		my $total = 0;
		$total += $op{ $_->[0] }{weight} / count_of($_->[0], \@choices) foreach @choices;
		my $r = rnd(1000000) / 1000000 * $total;
		my $choice = $choices[-1];
		foreach my $c (@choices)
		{
			$r -= $op{ $c->[0] }{weight} / count_of($c->[0], \@choices);
			if ($r < 0) { $choice = $c; last }
		}
		# a routine: the step that comes before it (one of them), the step,
		# the steps that follow it (one of them, and so on)
		my ($name, $a) = @$choice;
		my @before = grep { !retired($m, @$_) } $op{$name}{before} ? $op{$name}{before}->($m, $a) : ();
		my $lead = @before ? $before[ rnd(scalar @before) ] : undef;
		unshift @$lead, 1 if $lead;
		my @routine = ($lead ? $lead : (), [ 0, $name, $a ]);
		while (my $r = shift @routine)
		{
			last if @steps >= $length;
			my (undef, $name, $a) = @$r;
			$op{$name}{apply}->($m, $a);
			my @then = grep { !retired($m, @$_) } $op{$name}{then} && !$r->[0] ? $op{$name}{then}->($m, $a, $lead) : ();
			delete $a->{db} if $name eq 'dump_restore';
			push @steps, { op => $name, args => $a };
			push @routine, [ 1, @{ $then[ rnd(scalar @then) ] } ] if @then;
		}
	}
	return @steps;
}

# Whether a step needs a server the history retired (ops/move.pl): one
# its arguments name (a database, a server, a dump's source or target), or
# blue itself (needs_blue: its side of the replication, its standby, its
# legacy database).

sub retired
{
	my ($m, $name, $a) = @_;
	return 0 unless $m->{retired};
	return 1 if $op{$name}{needs_blue} && $m->{retired}{blue};
	return scalar grep { m{^(\w+)(?:/|$)} && $m->{retired}{$1} } values %$a;
}

sub count_of
{
	my ($name, $choices) = @_;
	return scalar grep { $_->[0] eq $name } @$choices;
}

sub step_text
{
	my ($s) = @_;
	return join ' ', $s->{op}, map { "$_=$s->{args}{$_}" } sort keys %{ $s->{args} };
}

sub parse_step
{
	my ($line) = @_;
	my ($name, @kv) = split ' ', $line;
	die "unknown operation $name\n" unless $op{$name};
	return { op => $name, args => { map { split /=/, $_, 2 } @kv } };
}

# --- the world: two servers of one installation, one clock (stopped)
our $run_dir;
our $world_count = 0;

sub new_world
{
	my ($tag) = @_;
	my %w = (tag => $tag, restores => 0, findings => [], log => []);
	$world_count++;
	mkdir "$run_dir/w$world_count";
	# a clock of each server, stopped at one second: ids made at one time
	# on two servers meet, unless flake keeps them apart
	foreach my $server (qw(blue green))
	{
		my $holder = bless { dir => "$run_dir/w$world_count/$server" }, 'ExploreClockDir';
		mkdir $holder->{dir};
		$w{clock}{$server} = FlakeClock->new($holder);
	}
	$w{now} = int(time());
	$w{lag} = 0;
	set_clock(\%w, 0);
	foreach my $server (qw(blue green))
	{
		my $node = fresh_node("${server}_$world_count");
		$ENV{FAKETIME_TIMESTAMP_FILE} = $w{clock}{$server}{file};
		$node->start;
		$node->safe_psql('postgres', 'CREATE DATABASE app');
		$w{node}{$server} = $node;
		$w{server_of}{"$server/app"} = $server;
		$w{server_of}{"$server/postgres"} = $server;
	}
	return \%w;
}

# A new server: a copy of a template made by initdb once, given a system
# identifier of its own (flake tells servers apart by it): written into
# pg_control with its CRC, then pg_resetwal writes the WAL anew with it.
# Much faster than initdb on a busy machine.
my ($template, $crc_at, $sysids);
# every server's max_prepared_transactions until lower_max_prepared
our $max_prepared = 10;

sub template_node
{
	if (!$template)
	{
		$template = PostgreSQL::Test::Cluster->new('template');
		$template->init(allows_streaming => 'logical');
		$template->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.randflake_secret = '$secret'
max_prepared_transactions = $max_prepared
restart_after_crash = on
log_min_messages = warning
});
		PostgreSQL::Test::RecursiveCopy::copypath($template->data_dir, $template->backup_dir . '/base');
		# where pg_control keeps its CRC: after the bytes it is the CRC of
		my $control = slurp_file($template->data_dir . '/global/pg_control');
		($crc_at) = grep { crc32c(substr($control, 0, $_)) == unpack('V', substr($control, $_, 4)) }
		  map { $_ * 4 } 2 .. 256;
		die "the CRC of pg_control not found" unless $crc_at;
	}
	return $template;
}

sub fresh_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup(template_node(), 'base');
	my $file = $node->data_dir . '/global/pg_control';
	my $control = slurp_file($file);
	substr($control, 0, 8) = pack('Q<', (int(time()) << 32) | ($$ << 12 & 0xfffff000) | (++$sysids & 0xfff));
	substr($control, $crc_at, 4) = pack('V', crc32c(substr($control, 0, $crc_at)));
	open my $fh, '>', $file or die "$file: $!";
	binmode $fh;
	print $fh $control;
	close $fh or die "$file: $!";
	PostgreSQL::Test::Utils::system_or_bail('pg_resetwal', '-f', '-D', $node->data_dir);
	return $node;
}

# CRC-32C, as pg_control's
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	foreach my $byte (unpack('C*', $data))
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

# The stopped clocks, moved on by seconds: blue's, and green's behind it
# by the lag.  A restart moves them on by 2 s: flake waits for its clock
# to pass the ids issued before a restart (a stopped clock would never),
# and borrows at most flake.max_borrow (1 s).
sub set_clock
{
	my ($w, $seconds) = @_;
	$w->{now} += $seconds;
	# a server's own step (test/explore/ops/faults.pl) on top
	$w->{clock}{blue}->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($w->{now} + ($w->{skew}{blue} // 0))));
	$w->{clock}{green}->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($w->{now} - $w->{lag} + ($w->{skew}{green} // 0))));
}

sub end_world
{
	my ($w) = @_;
	foreach my $node (values %{ $w->{node} })
	{
		$node->stop('immediate', fail_ok => 1);
		$node->clean_node;
	}
}

# the connection string of a server's app database, for a subscription
sub conninfo
{
	my ($w, $server) = @_;
	my $node = $w->{node}{$server};
	return 'host=' . $node->host . ' port=' . $node->port . ' dbname=app';
}

sub dbname { my ($db) = @_; return (split m{/}, $db)[1] }

# Run SQL in a database: undef, or the error (a refusal) as
# { sqlstate, message, hint }.  A statement that waits longer than 20 s
# is cancelled (a stopped clock): "stall", no finding.
sub sql
{
	my ($w, $db, $sql) = @_;
	my ($out, $err) = query($w, $db, $sql);
	return $err;
}

sub query
{
	my ($w, $db, $sql) = @_;
	my $node = $w->{node}{ $w->{server_of}{$db} };
	# a psql that finds its server restarting may exit before it reads
	# its input: IPC::Run then dies of the broken pipe, a stall
	my ($ret, $stdout, $stderr, $timed_out);
	eval {
		($ret, $stdout, $stderr) = $node->psql(dbname($db), $sql,
			extra_params => [ '-v', 'VERBOSITY=verbose', '-v', 'ON_ERROR_STOP=1' ],
			timeout      => 90,
			timed_out    => \$timed_out);
		1;
	} or return (undef, { sqlstate => 'stall', message => "psql: $@" });
	return (undef, { sqlstate => 'stall', message => 'psql timed out' }) if $timed_out;
	return ($stdout, undef) if $ret == 0;
	my ($state, $message) = $stderr =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):\s+(.*)/;
	my ($hint) = $stderr =~ /HINT:\s+(.*)/;
	return (undef, { sqlstate => $state, message => $message // $stderr, hint => $hint, text => $stderr });
}

sub write_rows
{
	my ($w, $a, $step) = @_;
	my ($out, $err) = insert_rows($w, $a, $step);
	# waiting on the stopped clock (ids ahead of it): time passes
	if ($err && $err->{sqlstate} eq '57014')
	{
		set_clock($w, 2 + $w->{lag});
		($out, $err) = insert_rows($w, $a, $step);
	}
	return $err if $err;
	finding($w, 'repeat', $step, sprintf('%d of %d %s ids in %s.%s issued again',
		$rows - $out, $rows, $family{ $a->{table} }, $a->{db}, $a->{table}))
	  if $out != $rows;
	return undef;
}

sub insert_rows
{
	my ($w, $a, $step) = @_;
	return query($w, $a->{db}, qq{
		WITH ins AS (
			INSERT INTO $a->{table} (tag) SELECT '$a->{db}:$step:' || g FROM generate_series(1, $rows) g
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins});
}

sub finding
{
	my ($w, $kind, $step, $detail) = @_;
	push @{ $w->{findings} }, { kind => $kind, step => $step, detail => $detail };
	push @{ $w->{log} }, "    FINDING $kind: $detail";
}

sub start
{
	my ($w, $server) = @_;
	my $node = $w->{node}{$server};
	set_clock($w, 2);
	$ENV{FAKETIME_TIMESTAMP_FILE} = $w->{clock}{$server}{file};
	return undef if $node->start(fail_ok => 1);
	finding($w, 'no start', undef, "$server did not start:\n" . slurp_tail($node->logfile));
	return { sqlstate => 'start', message => 'the server did not start' };
}

# Stop a server: undef, or a finding where it had died.  A fast shutdown
# waits for the walsenders' subscribers to confirm what they received,
# which they do on timers of the stopped clock: never, at times.  After
# 30 s it stops at once (said in the history's log): the explorer's
# artifact, not flake's.
sub stop
{
	my ($w, $server, $mode) = @_;
	my $node = $w->{node}{$server};
	local $ENV{PGCTLTIMEOUT} = 30;
	return undef if $node->stop($mode, fail_ok => 1);
	if (defined $node->{_pid})
	{
		push @{ $w->{log} }, "    $server did not stop ($mode) in 30 s: stopped at once";
		$node->stop('immediate', fail_ok => 1);
		return undef;
	}
	finding($w, 'no stop', undef, "$server had died:\n" . slurp_tail($node->logfile));
	return { sqlstate => 'stop', message => 'the server had died' };
}

sub slurp_tail
{
	my ($file) = @_;
	my @lines = split /\n/, slurp_file($file);
	return join "\n", @lines[ ($#lines > 10 ? $#lines - 10 : 0) .. $#lines ];
}

# a server that restarted by itself answers again (a stall if not)
sub back_up
{
	my ($w, $server) = @_;
	for (1 .. 100)
	{
		my ($one) = query($w, "$server/postgres", 'SELECT 1');
		return undef if defined $one && $one eq '1';
		sleep 0.2;
	}
	finding($w, 'no start', undef, "$server did not come back after a backend was killed");
	return { sqlstate => 'start', message => 'the server did not come back' };
}

# The errors a database's subscriptions' workers met so far (kind: sync
# or apply), from pg_stat_subscription_stats.
sub subscription_errors
{
	my ($w, $db, $kind) = @_;
	my ($n) = query($w, $db, qq{SELECT coalesce(sum(${kind}_error_count), 0)
		FROM pg_stat_subscription_stats JOIN pg_subscription s ON s.oid = subid
		WHERE s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())});
	return $n // 0;
}

# Whether a wait on a subscription's workers is over: their deadline
# passed, or they failed again and again (a refusal of flake in a worker,
# a conflict), which retrying does not mend.  A worker that failed once
# (its publisher restarting) has its retries.
sub workers_failing
{
	my ($w, $db, $kind, $since, $started) = @_;
	return time() - $started > 10 && subscription_errors($w, $db, $kind) - $since >= 5;
}

# a subscription's tables synchronized, or a stall after 90 s (a busy
# machine takes 20 s and more: a shorter wait made replays differ), or
# sooner when its table synchronization keeps failing
sub synced
{
	my ($w, $db) = @_;
	my $started = time();
	my $errors = subscription_errors($w, $db, 'sync');
	while (time() < $started + 90)
	{
		my ($n) = query($w, $db, "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')");
		return undef if defined $n && $n == 0;
		return { sqlstate => 'stall', message => "the subscription of $db did not synchronize: its workers keep failing" }
		  if workers_failing($w, $db, 'sync', $errors, $started);
		sleep 0.1;
	}
	return { sqlstate => 'stall', message => "the subscription of $db did not synchronize" };
}

# the subscriber (a database) of a slot has everything its publisher wrote
sub caught_up
{
	my ($w, $server, $slot, $subscriber) = @_;
	my $db = "$server/app";
	my $started = time();
	my $errors = subscription_errors($w, $subscriber, 'apply');
	for (1 .. 300)
	{
		my ($ok) = query($w, $db, qq{SELECT confirmed_flush_lsn >= pg_current_wal_lsn()
			FROM pg_replication_slots WHERE slot_name = '$slot'});
		return undef if defined $ok && $ok eq 't';
		return { sqlstate => 'stall', message => "the subscriber of $slot did not catch up: its worker keeps failing" }
		  if workers_failing($w, $subscriber, 'apply', $errors, $started);
		sleep 0.1;
	}
	return { sqlstate => 'stall', message => "the subscriber of $slot did not catch up" };
}

# every row the first database holds is in the second one
sub lost_rows
{
	my ($w, $from, $to, $when) = @_;
	foreach my $t (@tables)
	{
		my ($a) = query($w, $from, "SELECT coalesce(array_agg(tag ORDER BY tag), '{}') FROM $t WHERE tag NOT LIKE 'backfill%'");
		next unless defined $a;
		my ($b) = query($w, $to, qq{SELECT count(*) FROM unnest('$a'::text[]) x(tag)
			WHERE NOT EXISTS (SELECT FROM $t WHERE $t.tag = x.tag)});
		finding($w, 'lost', undef, "$when: $b rows of $from.$t missing in $to") if defined $b && $b > 0;
	}
	return undef;
}

my %dump_args = (
	fc        => [ '-Fc' ],
	plain     => [],
	schema_n  => [ '-n', 'public' ],
	table_t   => [ map { ('-t', $_ eq 'tp' ? 'tp*' : $_) } @tables ],    # tp with its partitions
	data_only => [ '--data-only', '--disable-triggers' ],
	inserts   => [ '--inserts' ],
);

sub dump_and_restore
{
	my ($w, $src, $form, $name, $step) = @_;
	my $from = $w->{node}{ $w->{server_of}{$src} };
	my ($server) = split m{/}, $name;
	my $to = $w->{node}{$server};
	$w->{server_of}{$name} = $server;
	$w->{restored_from}{$name} = { src => $src, form => $form };
	my $file = "$run_dir/w$world_count.$step.dump";
	my ($o, $e);
	IPC::Run::run([ 'pg_dump', @{ $dump_args{$form} }, '-f', $file, '-d', $from->connstr(dbname($src)) ],
		'>', \$o, '2>', \$e)
	  or return { sqlstate => 'dump', message => "pg_dump failed: $e" };
	my $err = sql($w, "$server/postgres", 'CREATE DATABASE ' . dbname($name));
	return $err if $err;
	# the forms without the extension: it first; data only: the schema first
	if ($form =~ /^(schema_n|table_t|data_only)$/)
	{
		$err = sql($w, $name, 'CREATE EXTENSION flake');
		return $err if $err;
	}
	if ($form eq 'data_only')
	{
		IPC::Run::run([ 'pg_dump', '-s', '-n', 'public', '-T', 'flake_*', '-d', $from->connstr(dbname($src)) ],
			'|', [ 'psql', '-X', '-q', '-d', $to->connstr(dbname($name)) ], '>', \$o, '2>', \$e);
	}
	my @restore = $form eq 'fc' ? ('pg_restore', '-d', $to->connstr(dbname($name)), $file)
	  : ('psql', '-X', '-q', '-d', $to->connstr(dbname($name)), '-f', $file);
	IPC::Run::run(\@restore, '>', \$o, '2>', \$e);
	push @{ $w->{log} }, "    restore: " . join(' | ', grep { /ERROR/ } split /\n/, $e) if $e =~ /ERROR/;
	return undef;
}

# --- running a history
sub run_history
{
	my ($label, @steps) = @_;
	my $w = new_world($label);
	my $m = new_model();
	my $started = time();
	foreach my $i (0 .. $#steps)
	{
		my $s = $steps[$i];
		my $n = $i + 1;
		my $o = $op{ $s->{op} };
		my $text = step_text($s);
		if (!$o->{pre}->($m, $s->{args}) || retired($m, $s->{op}, $s->{args}))
		{
			push @{ $w->{log} }, "$n. $text: skipped";
			next;
		}
		print $say "  $n. $text ...\n" if $ENV{EXPLORE_VERBOSE};
		my $err = $o->{run}->($w, $s->{args}, $n, $m);
		if (!$err)
		{
			my %a = %{ $s->{args} };
			$o->{apply}->($m, \%a);
			push @{ $w->{log} }, "$n. $text";
			print $say "  $w->{log}[-1]\n" if $ENV{EXPLORE_VERBOSE};
			next;
		}
		push @{ $w->{log} }, "$n. $text: refused ($err->{sqlstate}: $err->{message}"
		  . ($err->{hint} ? "; HINT: $err->{hint})" : ')');
		print $say "  $w->{log}[-1]\n" if $ENV{EXPLORE_VERBOSE};
		# an id the database holds already, given again (no ON CONFLICT)
		finding($w, 'repeat', $n, "$text: $err->{message}") if ($err->{sqlstate} // '') eq '23505';
		# a statement of the explorer's own that is wrong
		finding($w, 'explorer', $n, "$text: $err->{message}")
		  if ($err->{sqlstate} // '') =~ /^42601$/;
		# a refusal of flake: SQLSTATE and a hint that names a step
		finding($w, 'no hint', $n, "$text: $err->{message}" . ($err->{hint} ? " (HINT: $err->{hint})" : ''))
		  if ($err->{message} // '') =~ /flake/ && ($err->{sqlstate} // '') =~ /^(?!42|22)[0-9A-Z]{5}$/
		  && !names_step($err->{hint});
	}
	final_checks($w, $m);
	end_world($w);
	$w->{seconds} = time() - $started;
	return $w;
}

# What the README and docs/ say (EXPLORE_DOCS: where tools/explore put
# them), to check that a hint names a documented step.
my $documented;

sub documented
{
	return $documented if defined $documented;
	my $top = $ENV{EXPLORE_DOCS} // "$FindBin::RealBin/../..";
	$documented = join "\n", map { slurp_file($_) } grep { -f } ("$top/README.md", glob("$top/docs/*.md"));
	die "no README.md or docs/*.md under $top" unless $documented;
	return $documented;
}

# Whether a hint names a step: a command, a function, a setting, a file or
# a tool the documentation names, or an operator's action.
sub names_step
{
	my ($hint) = @_;
	return 0 unless $hint;
	my @named;
	push @named, $1 while $hint =~ /\b([a-z_][a-z0-9_]*)\(/g;
	push @named, $1 while $hint =~ /\b((?:ALTER|CREATE|DROP|SELECT|SET|RESET|COPY|REFRESH|GRANT|COMMIT|ROLLBACK)(?: [A-Z]+)?)\b/g;
	push @named, $1 while $hint =~ /\b((?:flake|pg|max)[._][a-z_.]+|shared_preload_libraries|postgresql\.conf)\b/g;
	return 1 if grep { index(documented(), $_) >= 0 } @named;
	return $hint =~ /^(?:Give|Remove|Put back|Reconnect|Restart|Run|Wait|Install|Take|Repair|Generate|Set|Use|Move|Copy|Update|Drop|Stop|Start|Let|Retry|Check|Have)\b/;
}

# the pollers missed no row below the largest id they read; no server
# holds an id issued twice
sub final_checks
{
	my ($w, $m) = @_;
	foreach my $db (sort keys %{ $w->{poller} })
	{
		my $p = $w->{poller}{$db};
		my ($ids) = query($w, $db, "SELECT string_agg(id::text, ' ') FROM tf WHERE id > 0 AND id <= $p->{position} AND tag LIKE '$db:%'");
		my @missed = grep { !$p->{read}{$_} } split ' ', $ids // '';
		finding($w, 'poller', undef, scalar(@missed) . " rows of $db.tf below the horizon never read") if @missed;
	}
	issued_once($w);
}

# Every id a server issued, it issued once: in any of its databases and
# tables of one family, an id carries one write's tag ("db:step:n"), which
# replication and restores copy with it; of the tags of this server's own
# databases, two for one id are a repeat.  Servers apart may issue equal
# ids (docs/several-servers.md): such ids meet on a server in different
# databases rightly, and in one table the write that meets them finds a
# repeat (ON CONFLICT).
sub issued_once
{
	my ($w) = @_;
	my %servers;
	push @{ $servers{ $w->{server_of}{$_} } }, $_ foreach grep { !m{/postgres$} } keys %{ $w->{server_of} };
	foreach my $server (sort keys %servers)
	{
		my %tag;
		my %twice;
		foreach my $db (sort @{ $servers{$server} })
		{
			foreach my $t (@tables)
			{
				my ($rows) = query($w, $db, "SELECT string_agg(id::text || '=' || tag, ' ') FROM $t WHERE tag NOT LIKE 'backfill%'");
				foreach my $row (split ' ', $rows // '')
				{
					my ($id, $tag) = split /=/, $row, 2;
					my ($by) = $tag =~ m{^([^:]+):};
					next unless ($w->{server_of}{ $by // '' } // '') eq $server;
					my $seen = $tag{ $family{$t} }{$id} //= $tag;
					$twice{"$family{$t} id $id: $seen and $tag"} = 1 if $seen ne $tag;
				}
			}
		}
		my @twice = sort keys %twice;
		finding($w, 'repeat', undef, scalar(@twice) . " ids issued twice on $server, such as $twice[0]") if @twice;
	}
}

# --- histories side by side
#
# A history mostly waits on its servers (replication, restarts, the
# stopped clocks), so EXPLORE_JOBS of them (3) run at once, each in a
# process of its own with servers of its own (one at a time, a 2-core
# machine ran at a load of 0.2; three at once, about 2).  The outcome
# comes back in a file.
my $jobs = $ENV{EXPLORE_JOBS} // 3;
our %running;    # pid => { label, steps, file }

sub start_history
{
	my ($label, @steps) = @_;
	# its world's number, which names its servers and files
	my $n = ++$world_count;
	my $file = "$run_dir/outcome$n";
	my $pid = fork() // die "fork: $!";
	if ($pid)
	{
		$running{$pid} = { label => $label, steps => \@steps, file => $file };
		return;
	}
	# the child stops only its own servers, should it end early
	%running = ();
	@PostgreSQL::Test::Cluster::all_nodes = ();
	$world_count = $n - 1;
	my $w = eval { run_history($label, @steps) } // explorer_died("the history's process died: $@");
	Storable::nstore({ map { $_ => $w->{$_} } qw(log findings seconds) }, $file);
	POSIX::_exit(0);
}

# the label, outcome and steps of the next history that ended
sub history_ended
{
	my $pid = waitpid(-1, 0);
	my $r = delete $running{$pid} or return;
	my $w = eval { Storable::retrieve($r->{file}) } // explorer_died("the history's process ended with status $?");
	unlink $r->{file};
	return ($r->{label}, $w, @{ $r->{steps} });
}

# the outcome of a history whose process died of a bug of the explorer's
# own, said with what it said
sub explorer_died
{
	my ($why) = @_;
	my $w = { log => [], findings => [], seconds => 0 };
	finding($w, 'explorer', undef, $why);
	return $w;
}

# --- shrinking: drop steps (halves, then quarters, ... then one at a
# time) while the history still finds the same kind
sub shrink
{
	my ($kind, $deadline, @steps) = @_;
	my $chunk = int(@steps / 2) || 1;
	while (time() < $deadline)
	{
		my $changed = 0;
		for (my $at = 0; $at < @steps && time() < $deadline;)
		{
			# the next pieces dropped, one a history run at once; the first
			# whose history still fails is dropped, as one after the other
			my @at = grep { $_ < @steps } map { $at + $_ * $chunk } 0 .. $jobs - 1;
			foreach my $from (@at)
			{
				my @try = @steps;
				splice @try, $from, $chunk;
				start_history("shrink $from", @try);
			}
			my %fails;
			while (%running)
			{
				my ($label, $w) = history_ended() or next;
				$fails{$label} = grep { $_->{kind} eq $kind } @{ $w->{findings} };
			}
			my ($dropped) = grep { $fails{"shrink $_"} } @at;
			if (!defined $dropped)
			{
				$at = $at[-1] + $chunk;
				next;
			}
			splice @steps, $dropped, $chunk;
			$at      = $dropped;
			$changed = 1;
			print $say "    shrunk to " . scalar(@steps) . " steps\n";
		}
		last if $chunk == 1 && !$changed;
		$chunk = int($chunk / 2) || 1 unless $changed;
	}
	return @steps;
}

sub report
{
	my ($what, $w, @steps) = @_;
	print $say "  $_\n" foreach @{ $w->{log} };
}

# --- main
$run_dir = $ENV{EXPLORE_DIR} // PostgreSQL::Test::Utils::tempdir('explore');
my $out_dir = $ENV{EXPLORE_OUT} // "$run_dir/found";
mkdir $out_dir;
my $seconds = $ENV{EXPLORE_SECONDS} // 300;
my $shrink_seconds = $ENV{EXPLORE_SHRINK_SECONDS} // 240;
my $length = $ENV{EXPLORE_STEPS} // 72;
my $end = time() + $seconds;
my ($passed, $failed) = (0, 0);
my (@runs, @found);

if ($ENV{EXPLORE_HISTORY})
{
	foreach my $file (split ' ', $ENV{EXPLORE_HISTORY})
	{
		open my $fh, '<', $file or die "$file: $!";
		push @runs, [ $file, map { parse_step($_) } grep { /\S/ && !/^#/ } <$fh> ];
	}
}
my @seeds = split ' ', ($ENV{EXPLORE_SEED} // $ENV{EXPLORE_SEEDS} // '');
push @runs, [ "seed $_", draw_history($_, $length) ] foreach @seeds;
my $next_seed = (int(time()) % 1000000) * 100;

# EXPLORE_PRINT=1: the histories of the seeds, not run
if ($ENV{EXPLORE_PRINT})
{
	foreach my $run (@runs)
	{
		my ($label, @steps) = @$run;
		print $say "# $label\n", map { step_text($_) . "\n" } @steps;
	}
	exit 0;
}
my $explore = !@runs || $ENV{EXPLORE_MORE};
my $new_seeds = 0;
# the servers' template, made once for the histories run side by side
template_node();

while (1)
{
	while (keys %running < $jobs)
	{
		my $run = shift @runs;
		if (!$run)
		{
			# new seeds until the end, at least one after the histories kept
			# (their replay may take the whole time)
			last unless $explore && (time() < $end || !$new_seeds);
			$new_seeds++;
			my $seed = $next_seed++;
			$run = [ "seed $seed", draw_history($seed, $length) ];
		}
		start_history(@$run);
	}
	last unless %running;
	my ($label, $w, @steps) = history_ended() or next;
	# every history with its outcomes, in the log of the run
	if (open my $log, '>>', "$out_dir/explore.log")
	{
		print $log "$label\n", map { "  $_\n" } @{ $w->{log} };
		close $log;
	}
	# the kinds found, a repeat first (the one shrunk)
	my @kinds = do { my %k = map { $_->{kind} => 1 } @{ $w->{findings} }; sort { ($b eq 'repeat') <=> ($a eq 'repeat') || $a cmp $b } keys %k };
	if (!@kinds)
	{
		$passed++;
		print $say sprintf("%s: nothing found (%d steps, %.0f s)\n", $label, scalar @steps, $w->{seconds});
		next;
	}
	$failed++;
	print $say sprintf("%s: FOUND %s (%.0f s after the start)\n", $label, join(', ', @kinds), time() - ($end - $seconds));
	report($label, $w);
	# the steps after the first finding of the kind shrunk go first
	my @first = grep { $_->{kind} eq $kinds[0] && $_->{step} } @{ $w->{findings} };
	splice @steps, $first[0]{step} if @first;
	# what the finding says, without its numbers and databases: the
	# findings of one such are shrunk once
	(my $what = $first[0] ? $first[0]{detail} : $kinds[0]) =~ s{\d+\s*|\b\w+/\w+\.}{}g;
	push @found, [ $label, $kinds[0], $what, @steps ];
}

print $say sprintf("the search is over (%.0f s): %s\n", time() - ($end - $seconds),
	@found ? 'found ' . join(', ', map { "$_->[0] ($_->[1])" } @found) : 'nothing found')
  if @found || $explore;

# the findings shrunk once the search is over: shrinking takes minutes a
# finding, which the search of new seeds would otherwise lose
my %shrunk;
foreach my $f (@found)
{
	my ($label, $kind, $what, @steps) = @$f;
	if (my $as = $shrunk{$what})
	{
		print $say "$label: not shrunk (found as $as: $what)\n";
		next;
	}
	$shrunk{$what} = $label;
	print $say "$label: shrinking ($kind, " . scalar(@steps) . " steps, at most $shrink_seconds s)\n";
	my @short = shrink($kind, time() + $shrink_seconds, @steps);
	my $sw = run_history("$label shrunk", @short);
	(my $name = $label) =~ s{^.*/|\.history$}{}g;
	$name =~ s/\W+/-/g;
	my $file = "$out_dir/$name.history";
	open my $fh, '>', $file or die "$file: $!";
	print $fh "# $label: $kind (shrunk from " . scalar(@steps) . " steps)\n";
	print $fh step_text($_), "\n" foreach @short;
	close $fh;
	print $say "$label: shortest history found (" . scalar(@short) . " steps; $file), replay: make explore EXPLORE_HISTORY=$file"
	  . ($label =~ /^seed (\d+)/ ? " or EXPLORE_SEED=$1" : '') . "\n";
	report("$label shrunk", $sw);
}

print $say "$passed passed, $failed failed\n";
exit($failed ? 1 : 0);

# FlakeClock asks its node for a directory
package ExploreClockDir;
sub basedir { return $_[0]{dir} }
