# Statements of megabytes that name a key word and fail far into them
# (issue 27).  The log filter runs while an error is reported, with
# interrupts held; a search in it that was quadratic in the statement's
# length made a 2 MB statement take minutes in a backend that neither
# pg_cancel_backend nor pg_terminate_backend could stop.  Its work is now
# linear on every path: a syntax error with a cursor position (at a long
# token, or at a literal holding a double quote), an invalid literal and a
# missing column with one, an internal query's syntax error, and statement
# and duration logging of a statement that succeeds.  Each completes, the
# log holds its filtered lines and no key, and a backend that runs such
# statements one after another honours a cancel and a terminate.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = flake_cluster('secret_log_long', q{
log_statement = 'all'
log_min_duration_statement = 0
log_min_error_statement = debug5
log_parameter_max_length_on_error = -1
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

my $n = 0;
my @keys;
sub key
{
	push @keys, sprintf('%08x', 0x10ade00 + ++$n) . 'f1e2d3c4b5a69788796a5b4c';
	return $keys[-1];
}

# 2 MB of one letter or digit, twice in most statements: the filter once
# compared the token an error quotes with the statement at each of its
# positions, as far as they matched
my $half = 2 * 1024 * 1024;
my $run = 'a' x $half;
my $ones = '1' x $half;

# each statement, and the line its error (or its success) leaves in the log
my @statements = (
	[ 'a syntax error far in, at a long token',
	  "SELECT randflake_key_fingerprint('\\x" . key() . "'::bytea) /* $ones */ ${ones}2",
	  qr/ERROR:  syntax error at or near "\.\.\." at character \d{7}\n/ ],
	[ 'a syntax error far in, at a literal holding a double quote',
	  "SELECT randflake_key_fingerprint('\\x" . key() . "'::bytea) IS NULL /* $run */ '\"" . key() . "'",
	  qr/ERROR:  syntax error at or near "\.\.\." at character \d{7}\n/ ],
	[ 'an invalid literal far in',
	  "SELECT randflake_decode(1, '\\x" . key() . "'::bytea), '${run}b', '$run'::int",
	  qr/ERROR:  invalid input syntax for type integer: "\.\.\." at character \d{7}\n/ ],
	[ 'a missing column far in',
	  "SELECT randflake_decode(1, '\\x" . key() . "'::bytea), length('$run') WHERE nonsense",
	  qr/ERROR:  column "\.\.\." does not exist at character \d{7}\n/ ],
	[ 'an internal query with a syntax error far in',
	  "DO \$\$BEGIN EXECUTE 'SELECT randflake_key_fingerprint(''\\x" . key()
	  . "''::bytea) ' || repeat('a', $half) || ' ' || repeat('a', $half) || 'b'; END\$\$",
	  qr/ERROR:  syntax error at or near "\.\.\."\n[^\n]*QUERY:  <hidden by flake[^\n]*\n[^\n]*CONTEXT:  <hidden by flake/ ],
	[ 'a statement that succeeds, logged by log_statement',
	  "SELECT randflake_decode(1, '\\x" . key() . "'::bytea) IS NOT NULL, length('$run$run')",
	  qr/LOG:  statement: <hidden by flake: it mentions a Randflake key>\n[^\n]*LOG:  duration: [0-9.]+ ms\n/ ],
	[ 'a statement that succeeds, logged for its duration',
	  "SET log_statement = 'none';\nSELECT randflake_decode(1, '\\x" . key() . "'::bytea) IS NOT NULL, length('$run$run')",
	  qr/LOG:  duration: [0-9.]+ ms  statement: <hidden by flake: it mentions a Randflake key>\n/ ],
);

foreach my $case (@statements)
{
	my ($what, $sql, $logged) = @$case;
	my $offset = -s $node->logfile;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	my $succeeds = $what =~ /succeeds/;
	is($ret, $succeeds ? 0 : 3, "$what: the statement completes" . ($succeeds ? '' : ', with its error'));
	like(substr(slurp_file($node->logfile), $offset), $logged, "$what: the log holds its filtered line");
}

# A backend that runs them one after another, as an attacker would, with a
# short statement between them for a cancel to land in.  A feeder process
# writes the statements to psql until psql goes; psql writes to files,
# which need no pumping.
my $stream = $node->basedir . '/stream.sql';
append_to_file($stream, "$statements[0][1];\n$statements[2][1];\nSELECT randflake_decode(1, '\\x"
	. key() . "'::bytea), pg_sleep(0.2);\n");
my $feeder = q{open(my $f, '<', $ARGV[0]) or die; local $/; my $s = <$f>; $SIG{PIPE} = sub { exit 0 }; print $s while 1;};
my $busy = IPC::Run::start(
	[ $^X, '-e', $feeder, $stream ], '|',
	[ 'psql', '-X', '-d', $node->connstr('postgres') . ' application_name=busy' ],
	'>', $node->basedir . '/busy.out', '2>', $node->basedir . '/busy.err');
my $which = q{SELECT pid FROM pg_stat_activity WHERE application_name = 'busy'};
$node->poll_query_until('postgres', "SELECT EXISTS ($which AND state = 'active')")
  or die 'the busy session did not start';
my $pid = $node->safe_psql('postgres', $which);

# Wait until a statement is refused by a cancel: one may land while an
# error is being reported, which PostgreSQL then drops, so ask again.
my $canceled = qr/\[$pid\] [^\n]*ERROR:  canceling statement due to user request\n/;
my $honoured = 0;
for (my $waited = 0; $waited < $PostgreSQL::Test::Utils::timeout_default * 10; $waited++)
{
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	if (slurp_file($node->logfile) =~ $canceled)
	{
		$honoured = 1;
		last;
	}
	usleep(100_000);
}
ok($honoured, 'pg_cancel_backend of a backend busy with such statements is honoured');
# and the session goes on to its next statements
my $offset = -s $node->logfile;
$node->wait_for_log(qr/\[$pid\] [^\n]*ERROR:  syntax error at or near "\.\.\."/, $offset);

$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres', "SELECT NOT EXISTS ($which)"),
	'pg_terminate_backend of a backend busy with such statements is honoured');
$busy->finish;
like(slurp_file($node->logfile), qr/\[$pid\] [^\n]*FATAL:  terminating connection due to administrator command/,
	'the server logs why');

my $log = slurp_file($node->logfile);
foreach my $key (@keys)
{
	my $piece = substr($key, 0, 12);
	unlike($log, qr/$piece/i, "key $key is not in the log");
}
unlike($log, qr/STATEMENT:  .*randflake/i, 'no STATEMENT line shows such a statement');

$node->stop;
done_testing();
