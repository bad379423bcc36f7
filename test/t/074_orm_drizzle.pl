# Drizzle with flake (issue 38): with its keys declared as docs/orms.md
# tells (a bigint column type of strings, default flake_next()),
# drizzle-kit generate writes one migration and then finds no change,
# drizzle-kit push makes authors and books and then finds no change, and
# drizzle-kit pull finds nothing of flake's but the keys' default (the
# configuration's tablesFilter leaves out flake_leases, which push would
# otherwise try to drop); the application inserts through Drizzle and
# gets flake ids, as strings, and an id comes back whole through a lookup
# and JSON.stringify.  See test/t/FlakeOrm.pm.
#
# Needs Node, and Drizzle with node-postgres as test/orm/js/package-lock.json
# pins them (see orm_node_modules in FlakeOrm.pm); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $modules = orm_node_modules(qw(drizzle-orm drizzle-kit pg));

my $node = orm_server('drizzle');
# drizzle-kit writes migrations and the pulled schema beside its
# configuration: into a copy of test/orm
my $orm = $node->basedir . '/orm';
PostgreSQL::Test::RecursiveCopy::copypath('test/orm', $orm);
my $kit = "$modules/drizzle-kit/bin.cjs";

# drizzle-kit in the application's directory; what it printed
sub kit
{
	my (@args) = @_;
	my ($ok, $stdout, $stderr) = orm_exec($node, [ 'node', $kit, @args ],
		NODE_PATH => $modules, chdir => "$orm/drizzle");
	ok($ok, "drizzle-kit @args ran") or diag("$stdout\n$stderr");
	return "$stdout\n$stderr";
}

my $from = -s $node->logfile;
like(kit('generate'), qr/Your SQL migration file/, 'generate writes a migration');
like(kit('generate'), qr/No schema changes/, 'generate again: no change');
like(kit('push', '--force'), qr/Changes applied/, 'push makes the tables');
like(kit('push', '--force'), qr/No changes detected/, 'push again: no change');
kit('pull');
is( join("\n", grep { /flake/i && !/default\(sql`flake_next\(\)`\)/ } split /\n/, slurp_file("$orm/drizzle/migrations/schema.ts")),
	'', 'pull: nothing of flake\'s but the keys\' default');

my $out = orm_run($node, [ 'node', "$orm/drizzle/app.js" ], NODE_PATH => $modules);
orm_check($node, $out, 'authors', 'books');
orm_check_js_ids($out);
note("DDL of drizzle-kit push:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
