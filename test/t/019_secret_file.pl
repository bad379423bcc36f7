# flake.randflake_secret_file names a file that holds the Randflake key,
# so that the key stays out of the configuration that configuration
# managers and HA managers (Patroni) show and store.  The file is refused
# unless it is a regular file owned by the server's user and private to it
# (ssl_key_file's rule; the other branch, owned by root and readable by its
# group, needs root to set up and is not tested here), and unless it holds
# 32 hex digits; it is read again at each reload, and a refused file keeps
# the key in force.  At start, a file that cannot be used never stops the
# server, primary or standby: what needs the key alone refuses.  A file's key wins over flake.randflake_secret, with a
# warning.  The log names keys by fingerprint only, and no refusal shows
# the file's content.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256_hex);
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $key1 = '5ec1f11e1a2b3c4d5e6f708192a3b4c1';
my $key2 = '5ec1f11e2b3c4d5e6f708192a3b4c5d2';
my $key3 = '5ec1f11e3c4d5e6f708192a3b4c5d6e3';
my $key4 = '5ec1f11e4d5e6f708192a3b4c5d6e7f4';
my $short = '5ec1f11e5e6f708192a3b4c5d6e7f8';
my $nonhex = '5ec1f11e6f708192a3b4c5d6e7f8a9zz';

sub fingerprint
{
	return substr(hmac_sha256_hex('flake randflake key fingerprint', pack('H*', shift)), 0, 8);
}

sub write_key
{
	my ($path, $content, $mode) = @_;
	open(my $fh, '>', "$path.new") or die "open $path.new: $!";
	print $fh $content;
	close($fh) or die "close $path.new: $!";
	chmod($mode, "$path.new") or die "chmod $path.new: $!";
	rename("$path.new", $path) or die "rename $path.new: $!";
}

my $node = flake_cluster('secret_file', undef, allows_streaming => 1);
my $file = $node->basedir . '/randflake.key';
write_key($file, "$key1\n", 0644);
$node->append_conf('postgresql.conf', "flake.randflake_secret_file = '$file'\n");

# A file others can read does not stop the server (issue 35): it starts,
# saying why the file cannot be used, and what needs the key alone refuses
$node->start;
like(slurp_file($node->logfile),
	qr/WARNING:  flake.randflake_secret_file: the file cannot be used, randflake_next\(\) refuses until it can\n.*DETAIL:  Its mode is 0644: owned by the server's user, the file must give no access to group or others \(chmod 600\)/,
	'a key file readable by others is logged at start, saying why, and the server starts');
$node->safe_psql('postgres', 'CREATE EXTENSION flake');
my ($rc, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT randflake_next()");
like($stderr, qr/ERROR:  55000: the key file "\Q$file\E" that flake.randflake_secret_file names cannot be used\nDETAIL:  Its mode is 0644.*\nHINT:  Install the file/s,
	'randflake_next() refuses (55000), naming the file and why');
is($node->safe_psql('postgres', 'SELECT flake_next() > 0'), 't', 'the other generators work');
chmod(0600, $file) or die;
$node->reload;
$node->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', fingerprint($key1))
  or die 'the repaired file was not read at the reload';
pass('once the file is private, a reload puts its key in force');
$node->restart;
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN');
is($node->safe_psql('postgres', 'SELECT randflake_key_fingerprint()'), fingerprint($key1),
	'the key of a private file is in force');
like(slurp_file($node->logfile), qr/LOG:  flake.randflake_secret_file has key fingerprint ${\ fingerprint($key1)}\n/,
	'the key at start is logged by its fingerprint');

# ids are made with the file's key
$node->safe_psql('postgres', q{
	CREATE TABLE ids (n serial, id bigint DEFAULT randflake_next());
	INSERT INTO ids SELECT FROM generate_series(1, 100)});
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM ids, randflake_decode(id) d, randflake_decode(id, '\\x$key1') k
	WHERE d = k AND k.ts BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'}),
	'100', 'ids are encrypted with the key of the file');

# who may read what
($rc, $stdout, $stderr) = $node->psql('postgres', 'SHOW flake.randflake_secret_file', extra_params => [ '-U', 'app' ]);
like(
	$stderr,
	qr/must be superuser or have privileges of pg_read_all_settings|permission denied to examine "flake.randflake_secret_file"/,
	'other roles cannot read the setting');
is($node->safe_psql('postgres', 'SHOW flake.randflake_secret_file'), $file, 'superusers read the path');
is($node->safe_psql('postgres', 'SHOW flake.randflake_secret'), '', 'flake.randflake_secret stays empty');

# a session generating across a reload takes the new key
my $session = $node->background_psql('postgres');
$session->query_safe('INSERT INTO ids DEFAULT VALUES');
write_key($file, "  $key2\r\n", 0400);
$node->reload;
$node->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', fingerprint($key2))
  or die 'the changed file was not read at the reload';
$session->query_safe('INSERT INTO ids DEFAULT VALUES');
is($node->safe_psql('postgres', qq{
	SELECT (randflake_decode(id, '\\x$key2')).ts BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'
	FROM ids ORDER BY n DESC LIMIT 1}),
	't', 'a session that generated before the reload generates with the new key');
$session->quit;

# Refused at a reload: each leaves the key in force as it was
my @refused = (
	[ 'readable by the group', sub { write_key($file, "$key3\n", 0640) },
	  qr/Its mode is 0640: owned by the server's user, the file must give no access to group or others/ ],
	[ 'too short', sub { write_key($file, "$short\n", 0600) },
	  qr/The file must hold 32 hexadecimal digits \(16 bytes\), with nothing else but white space around them; it holds 30 characters\./ ],
	[ 'not hexadecimal', sub { write_key($file, "$nonhex\n", 0600) },
	  qr/it holds 32 characters, not all of them hexadecimal digits\./ ],
	[ 'two keys', sub { write_key($file, "$key3\n$key4\n", 0600) },
	  qr/it holds 65 characters\./ ],
	[ 'too long', sub { write_key($file, ("$key3\n" x 10), 0600) },
	  qr/The file holds 330 bytes, more than the 255 it may hold\./ ],
	[ 'missing', sub { unlink($file) or die },
	  qr/The file could not be opened: No such file or directory\./ ],
	[ 'a directory', sub { mkdir($file) or die },
	  qr/It is not a regular file\./ ],);
foreach my $case (@refused)
{
	my ($what, $make, $detail) = @$case;
	$make->();
	my $offset = -s $node->logfile;
	$node->reload;
	$node->wait_for_log(qr/configuration file ".*" contains errors/, $offset);
	my $log = substr(slurp_file($node->logfile), $offset);
	like($log, qr/LOG:  invalid value for parameter "flake.randflake_secret_file": "\Q$file\E"\n.*DETAIL:  .*$detail/,
		"a key file $what is refused at a reload, saying why");
	is($node->safe_psql('postgres', 'SELECT randflake_key_fingerprint()'), fingerprint($key2),
		"after a key file $what the key stays");
	is($node->safe_psql('postgres', 'SELECT count(*) > 0 FROM (SELECT randflake_next()) s'), 't',
		"and generation goes on");
}
rmdir($file) or die;

# ALTER SYSTEM checks the file too; its refusal keeps its detail, which
# names no key
my $open = $node->basedir . '/open.key';
write_key($open, "$key3\n", 0644);
($rc, $stdout, $stderr) = $node->psql('postgres', "ALTER SYSTEM SET flake.randflake_secret_file = '$open'");
like($stderr, qr/ERROR:  invalid value for parameter "flake.randflake_secret_file": "\Q$open\E"\nDETAIL:  Its mode is 0644/,
	'ALTER SYSTEM refuses a file others can read, saying why');

# A symbolic link to the file, as Kubernetes mounts secrets, and a path
# relative to the data directory
write_key($node->data_dir . '/keys.d-file', "$key3\n", 0600);
symlink('keys.d-file', $node->data_dir . '/randflake.key') or die;
$node->append_conf('postgresql.conf', "flake.randflake_secret_file = 'randflake.key'\n");
$node->reload;
$node->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', fingerprint($key3))
  or die 'the relative path through a link was not read';
pass('a path relative to the data directory, through a symbolic link, is read');

# flake.randflake_secret as well: the file's key wins, with a warning
my $offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "flake.randflake_secret = '$key4'\n");
$node->reload;
$node->wait_for_log(qr/WARNING:  flake.randflake_secret is set, and flake.randflake_secret_file too: the key of the file is used/, $offset);
is($node->safe_psql('postgres', 'SELECT randflake_key_fingerprint()'), fingerprint($key3),
	'with both set, the key of the file is in force');
# the file goes: flake.randflake_secret's key is in force
$node->append_conf('postgresql.conf', "flake.randflake_secret_file = ''\n");
$node->reload;
$node->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', fingerprint($key4))
  or die 'flake.randflake_secret did not take over';
pass('without the file, flake.randflake_secret is in force');

# A standby made before its key file is installed (as Patroni may create
# it) starts and replays; what needs the key refuses, naming the file,
# until it is installed and read at a reload
$node->backup('before_key');
my $standby = PostgreSQL::Test::Cluster->new('secret_file_standby');
$standby->init_from_backup($node, 'before_key', has_streaming => 1);
my $standby_file = $standby->basedir . '/randflake.key';
$standby->append_conf('postgresql.conf', "flake.randflake_secret_file = '$standby_file'\n");
$standby->start;
my $id = $node->safe_psql('postgres', 'INSERT INTO ids DEFAULT VALUES RETURNING id');
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id = $id"), '1',
	'a standby without its key file starts and replays');
($rc, $stdout, $stderr) = $standby->psql('postgres', "SELECT randflake_decode($id)");
like($stderr, qr/ERROR:  the key file "\Q$standby_file\E" that flake.randflake_secret_file names cannot be used\n.*HINT:  Install the file/s,
	'on it, what needs the key refuses, naming the missing file');
write_key($standby_file, "$key4\n", 0600);
$standby->reload;
$standby->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', fingerprint($key4))
  or die 'the key file installed was not read at the reload';
is($standby->safe_psql('postgres', "SELECT (randflake_decode($id)).ts > now() - interval '1 hour'"), 't',
	'once the file is installed and reloaded, it decodes the primary\'s ids');
$standby->stop;

$node->stop;

my $log = slurp_file($node->logfile);
my ($fp1, $fp2, $fp3, $fp4) = map { fingerprint($_) } ($key1, $key2, $key3, $key4);
my @changes = $log =~ /LOG:  (flake.randflake_secret(?:_file)? changed from key fingerprint \w+ to \w+)\n/g;
is_deeply(\@changes,
	[ "flake.randflake_secret_file changed from key fingerprint none to $fp1",
	  "flake.randflake_secret_file changed from key fingerprint $fp1 to $fp2",
	  "flake.randflake_secret_file changed from key fingerprint $fp2 to $fp3",
	  "flake.randflake_secret changed from key fingerprint none to $fp4",
	  "flake.randflake_secret_file changed from key fingerprint $fp3 to none" ],
	'each change of a key is logged once, by fingerprint');
foreach my $key ($key1, $key2, $key3, $key4, $short, $nonhex)
{
	my $piece = substr($key, 8, 24);
	unlike($log, qr/$piece/i, "nothing of the key ...$piece is in the log");
}

done_testing();
