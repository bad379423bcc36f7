# A dump of some schemas or tables of a running server (pg_dump -n public,
# pg_dump -t) carries no flake_origin, so nothing refuses to generate where
# it is restored: the ids its COPY brings, or its INSERTs name (--inserts,
# one row or many per INSERT), count before that server generates there
# (issue 43).  Both servers' clocks stopped at the same
# second per case.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeMove;

my ($blue, $blue_clock) = move_server('blue');
my ($staging, $staging_clock) = move_server('staging');

my $case = 0;
foreach my $dump_options ([ '-n', 'public' ], [ '-t', 'tf', '-t', 'tr' ],
	[ '-t', 'tf', '-t', 'tr', '--inserts' ], [ '-t', 'tf', '-t', 'tr', '--rows-per-insert=100' ])
{
	my $what = "pg_dump @$dump_options";
	my $db = "copy$case";
	stop_clocks(++$case, $blue_clock, $staging_clock);
	$blue->safe_psql('postgres', "CREATE DATABASE $db");
	$blue->safe_psql($db, 'CREATE EXTENSION flake;' . move_tables());
	is(write_rows($blue, $db, $_, 'blue'), 0, "$what: blue writes $_") foreach sort keys %move_generator;
	my $dump = $blue->basedir . "/$db.dump";
	command_ok([ 'pg_dump', @$dump_options, '-Fc', '-f', $dump, '-d', $blue->connstr($db) ], "$what of blue");
	$staging->safe_psql('postgres', "CREATE DATABASE $db");
	# neither carries the extension; -n public's CREATE SCHEMA public fails
	# where the schema exists, and the restore goes on
	$staging->safe_psql($db, 'CREATE EXTENSION flake');
	run_log([ 'pg_restore', '-d', $staging->connstr($db), $dump ]);
	is($staging->safe_psql($db, 'SELECT (SELECT count(*) FROM tf) + (SELECT count(*) FROM tr)'),
		2 * $move_rows, "$what restored");
	is(write_rows($staging, $db, $_, 'staging'), 0, "$what: none of the dump's $move_generator{$_} ids issued again")
	  foreach sort keys %move_generator;
}

done_testing();
