# flake_horizon_holders' since (issue 43): a transaction's first id on a
# node that never issued holds the horizon from about now, not from
# flake.epoch (2015-01-01), in both families, on leased and explicit nodes;
# and right after a standby's promotion no holder is shown for a prepared
# transaction of its base backup that has since been committed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('since', "max_prepared_transactions = 10\n", allows_streaming => 1);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

for my $call ('flake_next()', 'flake_next(5)', 'ulidflake_next()')
{
	my $open = $node->background_psql('postgres');
	$open->query_safe("BEGIN; SELECT $call;");
	my $pid = $open->query_safe('SELECT pg_backend_pid()');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM flake_horizon_holders WHERE pid = $pid AND since > now() - interval '1 hour'"),
		'1', "the first $call of a fresh server holds the horizon from about now");
	$open->query_safe('COMMIT');
	$open->quit;
}

# a prepared transaction in the base backup, committed before the promotion
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT flake_next(6);
	PREPARE TRANSACTION 'in_backup';
});
$node->backup('backup');
$node->safe_psql('postgres', "COMMIT PREPARED 'in_backup'");
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT count(*) FROM flake_horizon_holders'), '0',
	'after the promotion, no holder is left of the committed prepared transaction');
is($standby->safe_psql('postgres', 'SELECT flake_horizon() > flake_from_timestamp(now() - interval \'1 hour\')'), 't',
	'... and the horizon is at about now');
$standby->stop;
$node->stop;

done_testing();
