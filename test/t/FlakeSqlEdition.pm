# What the SQL edition's tests (090-094) share: its two scripts (make
# sql-edition), and servers where the C edition is neither installed nor
# loaded: of the PostgreSQL installation FLAKE_PG_TLE_INSTALL names (one
# with pg_tle and without flake: tools/pg_tle makes it, and make test sets
# it), with pg_tle preloaded.  Without one the tests skip, saying what to
# install.
package FlakeSqlEdition;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;

our @EXPORT = qw(sql_edition_required sql_edition_scripts sql_edition_server
  sql_edition_install_tle sql_edition_install_plain $sql_edition_owner);

# The role that installs the edition: not a superuser, as on a managed
# service, granted pgtle_admin.
our $sql_edition_owner = 'app';

# The installation of FLAKE_PG_TLE_INSTALL, or skip_all saying what is missing.
sub sql_edition_required
{
	my $install = $ENV{FLAKE_PG_TLE_INSTALL} // '';
	my $why;
	if ($install eq '')
	{
		$why = 'FLAKE_PG_TLE_INSTALL is not set';
	}
	elsif (!-x "$install/bin/postgres")
	{
		$why = "FLAKE_PG_TLE_INSTALL ($install) has no bin/postgres";
	}
	else
	{
		my $share = `"$install/bin/pg_config" --sharedir`;
		chomp $share;
		$why = "$install has no pg_tle" unless -e "$share/extension/pg_tle.control";
		$why = "$install has the C edition of flake installed: the SQL edition needs one without"
		  if -e "$share/extension/flake.control";
	}
	plan skip_all => "pg_tle is not available ($why): tools/pg_tle builds a PostgreSQL with pg_tle "
	  . "from its source in ../shared/pg_tle and prints its directory, for FLAKE_PG_TLE_INSTALL "
	  . "(make test does both)"
	  if $why;
	return $install;
}

# The two scripts, made by make sql-edition's tool into a directory of the
# test: (pg_tle script, plain script).
sub sql_edition_scripts
{
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my $out = `"$FindBin::RealBin/../../tools/sql-edition" "$dir"`;
	die "tools/sql-edition failed" if $?;
	my @paths = split /\n/, $out;
	die "tools/sql-edition printed no two paths" unless @paths == 2 && -e $paths[0] && -e $paths[1];
	return @paths;
}

# A started server of the installation without flake, pg_tle preloaded
# and created, and the owner role, which may create schemas in postgres.
# $before_start, if given, is called with the server before it starts (to
# put it on a faked clock: FlakeClock).
sub sql_edition_server
{
	my ($name, $install, $conf, $before_start) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name, install_path => $install);
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'pg_tle'\nrestart_after_crash = on\n" . ($conf // ''));
	$before_start->($node) if $before_start;
	$node->start;
	$node->safe_psql('postgres', qq{
		CREATE EXTENSION pg_tle;
		CREATE ROLE $sql_edition_owner LOGIN NOSUPERUSER;
		GRANT pgtle_admin TO $sql_edition_owner;
		GRANT CREATE ON DATABASE postgres TO $sql_edition_owner;
		GRANT CREATE ON SCHEMA public TO $sql_edition_owner;
	});
	return $node;
}

# Register the edition with pg_tle and create it, as the owner.
sub sql_edition_install_tle
{
	my ($node, $script, $db) = @_;
	$db //= 'postgres';
	$node->command_ok(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db),
		  '-U', $sql_edition_owner, '-f', $script ],
		'the owner registers the SQL edition with pg_tle');
	$node->safe_psql($db, 'CREATE EXTENSION flake', extra_params => [ '-U', $sql_edition_owner ]);
}

# Install the plain script into a database, as the owner.
sub sql_edition_install_plain
{
	my ($node, $script, $db) = @_;
	$node->command_ok(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db),
		  '-U', $sql_edition_owner, '-f', $script ],
		"the owner installs the plain script into $db");
}

1;
