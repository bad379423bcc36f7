# The online migration (flake_migrate_online) under hostile sessions and
# roles: a role whose default isolation is REPEATABLE READ; a second run
# started while the first runs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('online_session',
	"flake.nodes = '0-1015'\nflake.randflake_nodes = '0-1015'\nflake.randflake_secret = '$flake_secret'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE ROLE mallory LOGIN;
	GRANT CREATE ON SCHEMA public TO mallory;
});

sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

# psql as a role (logged in as it): exit code, stdout, stderr
sub psql_as
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return ($rc, $out, $err);
}

# An owner role and its tables: NAME (a serial key) with N rows and
# NAME_lines referencing it.
sub make_owned
{
	my ($role, $name, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $name (id serial PRIMARY KEY, v int);
		CREATE TABLE ${name}_lines (id serial PRIMARY KEY, ${name}_id int NOT NULL REFERENCES $name, v int);
		INSERT INTO $name (v) SELECT n FROM generate_series(1, $n) n;
		INSERT INTO ${name}_lines (${name}_id, v) SELECT id, id FROM $name;
		ALTER TABLE $name OWNER TO $role; ALTER TABLE ${name}_lines OWNER TO $role;
		ALTER SEQUENCE ${name}_id_seq OWNER TO $role; ALTER SEQUENCE ${name}_lines_id_seq OWNER TO $role;
	});
}

# No copy, log or list of the migration is left for the tables NAME*.
sub leftovers
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_class WHERE relname LIKE '${name}%\\_\\_flake\\_%'});
}

sub role
{
	my ($role) = @_;
	$node->safe_psql('postgres', "CREATE ROLE $role LOGIN; GRANT CREATE ON SCHEMA public TO $role");
}

###########################################################################
# 27.1: a role whose default isolation is REPEATABLE READ.  A writer's
# transaction is open when the swap begins to wait for its lock, and
# commits while it waits: the swap must see its rows (its snapshots come
# after its locks).
role('rr');
$node->safe_psql('postgres', q{ALTER ROLE rr SET default_transaction_isolation = 'repeatable read'});
make_owned('rr', 'rro', 200);
my ($rc, $out, $err) = online([ '-t', 'rro', '--until', 'analyze' ], user => 'rr');
is($rc, 0, 'repeatable read by default: up to the swap') or diag($out, $err);
($rc, undef, $err) = psql_as('rr', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT flake_internal.flake_migrate_online_swap('rro', 'id', 'flake_next', NULL)});
like($err, qr/the swap must run at isolation level read committed, not repeatable read/,
	'the swap function refuses a REPEATABLE READ transaction');
my $writer = online_hold($node, q{
	INSERT INTO rro (v) VALUES (-1);
	INSERT INTO rro_lines (rro_id, v) SELECT max(id), -1 FROM rro;
	UPDATE rro_lines SET v = -2 WHERE id = 7;
	DELETE FROM rro_lines WHERE id = 8});
my ($h, $o, $e) = online_start($node, [ '-t', 'rro', '--lock-timeout', '600000' ], user => 'rr', phase => 'swap');
like($$o, qr/\(swap: /, 'the swap waits for the writer');
$writer->('COMMIT');
$h->finish;
is($h->result(0), 0, 'and swaps once it has committed') or diag($$o, $$e);
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM rro WHERE v = -1;
		SELECT count(*) FROM rro_lines WHERE v = -1;
		SELECT v FROM rro_lines WHERE id = 7;
		SELECT count(*) FROM rro_lines WHERE id = 8;
		SELECT count(*) FROM rro}),
	"1\n1\n-2\n0\n201", 'every write the writer committed while the swap waited is kept');

###########################################################################
# 27.10: a second run started while the first waits to swap waits for it,
# then finds the table it swapped in, and finishes.
role('two');
make_owned('two', 'twoo', 100);
($rc, $out, $err) = online([ '-t', 'twoo', '--until', 'analyze' ], user => 'two');
is($rc, 0, 'two runs: the first up to the swap') or diag($out, $err);
my $release = online_hold($node, 'LOCK twoo IN ACCESS SHARE MODE');
my ($h1, $o1, $e1) = online_start($node, [ '-t', 'twoo', '--lock-timeout', '600000', '--until', 'swap' ],
	user => 'two', phase => 'swap');
my ($o2, $e2) = ('', '');
my $h2 = IPC::Run::start([ FlakeTest::online_command($node, [ '-t', 'twoo' ], user => 'two') ], '>', \$o2, '2>', \$e2);
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted})
  or die 'the second run does not wait for the first';
$release->();
$h1->finish;
$h2->finish;
is($h1->result(0), 0, 'the first swaps') or diag($$o1, $$e1);
is($h2->result(0), 0, 'the second, which waited for it, exits 0') or diag($o2, $e2);
like($o2, qr/validate/, 'and validates what the first swapped');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'twoo'::regclass AND attname = 'id';
		SELECT bool_and(convalidated) FROM pg_constraint WHERE conrelid = 'twoo_lines'::regclass AND contype = 'f'}),
	"bigint\nt", 'twoo is migrated, its foreign key validated');

$node->stop;
done_testing();
