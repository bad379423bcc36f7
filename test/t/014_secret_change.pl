# A change of flake.randflake_secret is recorded in the server log once, by
# the postmaster, with short fingerprints of the old and the new key (the
# first 4 bytes of HMAC-SHA256(key, "flake randflake key fingerprint")),
# never with the keys; the key in force at start is recorded the same way.
# Nor does a syntax error in the file show a piece of a key left unquoted.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
my $new = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';

sub fingerprint
{
	return substr(hmac_sha256_hex('flake randflake key fingerprint', pack('H*', shift)), 0, 8);
}

my $node = PostgreSQL::Test::Cluster->new('secret_change');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\nflake.randflake_secret = '$old'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');
is($node->safe_psql('postgres', 'SELECT randflake_key_fingerprint()'), fingerprint($old),
	'randflake_key_fingerprint() is the first 4 bytes of the HMAC');

# sessions that generate re-read the setting on reload too
my @sessions = map { $node->background_psql('postgres') } 1 .. 3;
$_->query_safe('SELECT randflake_next()') foreach @sessions;

sub reload_until
{
	my ($fingerprint) = @_;
	$node->reload;
	$node->poll_query_until('postgres', 'SELECT randflake_key_fingerprint()', $fingerprint)
	  or die "the key with fingerprint $fingerprint did not arrive";
	# every session reads it too, before its next statement
	$_->query_safe('SELECT 1') foreach @sessions;
}

$node->append_conf('postgresql.conf', "flake.randflake_secret = '$new'\n");
reload_until(fingerprint($new));
# a reload that leaves the key as it is
$node->append_conf('postgresql.conf', "work_mem = '8MB'\n");
reload_until(fingerprint($new));
# no key
$node->append_conf('postgresql.conf', "flake.randflake_secret = ''\n");
reload_until('');

# A secret left unquoted that begins with a digit is a syntax error, whose
# report names the token after the number the lexer takes from its start:
# a piece of the key.  The report keeps the file and the line.
my $unquoted = '1a2345678901234567890123456789ab';
my $offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "flake.randflake_secret = $unquoted\n");
$node->reload;
$node->wait_for_log(qr/configuration file ".*" contains errors; no changes were applied/, $offset);

my $log = slurp_file($node->logfile);
like($log, qr/LOG:  syntax error in file ".*postgresql\.conf" line \d+, near token "\.\.\."\n.*HINT:  flake hides the token/,
	'a syntax error in the configuration file is logged with its file and line, without the token');
my ($fp_old, $fp_new) = (fingerprint($old), fingerprint($new));
my @start = $log =~ /LOG:  flake.randflake_secret has key fingerprint $fp_old\n/g;
is(scalar @start, 1, 'the key in force at start is logged by its fingerprint');
my @changes = $log =~ /LOG:  (flake.randflake_secret changed from key fingerprint \w+ to \w+)\n/g;
is_deeply(\@changes,
	[ "flake.randflake_secret changed from key fingerprint $fp_old to $fp_new",
	  "flake.randflake_secret changed from key fingerprint $fp_new to none" ],
	'each change is logged once, with both fingerprints');
like($log, qr/DETAIL:  Randflake ids made from now on are encrypted with the new key; ids made before decode only with the old key, .*\n.*HINT:  Decode ids made before with randflake_decode\(id, '\\x<old key>'\)/,
	'the log says what a change means');
foreach my $key ($old, $new, $unquoted)
{
	my $piece = substr($key, 2, 8);
	unlike($log, qr/$piece/i, "no part of key $piece... is in the log");
}

$_->quit foreach @sessions;
$node->stop;
done_testing();
