# After a package upgrade a server runs the library it loaded at start
# until it restarts.  ALTER EXTENSION flake UPDATE before that restart
# must refuse, saying to restart (issue 35), not fail on a C function the
# old library lacks.  The package upgrade is played in an installation of
# this test's own: the binaries copied, the library directory linked file
# by file but for flake.so, which is first a copy of the library without
# flake_library_version (as every library before 1.4), then replaced by
# the real one while the server runs.
use strict;
use warnings;
use File::Basename;
use File::Copy;
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my %dir;
foreach my $which (qw(bindir pkglibdir sharedir))
{
	chomp($dir{$which} = `pg_config --$which`);
	$? == 0 or die "pg_config --$which failed";
}
basename($dir{bindir}) eq 'bin' or plan skip_all => "$dir{bindir} does not end in bin";

# The same paths under a directory of the test's: the server finds its
# library and share directories relative to where its binary is.
my $tree = PostgreSQL::Test::Utils::tempdir;
make_path("$tree$dir{pkglibdir}", dirname("$tree$dir{sharedir}"));
system('cp', '-a', $dir{bindir}, dirname("$tree$dir{bindir}")) == 0 or die 'cp failed';
symlink($dir{sharedir}, "$tree$dir{sharedir}") or die;
opendir(my $dh, $dir{pkglibdir}) or die;
foreach my $entry (readdir($dh))
{
	next if $entry eq '.' || $entry eq '..' || $entry eq 'flake.so';
	symlink("$dir{pkglibdir}/$entry", "$tree$dir{pkglibdir}/$entry") or die;
}
closedir($dh);

# the library before 1.4: flake_library_version renamed away
my $library = "$tree$dir{pkglibdir}/flake.so";
my $binary = slurp_file("$dir{pkglibdir}/flake.so");
$binary =~ s/flake_library_version/flake_library_versioX/g;
open(my $fh, '>:raw', $library) or die;
print $fh $binary;
close($fh) or die;

my $node = PostgreSQL::Test::Cluster->new('library_restart',
	install_path => dirname("$tree$dir{bindir}"));
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$node->start;
$node->safe_psql('postgres', "CREATE EXTENSION flake VERSION '1.3'");

# the package upgrade: the new library replaces the old file
copy("$dir{pkglibdir}/flake.so", "$library.new") or die;
rename("$library.new", $library) or die;

my ($rc, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nALTER EXTENSION flake UPDATE");
like($stderr,
	qr/ERROR:  55000: this server runs a flake library older than [0-9.]+: one before 1\.4\n.*HINT:  Restart the server/s,
	'ALTER EXTENSION flake UPDATE before the restart refuses, saying to restart');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'flake'"),
	'1.3', 'the extension stays as it was');
($rc, $stdout, $stderr) = $node->psql('template1', 'CREATE EXTENSION flake');
like($stderr, qr/ERROR:  this server runs a flake library older than/,
	'so does CREATE EXTENSION flake');

$node->restart;
$node->safe_psql('postgres', 'ALTER EXTENSION flake UPDATE');
is($node->safe_psql('postgres', "SELECT extversion, flake_next() > 0 FROM pg_extension WHERE extname = 'flake'"),
	$node->safe_psql('postgres', "SELECT default_version FROM pg_available_extensions WHERE name = 'flake'") . '|t',
	'after the restart it updates, and generates');
$node->stop;
done_testing();
