# A damaged state file never stops the server.  For each of flake.hwm,
# flake.rekeys, flake.hwm.import and flake.rekeys.import, and each kind of
# damage (a changed byte, truncated, unreadable, a format of another
# release): the server starts, logging a WARNING that names the file; the
# rest of the extension and the database work; what the file protects
# refuses with 55000, the file named (flake.rekeys: rekey claims alone;
# the others: every generator and rekey claims); then the repair its hint
# gives makes it work, with no restart: the permissions fixed, an intact
# copy put back, the import copied again or flake_take_over() of the old
# server's directory, or flake_repair_state() with the newest time of the
# ids in the tables; and no id of before is issued again.
#
# WAL replayed while a file is damaged (crash recovery here) is not lost:
# flake_repair_state() with a time long past keeps the marks replayed, and
# an older copy of flake.rekeys put back gets the claims replayed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use File::Copy;
use POSIX qw(strftime);
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;

my $conf = $carry_conf;

# another server, stopped, whose files are copied here to be taken over
my ($old, $clock) = frozen_server('old', $conf);
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE t (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO t (at) VALUES ('2021-01-01');
	SELECT flake_next(), ulidflake_next(), randflake_next(), flake_rekey_claim('t', 'at');
});
$old->stop;

my $node = flake_cluster('damaged', $conf);
$node->start;
$node->safe_psql('postgres', state_schema(1000));
is(state_burst($node), '0', 'ids before any damage');
$node->stop;

my %good = (
	'flake.hwm'           => slurp_file($node->data_dir . '/flake.hwm'),
	'flake.rekeys'        => slurp_file($node->data_dir . '/flake.rekeys'),
	'flake.hwm.import'    => slurp_file($old->data_dir . '/flake.hwm'),
	'flake.rekeys.import' => slurp_file($old->data_dir . '/flake.rekeys'),
);

# the file's intact contents, damaged
my %damage = (
	'a changed byte' => sub {
		my $c = shift;
		substr($c, length($c) / 2, 1) = chr(ord(substr($c, length($c) / 2, 1)) ^ 0x55);
		return $c;
	},
	'truncated'      => sub { my $c = shift; return substr($c, 0, length($c) / 2) },
	'unreadable'     => sub { return shift },
	'another format' => sub {
		my ($c, $file) = @_;
		return pack('L<', $file =~ /rekeys/ ? 0x464C4B53 : 0x464C4B39) . substr($c, 4);
	},
);
my %message = (
	'a changed byte' => 'flake state file "%s" is damaged',
	'truncated'      => 'flake state file "%s" is damaged',
	'unreadable'     => 'could not read flake state file "%s": Permission denied',
	'another format' => 'flake state file "%s" is in a format this version of flake does not read \("FLK[9S]"\)',
);

# what each call does now, one line each
sub outcomes
{
	my @calls = @_;
	return $node->safe_psql('postgres', state_outcomes_query(@calls));
}
my @generators = ('SELECT flake_next()', 'SELECT ulidflake_next()', 'SELECT randflake_next()');
my $claim = q{SELECT flake_rekey_claim('invoices', 'at')};
my @others = (
	q{SELECT flake_timestamp(1575537222185123840)},
	q{SELECT ulidflake '02NB37GHKWZX8'},
	q{SELECT randflake_encode(12345)},
	q{SELECT count(*) FROM flake_leases},
	q{SELECT count(*) FROM ids},
	q{SELECT flake_decode(1575537222185123840)},
	q{SELECT count(*) FROM flake_internal.flake_origin},
	q{CREATE TEMP TABLE scratch (id bigint DEFAULT flake_next(), v text)});

# the newest time of the ids in the tables, as an operator finds it
my $newest = q{(SELECT max(ts) FROM (
	SELECT flake_timestamp(id) AS ts FROM ids WHERE family = 'flake'
	UNION ALL SELECT flake_timestamp(id::ulidflake) FROM ids WHERE family = 'ulidflake'
	UNION ALL SELECT (randflake_decode(id)).ts FROM ids WHERE family = 'randflake') s)};

# how each case is repaired: by the hint of its file and damage
sub repair
{
	my ($file, $how) = @_;
	my $path = $node->data_dir . "/$file";
	if ($how eq 'chmod') { chmod 0600, $path or die $!; }
	elsif ($how eq 'copy') { write_state_file($path, $good{$file}); }
	elsif ($how eq 'take over')
	{
		$node->safe_psql('postgres', sprintf("SELECT flake_take_over('%s')", $old->data_dir));
	}
	else { $node->safe_psql('postgres', "SELECT flake_repair_state($newest)"); }
}

my @cases = (
	[ 'flake.hwm', 'a changed byte', 'copy' ],
	[ 'flake.hwm', 'truncated', 'repair' ],
	[ 'flake.hwm', 'unreadable', 'chmod' ],
	[ 'flake.hwm', 'another format', 'repair' ],
	[ 'flake.rekeys', 'a changed byte', 'copy' ],
	[ 'flake.rekeys', 'truncated', 'repair' ],
	[ 'flake.rekeys', 'unreadable', 'chmod' ],
	[ 'flake.rekeys', 'another format', 'repair' ],
	[ 'flake.hwm.import', 'a changed byte', 'copy' ],
	[ 'flake.hwm.import', 'truncated', 'take over' ],
	[ 'flake.hwm.import', 'unreadable', 'chmod' ],
	[ 'flake.hwm.import', 'another format', 'take over' ],
	[ 'flake.rekeys.import', 'a changed byte', 'copy' ],
	[ 'flake.rekeys.import', 'truncated', 'take over' ],
	[ 'flake.rekeys.import', 'unreadable', 'chmod' ],
	[ 'flake.rekeys.import', 'another format', 'take over' ]);

foreach my $case (@cases)
{
	my ($file, $kind, $how) = @$case;
	my $what = "$file $kind";
	my $path = $node->data_dir . "/$file";
	my $error = sprintf($message{$kind}, quotemeta($file));
	my $import = $file =~ /import/;
	my $rekeys_only = $file eq 'flake.rekeys';

	# this server's file as it is now (an older copy would let ids repeat);
	# both of the other server's files wait, one of them damaged
	$good{$file} = slurp_file($path) unless $import;
	if ($import)
	{
		(my $other = $file) =~ s/^flake\.(hwm|rekeys)/'flake.' . ($1 eq 'hwm' ? 'rekeys' : 'hwm')/e;
		write_state_file($node->data_dir . "/$other", $good{$other});
	}
	write_state_file($path, $damage{$kind}->($good{$file}, $file));
	chmod 0, $path if $kind eq 'unreadable';

	my $offset = -s $node->logfile;
	$node->start;
	like(substr(slurp_file($node->logfile), $offset), qr/WARNING:  $error/, "$what: the server starts, logging it");
	is(outcomes(@others), join("\n", ('ok') x @others), "$what: the rest works");
	my @refused = $rekeys_only ? ($claim) : (@generators, $claim);
	like(outcomes(@refused), qr/\A(55000 $error\n?){${\ scalar @refused}}\z/,
		"$what: " . ($rekeys_only ? 'rekey claims refuse' : 'every generator and rekey claims refuse') . ', naming it');
	is(outcomes(@generators), "ok\nok\nok", "$what: the generators work") if $rekeys_only;
	like(outcomes('SELECT flake_repair_state(now())'), qr/^55000 $error/,
		"$what: flake_repair_state() is not its repair") if $import;

	repair($file, $how);
	is(state_burst($node), '0', "$what: repaired ($how), every generator works, no id of before is issued again");
	if ($import)
	{
		ok(!-e $node->data_dir . "/$_", "$what: $_ taken over, removed") for qw(flake.hwm.import flake.rekeys.import);
	}
	$node->stop;
}

# the claims that flake_repair_state() wrote cover every rekey node up to
# the newest ids: a rekey of times before them refuses, after them works
$node->start;
like(outcomes($claim), qr/^53400 every node of flake.rekey_nodes has been used/,
	'after flake_repair_state(): the rekey nodes are taken for the times before it');
$node->safe_psql('postgres', q{
	CREATE TABLE later (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO later (at) VALUES (now() + interval '30 min');
});
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 3600)));
is($node->safe_psql('postgres', q{SELECT flake_rekey_claim('later', 'at')}), '1016',
	'and rekeys of later times get nodes');

# WAL replayed while flake.hwm is damaged: marks moved after a checkpoint
# (the clock 10 s on), the file damaged, a crash: recovery replays the
# marks, the server starts, and a repair with a time long past keeps them
$node->safe_psql('postgres', 'CHECKPOINT');
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 3610)));
is(state_burst($node), '0', 'ids after a checkpoint');
write_state_file($node->data_dir . '/flake.hwm', 'damaged');
$node->stop('immediate');
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 3600)));
$node->start;
like(outcomes('SELECT flake_next()'), qr/^55000 flake state file "flake.hwm" is damaged/,
	'crash recovery with flake.hwm damaged: the server starts, generation refuses');
$node->safe_psql('postgres', q{SELECT flake_repair_state('2000-01-01')});
is(state_burst($node), '0', 'repaired with a time long past: the marks replayed hold, no id of before is issued again');

# WAL replayed while flake.rekeys is damaged: a claim after a checkpoint,
# the file damaged, a crash; then a copy from before the claim is put
# back: the claim replayed is kept
$node->safe_psql('postgres', 'CHECKPOINT');
my $before_claim = slurp_file($node->data_dir . '/flake.rekeys');
is($node->safe_psql('postgres', q{
	CREATE TABLE later2 (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO later2 (at) SELECT at FROM later;
	SELECT flake_rekey_claim('later2', 'at')}), '1017', 'a claim after the checkpoint');
write_state_file($node->data_dir . '/flake.rekeys', 'damaged');
$node->stop('immediate');
$node->start;
like(outcomes(q{SELECT flake_rekey_claim('later2', 'at')}), qr/^55000 flake state file "flake.rekeys" is damaged/,
	'crash recovery with flake.rekeys damaged: the server starts, claims refuse');
write_state_file($node->data_dir . '/flake.rekeys', $before_claim);
is($node->safe_psql('postgres', q{SELECT flake_rekey_claim('later2', 'at')}), '1018',
	'a copy from before the claim put back: the claim replayed is kept, the next takes another node');
$node->stop;

done_testing();
