# From the SQL edition to the C edition: a dump of a database where the
# SQL edition (through pg_tle) made ids, some of them ahead of the clock,
# restored onto a server with the C edition.  The restore creates the C
# edition in its place (CREATE EXTENSION flake), the tables keep their
# DEFAULT flake_next(), and after the documented step
# (flake_take_over_ids()) the ids continue above those the SQL edition
# issued.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle) = sql_edition_scripts();
my $sql = sql_edition_server('sql_edition_dump', $install);
sql_edition_install_tle($sql, $tle);
my $owner = $sql_edition_owner;

# ids of now, and then (as after a clock that ran ahead) of 30 s from now
$sql->safe_psql('postgres', q{
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT flake_next(), item text NOT NULL);
	INSERT INTO orders (item) SELECT 'now' FROM generate_series(1, 1000);
	SELECT setval('flake_internal.node_0',
		(flake_internal.clock_ms() + 30000) << 12);
	UPDATE flake_internal.settings SET max_borrow_ms = 60000;
	INSERT INTO orders (item) SELECT 'ahead' FROM generate_series(1, 1000);
}, extra_params => [ '-U', $owner ]);
my $max = $sql->safe_psql('postgres', 'SELECT max(id) FROM orders');
cmp_ok($sql->safe_psql('postgres', 'SELECT extract(epoch FROM flake_timestamp(max(id)) - clock_timestamp()) FROM orders'),
	'>', 20, 'the newest id is ahead of the clock');

# the dump, restored without pg_tle's entries onto a server with the C edition
my $dir = PostgreSQL::Test::Utils::tempdir();
$sql->command_ok([ 'pg_dump', '-Fc', '-f', "$dir/dump", '-d', $sql->connstr('postgres') ], 'pg_dump');
my $c = PostgreSQL::Test::Cluster->new('sql_edition_dump_c');
$c->init;
# (its max_borrow as the SQL edition's: room for ids as far ahead)
$c->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.max_borrow = '60s'\n");
$c->start;
$c->safe_psql('postgres', "CREATE ROLE $owner LOGIN; CREATE DATABASE shop");
my $list = `"@{[ $c->installed_command('pg_restore') ]}" -l "$dir/dump"`;
open my $fh, '>', "$dir/list" or die "could not write $dir/list: $!";
print $fh join("\n", grep { !/ pg_?tle / && !/ pgtle / } split /\n/, $list), "\n";
close $fh;
$c->command_ok([ 'pg_restore', '--exit-on-error', '-L', "$dir/list", '-d', $c->connstr('shop'), "$dir/dump" ],
	'the dump restores onto the C edition, without pg_tle');
is($c->safe_psql('shop', q{
	SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'flake'),
		(SELECT count(*) FROM pg_proc WHERE proname = 'flake_next' AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')),
		pg_get_expr(adbin, adrelid)
	FROM pg_extension, pg_attrdef WHERE extname = 'flake' AND adrelid = 'orders'::regclass}),
	't|2|flake_next()', 'the C edition is created in its place, under the same default');
is($c->safe_psql('shop', 'SELECT count(*), max(id) FROM orders'), "2000|$max", 'the rows came along');

# the documented step, then the C edition continues above
$c->safe_psql('shop', 'SELECT * FROM flake_take_over_ids()');
$c->safe_psql('shop', q{INSERT INTO orders (item) SELECT 'C edition' FROM generate_series(1, 1000)});
is($c->safe_psql('shop', qq{
	SELECT count(*), min(id) > $max FROM orders WHERE item = 'C edition'}),
	'1000|t', 'the C edition continues above every id the SQL edition issued');

$c->stop;
$sql->stop;
done_testing();
