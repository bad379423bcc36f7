# An install of each released version (1.0, 1.1, 1.2) updated with ALTER
# EXTENSION flake UPDATE has exactly the objects of a fresh install of the
# current version.
#
# pg_dump leaves an extension's objects out of an ordinary dump; in
# --binary-upgrade mode it writes every member object, which is what is
# compared here (without the lines that pin object oids, which differ).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$node->start;

my ($current) = slurp_file('flake.control') =~ /^default_version = '([^']+)'/m;
ok($current, "the control file names the current version ($current)");
isnt($current, '1.0', 'the current version is not 1.0');

my @released = ('1.0', '1.1', '1.2');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION flake');
foreach my $version (@released)
{
	(my $db = "updated_$version") =~ s/\./_/;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{CREATE EXTENSION flake VERSION '$version'});
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'flake'}),
		$version, "version $version installs");
	is( $node->safe_psql($db, q{
			SELECT flake_next() > 0;
			SELECT count(*) FROM flake_leases WHERE pid = pg_backend_pid()}),
		"t\n1", "the flake_leases of version ${version} works with the current library");
	$node->safe_psql($db, 'ALTER EXTENSION flake UPDATE');
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'flake'}),
		$current, "ALTER EXTENSION flake UPDATE from $version reaches $current");
}

sub members
{
	my ($db) = @_;
	my $dump = $node->basedir . "/$db.sql";
	$node->command_ok(
		[ 'pg_dump', '--schema-only', '--binary-upgrade', '--no-owner', '-f', $dump,
		  '-d', $node->connstr($db) ],
		"pg_dump --schema-only --binary-upgrade of $db");
	# oids differ (also those of the extension's configuration tables), and
	# so do the random key of pg_dump's \restrict lines and the tables'
	# frozen transaction ids
	my @lines = grep { !/binary_upgrade_set_next_|^\\(un)?restrict |^SET relfrozenxid = / }
	  split /\n/, slurp_file($dump);
	s/(binary_upgrade_create_empty_extension\('flake', [^{]*)'\{[0-9,]*\}'/$1'{oids}'/ for @lines;
	my $text = join("\n", @lines) . "\n";
	open my $fh, '>', "$dump.members" or die "could not write $dump.members: $!";
	print $fh $text;
	close $fh;
	return $text;
}

my $fresh = members('fresh');
like($fresh, qr/CREATE FUNCTION public\.flake_next\(\)/, 'the dump lists the extension\'s objects');

# The same comparison through the catalogs: every member with its
# definition and its privileges (the schema flake_internal's USAGE, the
# functions' EXECUTE, the view's SELECT).
my $catalog = q{
	SELECT string_agg(pg_describe_object(classid, objid, 0) || ': ' ||
					  coalesce((SELECT pg_get_functiondef(oid) FROM pg_proc
								   WHERE classid = 'pg_proc'::regclass AND oid = objid
									 AND prokind <> 'a'), '') || ' acl ' ||
					  coalesce((SELECT proacl::text FROM pg_proc WHERE classid = 'pg_proc'::regclass AND oid = objid),
							   (SELECT nspacl::text FROM pg_namespace WHERE classid = 'pg_namespace'::regclass AND oid = objid),
							   (SELECT relacl::text FROM pg_class WHERE classid = 'pg_class'::regclass AND oid = objid),
							   (SELECT typacl::text FROM pg_type WHERE classid = 'pg_type'::regclass AND oid = objid),
							   'default'),
					  E'\n' ORDER BY pg_describe_object(classid, objid, 0))
	FROM pg_depend
	WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'flake')};
my $fresh_catalog = $node->safe_psql('fresh', $catalog);
like($fresh_catalog, qr/^schema flake_internal: +acl \{[^}]*=U\/[^}]*\}$/m, 'the catalogs list flake_internal, with USAGE for PUBLIC');
like($fresh_catalog, qr/^function flake_internal\.flake_migrate_as_owner\(regclass,text,boolean\): CREATE OR REPLACE FUNCTION flake_internal\./m,
	'and the helpers in it');

foreach my $version (@released)
{
	(my $db = "updated_$version") =~ s/\./_/;
	my $updated = members($db);
	if ($fresh eq $updated)
	{
		pass("an updated $version install has the same objects as a fresh install");
	}
	else
	{
		my ($diff) = run_command([ 'diff', '-u', map { $node->basedir . "/$_.sql.members" } 'fresh', $db ]);
		fail("an updated $version install has the same objects as a fresh install");
		diag($diff);
	}
	is($node->safe_psql($db, $catalog), $fresh_catalog,
		"updated from $version: the same member objects with the same function definitions");
}

# An online migration left unfinished by 1.2 keeps its triggers through the
# update: the upgrade replaces the two trigger functions, never drops them.
$node->safe_psql('postgres', 'CREATE DATABASE unfinished');
$node->safe_psql('unfinished', q{
	CREATE EXTENSION flake VERSION '1.2';
	CREATE TABLE items (id serial PRIMARY KEY);
	CREATE TABLE items__flake_log (id integer);
	-- marked as its log, as 1.2's create step marks it
	DO $$ BEGIN EXECUTE format('COMMENT ON TABLE items__flake_log IS %L', 'flake_migrate_online: the log of ' || 'items'::regclass::oid); END $$;
	CREATE TRIGGER items__flake_log AFTER INSERT OR UPDATE OR DELETE ON items
		FOR EACH ROW EXECUTE FUNCTION flake_internal.flake_migrate_online_log('public.items__flake_log', 'id');
	CREATE TRIGGER items__flake_truncate BEFORE TRUNCATE ON items
		FOR EACH STATEMENT EXECUTE FUNCTION flake_internal.flake_migrate_online_no_truncate()});
$node->safe_psql('unfinished', 'ALTER EXTENSION flake UPDATE');
is( $node->safe_psql('unfinished', q{
		INSERT INTO items DEFAULT VALUES;
		SELECT count(*) FROM items__flake_log;
		SELECT string_agg(tgname, ' ' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'items'::regclass}),
	"1\nitems__flake_log items__flake_truncate",
	'the triggers of an online migration left unfinished by 1.2 survive the update and still log');

$node->stop;
done_testing();
