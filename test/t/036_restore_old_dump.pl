# A dump of a database at 1.2 or 1.3 loads flake_origin's rows with COPY
# <extension's schema>.flake_origin, where the table was before 1.4.
# Restored (plain with psql, custom with pg_restore) into another server,
# whose CREATE EXTENSION makes the current version, the rows reach
# flake_internal.flake_origin, and flake refuses to generate there (55000)
# as in a database restored from a dump of 1.4: on the code before, the
# COPY failed, the rows were lost, and the restored database issued ids
# again.  The COPY still needs the privileges of the table: a role that is
# not its owner is refused.  A user's own table named flake_origin in the
# extension's schema keeps its rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $old = flake_cluster('old');
$old->start;
my $old_system = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my $dir = $old->basedir;

# database => [version, schema of the extension]; 1.4 is the comparison
my %databases = (
	v1_2 => [ '1.2', 'public' ],
	v1_3 => [ '1.3', 'public' ],
	v1_3_ext => [ '1.3', 'ext' ],
	v1_4 => [ '1.4', 'public' ]);
foreach my $db (sort keys %databases)
{
	my ($version, $schema) = @{ $databases{$db} };
	$old->safe_psql('postgres', "CREATE DATABASE $db");
	$old->safe_psql($db, qq{
		CREATE SCHEMA IF NOT EXISTS $schema;
		CREATE EXTENSION flake SCHEMA $schema VERSION '$version';
		CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT $schema.flake_next());
		INSERT INTO ids SELECT FROM generate_series(1, 10);
	});
	$old->command_ok([ 'pg_dump', '-f', "$dir/$db.sql", '-d', $old->connstr($db) ], "pg_dump of $db");
	$old->command_ok([ 'pg_dump', '-Fc', '-f', "$dir/$db.dump", '-d', $old->connstr($db) ],
		"pg_dump -Fc of $db");
}
like(slurp_file("$dir/v1_3_ext.sql"), qr/^COPY ext\.flake_origin /m,
	'a dump of 1.3 loads the rows into <extension schema>.flake_origin');

my ($current) = slurp_file('flake.control') =~ /^default_version = '([^']+)'/m;
my $new = flake_cluster('new');
$new->start;
my $new_system = $new->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
$new->safe_psql('postgres', 'CREATE ROLE alice LOGIN');

foreach my $db (sort keys %databases)
{
	my $schema = $databases{$db}[1];
	foreach my $format ('sql', 'dump')
	{
		my $restored = "${db}_$format";
		$new->safe_psql('postgres', "CREATE DATABASE $restored; GRANT CREATE ON DATABASE $restored TO alice");
		$new->command_ok(
			$format eq 'sql'
			? [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dir/$db.sql", '-d', $new->connstr($restored) ]
			: [ 'pg_restore', '--exit-on-error', '-d', $new->connstr($restored), "$dir/$db.dump" ],
			"$restored: the dump restores");
		is( $new->safe_psql($restored, q{
				SELECT extversion FROM pg_extension WHERE extname = 'flake';
				SELECT string_agg(system_identifier::text, ' ' ORDER BY system_identifier <> }
				  . $new_system . q{) FROM flake_internal.flake_origin}),
			"$current\n$new_system $old_system", "$restored: flake_origin names the new and the old server");
		my ($ret, $stdout, $stderr) = $new->psql($restored, "\\set VERBOSITY verbose\nSELECT $schema.flake_next()");
		like($stderr, qr/ERROR:  55000: this database holds ids of another server/,
			"$restored: generating is refused");

		# not its owner: refused on the table, no row added
		($ret, $stdout, $stderr) = $new->psql($restored,
			"COPY $schema.flake_origin (system_identifier) FROM stdin;\n1\n\\.\n",
			extra_params => [ '-U', 'alice' ]);
		like($stderr, qr/ERROR:  permission denied for table flake_origin/,
			"$restored: a role not the owner may not COPY into flake_origin");
	}
}

# a user's table of that name in the extension's schema keeps its rows
$new->safe_psql('v1_3_sql', q{
	CREATE TABLE public.flake_origin (system_identifier bigint);
	COPY public.flake_origin FROM stdin;
7
\.
});
is( $new->safe_psql('v1_3_sql', q{
		SELECT count(*) FROM public.flake_origin;
		SELECT count(*) FROM flake_internal.flake_origin}),
	"1\n2", 'a COPY into a user\'s table public.flake_origin stays there');

$old->stop;
$new->stop;
done_testing();
