# A lost or unreadable flake.prepared (issue 43): a transaction prepared
# with ids before a restart must hold the horizon until it ends, even where
# the file cannot say so: max_prepared_transactions lowered below the
# entries the file has, a garbage, truncated or symbolically linked file,
# and a standby promoted after the PREPARE reached it in WAL (the file is
# not in WAL).  Each such transaction holds the horizon at its lowest, and
# flake_horizon_holders names it by its gid with since -infinity; once it
# is committed the horizon moves on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('prepared', "max_prepared_transactions = 10\n", allows_streaming => 1);
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT flake_next(), note text);
});
my $data = $node->data_dir;

sub prepare_one
{
	my ($target, $gid) = @_;
	return $target->safe_psql('postgres', qq{
		BEGIN;
		INSERT INTO events (note) VALUES ('$gid') RETURNING id;
		PREPARE TRANSACTION '$gid';
	});
}

# The prepared transaction holds the horizon at or below its id, shown by
# its gid, and its row is read once committed.
sub holds
{
	my ($target, $gid, $id, $case) = @_;
	$target->safe_psql('postgres', "INSERT INTO events (note) VALUES ('after $gid')");
	cmp_ok($target->safe_psql('postgres', 'SELECT flake_horizon()'), '<=', $id,
		"$case: the prepared transaction still holds the horizon");
	is($target->safe_psql('postgres',
			"SELECT count(*) FROM flake_horizon_holders WHERE gid = '$gid' AND generator = 'flake_next' AND since <= flake_timestamp($id)"),
		'1', "$case: flake_horizon_holders names it by its gid");
	$target->safe_psql('postgres', "COMMIT PREPARED '$gid'");
	cmp_ok($target->safe_psql('postgres', 'SELECT flake_horizon()'), '>', $id,
		"$case: committed, the horizon passes its id");
}

# max_prepared_transactions lowered below the file's entries: two of three
# prepared transactions committed (the file still lists them), then 2
my $kept = prepare_one($node, 'kept');
prepare_one($node, "gone$_") for 1 .. 2;
$node->safe_psql('postgres', "COMMIT PREPARED 'gone$_'") for 1 .. 2;
$node->stop;
$node->append_conf('postgresql.conf', "max_prepared_transactions = 2\n");
$node->start;
holds($node, 'kept', $kept, 'max_prepared_transactions lowered');

# a damaged file
my %damage = (
	garbage => sub { PostgreSQL::Test::Utils::append_to_file("$data/flake.prepared", 'x' x 7) },
	truncated => sub { truncate("$data/flake.prepared", 9) or die "truncate: $!" },
	symlink => sub {
		rename("$data/flake.prepared", "$data/flake.prepared.real") or die "rename: $!";
		symlink("$data/flake.prepared.real", "$data/flake.prepared") or die "symlink: $!";
	},
);
for my $case (sort keys %damage)
{
	my $id = prepare_one($node, $case);
	$node->stop;
	$damage{$case}->();
	$node->start;
	holds($node, $case, $id, "a $case flake.prepared");
	if (-l "$data/flake.prepared")
	{
		unlink("$data/flake.prepared");
		rename("$data/flake.prepared.real", "$data/flake.prepared");
	}
}

# a standby that replayed a PREPARE made after its base backup
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
my $replayed = prepare_one($node, 'replayed');
$node->wait_for_catchup($standby);
$node->stop;
$standby->promote;
holds($standby, 'replayed', $replayed, 'a promoted standby');
$standby->stop;

done_testing();
