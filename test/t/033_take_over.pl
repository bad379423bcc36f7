# flake_take_over(data_directory): another server's state taken over while
# this one runs, with no restart.  A database restored from an old server
# (every clock frozen at the same second, so the new server's is behind
# the old one's ids) is refused until then; the take-over runs while a
# session in that database keeps trying to generate and pgbench clients
# generate in another database: the session's first ids come after it, and
# none equals an id of the old server; no client's id repeats; a rekey of
# the old server's times gets another node.  Calling it again changes
# nothing.  It is logged in WAL: a standby made before it, promoted, names
# the old server and issues none of its ids either.  A server that never
# generated has no files: taken over with nothing (its pg_control.old, as
# pg_upgrade --link leaves it, names it).  Refused, nothing changed: the
# directory of a running server, a base backup of it (with its
# backup_label, or its pg_control "in production"), a damaged or
# unreadable file there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use File::Copy;
use File::Path qw(make_path);
use IPC::Run;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $conf = $carry_conf;
my %generators = %family_next;
my $all_families = join ', ', map { "$_ 0" } sort keys %generators;

# a phase's ids of each family that equal ids of another phase (the
# table analyzed first: without statistics the planner joins its 20000 ids
# of a family to all 120000 by a nested loop, two minutes)
sub reissued
{
	my ($node, $db, $phase) = @_;
	return $node->safe_psql($db, qq{
		ANALYZE ids;
		SELECT string_agg(f.family || ' ' || (SELECT count(*) FROM ids a JOIN ids b
				ON b.family = a.family AND b.id = a.id AND b.phase <> a.phase
				WHERE a.phase = '$phase' AND a.family = f.family), ', ' ORDER BY f.family)
		FROM (VALUES ('flake'), ('randflake'), ('ulidflake')) f (family)});
}

# the old server: ids of each family and a rekey, its clock frozen
# (streaming: a base backup is taken of it while it runs)
my ($old) = frozen_server('old', $conf . "wal_level = replica\nmax_wal_senders = 2\n");
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
} . rekey_tables(2000)
  . join('', map { "INSERT INTO ids SELECT 'old', '$_', $generators{$_} FROM generate_series(1, 20000);\n" }
	  sort keys %generators));
my $old_system = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my $dump = $old->basedir . '/old.sql';
$old->command_ok([ 'pg_dump', '-d', $old->connstr('postgres'), '-f', $dump ], 'pg_dump of the old server');

# the new server, with a standby made before the take-over
my $new = flake_cluster('new', $conf, allows_streaming => 1);
$new->start;
$new->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	SELECT flake_next();
	CREATE TABLE live (id bigint PRIMARY KEY);
	CREATE DATABASE restored;
});
$new->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $new->connstr('restored'), '-f', $dump ],
	'the old server\'s dump restored');
$new->backup('before');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($new, 'before', has_streaming => 1);
$standby->start;

my ($ret, $stdout, $stderr) = $new->psql('restored', "\\set VERBOSITY verbose\nSELECT flake_next()");
like($stderr, qr/ERROR:  55000: this database holds ids of another server.*HINT:  .*SELECT flake_take_over\('\/path\/to\/old\/data'\)/s,
	'the restored database is refused, the hint naming flake_take_over()');

# the old server runs: refused
($ret, $stdout, $stderr) = $new->psql('postgres', sprintf("\\set VERBOSITY verbose\nSELECT flake_take_over('%s')", $old->data_dir));
like($stderr, qr/ERROR:  55006: the server of data directory ".*" is running/,
	'the directory of a running server is refused');

# a base backup of the running server, then a last burst that the
# backup's flake.hwm does not cover (taken over, its ids were issued
# again): refused with its backup_label, and without it (its pg_control
# says "in production"); the restored database stays refused, 0 ids
$old->backup('running');
my $copy = $old->backup_dir . '/running';
$old->safe_psql('postgres', join('',
	map { "INSERT INTO ids SELECT 'late', '$_', $generators{$_} FROM generate_series(1, 2000);\n" }
	  sort keys %generators));
($ret, $stdout, $stderr) = $new->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_take_over('$copy')");
like($stderr, qr/ERROR:  55000: data directory ".*" is a base backup whose recovery has not run.*HINT:  .*pg_ctl stop -D/s,
	'a base backup of the running server is refused, naming its backup_label');
rename "$copy/backup_label", "$copy/backup_label.old" or die $!;
($ret, $stdout, $stderr) = $new->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_take_over('$copy')");
like($stderr, qr/ERROR:  55000: the server of data directory ".*" was not shut down cleanly.*DETAIL:  Its "global\/pg_control" says "in production".*HINT:  Start that server and stop it cleanly \(pg_ctl stop -D/s,
	'without it, refused: its pg_control says "in production"');
($ret, $stdout, $stderr) = $new->psql('restored', 'SELECT flake_next()');
like($stderr, qr/this database holds ids of another server/, 'the restored database is still refused: 0 ids issued');
$old->stop;

# damaged and unreadable files in a data directory: refused, naming the
# file, and nothing of this server's state changes
my $fake = $new->basedir . '/fake';
make_path("$fake/global");
copy($old->data_dir . '/global/pg_control', "$fake/global/pg_control") or die "copy: $!";
my $hwm_before = slurp_file($new->data_dir . '/flake.hwm');
for my $case (
	[ 'flake.hwm', 'not a file of flake', qr/XX001: flake state file ".*\/fake\/flake.hwm" is damaged/ ],
	[ 'flake.rekeys', 'FLKR and too short', qr/XX001: flake state file ".*\/fake\/flake.rekeys" is damaged/ ],
	[ 'flake.hwm', undef, qr/42501: could not read flake state file ".*\/fake\/flake.hwm": Permission denied/ ])
{
	my ($file, $contents, $error) = @$case;
	unlink "$fake/flake.hwm", "$fake/flake.rekeys";
	copy($old->data_dir . '/flake.hwm', "$fake/flake.hwm") or die "copy: $!";
	if (defined $contents) { open my $fh, '>', "$fake/$file" or die $!; print $fh $contents; close $fh; }
	else { chmod 0, "$fake/$file" }
	($ret, $stdout, $stderr) = $new->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_take_over('$fake')");
	like($stderr, $error, 'refused: ' . ($contents // 'unreadable') . " in $file");
	like($stderr, qr/DETAIL:  Nothing was taken over\./, 'nothing was taken over');
}
is(slurp_file($new->data_dir . '/flake.hwm'), $hwm_before, 'this server\'s flake.hwm is unchanged');
ok(!-e $new->data_dir . '/flake.rekeys', 'and it has no claims');

# take over while a session in the restored database keeps trying to
# generate, and pgbench clients generate in another database
my $script = $new->basedir . '/live.sql';
append_to_file($script, join('',
	map { "INSERT INTO live SELECT $_ FROM generate_series(1, 50);\n" } sort values %generators));
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client' => 4, '--jobs' => 4, '--transactions' => 100,
		'--file' => $script, '--host' => $new->host, '--port' => $new->port, 'postgres'
	],
	'>', \$bench_out, '2>', \$bench_err);
my ($try_out, $try_err) = ('', '');
my $trying = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $new->connstr('restored'), '-c', q{
		DO $$
		DECLARE
			done int := 0;
			refused int := 0;
		BEGIN
			WHILE done < 20 LOOP
				BEGIN
					INSERT INTO ids SELECT 'during', 'flake', flake_next() FROM generate_series(1, 1000);
					INSERT INTO ids SELECT 'during', 'ulidflake', ulidflake_next()::bigint FROM generate_series(1, 1000);
					INSERT INTO ids SELECT 'during', 'randflake', randflake_next() FROM generate_series(1, 1000);
					done := done + 1;
				EXCEPTION WHEN object_not_in_prerequisite_state THEN
					refused := refused + 1;
					PERFORM set_config('application_name', 'refused', false);
					-- a pause (pg_sleep() never ends on the frozen clock)
					PERFORM count(*) FROM generate_series(1, 100000);
				END;
			END LOOP;
			RAISE NOTICE 'refused % times', refused;
		END
		$$} ],
	'>', \$try_out, '2>', \$try_err);
$new->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE application_name = 'refused'}) or die 'the session was not refused';
my $taken = $new->safe_psql('postgres', sprintf(q{
	SELECT system_identifier, servers, rekey_claims, flake_next_mark IS NOT NULL,
		   ulidflake_mark IS NOT NULL, randflake_mark IS NOT NULL
	FROM flake_take_over('%s')}, $old->data_dir));
is($taken, "$old_system|{$old_system}|1|t|t|t",
	'flake_take_over() returns the old server, its claim and marks');
$trying->finish;
$bench->finish;
like($try_err, qr/NOTICE:  refused [1-9][0-9]* times/, 'the session was refused before the take-over');
is(reissued($new, 'restored', 'during'), $all_families,
	'its ids after: none equals an id of the old server');
is($new->safe_psql('postgres', 'SELECT count(*), count(*) = count(DISTINCT id) FROM live'),
	'60000|t', 'the clients generating meanwhile repeated no id');
ok(!-e $new->data_dir . '/flake.hwm.import', 'no file was left to import');

# the same again: the same answer, the same files
my $rekeys_before = slurp_file($new->data_dir . '/flake.rekeys');
is($new->safe_psql('postgres', sprintf(q{
	SELECT system_identifier, servers, rekey_claims, flake_next_mark IS NOT NULL,
		   ulidflake_mark IS NOT NULL, randflake_mark IS NOT NULL
	FROM flake_take_over('%s')}, $old->data_dir)), $taken, 'taken over again: the same');
is(slurp_file($new->data_dir . '/flake.rekeys'), $rekeys_before, 'and the claims are unchanged');
is( $new->safe_psql('restored', q{
		SELECT count(*) FROM flake_migrate('invoices', rekey_from => 'at') WHERE action = 'rekey';
		SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM invoices;
		SELECT count(*) FROM orders o JOIN invoices i ON i.id = o.id}),
	"1\n1017\n0", 'a rekey of the old server\'s times takes another node, no id in common');

# the standby made before follows through WAL: promoted, it names the old
# server and issues none of its ids
$new->wait_for_catchup($standby);
$new->stop;
$standby->promote;
$standby->safe_psql('restored', join '',
	map { "INSERT INTO ids SELECT 'standby', '$_', $generators{$_} FROM generate_series(1, 20000);\n" }
	  sort keys %generators);
is(reissued($standby, 'restored', 'standby'), $all_families,
	'the promoted standby generates in the restored database, and issues no id of before');
$standby->stop;

# a server that never generated has no flake.hwm nor flake.rekeys: its
# state is taken over with nothing in it (named by pg_control.old, as
# pg_upgrade --link leaves it)
my $unused = flake_cluster('unused', $conf);
$unused->start;
my $unused_system = $unused->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
$unused->stop;
ok(!-e $unused->data_dir . "/$_", "the unused server has no $_") for qw(flake.hwm flake.rekeys);
rename $unused->data_dir . '/global/pg_control', $unused->data_dir . '/global/pg_control.old' or die $!;
$new->start;
$new->safe_psql('postgres', "CREATE DATABASE fresh");
$new->safe_psql('fresh', "CREATE EXTENSION flake; INSERT INTO flake_internal.flake_origin VALUES ($unused_system)");
($ret, $stdout, $stderr) = $new->psql('fresh', 'SELECT flake_next()');
like($stderr, qr/this database holds ids of another server/, 'a database of that server is refused');
is($new->safe_psql('postgres', sprintf(q{
	SELECT system_identifier, servers, rekey_claims, flake_next_mark, ulidflake_mark, randflake_mark
	FROM flake_take_over('%s')}, $unused->data_dir)),
	"$unused_system|{$unused_system}|0|||", 'taken over: no marks, no claims');
is($new->safe_psql('fresh', 'SELECT flake_next() > 0'), 't', 'then it generates');
$new->stop;

done_testing();
