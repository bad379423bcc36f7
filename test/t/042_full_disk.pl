# A full disk under flake.hwm: the data directory lives on a small tmpfs
# that tools/run mounts when it runs as root (FLAKE_TEST_TMPFS); WAL lives
# elsewhere, so that what fills up is the mark file's filesystem and not
# WAL's.  A generator that must move a mark fails with an error and returns
# no id; the mark file is replaced whole or not at all, so the server starts
# again (whether the file existed before or not, after a crash on the full
# disk too) and continues above every id issued; a temporary file left
# behind is removed at start.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use File::Temp;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;
use FlakeTest;

my $tmpfs = $ENV{FLAKE_TEST_TMPFS};
plan skip_all => 'it needs a small tmpfs, which make test mounts only as root (sudo make test)'
  unless $tmpfs;

my $node = PostgreSQL::Test::Cluster->new('full_disk');
my $small_dir = File::Temp::tempdir('pgdata_XXXX', DIR => $tmpfs, CLEANUP => 1);
symlink $small_dir, $node->data_dir or die 'could not link the data directory: ' . $!;
$node->init(extra => ['-X', $node->basedir . '/pg_wal']);
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'
flake.max_borrow = '60s'
autovacuum = off
restart_after_crash = on
});
my $clock = FlakeClock->new($node);
$node->start;

my $hwm = $node->data_dir . '/flake.hwm';
my $filler = "$tmpfs/filler";
my %generators = (
	flake     => 'flake_next()',
	ulid      => 'ulidflake_next()::bigint',
	randflake => 'randflake_next()',
);

sub fill_disk
{
	$node->safe_psql('postgres', 'CHECKPOINT');
	open my $fh, '>', $filler or die "could not create $filler: $!";
	binmode $fh;
	for my $size (1024 * 1024, 4096, 1)
	{
		my $block = "\0" x $size;
		while (syswrite($fh, $block)) { }
	}
	close $fh;
}

# every generator fails with an error and returns no id
sub generators_fail
{
	my ($what) = @_;
	for my $family (sort keys %generators)
	{
		my ($ret, $stdout, $stderr) =
		  $node->psql('postgres', "SELECT $generators{$family}");
		ok($ret != 0 && $stdout eq '', "$what: $family fails and returns no id");
		# flake_next()'s first id records its layout (flake.layout) first
		like($stderr, qr/could not (create|write) file "flake\.(hwm|layout)\.tmp": No space left on device/,
			"$what: $family reports the full disk");
	}
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase int NOT NULL, family text NOT NULL, id bigint NOT NULL);
});

# 1. the disk is full before the first mark is written
fill_disk();
generators_fail('no mark file yet');
ok(!-e $hwm, 'no mark file was left behind');
unlink $filler;
$node->restart;
pass('the server starts again');

# 2. the disk is full when a mark must move ahead of an existing file
for my $family (sort keys %generators)
{
	$node->safe_psql('postgres',
		"INSERT INTO ids SELECT 1, '$family', $generators{$family} FROM generate_series(1, 1000)");
}
my $file_before = slurp_file($hwm);
fill_disk();
$clock->set('+30s');
generators_fail('a mark file in place');
is(slurp_file($hwm), $file_before, 'the mark file is unchanged');
ok(!-e "$hwm.tmp", 'no temporary file was left behind');

# a failed move leaves nothing for crash recovery to replay into the file
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
back_after_crash($node);
like(slurp_file($node->logfile), qr/all server processes terminated; reinitializing/,
	'the server went through crash recovery on the full disk');
$victim->quit;

# a temporary file that a crash could leave is removed at start
unlink $filler;
append_to_file("$hwm.tmp", 'half a mark');
$clock->set('-10s');
$node->restart;
ok(!-e "$hwm.tmp", 'a stale temporary file is removed at start');

for my $family (sort keys %generators)
{
	$node->safe_psql('postgres',
		"INSERT INTO ids SELECT 2, '$family', $generators{$family} FROM generate_series(1, 1000)");
}
is( $node->safe_psql('postgres', q{
		SELECT string_agg(family, ',' ORDER BY family) FROM (
			SELECT family,
				   CASE family WHEN 'randflake'
				   THEN min((randflake_decode(id)).ts) FILTER (WHERE phase = 2) >
						max((randflake_decode(id)).ts) FILTER (WHERE phase = 1)
				   ELSE min(id) FILTER (WHERE phase = 2) > max(id) FILTER (WHERE phase = 1)
				   END AS above
			FROM ids GROUP BY family) s
		WHERE above}),
	'flake,randflake,ulid', 'with the clock 10 s back, every family continues above the ids issued before');

$clock->set('+0');
$node->stop;
done_testing();
