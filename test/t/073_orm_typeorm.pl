# TypeORM with flake (issue 38): with its keys declared as docs/orms.md
# tells (bigint, default flake_next(); a generated: 'increment' key
# TypeORM's synchronize would turn back into a sequence on the second
# start), TypeORM's synchronize makes authors and books on the first of
# three starts and finds nothing to change on the other two (the schema
# builder's log, which migration:generate writes out, is empty); the
# application inserts through TypeORM and gets flake ids, as strings, and
# an id comes back whole through a lookup and JSON.stringify.  See
# test/t/FlakeOrm.pm.
#
# Needs Node, and TypeORM with node-postgres as test/orm/js/package-lock.json
# pins them (see orm_node_modules in FlakeOrm.pm); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $modules = orm_node_modules(qw(typeorm reflect-metadata pg));

my $node = orm_server('typeorm');
my $from = -s $node->logfile;
my $out = orm_run($node, [ 'node', 'test/orm/typeorm/app.js' ], NODE_PATH => $modules);
orm_check($node, $out, 'authors', 'books');
my @pending = map { scalar @$_ } @{ $out->{pending} // [] };
is("@pending", '3 0 0', 'synchronize: the first start creates the tables and a foreign key, the next two find no change');
orm_check_js_ids($out);
note("DDL of TypeORM's synchronize:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
