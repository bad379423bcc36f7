# Two servers with disjoint flake.nodes never collide, even when an
# ordinary role asks for another server's node with flake_next(node): that
# node is refused (22023), so only each server's own nodes issue ids.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my %nodes = (a => '0-511', b => '512-1023');
my %server;
foreach my $name (sort keys %nodes)
{
	my $node = PostgreSQL::Test::Cluster->new("nodes_$name");
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'flake'\nflake.nodes = '$nodes{$name}'\n");
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION flake;
		CREATE ROLE app LOGIN;
		CREATE TABLE ids (id bigint);
		GRANT INSERT, SELECT ON ids TO app;
	});
	$server{$name} = $node;
}

# an ordinary role on A tries B's first node, the one B's first backend leases
my ($ret, $stdout, $stderr) = $server{a}->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT flake_next(512)", extra_params => [ '-U', 'app' ]);
isnt($ret, 0, 'flake_next(512) fails on A');
like($stderr, qr/ERROR:  22023: node 512 is not in flake.nodes\nDETAIL:  This server generates on nodes "0-511" only/,
	'22023 names the node and A\'s flake.nodes');
($ret, $stdout, $stderr) = $server{b}->psql('postgres', 'SELECT flake_next(0)');
like($stderr, qr/node 0 is not in flake.nodes/, 'and B refuses A\'s node 0');

# both generate at once on what they may use: leased nodes and explicit ones
my @runs;
foreach my $name (sort keys %nodes)
{
	my $own = $name eq 'a' ? 511 : 512;
	foreach my $expr ('flake_next()', "flake_next($own)")
	{
		push @runs, $server{$name}->background_psql('postgres', extra_params => [ '-U', 'app' ]);
		$runs[-1]->query_until(qr/started/, "\\echo started\nINSERT INTO ids SELECT $expr FROM generate_series(1, 100000);\n");
	}
}
$_->quit foreach @runs;

my %ids;
foreach my $name (sort keys %nodes)
{
	is( $server{$name}->safe_psql('postgres', q{
			SELECT count(*), count(DISTINCT id), min(flake_node(id)) || '-' || max(flake_node(id)) FROM ids}),
		$name eq 'a' ? '200000|200000|0-511' : '200000|200000|512-512',
		"server \U$name\E issued distinct ids on its own nodes");
	$ids{$name} = { map { $_ => 1 } split /\n/, $server{$name}->safe_psql('postgres', 'SELECT id FROM ids') };
}
is(scalar(grep { $ids{a}{$_} } keys %{ $ids{b} }), 0, 'no id in common');

$_->stop foreach values %server;
done_testing();
