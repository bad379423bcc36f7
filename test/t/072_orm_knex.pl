# flake.serial_default with Knex (issue 30): on a database with the setting
# on, Knex's own migrations create authors and books with bigIncrements()
# (bigserial) keys and a foreign key; the application inserts through Knex
# and gets flake ids back, as strings (node-postgres returns bigint so, no
# precision lost), increasing, with the foreign key working.  See
# test/t/FlakeOrm.pm.
#
# Needs Node and Knex with node-postgres as test/orm/knex/package-lock.json
# pins them, installed in $FLAKE_ORM_CACHE/knex (/var/cache/flake-orm/knex;
# .ci/run installs them there with npm ci); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $modules = ($ENV{FLAKE_ORM_CACHE} // '/var/cache/flake-orm') . '/knex/node_modules';
plan skip_all => 'Node is not installed (node is not on PATH)'
  unless system('node --version >/dev/null 2>&1') == 0;
plan skip_all => "Knex is not installed in $modules (.ci/run installs it: npm ci with test/orm/knex/package-lock.json there)"
  unless -e "$modules/knex/package.json" && -e "$modules/pg/package.json";

my $node = orm_server('knex');
my $from = -s $node->logfile;
my $out = orm_run($node, [ 'node', 'test/orm/knex/app.js' ], NODE_PATH => $modules);
orm_check($node, $out, 'authors', 'books');
is($out->{id_class}, 'string', 'the ids reach JavaScript as strings');
ok($out->{increasing_in_js}, 'and compare as increasing BigInts there');
note("DDL of Knex's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
