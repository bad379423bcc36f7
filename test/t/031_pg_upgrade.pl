# pg_upgrade and pg_dump carry a database to a new server without the
# marks (flake.hwm) and rekey claims (flake.rekeys) of the old one's data
# directory.  With the new server's clock behind the old one's, flake
# refuses to generate and to claim (55000, with the hint to run
# flake_take_over()) until the old server's state is taken over: after
# pg_upgrade by flake_take_over() of its data directory, with no restart;
# after a restore by its files copied as flake.hwm.import and
# flake.rekeys.import, taken over at start.  Then every family continues
# above every id issued before, and a rekey of the same times gets another
# node.  The owner of a database, not a superuser, dumps it too,
# flake_origin with it.  A server takes over the files of any number of
# servers.  (Damaged import files: 043_damaged_files.pl.)
# Both within the host's major, as pg_upgrade's own tests do.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Cwd;
use File::Copy;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $conf = $carry_conf;
# the old server's system identifier
my $old_system;
my %generators = %family_next;

# a small burst of each family, in the table ids
sub generate
{
	my ($node, $db, $phase) = @_;
	$node->safe_psql($db, join '',
		map { "INSERT INTO ids SELECT '$phase', '$_', $generators{$_} FROM generate_series(1, 20000);\n" }
		  sort keys %generators);
}

# each family's ids of one phase that equal ids of another
sub reissued
{
	my ($node, $db, $phase) = @_;
	return $node->safe_psql($db, qq{
		SELECT string_agg(family || ' ' || n, ', ' ORDER BY family) FROM (
			SELECT a.family, count(*) AS n
			FROM ids a JOIN ids b ON b.family = a.family AND b.id = a.id AND b.phase <> a.phase
			WHERE a.phase = '$phase' GROUP BY a.family
			UNION ALL SELECT family, 0 FROM (VALUES ('flake'), ('randflake'), ('ulidflake')) f (family)
			WHERE NOT EXISTS (SELECT FROM ids a JOIN ids b ON b.family = a.family AND b.id = a.id AND b.phase <> a.phase
							  WHERE a.phase = '$phase' AND a.family = f.family)) s});
}

# every generator's burst, and a claim, refused with the hint: no id
# issued before is issued again (on the code before the check, each family
# issued the old server's ids here again)
sub refused
{
	my ($node, $db, $what) = @_;
	for my $call (
		(map { "INSERT INTO ids SELECT 'refused', '$_', $generators{$_} FROM generate_series(1, 20000)" }
			sort keys %generators),
		"SELECT flake_rekey_claim('invoices', 'at')")
	{
		my ($ret, $stdout, $stderr) = $node->psql($db, "\\set VERBOSITY verbose\n$call");
		like($stderr,
			qr/ERROR:  55000: this database holds ids of another server, whose flake state this server lacks.*HINT:  Take over the old server's state, with no restart, as a superuser: SELECT flake_take_over\('\/path\/to\/old\/data'\) .*SELECT flake_take_over_ids\(\)/s,
			"$what: $call is refused");
	}
	is(reissued($node, $db, 'refused'), 'flake 0, randflake 0, ulidflake 0',
		"$what: no id issued before is issued again");
}

# take over the old server's state: with flake_take_over() of its data
# directory while the new one runs, or its files copied into the new one
# (stopped) as imports, taken over at start; then no id issued before is
# issued again, and a rekey of the same times takes another node
sub take_over
{
	my ($old, $node, $db, $what, $how) = @_;
	if ($how eq 'function')
	{
		$node->start;
		is( $node->safe_psql($db, sprintf(q{
				SELECT system_identifier, rekey_claims, flake_next_mark IS NOT NULL
				FROM flake_take_over('%s')}, $old->data_dir)),
			"$old_system|1|t", "$what: flake_take_over() returns the old server, its claim and marks");
	}
	else
	{
		copy($old->data_dir . "/$_", $node->data_dir . "/$_.import") or die "copy $_: $!"
		  for qw(flake.hwm flake.rekeys);
		$node->start;
		ok(!-e $node->data_dir . "/$_.import", "$what: $_.import taken over and removed")
		  for qw(flake.hwm flake.rekeys);
	}
	generate($node, $db, 'after');
	is(reissued($node, $db, 'after'), 'flake 0, randflake 0, ulidflake 0',
		"after $what with the state taken over: no id issued before is issued again");
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM flake_migrate('invoices', rekey_from => 'at') WHERE action = 'rekey';
			SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM invoices;
			SELECT count(*) FROM orders o JOIN invoices i ON i.id = o.id}),
		"1\n1017\n0", "after $what: a rekey of the same times takes another node, no id in common");
	$node->stop;
}

# every server's clock frozen at the same second: the new servers' clocks
# are behind every id the old one issued
my ($old) = frozen_server('old', $conf);
$old_system = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
} . rekey_tables(2000));
generate($old, 'postgres', 'before');
my $dump = $old->basedir . '/dump.sql';
$old->command_ok([ 'pg_dump', '-d', $old->connstr('postgres'), '-f', $dump ], 'pg_dump');
# the owner of a database, not a superuser, dumps it: flake_origin is
# extension configuration, dumped, so it reads it (before 1.3, only the
# extension's owner could: pg_dump failed)
$old->safe_psql('postgres', 'CREATE ROLE dbowner LOGIN; CREATE DATABASE owned OWNER dbowner');
$old->safe_psql('owned', q{
	CREATE EXTENSION flake;
	SET ROLE dbowner;
	CREATE TABLE things (id bigint PRIMARY KEY DEFAULT flake_next(), name text);
	INSERT INTO things (name) VALUES ('one'), ('two');
});
my $owned_dump = $old->basedir . '/owned.sql';
$old->command_ok([ 'pg_dump', '-d', $old->connstr('owned') . ' user=dbowner', '-f', $owned_dump ],
	'pg_dump by the database\'s owner, not a superuser');
$old->stop;

# pg_upgrade into a new cluster
my $new = flake_cluster('new', $conf);
my $bindir = $old->config_data('--bindir');
{
	local $ENV{PGHOST} = $new->host;
	# pg_upgrade writes delete_old_cluster.sh into the current directory:
	# not into the source tree, which prove runs in
	my $cwd = getcwd();
	chdir PostgreSQL::Test::Utils::tempdir() or die "chdir: $!";
	command_ok(
		[
			'pg_upgrade', '--no-sync', '-d', $old->data_dir, '-D', $new->data_dir,
			'-b', $bindir, '-B', $bindir, '-s', $new->host,
			'-p', $old->port, '-P', $new->port
		],
		'pg_upgrade');
	chdir $cwd or die "chdir $cwd: $!";
}
$new->start;
refused($new, 'postgres', 'after pg_upgrade');
$new->stop;
take_over($old, $new, 'postgres', 'pg_upgrade', 'function');

# the dump restored into another server, which has issued ids of its own
my $restored = flake_cluster('restored', $conf);
$restored->start;
$restored->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
	CREATE TABLE orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
	INSERT INTO orders (at) SELECT '2020-01-01'::timestamptz + n * interval '1 min' FROM generate_series(1, 2000) n;
	SELECT count(*) FROM flake_migrate('orders', rekey_from => 'at');
	CREATE DATABASE copy;
});
generate($restored, 'postgres', 'before');
$restored->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $restored->connstr('copy'), '-f', $dump ],
	'the dump restored');
refused($restored, 'copy', 'after a restore');
$restored->safe_psql('postgres', 'CREATE ROLE dbowner LOGIN; CREATE DATABASE owned OWNER dbowner');
$restored->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $restored->connstr('owned'), '-f', $owned_dump ],
	'the owner\'s dump restored');
is($restored->safe_psql('owned', "SELECT count(*) FROM flake_internal.flake_origin WHERE system_identifier = $old_system"),
	'1', 'the owner\'s dump carries the old server in flake_origin');
my ($ret, $stdout, $stderr) = $restored->psql('owned', "INSERT INTO things (name) VALUES ('three')");
like($stderr, qr/ERROR:  this database holds ids of another server/,
	'after the owner\'s dump is restored: generating is refused');
$restored->stop;
take_over($old, $restored, 'copy', 'a restore', 'files');
$restored->start;
is($restored->safe_psql('owned', "INSERT INTO things (name) VALUES ('three'); SELECT count(DISTINCT id) FROM things"),
	'3', 'the owner\'s database generates once the files are taken over');
generate($restored, 'postgres', 'after');
is(reissued($restored, 'postgres', 'after'), 'flake 0, randflake 0, ulidflake 0',
	'and none of its own ids either');
is( $restored->safe_psql('postgres', q{
		SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM orders}),
	'1016', 'its own rekey kept its node');

# A server that takes over the files of many servers, one after another
# (issue 27): flake.hwm names every one of them, beyond the 13 that 1.2's
# format holds (before, the 14th import logged that it took over, but
# flake.hwm dropped the server, and a database with its ids was refused
# for good).  Each import is a flake.hwm as 1.2 writes it, of a server
# that issued no id; the database many names them all in flake_origin,
# as restoring a dump of each into it would.
sub hwm_of
{
	my ($writer) = @_;
	my $file = pack('L<L<q<q<q<Q<L<L<', 0x464C4B34, 0, 0, 0, 0, $writer, 0, 0) . ("\0" x (13 * 8));
	return $file . pack('L<L<', crc32c($file), 0);
}
$restored->safe_psql('postgres', 'CREATE DATABASE many');
$restored->safe_psql('many', 'CREATE EXTENSION flake');
my @refused;
foreach my $writer (map { 7400000000000000000 + $_ } 1 .. 15)
{
	$restored->stop;
	my $import = $restored->data_dir . '/flake.hwm.import';
	write_state_file($import, hwm_of($writer));
	$restored->start;
	$restored->safe_psql('many', "INSERT INTO flake_internal.flake_origin VALUES ($writer)");
	my ($ret, $stdout, $stderr) = $restored->psql('many', 'SELECT flake_next() > 0');
	push @refused, $writer unless $stdout eq 't';
}
is(scalar(() = slurp_file($restored->logfile) =~ /flake took over the marks of "flake.hwm.import"/g),
	16, 'every import is taken over');
is(join(', ', @refused), '', 'after each of 15 imports, the database with ids of all of them generates');
$restored->restart;
is($restored->safe_psql('many', 'SELECT flake_next() > 0'), 't', 'and after a restart');
my $hwm = slurp_file($restored->data_dir . '/flake.hwm');
is(unpack('L<', $hwm), 0x464C4B35, 'flake.hwm is in the format that names any number of servers ("FLK5")');
is(length($hwm), 40 + 16 * 8 + 4, 'naming the old server and the 15 others');

$restored->stop;

done_testing();
