# flake's operations on a Citus cluster (issue 19): flake_migrate refused
# on a distribution column (and working on a reference table and on a key
# that is not the distribution column); flake_guard on a distributed table
# (the hint names the table; a shard moves while clients write), and
# Citus's own shard-move subscriptions, which pass while one named like
# them but owned by another role is refused.
#
# Needs Citus installed into the PostgreSQL under test (make check-citus, or
# ../shared/citus in CI); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

citus_required();

my @servers = citus_cluster();
my ($coord, $w1, $w2) = @servers;
my ($rc, $stdout, $stderr);

# --- flake_migrate: refused on a distribution column, before changing anything
$coord->safe_psql('postgres', q{
	CREATE TABLE mig_dist (id bigserial PRIMARY KEY, v text);
	SELECT create_distributed_table('mig_dist', 'id');
	CREATE TABLE mig_ref (id bigserial PRIMARY KEY, v text);
	SELECT create_reference_table('mig_ref');
	CREATE TABLE mig_tenant (tenant int NOT NULL, id bigserial, v text, PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('mig_tenant', 'tenant');
	INSERT INTO mig_dist (v) VALUES ('a'), ('b');
	INSERT INTO mig_ref (v) VALUES ('a'), ('b');
	INSERT INTO mig_tenant (tenant, v) VALUES (1, 'a'), (2, 'b');
});
like($coord->safe_psql('postgres', q{SELECT detail FROM flake_migrate('mig_dist', dry_run => true) WHERE action = 'blocked'}),
	qr/^cannot migrate public\.mig_dist\.id: Citus distributes tables by the columns it would change \(SQLSTATE 0A000\)\. Hint: .*undistribute_table\('public\.mig_dist'\).* Detail: Distribution columns: public\.mig_dist\.id\./s,
	'flake_migrate: a dry run on a distribution column has a blocked step with the procedure');
($rc, $stdout, $stderr) = $coord->psql('postgres', q{SELECT * FROM flake_migrate('mig_dist')});
like($stderr, qr/ERROR:  cannot migrate public\.mig_dist\.id: Citus distributes tables by the columns it would change/,
	'flake_migrate: a real run on a distribution column is refused with flake\'s message');
is($coord->safe_psql('postgres', q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'mig_dist'::regclass}),
	q{nextval('mig_dist_id_seq'::regclass)}, 'flake_migrate: the refused table is unchanged');
foreach my $t ('mig_ref', 'mig_tenant')
{
	$coord->safe_psql('postgres', "SELECT * FROM flake_migrate('$t')");
	$coord->safe_psql('postgres', "INSERT INTO $t (" . ($t eq 'mig_tenant' ? 'tenant, ' : '') . "v) VALUES (" . ($t eq 'mig_tenant' ? '3, ' : '') . "'c')");
	is($coord->safe_psql('postgres', "SELECT count(*) FROM $t WHERE id > 1000000"), '1',
		"flake_migrate: $t (" . ($t eq 'mig_ref' ? 'a reference table' : 'a key that is not the distribution column') . ') gets flake ids');
}

# --- flake_guard on a distributed table: the hint names the table; a shard
# moves while clients write on the coordinator and on the worker it moves to
# (rows made in the target's own group come to it through the move)
$coord->safe_psql('postgres', q{
	CREATE TABLE guarded (tenant int NOT NULL, f bigint NOT NULL DEFAULT flake_next(),
		r bigint NOT NULL DEFAULT randflake_next(), PRIMARY KEY (tenant, f));
	SELECT create_distributed_table('guarded', 'tenant', shard_count => 2);
	SET citus.enable_unsafe_triggers = on;
	CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON guarded
		FOR EACH ROW EXECUTE FUNCTION flake_guard('f', 'r:randflake');
});
($rc, $stdout, $stderr) = $coord->psql('postgres', 'INSERT INTO guarded (tenant) VALUES (1)');
like($stderr, qr/trigger "guard" on table "guarded" does not fire for replicated rows.*HINT:  Enable it for rows applied by replication: ALTER TABLE guarded ENABLE REPLICA TRIGGER guard;/s,
	'flake_guard: the hint names the distributed table and its trigger, not a shard\'s');
$coord->safe_psql('postgres', 'SET citus.enable_unsafe_triggers = on; ALTER TABLE guarded ENABLE ALWAYS TRIGGER guard');
$w2->safe_psql('postgres', 'INSERT INTO guarded (tenant) SELECT g % 8 FROM generate_series(1, 1000) g');
# each row in its own transaction, for 3 s: the move starts in the middle
# (it creates its replication slot once they end or the next running-xacts
# record is logged, so its catch-up may see none of them: the apply worker
# is tested on its own below)
my $writes = q{DO $$ DECLARE stop timestamptz := clock_timestamp() + interval '3 s'; i int := 0;
	BEGIN WHILE clock_timestamp() < stop LOOP
		INSERT INTO guarded (tenant) VALUES (i % 8); COMMIT; i := i + 1; END LOOP; END $$;};
my ($from, $to) = ($w1->port, $w2->port);
is(citus_concurrently([ $coord, $writes ], [ $w2, $writes ], [ $w2, $writes ], [ $coord, qq{
	SELECT pg_sleep(1);
	SET statement_timeout = '60s';
	SELECT citus_move_shard_placement(shardid, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => 'force_logical')
	FROM pg_dist_shard JOIN pg_dist_placement USING (shardid) JOIN pg_dist_node USING (groupid)
	WHERE logicalrelid = 'guarded'::regclass AND nodeport = $from;
} ]), 0, 'flake_guard: a guarded shard moves while clients write');
is($coord->safe_psql('postgres', q{
	SELECT count(*) = count(DISTINCT f) AND count(*) = count(DISTINCT r) AND count(*) > 1000, count(DISTINCT nodeport) FROM guarded,
		pg_dist_placement p JOIN pg_dist_node USING (groupid)
	WHERE p.shardid = get_shard_id_for_distribution_column('guarded', tenant)}),
	't|1', 'flake_guard: no duplicate, all shards on one worker');

# The apply workers of shard moves and splits are Citus's own
# subscriptions: named citus_shard_move_subscription_<table owner>_<operation>
# and owned by the role Citus makes for it, named with the same suffix
# (made here as Citus makes them: a superuser hands the subscription over,
# and the role is no superuser after).  Rows made on worker2's own group
# come back to it through such a subscription and pass.  Through one named
# like Citus's but owned by another role (issue 27), the guard refuses them
# (its own nodes are its group's share).
$w1->safe_psql('postgres', 'SET citus.enable_ddl_propagation = off; CREATE TABLE echo (f bigint PRIMARY KEY, r bigint NOT NULL); CREATE PUBLICATION echo_pub FOR TABLE echo');
$w2->safe_psql('postgres', q{
	SET citus.enable_ddl_propagation = off;
	CREATE TABLE echo (f bigint PRIMARY KEY, r bigint NOT NULL);
	CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON echo FOR EACH ROW EXECUTE FUNCTION flake_guard('f', 'r:randflake');
	ALTER TABLE echo ENABLE ALWAYS TRIGGER guard;
});
my $w1conn = $w1->connstr . ' dbname=postgres';
# a subscription of w2 from w1's echo_pub, named $name and handed to the
# new role $owner
sub echo_subscription
{
	my ($name, $owner) = @_;
	$w2->safe_psql('postgres', qq{
		SET citus.enable_ddl_propagation = off;
		CREATE USER $owner SUPERUSER IN ROLE "@{[ $w2->safe_psql('postgres', 'SELECT current_user') ]}";
		CREATE SUBSCRIPTION $name CONNECTION '$w1conn' PUBLICATION echo_pub WITH (copy_data = false);
		ALTER SUBSCRIPTION $name OWNER TO $owner;
		ALTER ROLE $owner NOSUPERUSER;
	});
	$w2->wait_for_subscription_sync($w1, $name);
}
my $owner_oid = $w2->safe_psql('postgres', 'SELECT oid FROM pg_roles WHERE rolname = current_user');
my $citus_sub = "citus_shard_move_subscription_${owner_oid}_1";
echo_subscription($citus_sub, "citus_shard_move_subscription_role_${owner_oid}_1");
my $made_on_w2 = $w2->safe_psql('postgres', 'SELECT string_agg(format($$(%s, %s)$$, flake_next(), randflake_next()), $$,$$) FROM generate_series(1, 10)');
$w1->safe_psql('postgres', "INSERT INTO echo VALUES $made_on_w2");
$w2->poll_query_until('postgres', 'SELECT count(*) = 10 FROM echo')
  or die 'rows of a Citus shard move subscription did not arrive';
pass('flake_guard: rows a Citus shard move applies pass, also those made in this group');
$w2->safe_psql('postgres', "DROP SUBSCRIPTION $citus_sub");
$made_on_w2 = $w2->safe_psql('postgres', 'SELECT format($$(%s, %s)$$, flake_next(), randflake_next())');
my $log_offset = -s $w2->logfile;
my $look_alike = "citus_shard_move_subscription_${owner_oid}_2";
echo_subscription($look_alike, 'mallory');
$w1->safe_psql('postgres', "INSERT INTO echo VALUES $made_on_w2");
ok($w2->wait_for_log(qr/replicated flake id \d+ in column "f" of table "echo" was made on node \d+, one of this server's own nodes.*\n.*DETAIL:  .*and so has this server's Citus group, which generates on nodes 32-47 \(flake.nodes at its default\)/, $log_offset),
	'flake_guard: through a subscription named like a Citus shard move\'s but owned by another role, a row made in this group is refused');
$w2->safe_psql('postgres', "DROP SUBSCRIPTION $look_alike");

$_->stop foreach @servers;
done_testing();
