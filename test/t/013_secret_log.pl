# Statements that carry a Randflake key never put it in the server log,
# refused or accepted, at the most talkative logging settings: every
# statement, every duration, the STATEMENT line of every message, bound
# parameters of errors.  Ordinary statements are still logged.
#
# Nor does any other entry that carries such a statement (issue 18): the
# value of a violated key in an error's detail; a PL/pgSQL function's
# statement in the context and a dynamic statement as internal query,
# called by statements that name no key word; an index expression's
# statement in the context of autovacuum's failed analyze; the postmaster's
# report of a backend killed with kill -9 while it ran a statement with a
# key.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = PostgreSQL::Test::Cluster->new('secret_log');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'flake'
log_statement = 'all'
log_min_duration_statement = 0
log_min_error_statement = debug5
log_parameter_max_length = -1
log_parameter_max_length_on_error = -1
autovacuum_naptime = 1
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake; CREATE ROLE app');

# a distinct key in each statement, so that any of them can be found
my $n = 0;
my @keys;
sub key
{
	push @keys, sprintf('%08x', 0x5ec0de00 + ++$n) . 'a1b2c3d4e5f60718293a4b5c';
	return $keys[-1];
}

my @statements = (
	# refused
	"ALTER SYSTEM SET flake.randflake_secret = ' " . key() . "'",
	"ALTER SYSTEM SET \"flake\".RANDFLAKE_SECRET TO '" . key() . "x'",
	"SET flake.randflake_secret = '" . key() . "'",
	"SELECT set_config('flake.randflake_secret', '" . key() . "', false)",
	"ALTER DATABASE postgres SET flake.randflake_secret = '" . key() . "'",
	"ALTER ROLE app SET flake.randflake_secret = '" . key() . "'",
	"ALTER SYSTEM SET flake.randflake_secret = 9" . key(),
	"SELECT set_config('flake.randflake_secret', d" . key() . ", false)",
	"SELECT set_config('flake.randflake_secret', D" . uc(key()) . ", false)",
	"DO \$\$BEGIN PERFORM set_config('flake.randflake_secret', '" . key() . "', false); END\$\$",
	"PREPARE p AS SELECT set_config('flake.randflake_secret', \$1, false); EXECUTE p('" . key() . "')",
	"SELECT * FROM randflake_decode(1, decode('" . key() . "', 'hex')) WHERE nonsense",
	# accepted
	"SELECT * FROM randflake_decode(1, decode('" . key() . "', 'hex'))",
	"ALTER SYSTEM SET flake.randflake_secret = '" . key() . "'",
);
foreach my $sql (@statements)
{
	$node->psql('postgres', $sql);
}
# the extended protocol: the key as a bound parameter
my $script = $node->basedir . '/set.sql';
append_to_file($script, "SELECT set_config('flake.randflake_secret', :key, false);\n");
my $bound = key();
$node->command_fails([ 'pgbench', '-n', '-M', 'extended', '-t', '1', '-D', "key=$bound", '-f', $script, 'postgres' ],
	'pgbench runs its statement, which fails');
$node->safe_psql('postgres', "SELECT 'an ordinary statement', randflake_encode(42)");
$node->reload;
$node->poll_query_until('postgres', 'SHOW flake.randflake_secret', $keys[-2])
  or die 'the secret set by ALTER SYSTEM did not arrive';

# statements logged for their duration only
$node->append_conf('postgresql.conf', "log_statement = 'none'\n");
$node->reload;
$node->poll_query_until('postgres', 'SHOW log_statement', 'none') or die 'reload failed';
$node->psql('postgres', "ALTER SYSTEM SET flake.randflake_secret = '" . key() . "'");
$node->safe_psql('postgres', "SELECT 'another ordinary statement'");

# EXECUTE of a statement prepared with a key word (issue 27): the key is in
# EXECUTE's arguments, which the prepared text does not hold; logged for its
# duration, by the STATEMENT line of its error or timeout (also with the
# default log_min_error_statement), by EXPLAIN and CREATE TABLE AS, in a
# parameter's error with a position, and run by PL/pgSQL's dynamic EXECUTE
# (context and internal query).  Once the statements are deallocated,
# statements that say execute are logged as usual again.
my @executed = map { key() } 1 .. 8;
$node->psql('postgres', qq{
SELECT 'execute me: nothing is prepared yet';
PREPARE keyed(bytea, int) AS SELECT randflake_decode(1, \$1), 1 / \$2;
PREPARE keyed_sleep(bytea) AS SELECT randflake_decode(1, \$1), pg_sleep(5);
SELECT 'ordinary while keyed statements are prepared';
EXECUTE keyed('\\x$executed[0]', 1);
EXECUTE keyed('\\x$executed[1]', 0);
SET statement_timeout = '100ms';
EXECUTE keyed_sleep('\\x$executed[2]');
RESET statement_timeout;
EXPLAIN ANALYZE EXECUTE keyed('\\x$executed[3]', 1);
CREATE TABLE keyed_copy AS EXECUTE keyed('\\x$executed[4]', 0);
EXECUTE keyed('\\x$executed[5]zz', 1);
EXECUTE keyed('\\x$executed[6]', 1, 2);
DO \$\$BEGIN EXECUTE 'EXECUTE keyed(''\\x$executed[7]'', 0)'; END\$\$;
DEALLOCATE keyed;
DEALLOCATE keyed_sleep;
SELECT 'execute me: nothing is prepared any more';
}, on_error_stop => 0);
# the extended protocol: the key as a bound parameter of a named prepared
# statement, whose error logs the parameters (log_parameter_max_length_on_error)
my $prepared_script = $node->basedir . '/decode.sql';
append_to_file($prepared_script, "SELECT randflake_decode(1, :key::bytea), 1 / :zero;\n");
my $bound_prepared = key();
$node->command_fails([ 'pgbench', '-n', '-M', 'prepared', '-t', '1', '-D', "key=\\x$bound_prepared",
	'-D', 'zero=0', '-f', $prepared_script, 'postgres' ],
	'pgbench runs its prepared statement, which fails');
# a statement prepared through the protocol (a driver's Parse message, no
# PREPARE), then an EXECUTE with a syntax error that quotes the key (issue 35)
my $protocol_script = $node->basedir . '/protocol.sql';
append_to_file($protocol_script, "SELECT randflake_decode(1, :key::bytea);\nEXECUTE P_0('\\x" . key() . "'\n");
$node->command_fails([ 'pgbench', '-n', '-M', 'prepared', '-t', '1', '-D', 'key=\\x' . ('00' x 16),
	'-f', $protocol_script, 'postgres' ],
	'pgbench prepares a statement with a key word, then fails to prepare an EXECUTE');

# a key in the detail of an error: the value a statement with a key word
# violates a unique index with
$node->safe_psql('postgres', 'CREATE TABLE keys (k bytea PRIMARY KEY)');
my $violated = key();
$node->psql('postgres',
	"INSERT INTO keys SELECT '\\x$violated'::bytea WHERE randflake_key_fingerprint('\\x$violated'::bytea) IS NOT NULL")
  foreach 1 .. 2;

# keys in functions' statements, reported in the context and as internal
# query of errors of statements that name no key word
my $in_context = key();
my $in_internal_query = key();
$node->safe_psql('postgres', qq{
	CREATE FUNCTION keyed_context() RETURNS void LANGUAGE plpgsql AS \$\$
	BEGIN
		PERFORM randflake_decode(1, '\\x$in_context'::bytea), 1 / 0;
	END \$\$;
	CREATE FUNCTION keyed_internal_query() RETURNS void LANGUAGE plpgsql AS \$\$
	BEGIN
		EXECUTE 'SELECT randflake_decode(1, ''\\x$in_internal_query''::bytea) nonsense nonsense';
	END \$\$;
});
$node->psql('postgres', 'SELECT keyed_context()');
$node->psql('postgres', 'SELECT keyed_internal_query()');

# autovacuum: analyzing an expression index runs a function whose statement
# holds a key and fails once the table analyze_now has a row
my $in_autovacuum = key();
$node->safe_psql('postgres', qq{
	CREATE TABLE analyze_now (b bool);
	CREATE FUNCTION keyed_index(n int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS \$\$
	BEGIN
		IF EXISTS (SELECT FROM public.analyze_now) THEN
			PERFORM public.randflake_decode(1, '\\x$in_autovacuum'::bytea), sqrt(-n);
		END IF;
		RETURN n;
	END \$\$;
	CREATE TABLE analyzed (n int) WITH (autovacuum_enabled = false);
	CREATE INDEX ON analyzed (keyed_index(n));
	INSERT INTO analyzed SELECT generate_series(1, 1000);
	INSERT INTO analyze_now VALUES (true);
	ALTER TABLE analyzed SET (autovacuum_enabled = true);
});
$node->wait_for_log(qr/ERROR:  cannot take square root of a negative number/);
$node->safe_psql('postgres', 'ALTER TABLE analyzed SET (autovacuum_enabled = false)');

# the postmaster's report of a crashed backend, with what it was running
my $crashed = key();
my ($out, $err) = ('', '');
my $victim = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
	  "SELECT pg_sleep(30), (randflake_decode(12345, '\\x$crashed')).ts" ],
	'>', \$out, '2>', \$err);
my $running = q{SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%'};
$node->poll_query_until('postgres', "SELECT EXISTS ($running)") or die 'the statement did not start';
my $pid = $node->safe_psql('postgres', $running);
kill 'KILL', $pid;
$victim->finish;
# "server process" before PostgreSQL 18, "client backend" from 18 on
my $crash_report = qr/LOG:  (?:server process|client backend) \(PID $pid\) was terminated by signal 9: Killed/;
$node->wait_for_log($crash_report);
back_after_crash($node);

my $log = slurp_file($node->logfile);
foreach my $key (@keys)
{
	# also a piece of it, as a syntax error might quote
	my $piece = substr($key, 0, 12);
	unlike($log, qr/$piece/i, "key $key is not in the log");
}
like($log, qr/LOG:  statement: SELECT 'an ordinary statement', randflake_encode\(42\)/,
	'an ordinary statement is logged');
like($log, qr/LOG:  duration: [0-9.]+ ms  statement: SELECT 'another ordinary statement'/,
	'and for its duration');
like($log, qr/LOG:  duration: [0-9.]+ ms  statement: <hidden by flake: it mentions a Randflake key>/,
	'statements with a key are logged for their duration as hidden');
like($log, qr/ERROR:  invalid value for parameter "flake.randflake_secret"/, 'errors are logged');
like($log, qr/LOG:  statement: <hidden by flake: it mentions a Randflake key>/,
	'statements with a key are logged as hidden');
like($log, qr/LOG:  execute <unnamed>: <hidden by flake: it mentions a Randflake key>\n[^\n]*DETAIL:  <hidden/,
	'an extended-protocol statement and its parameters are hidden');
like($log, qr/ERROR:  column "\.\.\." does not exist/, 'a piece of the statement quoted in an error is hidden');
unlike($log, qr/STATEMENT:  .*randflake/i, 'no STATEMENT line shows such a statement');
like($log, qr/statement: SELECT 'execute me: nothing is prepared yet'/,
	'a statement that says execute is logged in a session without keyed prepared statements');
like($log, qr/statement: SELECT 'ordinary while keyed statements are prepared'/,
	'and other statements while it has some');
like($log, qr/statement: SELECT 'execute me: nothing is prepared any more'/,
	'and again once they are deallocated');
like($log, qr/ERROR:  canceling statement due to statement timeout\n(?![^\n]*STATEMENT)/,
	'the timeout of an EXECUTE is logged without its statement');
like($log, qr/ERROR:  invalid hexadecimal digit: "\.\.\." at character \d+\n(?![^\n]*STATEMENT)/,
	'an EXECUTE argument\'s error with a position is logged without the argument or the statement');
like($log, qr/ERROR:  duplicate key value violates unique constraint "keys_pkey"\n[^\n]*DETAIL:  <hidden/,
	'the detail of an error in a statement with a key is hidden');
like($log, qr/ERROR:  division by zero\n[^\n]*CONTEXT:  <hidden/, 'a context with a key is hidden');
like($log, qr/ERROR:  syntax error at or near "\.\.\."\n[^\n]*QUERY:  <hidden/,
	'an internal query with a key is hidden');
like($log, qr/ERROR:  cannot take square root of a negative number\n[^\n]*CONTEXT:  <hidden/,
	'so is the context of autovacuum\'s error');
like($log, qr/$crash_report\n[^\n]*DETAIL:  <hidden/,
	'the postmaster reports the crash without the statement with a key');

$node->stop;
done_testing();
