# Statements that carry a Randflake key never put it in the server log,
# refused or accepted, at the most talkative logging settings: every
# statement, every duration, the STATEMENT line of every message, bound
# parameters of errors.  Ordinary statements are still logged.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('secret_log');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'flake'
log_statement = 'all'
log_min_duration_statement = 0
log_min_error_statement = debug5
log_parameter_max_length = -1
log_parameter_max_length_on_error = -1
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

$node->stop;
done_testing();
