# The documented operator steps, done in the wrong order, must be refused
# or harmless, never issue an id again (issue 35).  The other orders have
# their tests: ALTER EXTENSION flake UPDATE before the restart (034), a
# key file installed after the server or the standby started (019),
# generating in a restored database before the take-over and taking over
# a running server (033), pg_upgradecluster's phases (test/check-upgradecluster).
# Here: the old server's state taken over before its dump is restored,
# rather than after.  The restored database then generates at once, and
# no id of the old server comes again (every clock frozen at the second
# the old server issued its ids in, so the new server is behind them).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my %generators = %family_next;

my ($old) = frozen_server('old', $carry_conf);
$old->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
} . join('', map { "INSERT INTO ids SELECT 'old', '$_', $generators{$_} FROM generate_series(1, 2000);\n" }
	  sort keys %generators));
my $dump = $old->basedir . '/old.sql';
$old->command_ok([ 'pg_dump', '-d', $old->connstr('postgres'), '-f', $dump ], 'pg_dump of the old server');
$old->stop;

my $new = flake_cluster('new', $carry_conf);
$new->start;
$new->safe_psql('postgres', sprintf(q{
	CREATE EXTENSION flake;
	SELECT count(*) FROM flake_take_over('%s');
	CREATE DATABASE restored}, $old->data_dir));
$new->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $new->connstr('restored'), '-f', $dump ],
	'the dump restored after the take-over');
$new->safe_psql('restored',
	join('', map { "INSERT INTO ids SELECT 'new', '$_', $generators{$_} FROM generate_series(1, 2000);\n" }
		sort keys %generators));
is($new->safe_psql('restored', q{
	SELECT string_agg(family || ' ' || n, ', ' ORDER BY family) FROM (
		SELECT a.family, count(b.id) AS n FROM ids a LEFT JOIN ids b
			ON b.family = a.family AND b.id = a.id AND b.phase = 'old'
		WHERE a.phase = 'new' GROUP BY a.family) s}),
	join(', ', map { "$_ 0" } sort keys %generators),
	'taken over before the restore: the restored database generates, and no id of the old server comes again');
$new->stop;

done_testing();
