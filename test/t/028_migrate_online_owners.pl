# The online migration (flake_migrate_online): a bigint key, which needs
# only the swap, and randflake_next widening an integer key; what the
# checks refuse, with flake_migrate()'s blocked text where it refuses too;
# who may migrate (a non-owner, a superuser on another role's table, the
# owner without CREATE on the schema) and the log trigger pointed at
# another owner's table; --help and bad options.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = online_server('online_owners');
my ($rc, $out, $err);

# The command, as the user postgres (or with user => ROLE): exit code,
# stdout, stderr.
sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

# a bigint key changes no type: only the swap, which detaches the
# sequence; and randflake_next, widening an integer key
$node->safe_psql('postgres', q{
	CREATE TABLE wide (id bigserial PRIMARY KEY); CREATE TABLE wide_child (wide_id bigint REFERENCES wide, k int PRIMARY KEY);
	INSERT INTO wide SELECT FROM generate_series(1, 100); INSERT INTO wide_child SELECT id, id FROM wide;
	CREATE TABLE rnd (id serial PRIMARY KEY, v int); INSERT INTO rnd (v) SELECT n FROM generate_series(1, 300) n;
});
($rc, $out, $err) = online([ '-t', 'wide', '--dry-run' ]);
is(join(',', $out =~ /^step \d+ \((\w+):/mg), 'swap', 'a bigint key: the plan is the swap alone');
($rc, $out, $err) = online([ '-t', 'wide' ]);
is($rc, 0, 'a bigint key migrated online') or diag($out, $err);
($rc, $out, $err) = online([ '-t', 'rnd', '-g', 'randflake_next' ]);
is($rc, 0, 'randflake_next online') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid IN ('wide'::regclass, 'rnd'::regclass) ORDER BY adrelid::regclass::text;
		SELECT count(*) FROM pg_class WHERE relname IN ('wide_id_seq', 'rnd_id_seq');
		SELECT count(*), sum(v) FROM rnd}),
	"randflake_next()\nflake_next()\n0\n300|45150", 'both have their generator, no sequence, every row');

# what the checks refuse: what flake_migrate() refuses, with the same
# blocked text, and what only the online path cannot do
$node->safe_psql('postgres', q{
	CREATE TABLE viewed (id serial PRIMARY KEY); CREATE VIEW viewed_v AS SELECT id FROM viewed;
	CREATE TABLE sec (id serial PRIMARY KEY); ALTER TABLE sec ENABLE ROW LEVEL SECURITY;
});
($rc, undef, $err) = online([ '-t', 'viewed' ]);
is($rc, 3, 'a view on the key: refused with exit code 3');
my $offline = $node->safe_psql('postgres',
	q{SELECT detail FROM flake_migrate('viewed', dry_run => true) WHERE action = 'blocked'});
is($err, "blocked: $offline\n", 'with the blocked row of flake_migrate()');
($rc, undef, $err) = online([ '-t', 'sec' ]);
is($rc, 3, 'row level security: refused');
like($err, qr/blocked: objects that the online path cannot carry.*public\.sec: row level security/, 'and why');
$node->safe_psql('postgres', 'CREATE TABLE heap (v int); CREATE TABLE ref (id serial PRIMARY KEY, w int)');
$node->safe_psql('postgres', 'ALTER TABLE heap ADD COLUMN ref_id int REFERENCES ref');
($rc, undef, $err) = online([ '-t', 'ref' ]);
is($rc, 3, 'a referencing table without a key for batches: refused');
like($err, qr/blocked: tables without a key to copy them in batches.*Tables: public\.heap\b/, 'and which');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'}),
	'0', 'nothing was changed by the refused runs');

# a non-owner is refused before anything runs
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO mallory;
	CREATE TABLE owned (id serial PRIMARY KEY);
});
($rc, undef, $err) = online([ '-t', 'owned' ], user => 'mallory');
is($rc, 1, 'a non-owner: exit code 1');
like($err, qr/must connect as the owner of table public\.owned, \S+ \(SQLSTATE 42501\)/, 'must be owner');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgname = 'zz_flake_migrate_online_log'}),
	'0', 'and nothing changed');

# the log trigger writes only into a table of its own table's owner: a
# role cannot point it at another role's table
$node->safe_psql('postgres', q{
	CREATE TABLE victim_log (k int);
	GRANT CREATE ON SCHEMA public TO mallory;
	SET ROLE mallory;
	CREATE TABLE mine (id int PRIMARY KEY);
	CREATE TRIGGER t AFTER INSERT ON mine FOR EACH ROW EXECUTE FUNCTION flake_internal.online_log('public.victim_log', 'id');
});
($rc, undef, $err) = $node->psql('postgres', 'SET ROLE mallory; INSERT INTO mine VALUES (1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'a log of another owner is refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM victim_log'), '0', 'and not written');

# a superuser is refused on another role's table: the table's code would
# run with its rights (an owner's index function could RESET ROLE after a
# SET ROLE), so the migration connects as the owner
$node->safe_psql('postgres', q{
	CREATE ROLE eve LOGIN;
	CREATE TABLE eves (id serial PRIMARY KEY);
	ALTER TABLE eves OWNER TO eve;
});
($rc, undef, $err) = online([ '-t', 'eves' ]);
is($rc, 1, 'a superuser on another role\'s table: exit code 1');
like($err, qr/must connect as the owner of table public\.eves, eve \(SQLSTATE 42501\)/, 'connect as the owner');
($rc, undef, $err) = online([ '-t', 'eves', '--until', 'create' ], user => 'eve');
is($rc, 3, 'the owner without CREATE on the schema: refused');
like($err, qr/public\.eves: no CREATE privilege on its schema/, 'the copy needs it');
$node->safe_psql('postgres', 'GRANT CREATE ON SCHEMA public TO eve');
($rc, undef, $err) = online([ '-t', 'eves', '--until', 'create' ], user => 'eve');
is($rc, 0, 'the owner connected as itself migrates it') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'eves'::regclass AND tgname = 'zz_flake_migrate_online_log'}),
	'1', 'and it is under way');
($rc, undef, $err) = $node->psql('postgres', q{SELECT flake_internal.online_swap('eves', 'id', 'flake_next', NULL)});
like($err, qr/must be logged in as the owner of public\.eves/, 'the swap called by a superuser is refused too');
# ... and to the end, with the extension's helpers (in flake_internal)
# called with the owner's rights
$node->safe_psql('postgres', 'INSERT INTO eves SELECT FROM generate_series(1, 3)');
($rc, undef, $err) = online([ '-t', 'eves' ], user => 'eve');
is($rc, 0, 'the owner finishes it') or diag($err);
is($node->safe_psql('postgres', q{
	SELECT format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid), (SELECT count(*) FROM eves)
	FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE a.attrelid = 'eves'::regclass AND a.attname = 'id'}),
	'bigint|flake_next()|3', 'eves.id is a bigint from flake_next(), every row kept');

($rc, $out) = online([ '--help' ]);
is($rc, 0, '--help exits 0');
like($out, qr/Exit codes: 0 done/, '--help lists the exit codes');
like($out, qr/--pause=MS/, '--help shows --pause');
($rc) = online([ '--bogus' ]);
is($rc, 2, 'a bad option: exit code 2');
($rc, undef, $err) = online([ '-t', 'eves', '-g', 'serial_next' ]);
is($rc, 2, 'an unknown generator: exit code 2');
like($err, qr/invalid generator "serial_next": flake_next, randflake_next or ulidflake_next/, 'naming the generators');

$node->stop;
done_testing();
