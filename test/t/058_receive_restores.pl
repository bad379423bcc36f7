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

# An application's COPY into a table with a column of ids: no read of the
# whole table each time.  A COPY that leaves out the column brings no id of
# another server: nothing is read (an id an hour ahead, that a read would
# warn of, stays unseen).  One that brings ids into a table whose column
# has a btree index reads its newest ids at the index's end, past the one
# ahead; randflake ids, encrypted, are read in a scan.
stop_clocks(++$case, $blue_clock, $staging_clock);
$blue->safe_psql('postgres', 'CREATE DATABASE app');
$blue->safe_psql('app', 'CREATE EXTENSION flake;' . move_tables()
	  . q{INSERT INTO tf SELECT flake_next(7), 'blue7' FROM generate_series(1, 100)});
# blue's newest ids a second later, on another node: node 7's are not at the index's end
stop_clocks(++$case, $blue_clock);
is(write_rows($blue, 'app', $_, 'blue'), 0, "app: blue writes $_") foreach sort keys %move_generator;
$staging->safe_psql('postgres', 'CREATE DATABASE app');
$staging->safe_psql('app', 'CREATE EXTENSION flake;' . move_tables() . q{
	INSERT INTO tf VALUES ((SELECT flake_from_timestamp(now() + interval '1 hour')), 'ahead')});

my ($ret, $out, $err);
my %rows = map { $_ => $blue->safe_psql('app', "SELECT string_agg(id || E'\\t' || side, E'\\n') FROM $_") }
  sort keys %move_generator;
($ret, $out, $err) = $staging->psql('app', "SET client_min_messages = debug1;\n"
	  . "COPY tf (id, side) FROM stdin;\n$rows{tf}\n\\.\n");
is($ret, 0, "a COPY of blue's flake_next() ids");
like($err, qr/flake reads the newest ids of table "tf" through index "tf_pkey"/,
	"blue's flake_next() ids read through the index");
unlike($err, qr/in a scan/, 'and no scan');
like($err, qr/1 values in the columns of ids of table "tf" are later/, 'the end read past the id ahead');
($ret, $out, $err) = $staging->psql('app', "SET client_min_messages = debug1;\n"
	  . "COPY tf (side) FROM stdin;\nlocal\nlocal\n\\.\n");
is($ret, 0, 'a COPY that leaves out the column of ids');
unlike($err, qr/flake reads|not read/, 'a COPY that leaves out the column of ids reads nothing');

is(write_rows($staging, 'app', 'tf', 'staging'), 0, "none of blue's flake_next() ids issued again");
is($staging->safe_psql('app', q{
	WITH ins AS (INSERT INTO tf SELECT flake_next(7), 'staging7' FROM generate_series(1, 100)
		ON CONFLICT DO NOTHING RETURNING 1)
	SELECT count(*) FROM ins}), 100, "none of blue's ids on node 7, older than its newest, issued again");
is($staging->safe_psql('app', q{
	SELECT (SELECT min(id) FROM tf WHERE side IN ('local', 'staging', 'staging7'))
	  > (SELECT max(id) FROM tf WHERE side IN ('blue', 'blue7'))}),
	't', "the ids issued after the COPY are above blue's");

($ret, $out, $err) = $staging->psql('app', "SET client_min_messages = debug1;\n"
	  . "COPY tr (id, side) FROM stdin;\n$rows{tr}\n\\.\n");
is($ret, 0, "a COPY of blue's randflake_next() ids");
like($err, qr/flake reads the ids of table "tr" in a scan/, "blue's randflake_next() ids read in a scan");
is(write_rows($staging, 'app', 'tr', 'staging'), 0, "none of blue's randflake_next() ids issued again");

# a ulidflake column's index, of flake's operator family
$_->safe_psql('app', q{CREATE TABLE tu (id ulidflake PRIMARY KEY DEFAULT ulidflake_next(), side text NOT NULL)})
  foreach $blue, $staging;
$blue->safe_psql('app', q{INSERT INTO tu (side) SELECT 'blue' FROM generate_series(1, 1000)});
my $tu = $blue->safe_psql('app', "SELECT string_agg(id || E'\\t' || side, E'\\n') FROM tu");
($ret, $out, $err) = $staging->psql('app', "SET client_min_messages = debug1;\n"
	  . "COPY tu (id, side) FROM stdin;\n$tu\n\\.\n");
is($ret, 0, "a COPY of blue's ulidflake_next() ids");
like($err, qr/flake reads the newest ids of table "tu" through index "tu_pkey"/,
	"blue's ulidflake_next() ids read through the index");
$staging->safe_psql('app', q{INSERT INTO tu (side) SELECT 'staging' FROM generate_series(1, 1000)});
is($staging->safe_psql('app', q{
	SELECT (SELECT min(id) FROM tu WHERE side = 'staging') > (SELECT max(id) FROM tu WHERE side = 'blue')}),
	't', "the ulidflake_next() ids issued after the COPY are above blue's, a second ahead");

done_testing();
