# The SQL edition under concurrent sessions: 16 sessions take 100,000
# ids each from flake_next() at once (pgbench), and 4 more share the
# explicit node 7 meanwhile.  No id repeats, and each session's ids
# increase.  FLAKE_SQL_EDITION_IDS sets the ids a session takes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle) = sql_edition_scripts();
my $node = sql_edition_server('sql_edition_concurrency', $install, "max_connections = 40\n");
sql_edition_install_tle($node, $tle);
my $per_session = $ENV{FLAKE_SQL_EDITION_IDS} // 100000;

$node->safe_psql('postgres', q{
	CREATE UNLOGGED TABLE ids (session int NOT NULL, n int NOT NULL, id bigint NOT NULL);
	GRANT INSERT ON ids TO PUBLIC;
});
my $dir = PostgreSQL::Test::Utils::tempdir();
my %scripts = (
	default => "INSERT INTO ids SELECT :client_id, g, flake_next() FROM generate_series(1, $per_session) g;\n",
	explicit => "INSERT INTO ids SELECT 100 + :client_id, g, flake_next(7) FROM generate_series(1, "
	  . int($per_session / 10) . ") g;\n",
);
my @runs;
for my $kind (sort keys %scripts)
{
	my $file = "$dir/$kind.sql";
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $scripts{$kind};
	close $fh;
	my $clients = $kind eq 'default' ? 16 : 4;
	my ($out, $err) = ('', '');
	push @runs, [ $kind, \$out, \$err, IPC::Run::start(
		[ $node->installed_command('pgbench'), '-n', '-c', $clients, '-j', $clients, '-t', '1', '-f', $file,
		  '-U', $sql_edition_owner, '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$out, '2>', \$err) ];
}
for my $run (@runs)
{
	my ($kind, $out, $err, $h) = @$run;
	$h->finish;
	is($h->result(0), 0, "pgbench of the $kind sessions ran") or diag $$err;
}
my $explicit = 4 * int($per_session / 10);
is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT id), count(DISTINCT session),
			count(*) FILTER (WHERE flake_node(id) = 7) FROM ids}),
	join('|', 16 * $per_session + $explicit, 16 * $per_session + $explicit, 20, $explicit),
	'16 sessions on flake_next() and 4 on flake_next(7): no id repeated');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id <= lag(id) OVER (PARTITION BY session ORDER BY n) AS back FROM ids) s
		WHERE back}),
	'0', "each session's ids increase");
is($node->safe_psql('postgres', q{
	SELECT bool_and(flake_timestamp(id) BETWEEN now() - interval '10 min' AND clock_timestamp() + interval '2 s') FROM ids}),
	't', 'every id has a timestamp of now, at most max_borrow ahead');

$node->stop;
done_testing();
