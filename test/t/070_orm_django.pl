# flake.serial_default with Django (issue 30): on a database with the
# setting on, Django's makemigrations and migrate create the tables of two
# models, a book referencing its author (BigAutoField keys, as Django's
# project template sets DEFAULT_AUTO_FIELD); the application inserts
# through the ORM and gets flake ids back, increasing, with the foreign key
# working.  See test/t/FlakeOrm.pm.
#
# Needs Debian's python3-django and python3-psycopg2 (for /usr/bin/python3;
# .ci/run installs them); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $python = '/usr/bin/python3';
plan skip_all => "Django or psycopg2 is not installed for $python (apt-get install python3-django python3-psycopg2)"
  unless system("$python -c 'import django, psycopg2' >/dev/null 2>&1") == 0;

my $node = orm_server('django');
# makemigrations writes the app's migrations: into a copy of it
my $app = $node->basedir . '/django';
PostgreSQL::Test::RecursiveCopy::copypath('test/orm/django', $app);
my $from = -s $node->logfile;
my $out = orm_run($node, [ $python, "$app/app.py" ]);
orm_check($node, $out, 'shop_author', 'shop_book');
is($out->{id_class}, 'int', 'the ids are Python ints');
note("DDL of Django's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
