# flake.serial_default with Django (issue 30): on a database with the
# setting on, Django's makemigrations and migrate create the tables of two
# models, a book referencing its author (BigAutoField keys, as Django's
# project template sets DEFAULT_AUTO_FIELD); the application inserts
# through the ORM and gets flake ids back, increasing, with the foreign key
# working.  Then the rest of the loop: makemigrations --check sees no
# drift, inspectdb nothing of flake's, and Django's test runner a test
# database with flake ids, which loads a fixture of dumpdata.  See
# test/t/FlakeOrm.pm.
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
ok($out->{no_drift}, 'makemigrations --check: the models and their migrations agree');
is(join(',', @{ $out->{inspected_tables} // [] }), 'django_migrations,shop_author,shop_book',
	'inspectdb finds the application\'s tables and none of flake\'s');
is($out->{test_failures}, 0, 'Django\'s test runner passed (shop/tests.py)');
my $run = $out->{test_run} // {};
is($run->{database}, 'test_app', 'on its test database');
is(join(',', @{ $run->{loaded} // [] }), join(',', sort @{ $out->{authors} }), 'which loaded the fixture dumpdata wrote, ids and all');
ok(orm_flake_ids($node, 'app', $run->{new_id} // ''), "and gave a new author a flake id above 2^53: $run->{new_id}");
note("DDL of Django's migrations:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
