# A restart with another flake_next() layout (issue 43): flake.epoch,
# flake.id_bits, flake.node_bits and flake.sequence_bits decide which id
# each millisecond gets, so after ids were issued, a layout whose ids do not
# all lie above them is refused at the first id, with 55000, the old and
# new values and the step; set back, ids continue above every id issued.
# A layout whose ids do lie above (a larger flake.id_bits) is accepted.  A
# fresh server takes any layout, until it received ids.  The layout reaches
# a standby in WAL, so that a standby promoted with another layout refuses
# it too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

# Restart with these layout settings (the last ones win in postgresql.conf).
sub restart_with
{
	my ($node, $conf) = @_;
	$node->stop;
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
}

sub refused
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $stderr;
}

my $node = flake_cluster('layout', "flake.max_borrow = '60s'\n", allows_streaming => 1);
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (id bigint PRIMARY KEY);
	INSERT INTO ids SELECT flake_next() FROM generate_series(1, 5000);
	INSERT INTO ids SELECT flake_next(9) FROM generate_series(1, 5000);
});
my $highest = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');

# a later epoch: every new id would lie years below the issued ones
restart_with($node, "flake.epoch = '2020-01-01 00:00:00+00'\n");
my $err = refused($node, 'SELECT flake_next()');
like($err, qr/ERROR:  55000: flake_next\(\) refuses a layout that could issue ids again/,
	'a later flake.epoch is refused at the first id with 55000');
like($err, qr/DETAIL:  Ids were issued up to .* with flake.epoch = '2015-01-01 00:00:00\+00', flake.id_bits = 63, flake.node_bits = 10, flake.sequence_bits = 12; with flake.epoch = '2020-01-01 00:00:00\+00', flake.id_bits = 63/,
	'... naming the old and the new layout');
like($err, qr/HINT:  Set flake.epoch, flake.id_bits, flake.node_bits and flake.sequence_bits back to those values and restart/,
	'... and the step');
like(refused($node, 'SELECT flake_next(9)'), qr/55000/, 'flake_next(node) is refused too');
is($node->safe_psql('postgres', 'SELECT ulidflake_next() IS NOT NULL'), 't',
	'ulidflake_next() goes on');

# 63 to 53 bits with fewer node and sequence bits: new ids below the old
restart_with($node, "flake.epoch = '2015-01-01 00:00:00+00'\nflake.id_bits = 53\nflake.node_bits = 5\nflake.sequence_bits = 6\n");
like(refused($node, 'SELECT flake_next()'), qr/ERROR:  55000: flake_next\(\) refuses a layout/,
	'moving to 53 bits with 11 low bits is refused');

# fewer sequence bits alone: new ids below the old
restart_with($node, "flake.id_bits = 63\nflake.node_bits = 10\nflake.sequence_bits = 11\n");
like(refused($node, 'SELECT flake_next()'), qr/ERROR:  55000/, 'one sequence bit less is refused');

# set back: ids continue above every id issued
restart_with($node, "flake.sequence_bits = 12\n");
$node->safe_psql('postgres', 'INSERT INTO ids SELECT flake_next() FROM generate_series(1, 5000)');
is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id > $highest"), '5000',
	'set back, the layout issues ids above every id issued');

# a fresh server takes any layout, and may then widen flake.id_bits
my $fresh = flake_cluster('fresh', "flake.id_bits = 53\nflake.node_bits = 5\nflake.sequence_bits = 6\n");
$fresh->start;
$fresh->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (id bigint PRIMARY KEY);
	INSERT INTO ids SELECT flake_next() FROM generate_series(1, 5000);
});
my $fresh_highest = $fresh->safe_psql('postgres', 'SELECT max(id) FROM ids');
cmp_ok($fresh_highest, '<', 2**53, 'a fresh server issues ids in its 53-bit layout');
restart_with($fresh, "flake.id_bits = 63\n");
$fresh->safe_psql('postgres', 'INSERT INTO ids SELECT flake_next() FROM generate_series(1, 5000)');
is($fresh->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id > $fresh_highest"), '5000',
	'from 53 to 63 bits, the layout is accepted and its ids lie above');
like(slurp_file($fresh->logfile), qr/LOG:  flake_next\(\) changes its layout to flake.epoch = '2015-01-01 00:00:00\+00', flake.id_bits = 63/,
	'... which the log says');
# the same node and sequence bits lay every millisecond out alike
$fresh_highest = $fresh->safe_psql('postgres', 'SELECT max(id) FROM ids');
restart_with($fresh, "flake.id_bits = 53\n");
$fresh->safe_psql('postgres', 'INSERT INTO ids SELECT flake_next() FROM generate_series(1, 5000)');
is($fresh->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id > $fresh_highest"), '5000',
	'back to 53 bits with the same node and sequence bits: accepted, ids above');
restart_with($fresh, "flake.node_bits = 4\n");
like(refused($fresh, 'SELECT flake_next()'), qr/ERROR:  55000/,
	'then one node bit fewer is refused: ids of the same time lie below');
$fresh->stop;

# the layout reaches a standby in WAL: a standby made before the first id
# and promoted with a later epoch refuses it
my $primary = flake_cluster('primary', '', allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION flake');
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "flake.epoch = '2020-01-01 00:00:00+00'\n");
$standby->start;
$primary->safe_psql('postgres', 'SELECT flake_next() FROM generate_series(1, 1000)');
$primary->wait_for_catchup($standby);
$standby->promote;
like(refused($standby, 'SELECT flake_next()'), qr/ERROR:  55000: flake_next\(\) refuses a layout/,
	'a standby promoted with a later epoch refuses it: the layout came in WAL');
$standby->stop;
$primary->stop;
$node->stop;

# flake_take_over() of a server whose ids this layout could issue again is
# refused; of one whose ids it keeps above, accepted
my $later = flake_cluster('later', "flake.epoch = '2020-01-01 00:00:00+00'\n");
$later->start;
$later->safe_psql('postgres', 'CREATE EXTENSION flake');
my $node_data = $node->data_dir;
$err = refused($later, "SELECT flake_take_over('$node_data')");
like($err, qr/ERROR:  55000: the server of data directory ".*" issued flake_next\(\) ids in a layout this server's could issue again/,
	'taking over a server whose ids the later epoch could issue again is refused');
like($err, qr/HINT:  Give this server that server's flake.epoch/, '... naming the step');
$later->stop;
my $later_data = $later->data_dir;
$node->start;
is($node->safe_psql('postgres', "SELECT count(*) FROM flake_take_over('$later_data')"), '1',
	'taking over the later epoch\'s server, whose ids lie below, is accepted');

# a damaged flake.layout refuses flake_next(); removed, it is lost (its
# flake.written says it was written), not a server from before 1.5: a later
# epoch is refused still (make explore: 1.5 until then took the settings
# for the layout and issued ids again).  flake_repair_state() records the
# settings' layout, the operator's statement.
$node->stop;
truncate("$node_data/flake.layout", 9) or die "truncate: $!";
$node->start;
$err = refused($node, 'SELECT flake_next()');
like($err, qr/ERROR:  55000: flake state file "flake.layout" is damaged/, 'a damaged flake.layout is refused');
like($err, qr/HINT:  Put back an intact copy of it and restart\. Without one, .*flake_repair_state\(newest\)/,
	'... naming the steps');
$node->stop;
unlink("$node_data/flake.layout") or die "unlink: $!";
$node->append_conf('postgresql.conf', "flake.epoch = '2015-01-01 00:00:05+00'\n");
$node->start;
like(refused($node, 'SELECT flake_next()'), qr/ERROR:  55000: flake state file "flake.layout" is missing, though flake wrote it/,
	'removed, with a later epoch: refused, not taken for a server from before 1.5');
$node->stop;
$node->append_conf('postgresql.conf', "flake.epoch = '2015-01-01 00:00:00+00'\n");
$node->start;
like(refused($node, 'SELECT flake_next()'), qr/flake.layout" is missing, though flake wrote it/,
	'removed, with the settings set back: refused still');
$node->safe_psql('postgres', 'SELECT flake_repair_state(now())');
is($node->safe_psql('postgres', 'SELECT flake_next() > max(id) FROM ids'), 't',
	'flake_repair_state() records the settings\' layout: flake_next() generates above the ids issued');
ok(-f "$node_data/flake.layout", '... in flake.layout');
$node->stop;

# flake.written lost, then made again by the next start: it names the
# flake.layout that is there, so that flake.layout lost later is refused
# still (make explore, seed 65023007: 1.5 until then took it for a server
# from before 1.5)
unlink("$node_data/flake.written") or die "unlink: $!";
$node->start;
$node->stop;
unlink("$node_data/flake.layout") or die "unlink: $!";
$node->start;
like(refused($node, 'SELECT flake_next()'), qr/ERROR:  55000: flake state file "flake.layout" is missing, though flake wrote it/,
	'flake.written made again names the flake.layout there: lost later, it is refused');
$node->safe_psql('postgres', 'SELECT flake_repair_state(now())');
$node->stop;

# the take-over of a server whose flake.layout was lost is refused
my $fresh_data = $fresh->data_dir;
unlink("$fresh_data/flake.layout") or die "unlink: $!";
$node->start;
$err = refused($node, "SELECT flake_take_over('$fresh_data')");
like($err, qr/ERROR:  55000: flake state file ".*flake.layout" is missing, though flake wrote it/,
	'flake_take_over() of a server whose flake.layout was lost is refused');
$node->stop;

# ids received, none issued: a fresh server given another server's ids (as
# constants of an INSERT, as a dump made with --inserts restores them; a
# subscription's worker and flake_take_over_ids() read them alike) records
# the layout it read them with, so that a later epoch is refused (make
# explore, seed 64948416: 1.5 until then took the later epoch for a fresh
# server's, and issued the received ids again)
my $source = flake_cluster('source');
my $received = flake_cluster('received', "flake.max_borrow = '60s'\n");
$_->start foreach ($source, $received);
my $ids = $source->safe_psql('postgres',
	q{CREATE EXTENSION flake; SELECT string_agg(format('(%s)', flake_next()), ',') FROM generate_series(1, 1000)});
$received->safe_psql('postgres', "CREATE EXTENSION flake;
	CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT flake_next());
	INSERT INTO ids VALUES $ids;");
ok(-f $received->data_dir . '/flake.layout', 'ids received: their layout is recorded, though none was issued');
restart_with($received, "flake.epoch = '2015-01-01 00:00:01+00'\n");
like(refused($received, 'INSERT INTO ids SELECT FROM generate_series(1, 1000)'),
	qr/ERROR:  55000: flake_next\(\) refuses a layout that could issue ids again/,
	'a later epoch after ids were received is refused');
restart_with($received, "flake.epoch = '2015-01-01 00:00:00+00'\n");
$received->safe_psql('postgres', 'INSERT INTO ids SELECT FROM generate_series(1, 1000)');
is($received->safe_psql('postgres', 'SELECT count(*) FROM ids'), '2000',
	'set back: none of the received ids is issued again');
$_->stop foreach ($source, $received);

done_testing();
