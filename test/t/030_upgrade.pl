# An install of each released version (1.0 to 1.4) updated with ALTER
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

my @released = ('1.0', '1.1', '1.2', '1.3', '1.4');
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
like($fresh_catalog, qr/^function flake_internal\.migrate_as_owner\(regclass,text,boolean\): CREATE OR REPLACE FUNCTION flake_internal\./m,
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

# Default privileges of the role that installs or updates the extension
# (issue 27): ALTER DEFAULT PRIVILEGES ... GRANT ALL ON TABLES, FUNCTIONS,
# SCHEMAS and TYPES gave another role what flake gives none but its owner:
# writing flake_origin (its DELETE drops the upgrade protection), creating
# functions in flake_internal beside the helpers, and the functions and
# view revoked from PUBLIC.  A fresh install under them has the privileges
# of one without, and after an update of 1.2 installed under them the role
# has none of those either.
my $beyond_public = q{
	SELECT concat_ws(', ',
		CASE WHEN has_table_privilege('app', 'flake_internal.flake_origin', 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
			 THEN 'writes flake_origin' END,
		CASE WHEN has_table_privilege('app', 'flake_leases', 'SELECT') THEN 'reads flake_leases' END,
		CASE WHEN has_schema_privilege('app', 'flake_internal', 'CREATE') THEN 'creates in flake_internal' END,
		(SELECT string_agg(f, ', ' ORDER BY f) FROM unnest(ARRAY['randflake_decode(bigint)', 'randflake_key_fingerprint()',
				'flake_lease_info()', 'flake_rekey_claim(regclass,name,boolean)', 'flake_citus_check()']) f
		 WHERE has_function_privilege('app', f, 'EXECUTE')))};
$node->safe_psql('postgres', 'CREATE ROLE app');
foreach my $version (undef, '1.2')
{
	my $db = defined $version ? 'defaults_1_2' : 'defaults_fresh';
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO app;
		ALTER DEFAULT PRIVILEGES GRANT ALL ON FUNCTIONS TO app;
		ALTER DEFAULT PRIVILEGES GRANT ALL ON SCHEMAS TO app;
		ALTER DEFAULT PRIVILEGES GRANT ALL ON TYPES TO app;
		ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT INSERT, DELETE ON TABLES TO PUBLIC;
	} . (defined $version ? "CREATE EXTENSION flake VERSION '$version'; ALTER EXTENSION flake UPDATE"
		: 'CREATE EXTENSION flake'));
	is($node->safe_psql($db, $beyond_public), '',
		(defined $version ? "updated from $version" : 'installed') . ' under default privileges: the role they grant to has none of the privileges flake keeps');
	# (an ACL that equals the built-in default is written out)
	(my $privileges = $node->safe_psql($db, $catalog)) =~ s/acl \{=([XU])\/(\w+),\2=\1\/\2\}$/acl default/mg;
	is($privileges, $fresh_catalog, 'installed under default privileges: the privileges of an install without them')
	  unless defined $version;
}

# randflake_decode(bigint, bytea) is stable from 1.3, so that no index
# keeps a key, which pg_indexes shows every role: an index (or generated
# column) of 1.2 that uses it would not be restored from a dump, so the
# update refuses, naming it, until it is dropped
$node->safe_psql('postgres', 'CREATE DATABASE keyed');
$node->safe_psql('keyed', q{
	CREATE EXTENSION flake VERSION '1.2';
	CREATE TABLE invites (id bigint);
	CREATE INDEX invites_made ON invites (((randflake_decode(id, '\x000102030405060708090a0b0c0d0e0f'::bytea)).ts));
});
my ($ret, $stdout, $stderr) = $node->psql('keyed', 'ALTER EXTENSION flake UPDATE');
like($stderr, qr/ERROR:  randflake_decode\(bigint, bytea\) is used where only immutable functions may be: index invites_made\n.*\n.*HINT:  Drop these objects/,
	'an index of 1.2 on randflake_decode(id, key): the update refuses, naming it');
$node->safe_psql('keyed', 'DROP INDEX invites_made; ALTER EXTENSION flake UPDATE');
is($node->safe_psql('keyed', q{SELECT extversion FROM pg_extension WHERE extname = 'flake'}),
	$current, 'once it is dropped, the update goes through');

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

# A dump of a database at 1.3 names public.flake_origin, which 1.4 moved
# to flake_internal: restored into a database where CREATE EXTENSION flake
# VERSION '1.3' ran first (the README's step), then updated, the dumped
# server is in flake_internal.flake_origin.
$node->safe_psql('postgres', 'CREATE DATABASE dumped_1_3');
$node->safe_psql('dumped_1_3', q{CREATE EXTENSION flake VERSION '1.3'; INSERT INTO flake_origin VALUES (12345)});
my $dump_1_3 = $node->basedir . '/dumped_1_3.sql';
$node->command_ok([ 'pg_dump', '-f', $dump_1_3, '-d', $node->connstr('dumped_1_3') ], 'pg_dump of a database at 1.3');
$node->safe_psql('postgres', 'CREATE DATABASE restored_1_3');
$node->safe_psql('restored_1_3', q{CREATE EXTENSION flake VERSION '1.3'});
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $dump_1_3, '-d', $node->connstr('restored_1_3') ],
	'it restores where the extension was created at 1.3 first');
$node->safe_psql('restored_1_3', 'ALTER EXTENSION flake UPDATE');
is($node->safe_psql('restored_1_3', 'SELECT count(*) FROM flake_internal.flake_origin WHERE system_identifier = 12345'),
	'1', 'and, updated, names the dumped server');

$node->stop;
done_testing();
