# From the plain SQL edition to the C edition: a dump of a database where
# the plain script's functions made Snowflake ids and ulidflakes (bigint),
# some of them ahead of the clock, restored onto a server with the C
# edition.  The plain edition is no extension: the dump restores its
# functions as they are.  After the documented step (docs/sql-edition.md:
# the C edition into a schema of its own, the defaults pointed at it, the
# plain functions dropped, then flake_take_over_ids()), the ids continue
# above those the plain edition issued.  And ulidflakes of the pg_tle
# edition, whose bigint columns take the C edition's type after the
# restore (093 has its Snowflake ids).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle, $plain) = sql_edition_scripts();
my $sql = sql_edition_server('sql_edition_plain', $install);
my $owner = $sql_edition_owner;
# (a database of its own, without pg_tle, which the other server lacks)
$sql->safe_psql('postgres', "CREATE DATABASE shop OWNER $owner");
sql_edition_install_plain($sql, $plain, 'shop');

# ids of now, and then (as after a clock that ran ahead) of 30 s from now
$sql->safe_psql('shop', q{
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT flake_next(), item text NOT NULL);
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT ulidflake_next(), what text NOT NULL);
	INSERT INTO orders (item) SELECT 'now' FROM generate_series(1, 1000);
	INSERT INTO events (what) SELECT 'now' FROM generate_series(1, 1000);
	UPDATE flake_internal.settings SET max_borrow_ms = 60000;
	SELECT setval('flake_internal.node_0', (flake_internal.clock_ms() + 30000) << 12);
	SELECT setval('flake_internal.ulidflake', (flake_internal.ulidflake_clock_ms() + 30000) << 15);
	INSERT INTO orders (item) SELECT 'ahead' FROM generate_series(1, 1000);
	INSERT INTO events (what) SELECT 'ahead' FROM generate_series(1, 1000);
}, extra_params => [ '-U', $owner ]);
my $max_order = $sql->safe_psql('shop', 'SELECT max(id) FROM orders');
my $max_event = $sql->safe_psql('shop', 'SELECT max(id) FROM events');
is($sql->safe_psql('shop', q{
	SELECT extract(epoch FROM flake_timestamp(max(id)) - clock_timestamp()) > 20 FROM orders
	UNION ALL
	SELECT extract(epoch FROM ulidflake_timestamp(max(id)) - clock_timestamp()) > 20 FROM events}),
	"t\nt", 'the newest ids are ahead of the clock');

# the dump, restored as it is onto a server with the C edition
my $dir = PostgreSQL::Test::Utils::tempdir();
$sql->command_ok([ 'pg_dump', '-Fc', '-f', "$dir/dump", '-d', $sql->connstr('shop') ], 'pg_dump');
my $c = PostgreSQL::Test::Cluster->new('sql_edition_plain_c');
$c->init;
# (its max_borrow as the plain edition's: room for ids as far ahead)
$c->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.max_borrow = '60s'\n");
$c->start;
$c->safe_psql('postgres', "CREATE ROLE $owner LOGIN; CREATE DATABASE shop");
$c->command_ok([ 'pg_restore', '--exit-on-error', '-d', $c->connstr('shop'), "$dir/dump" ],
	'the dump restores onto a server with the C edition');
is($c->safe_psql('shop', 'SELECT count(*), max(id) FROM orders'), "2000|$max_order", 'the orders came along');
is($c->safe_psql('shop', 'SELECT count(*), max(id) FROM events'), "2000|$max_event", 'the events came along');

# the documented step, as docs/sql-edition.md has it
open my $step, '>', "$dir/to-c-edition.sql" or die "could not write $dir/to-c-edition.sql: $!";
print $step q{
BEGIN;
ALTER SCHEMA flake_internal RENAME TO flake_sql_edition;
CREATE SCHEMA flake;
CREATE EXTENSION flake SCHEMA flake;
ALTER TABLE orders ALTER COLUMN id SET DEFAULT flake.flake_next();
ALTER TABLE events ALTER COLUMN id DROP DEFAULT,
	ALTER COLUMN id TYPE flake.ulidflake USING id::flake.ulidflake,
	ALTER COLUMN id SET DEFAULT flake.ulidflake_next();
SELECT format('DROP FUNCTION %s', oid::regprocedure) FROM pg_proc
WHERE pronamespace = 'public'::regnamespace AND proname ~ '^(flake|ulidflake|randflake)_'
\gexec
DROP SCHEMA flake_sql_edition CASCADE;
COMMIT;
ALTER DATABASE shop SET search_path = "$user", public, flake;
};
close $step;
$c->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $c->connstr('shop'), '-f', "$dir/to-c-edition.sql" ],
	'the documented step: the C edition in place of the plain one');
$c->safe_psql('shop', 'SELECT * FROM flake.flake_take_over_ids()');
is($c->safe_psql('shop', q{
	SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
	UNION ALL
	SELECT count(*) FROM pg_namespace WHERE nspname = 'flake_sql_edition'}),
	"0\n0", 'the plain edition is gone');

# the C edition continues above, under the same queries
$c->safe_psql('shop', q{
	INSERT INTO orders (item) SELECT 'C edition' FROM generate_series(1, 1000);
	INSERT INTO events (what) SELECT 'C edition' FROM generate_series(1, 1000);
});
is($c->safe_psql('shop', qq{
	SELECT count(*), min(id) > $max_order, bool_and(flake_timestamp(id) > now()) FROM orders WHERE item = 'C edition'}),
	'1000|t|t', 'the C edition continues above every Snowflake id the plain edition issued');
is($c->safe_psql('shop', qq{
	SELECT count(*), min(id)::bigint > $max_event FROM events WHERE what = 'C edition'}),
	'1000|t', 'and above every ulidflake');

# the pg_tle edition's ulidflakes: the default dropped before the dump,
# the column made the C edition's type after the restore
sql_edition_install_tle($sql, $tle);
$sql->safe_psql('postgres', q{
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT ulidflake_next(), what text NOT NULL);
	UPDATE flake_internal.settings SET max_borrow_ms = 60000;
	SELECT setval('flake_internal.ulidflake', (flake_internal.ulidflake_clock_ms() + 30000) << 15);
	INSERT INTO events (what) SELECT 'ahead' FROM generate_series(1, 1000);
	ALTER TABLE events ALTER COLUMN id DROP DEFAULT;
}, extra_params => [ '-U', $owner ]);
my $max_tle = $sql->safe_psql('postgres', 'SELECT max(id) FROM events');
$sql->command_ok([ 'pg_dump', '-Fc', '-f', "$dir/tle.dump", '-d', $sql->connstr('postgres') ], 'pg_dump of the pg_tle edition');
$c->safe_psql('postgres', 'CREATE DATABASE tle');
my $list = `"@{[ $c->installed_command('pg_restore') ]}" -l "$dir/tle.dump"`;
open my $fh, '>', "$dir/tle.list" or die "could not write $dir/tle.list: $!";
print $fh join("\n", grep { !/ pg_?tle / && !/ pgtle / } split /\n/, $list), "\n";
close $fh;
$c->command_ok([ 'pg_restore', '--exit-on-error', '-L', "$dir/tle.list", '-d', $c->connstr('tle'), "$dir/tle.dump" ],
	'the pg_tle dump restores onto the C edition');
$c->safe_psql('tle', q{
	ALTER TABLE events ALTER COLUMN id TYPE ulidflake USING id::ulidflake,
		ALTER COLUMN id SET DEFAULT ulidflake_next();
	SELECT * FROM flake_take_over_ids();
	INSERT INTO events (what) SELECT 'C edition' FROM generate_series(1, 1000);
});
is($c->safe_psql('tle', qq{
	SELECT count(*), min(id)::bigint > $max_tle FROM events WHERE what = 'C edition'}),
	'1000|t', "the C edition's ulidflakes continue above the pg_tle edition's");

$c->stop;
$sql->stop;
done_testing();
