# State files lost, hostile, or repaired with a wrong time.
#
# Lost: a damaged flake.hwm moved aside (what an operator tries first),
# and an intact one or flake.rekeys moved aside while the server runs,
# are refused as missing (flake wrote them: flake.written, and shared
# memory), also after a restart, naming the file and flake_repair_state();
# no id is issued until the file is put back or repaired, and none of
# before is issued again.
#
# Repaired with a wrong time: marks of 2205 (as 1.3's
# flake_repair_state('2205-06-01') wrote them: past the layouts of
# flake_next() and randflake_next(), far ahead for ulidflake_next()) stop
# every family; a second repair with again => true lowers them (and a
# standby's through WAL), and after a restart the families generate
# again, issuing no id of before.
#
# Hostile: a FIFO, a directory, a symbolic link or a huge file in place of
# flake.hwm, flake.rekeys, flake.hwm.import, flake.hwm.tmp, and of the
# pg_control, postmaster.pid and flake.hwm of a directory given to
# flake_take_over(): no call hangs (each runs under a timeout), each is
# refused naming the file (a FIFO left at flake.hwm.tmp is replaced), and
# no id of before is issued again.  (Truncated and unreadable files:
# 043_damaged_files.pl.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use File::Copy;
use File::Path qw(make_path rmtree);
use POSIX qw(mkfifo strftime);
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;

# (streaming: a standby follows a repair redone)
my ($node, $clock) = frozen_server('state', $carry_conf . "wal_level = replica\nmax_wal_senders = 2\n");
my $start = time();
my $data = $node->data_dir;
$node->safe_psql('postgres', state_schema(100));

# the clock, frozen at n seconds after the start
sub clock_at
{
	my ($seconds) = @_;
	$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime($start + $seconds)));
}

# each call's outcome, one line each, each under a timeout
sub outcomes
{
	my @calls = @_;
	my ($ret, $out, $err) = $node->psql('postgres', state_outcomes_query(@calls),
		timeout => 30, timed_out => \my $timed_out);
	return $timed_out ? 'timed out' : $ret ? $err : $out;
}

my @generators = map { "SELECT $_" } sort values %family_next;
my $claim = q{SELECT flake_rekey_claim('invoices', 'at')};
my $newest = q{(SELECT max(ts) FROM (
	SELECT flake_timestamp(id) AS ts FROM ids WHERE family = 'flake'
	UNION ALL SELECT flake_timestamp(id::ulidflake) FROM ids WHERE family = 'ulidflake'
	UNION ALL SELECT (randflake_decode(id)).ts FROM ids WHERE family = 'randflake') s)};
my $missing = 'flake state file "%s" is missing, though flake wrote it';
sub refused_all
{
	my ($error, $n) = @_;
	return qr/\A(55000 $error\n?){$n}\z/;
}

is(state_burst($node), '0', 'ids before');
is($node->safe_psql('postgres', q{SELECT flake_rekey_claim('orders', 'at') IS NULL}), 'f', 'a claim');

# a damaged flake.hwm, then moved aside: missing, not "nothing issued"
$node->stop;
write_state_file("$data/flake.hwm", 'damaged');
$node->start;
like(outcomes(@generators), refused_all('flake state file "flake.hwm" is damaged', 3),
	'a damaged flake.hwm refuses');
rename "$data/flake.hwm", "$data/flake.hwm.bad" or die $!;
my $lost_hwm = sprintf($missing, 'flake\.hwm');
like(outcomes(@generators), refused_all($lost_hwm, 3), 'moved aside: every generator refuses, the file missing');
$node->restart;
like(outcomes(@generators), refused_all($lost_hwm, 3), 'and after a restart');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT flake_next()');
like($err, qr/HINT:  .*SELECT flake_repair_state\(t\)/, 'the hint names flake_repair_state()');

# repaired by flake_repair_state()
$node->safe_psql('postgres', "SELECT flake_repair_state($newest)");
is(state_burst($node), '0', 'flake.hwm repaired: no id of before is issued again');

# flake.rekeys moved aside: claims refuse, the generators do not need it
rename "$data/flake.rekeys", "$data/flake.rekeys.away" or die $!;
my $lost_rekeys = sprintf($missing, 'flake\.rekeys');
like(outcomes($claim), refused_all($lost_rekeys, 1), 'flake.rekeys moved aside: claims refuse');
$node->restart;
like(outcomes($claim), refused_all($lost_rekeys, 1), 'and after a restart');

is(outcomes(@generators), "ok\nok\nok", 'the generators work');
rename "$data/flake.rekeys.away", "$data/flake.rekeys" or die $!;
is(outcomes($claim), 'ok', 'put back: claims work');

# an intact flake.hwm moved aside while the server runs: the next move of
# a mark refuses; put back, generation resumes
rename "$data/flake.hwm", "$data/flake.hwm.away" or die $!;
clock_at(100);
like(outcomes(@generators), refused_all($lost_hwm, 3), 'moved aside while running: refused at the next move of a mark');
rename "$data/flake.hwm.away", "$data/flake.hwm" or die $!;
is(state_burst($node), '0', 'put back: no id of before is issued again');

# marks of a repair with a typo, as 1.3 wrote them: every family stops;
# a repair redone lowers them
$node->stop;
my $hwm = slurp_file("$data/flake.hwm");
is(length($hwm), 160, 'flake.hwm in the format of 1.2');
my $typo_ms = 7428931200000;    # 2205-06-01
substr($hwm, 8, 24) = pack('q<3', $typo_ms + 1, int($typo_ms / 1000) + 1, $typo_ms + 1);
substr($hwm, 152, 4) = pack('L<', crc32c(substr($hwm, 0, 152)));
write_state_file("$data/flake.hwm", $hwm);
$node->start;
unlike(outcomes(@generators), qr/ok/, 'marks of 2205: every family fails');
like(outcomes("SELECT flake_repair_state($newest)"), qr/^55000 flake's state files are intact/,
	'a second repair without again is refused');
$node->backup('typo');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'typo', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', "SELECT flake_repair_state($newest, again => true)");
$node->wait_for_catchup($standby);
is(slurp_file($standby->data_dir . '/flake.hwm'), slurp_file("$data/flake.hwm"),
	'a standby replays the marks lowered (MARKS_SET)');
$standby->stop;
$node->restart;
is(state_burst($node), '0', 'redone with again => true, then restarted: every family generates, no id of before');

# hostile files of this server, while it runs: flake.rekeys is read at
# each claim, flake.hwm at each move of a mark (the clock moved on)
my $elsewhere = $node->basedir . '/elsewhere';
make_path($elsewhere);
my %hostile = (
	'a FIFO'      => sub { mkfifo($_[0], 0600) or die "mkfifo: $!" },
	'a directory' => sub { mkdir $_[0] or die "mkdir: $!" },
	'a symbolic link' => sub {
		my ($path) = @_;
		(my $name = $path) =~ s{.*/}{};
		copy($path . '.good', "$elsewhere/$name") or die "copy: $!";
		symlink("$elsewhere/$name", $path) or die "symlink: $!";
	},
	'a huge file' => sub {
		open my $fh, '>', $_[0] or die $!;
		truncate $fh, 100 * 1024 * 1024 or die "truncate: $!";
		close $fh;
	},
);
my %hostile_error = (
	'a FIFO'          => 'flake state file "%s" is not a regular file',
	'a directory'     => 'flake state file "%s" is not a regular file',
	'a symbolic link' => 'flake state file "%s" is not a regular file',
	'a huge file'     => 'flake state file "%s" is larger than flake writes it \(at most \d+ bytes\)',
);

sub make_hostile
{
	my ($path, $kind) = @_;
	rename $path, "$path.good" or die "rename $path: $!" if -e $path;
	$hostile{$kind}->($path);
}

sub remove_hostile
{
	my ($path) = @_;
	-d $path && !-l $path ? rmtree($path) : unlink($path);
	rename "$path.good", $path or die "rename $path: $!" if -e "$path.good";
}

my $seconds = 200;
foreach my $kind (sort keys %hostile)
{
	foreach my $case ([ 'flake.hwm', [@generators] ], [ 'flake.rekeys', [$claim] ])
	{
		my ($file, $calls) = @$case;
		make_hostile("$data/$file", $kind);
		clock_at($seconds += 100);
		like(outcomes(@$calls), refused_all(sprintf($hostile_error{$kind}, quotemeta($file)), scalar @$calls),
			"$kind as $file: refused, naming it, with no hang");
		remove_hostile("$data/$file");
	}
}

# flake.hwm.tmp, written before each flake.hwm: what is there is removed
# first (a FIFO there hung every generator), or, if it cannot be, refused
make_hostile("$data/flake.hwm.tmp", 'a FIFO');
clock_at($seconds += 100);
is(outcomes(@generators), "ok\nok\nok", 'a FIFO as flake.hwm.tmp: replaced, no hang');
make_hostile("$data/flake.hwm.tmp", 'a directory');
clock_at($seconds += 100);
like(outcomes($generators[0]), qr/could not remove file "flake.hwm.tmp"/, 'a directory as flake.hwm.tmp: refused, naming it');
remove_hostile("$data/flake.hwm.tmp");

# flake.hwm.import, read at start
foreach my $kind (sort keys %hostile)
{
	$node->stop;
	copy("$data/flake.hwm", "$data/flake.hwm.import.good") or die "copy: $!";
	make_hostile("$data/flake.hwm.import", $kind);
	$node->start;
	like(outcomes(@generators), refused_all(sprintf($hostile_error{$kind}, 'flake\.hwm\.import'), 3),
		"$kind as flake.hwm.import: the server starts, the generators refuse, naming it");
	remove_hostile("$data/flake.hwm.import");
	unlink "$data/flake.hwm.import";
}
$node->restart;
is(state_burst($node), '0', 'the files put back: no id of before is issued again');

# a directory given to flake_take_over(): its pg_control, postmaster.pid
# and flake.hwm (this server's pg_control, stopped cleanly: a data
# directory that got so far)
$node->stop;
my $other = $node->basedir . '/other';
make_path("$other/global");
copy("$data/global/pg_control", "$other/global/pg_control") or die "copy: $!";
copy("$data/flake.hwm", "$other/flake.hwm") or die "copy: $!";
$node->start;
foreach my $file ('global/pg_control', 'postmaster.pid', 'flake.hwm')
{
	foreach my $kind (sort keys %hostile)
	{
		next if $kind eq 'a symbolic link' && !-e "$other/$file";
		if (!-e "$other/$file") { $hostile{$kind}->("$other/$file"); }
		else { make_hostile("$other/$file", $kind); }
		my $error = $file eq 'flake.hwm' ? $hostile_error{$kind}
		  : $kind eq 'a huge file' ? 'file "%s" is larger than PostgreSQL writes it'
		  : 'file "%s" is not a regular file';
		my $expected = sprintf($error, quotemeta("$other/$file"));
		like(outcomes("SELECT flake_take_over('$other')"), qr/^\w{5} $expected/,
			"$kind as $file of the directory taken over: refused, naming it, with no hang");
		remove_hostile("$other/$file");
	}
}
is(state_burst($node), '0', 'no id of before is issued again');
$node->stop;

done_testing();
