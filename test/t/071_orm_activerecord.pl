# flake.serial_default with ActiveRecord (issue 30): on a database with the
# setting on, ActiveRecord's migrations (create_table, and references with
# a foreign key) create authors and books; the application inserts through
# ActiveRecord and gets flake ids back, increasing, with the foreign key
# working.  Then schema.rb and structure.sql hold nothing of flake's but
# the extension and the keys' default, and db:test:prepare (purge, then
# load schema.rb) makes a test database where new rows get flake ids.  See
# test/t/FlakeOrm.pm.
#
# Needs Debian's ruby-activerecord and ruby-pg (.ci/run installs them);
# skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

plan skip_all => 'ActiveRecord or the pg gem is not installed (apt-get install ruby-activerecord ruby-pg)'
  unless system(q{ruby -e 'require "active_record"; require "pg"' >/dev/null 2>&1}) == 0;

my $node = orm_server('activerecord');
my $from = -s $node->logfile;
# structure.sql is pg_dump's: the server's
my $out = orm_run($node, [ 'ruby', 'test/orm/activerecord/app.rb' ],
	PATH => $node->config_data('--bindir') . ":$ENV{PATH}");
orm_check($node, $out, 'authors', 'books');
is($out->{id_class}, 'Integer', 'the ids are Ruby Integers');

# Of flake, schema.rb and structure.sql name the extension and the keys'
# defaults, nothing else: no table of flake's to drop and create again.
my @schema_rb = grep { /flake/i } split /\n/, $out->{schema_rb} // '';
is( join("\n", @schema_rb),
	qq{  enable_extension "flake"\n} . join("\n",
		map { qq{  create_table "$_", id: :bigint, default: -> { "flake_next()" }, force: :cascade do |t|} } qw(authors books)),
	'schema.rb: the extension, and the keys with their default flake_next()');
is( join("\n", grep { /flake/i && !/EXTENSION|DEFAULT public\.flake_next\(\) NOT NULL/ } split /\n/, $out->{structure_sql} // ''),
	'', 'structure.sql: nothing of flake but the extension and the keys\' default');
is($out->{test_database}, 'app_test', 'db:test:prepare made the test database from schema.rb');
ok(orm_flake_ids($node, 'app_test', $out->{test_id} // ''), "where a new author got a flake id above 2^53: $out->{test_id}");
ok($out->{test_schema_rb_same}, 'and schema.rb dumped from the test database is the same');
note("DDL of ActiveRecord's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
