# 32-bit keys under flake.serial_default, with Django's own contrib tables
# (issue 45): their keys are AutoField (each app sets its own, whatever
# DEFAULT_AUTO_FIELD says), 32-bit.  migrate goes on with the setting on:
# the keys keep their sequences, a WARNING in the server log names each
# (on 1.4 a NOTICE, which neither Django's user nor the log saw), and
# flake_sequence_keys() lists them.  With flake.serial_default_narrow =
# error the first of them is refused, as README says: that setting is for
# applications whose every key is declared 64-bit.  See test/t/FlakeOrm.pm.
#
# Needs Debian's python3-django and python3-psycopg2 (for /usr/bin/python3;
# .ci/run installs them); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $python = '/usr/bin/python3';
plan skip_all => "Django or psycopg2 is not installed for $python (apt-get install python3-django python3-psycopg2)"
  unless system("$python -c 'import django, psycopg2' >/dev/null 2>&1") == 0;

my $node = orm_server('django_contrib');
my $from = -s $node->logfile;
my $out = orm_run($node, [ $python, 'test/orm/django/contrib.py' ]);
note("ORM: $out->{orm}");
my @keys = @{ $out->{sequence_keys} // [] };
ok((grep { $_ eq 'auth_user.id integer' } @keys) && (grep { $_ eq 'django_content_type.id integer' } @keys)
	  && !(grep { !/ integer$/ } @keys),
	'migrate went on: flake_sequence_keys() lists the contrib tables\' 32-bit keys, and no other: ' . join(', ', @keys));
is($out->{user_id}, 1, 'a user gets its id from auth_user\'s sequence');
my $log = substr(slurp_file($node->logfile), $from);
my @warned = $log =~ /WARNING:  column "id" of table "(\w+)" keeps its sequence/g;
is(scalar(@warned), scalar(@keys), 'the server log has a WARNING for each: ' . join(', ', @warned));

# the setting that refuses: migrate stops at the first 32-bit key
$node->safe_psql('postgres', 'CREATE DATABASE strict OWNER app');
my ($ok, $stdout, $stderr) = orm_exec($node, [ $python, 'test/orm/django/contrib.py' ],
	PGDATABASE => 'strict', PGOPTIONS => '-c flake.serial_default_narrow=error');
ok(!$ok, 'with flake.serial_default_narrow = error, migrate fails');
like($stderr, qr/column "id" of table "django_content_type" is too narrow for flake_next\(\) ids/,
	'at the first 32-bit key, which the error names');

$node->stop;
done_testing();
