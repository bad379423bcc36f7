# flake.serial_default with Knex (issue 30): on a database with the setting
# on, Knex's own migrations create authors and books with bigIncrements()
# (bigserial) keys and a foreign key; the application inserts through Knex
# and gets flake ids back, as strings (node-postgres returns bigint so, no
# precision lost), increasing, with the foreign key working.  See
# test/t/FlakeOrm.pm.
#
# Then an id looked up by id and through JSON.stringify comes back whole,
# and Knex finds no migration left to run.
#
# Needs Node, and Knex with node-postgres as test/orm/js/package-lock.json
# pins them (see orm_node_modules in FlakeOrm.pm); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $modules = orm_node_modules(qw(knex pg));

my $node = orm_server('knex');
my $from = -s $node->logfile;
my $out = orm_run($node, [ 'node', 'test/orm/knex/app.js' ], NODE_PATH => $modules);
orm_check($node, $out, 'authors', 'books');
orm_check_js_ids($out);
ok($out->{increasing_in_js}, 'the ids compare as increasing BigInts in JavaScript');
is($out->{pending_migrations}, 0, 'no migration is left to run');
note("DDL of Knex's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
