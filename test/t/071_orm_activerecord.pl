# flake.serial_default with ActiveRecord (issue 30): on a database with the
# setting on, ActiveRecord's migrations (create_table, and references with
# a foreign key) create authors and books; the application inserts through
# ActiveRecord and gets flake ids back, increasing, with the foreign key
# working.  See test/t/FlakeOrm.pm.
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
my $out = orm_run($node, [ 'ruby', 'test/orm/activerecord/app.rb' ]);
orm_check($node, $out, 'authors', 'books');
is($out->{id_class}, 'Integer', 'the ids are Ruby Integers');
note("DDL of ActiveRecord's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
