# The online migration (flake_migrate_online) and logical replication
# (issue 27), with a real publisher and subscriber:
# - a table a subscription writes into (27.2), or one copied with it, is
#   refused before anything changes (before, the swap dropped its
#   pg_subscription_rel entry and replication into it stopped silently);
#   a subscription that comes while the rows are copied stops the swap;
# - tables in a FOR ALL TABLES, FOR TABLES IN SCHEMA or FOR TABLE
#   publication are refused (27.4; before, the copy and the log were
#   published and the subscriber's apply worker failed for every table),
#   a bigint key that only needs the swap is not; a publication that comes
#   meanwhile stops the swap;
# - every SQL entry point (the plan, the swap, the validation, the undo,
#   the log trigger) with publications and subscriptions on the table, in
#   a session as a subscription's (session_replication_role = replica,
#   another search_path);
# - flake_origin, which a FOR ALL TABLES publication publishes: the
#   subscriber keeps its own and generates; deleting a row of it works on
#   the publisher.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my %servers;
for my $name ('pub', 'sub')
{
	my $nodes = $name eq 'pub' ? '0-99' : '100-199';
	my $node = flake_cluster($name, qq{flake.nodes = '$nodes'
flake.randflake_nodes = '$nodes'
flake.randflake_secret = '$flake_secret'
max_logical_replication_workers = 8
max_worker_processes = 16
}, allows_streaming => 'logical');
	$node->start;
	$node->safe_psql('postgres', 'CREATE DATABASE allt; CREATE DATABASE sch');
	$node->safe_psql($_, 'CREATE EXTENSION flake') for ('postgres', 'allt', 'sch');
	$servers{$name} = $node;
}
my ($pub, $sub) = @servers{ 'pub', 'sub' };
# The command on a node's database: exit code, stdout, stderr.
sub online
{
	my ($node, $dbname, @args) = @_;
	return online_run($node, \@args, dbname => $dbname);
}

sub leftovers
{
	my ($node, $dbname) = @_;
	return $node->safe_psql($dbname, q{SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'});
}

# a subscription of the subscriber's database to the publisher's, its
# tables synchronized
sub subscribe
{
	my ($dbname, $name, $publication, $options) = @_;
	my $connstr = $pub->connstr . " dbname=$dbname";
	$sub->safe_psql($dbname,
		"CREATE SUBSCRIPTION $name CONNECTION '$connstr' PUBLICATION $publication" . ($options // ''));
	$sub->poll_query_until($dbname, q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')})
	  or die "subscription $name does not synchronize";
}

# the hostile session: settings as a subscription's apply worker has them,
# and a search_path with a schema of functions named as the catalog's
$pub->safe_psql($_, q{CREATE SCHEMA evil; CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql AS 'SELECT NULL'})
  for ('postgres', 'sch');
$sub->safe_psql('postgres', q{CREATE SCHEMA evil; CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql AS 'SELECT NULL'});
my $hostile = q{SET session_replication_role = replica; SET search_path = evil, public, pg_catalog; };

# 27.2: tables a subscription writes into, migrated on the subscriber: st
# itself, and loc, whose referencing table sc is copied with it
$pub->safe_psql('postgres', q{
	CREATE TABLE st (id serial PRIMARY KEY, v int);
	CREATE TABLE sc (id serial PRIMARY KEY, loc_id int);
	INSERT INTO st (v) SELECT n FROM generate_series(1, 100) n;
	INSERT INTO sc (loc_id) SELECT NULL FROM generate_series(1, 10);
	CREATE PUBLICATION p_st FOR TABLE st, sc;
});
$sub->safe_psql('postgres', q{
	CREATE TABLE st (id serial PRIMARY KEY, v int);
	CREATE TABLE loc (id serial PRIMARY KEY);
	CREATE TABLE sc (id serial PRIMARY KEY, loc_id int REFERENCES loc);
});
subscribe('postgres', 's_st', 'p_st');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM st'), '100', 'the subscriber has the rows');
my ($rc, $out, $err) = online($sub, 'postgres', '-t', 'st', '--dry-run');
is($rc, 3, 'a subscription target: the dry run refuses');
like($err, qr/blocked: cannot migrate tables online that a subscription writes into \(SQLSTATE 0A000\)\. Hint: Migrate them with flake_migrate\(\) \(offline\).*Detail: public\.st \(subscription s_st\)\..*pg_subscription_rel/,
	'saying which, why, and what to do');
($rc, $out, $err) = online($sub, 'postgres', '-t', 'st');
is($rc, 3, 'and so does the run');
($rc, $out, $err) = online($sub, 'postgres', '-t', 'loc');
is($rc, 3, 'a table whose referencing table a subscription writes into: refused');
like($err, qr/public\.sc \(subscription s_st\)/, 'naming that table');
is( $sub->safe_psql('postgres', $hostile . q{
		SELECT string_agg(p.action, ',') FROM flake_internal.online_plan('st') p}),
	'blocked', 'the plan called in a hostile session: blocked');
is(leftovers($sub, 'postgres'), '0', 'nothing was changed');
$pub->safe_psql('postgres', 'INSERT INTO st (v) SELECT n FROM generate_series(1, 200) n');
ok($sub->poll_query_until('postgres', 'SELECT count(*) = 300 FROM st'), 'the subscription still writes into it: every row arrives');
is( $sub->safe_psql('postgres', q{SELECT srsubstate FROM pg_subscription_rel WHERE srrelid = 'st'::regclass}),
	'r', 'its state for the table is as it was');
# what the hint says: flake_migrate() offline keeps the subscription's state
$sub->safe_psql('postgres', q{SELECT flake_migrate('st')});
$pub->safe_psql('postgres', 'INSERT INTO st (v) SELECT n FROM generate_series(1, 50) n');
ok($sub->poll_query_until('postgres', 'SELECT count(*) = 350 FROM st'), 'the rows go on arriving after flake_migrate()');
is( $sub->safe_psql('postgres', q{SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'st'::regclass AND attname = 'id'}),
	'bigint', 'which migrated it offline');

# a subscription that comes while the rows are copied: the log trigger
# logs its writes, the next run refuses, the swap called in a hostile
# session refuses, the undo leaves the subscription in place
$sub->safe_psql('postgres', q{
	CREATE TABLE late (id serial PRIMARY KEY, v int);
	INSERT INTO late (id, v) SELECT n, n FROM generate_series(1, 100) n;
});
($rc, $out, $err) = online($sub, 'postgres', '-t', 'late', '--until', 'analyze');
is($rc, 0, 'a table migrated up to the swap') or diag($out, $err);
$pub->safe_psql('postgres', q{CREATE TABLE late (id int PRIMARY KEY, v int); CREATE PUBLICATION p_late FOR TABLE late});
subscribe('postgres', 's_late', 'p_late', ' WITH (copy_data = false)');
$pub->safe_psql('postgres', 'INSERT INTO late SELECT n, n FROM generate_series(101, 150) n');
$sub->poll_query_until('postgres', 'SELECT count(*) = 150 FROM late')
  or die 'the rows do not arrive';	# before the checks that follow
is($sub->safe_psql('postgres', 'SELECT count(*) FROM late__flake_log'), '50', 'the log trigger logs the subscription\'s writes');
($rc, $out, $err) = online($sub, 'postgres', '-t', 'late');
is($rc, 3, 'a subscription since the copy began: the run refuses');
($rc, undef, $err) = $sub->psql('postgres', $hostile . q{SELECT flake_internal.online_swap('late', 'id', 'flake_next', NULL)});
like($err, qr/cannot migrate tables online that a subscription writes into/, 'the swap called in a hostile session refuses');
($rc, $out, $err) = online($sub, 'postgres', '-t', 'late', '--undo');
is($rc, 0, 'undone') or diag($out, $err);
$pub->safe_psql('postgres', 'INSERT INTO late SELECT n, n FROM generate_series(151, 200) n');
ok($sub->poll_query_until('postgres', 'SELECT count(*) = 200 FROM late'), 'the rows go on arriving after the undo');
is(leftovers($sub, 'postgres'), '0', 'nothing of the migration is left');

# 27.4: a FOR ALL TABLES publication with a subscriber (which has flake, as
# the tables' defaults need)
my $tables = q{
	CREATE TABLE pt (id serial PRIMARY KEY, v int);
	CREATE TABLE pt_child (id serial PRIMARY KEY, pt_id int REFERENCES pt);
	CREATE TABLE unrelated (id bigserial PRIMARY KEY, v int);
	CREATE TABLE wide (id bigserial PRIMARY KEY, v int);
};
$pub->safe_psql('allt', $tables . q{
	INSERT INTO pt (v) SELECT n FROM generate_series(1, 100) n;
	INSERT INTO pt_child (pt_id) SELECT id FROM pt;
	INSERT INTO wide (v) SELECT n FROM generate_series(1, 100) n;
	CREATE PUBLICATION p_all FOR ALL TABLES;
});
$sub->safe_psql('allt', $tables);
subscribe('allt', 's_all', 'p_all');
($rc, $out, $err) = online($pub, 'allt', '-t', 'pt', '--dry-run');
is($rc, 3, 'a table in a FOR ALL TABLES publication: the dry run refuses');
like($err, qr/blocked: cannot migrate tables online that a publication publishes \(SQLSTATE 0A000\)\. Hint: Migrate the tables with flake_migrate\(\) \(offline\).*Detail: publication p_all \(FOR ALL TABLES\)\. The copies of the tables and their logs/,
	'saying which, why, and what to do');
($rc, $out, $err) = online($pub, 'allt', '-t', 'pt');
is($rc, 3, 'and so does the run');
is(leftovers($pub, 'allt'), '0', 'nothing was changed');
# a bigint key is not copied: the swap alone, which publishes nothing new
($rc, $out, $err) = online($pub, 'allt', '-t', 'wide');
is($rc, 0, 'a bigint key in the publication: migrated (the swap alone)') or diag($out, $err);
$pub->safe_psql('allt', q{
	INSERT INTO unrelated (v) SELECT n FROM generate_series(1, 100) n;
	INSERT INTO wide (v) SELECT n FROM generate_series(1, 100) n;
	INSERT INTO pt (v) VALUES (0);
});
ok( $sub->poll_query_until('allt',
		'SELECT (SELECT count(*) FROM unrelated) = 100 AND (SELECT count(*) FROM wide) = 200 AND (SELECT count(*) FROM pt) = 101'),
	'the subscriber gets every row of every table');
is( $sub->safe_psql('allt', q{SELECT count(*) FROM wide WHERE id > 4294967296}),
	'100', 'the new flake ids too');

# flake_origin is published by it: the subscriber keeps only its own
# server and generates; a row written on the publisher stays there
my $own = q{SELECT string_agg(o.system_identifier::text, ',') = (SELECT system_identifier::text FROM pg_control_system()) FROM flake_internal.flake_origin o};
is($sub->safe_psql('allt', $own), 't', 'the subscriber\'s flake_origin names only itself');
($rc, $out, $err) = $sub->psql('allt', 'SELECT flake_next() > 0');
is($out, 't', 'and it generates') or diag($err);
$pub->safe_psql('allt', q{INSERT INTO flake_internal.flake_origin VALUES (12345); INSERT INTO unrelated (v) VALUES (0)});
($rc, $out, $err) = $pub->psql('allt', 'DELETE FROM flake_internal.flake_origin WHERE system_identifier = 12345');
is($rc, 0, 'deleting a row of flake_origin works on the publisher') or diag($err);
$pub->safe_psql('allt', 'INSERT INTO unrelated (v) VALUES (0)');
ok($sub->poll_query_until('allt', 'SELECT count(*) = 102 FROM unrelated'), 'the rows arrive');
is($sub->safe_psql('allt', $own), 't', 'rows the publisher adds to and deletes from flake_origin stay there');

# FOR TABLES IN SCHEMA and FOR TABLE publications, with no subscriber: the
# table's schema, the schema where the list of foreign keys to validate
# goes (a bigint key's, whose referencing int column is copied), a listed
# table
$pub->safe_psql('sch', q{
	CREATE SCHEMA s1; CREATE SCHEMA s2;
	CREATE TABLE s1.t (id serial PRIMARY KEY);
	CREATE TABLE s2.parent (id bigserial PRIMARY KEY);
	CREATE TABLE public.child (id serial PRIMARY KEY, parent_id int REFERENCES s2.parent);
	CREATE TABLE listed (id serial PRIMARY KEY);
	CREATE PUBLICATION p_s1 FOR TABLES IN SCHEMA s1;
	CREATE PUBLICATION p_s2 FOR TABLES IN SCHEMA s2;
	CREATE PUBLICATION p_listed FOR TABLE listed;
});
($rc, $out, $err) = online($pub, 'sch', '-t', 's1.t');
is($rc, 3, 'a table in a FOR TABLES IN SCHEMA publication: refused');
like($err, qr/publication p_s1 \(FOR TABLES IN SCHEMA s1\)/, 'naming it');
($rc, $out, $err) = online($pub, 'sch', '-t', 's2.parent');
is($rc, 3, 'a key whose schema is published, a referencing table copied: refused');
like($err, qr/publication p_s2 \(FOR TABLES IN SCHEMA s2\)/, 'naming it');
($rc, $out, $err) = online($pub, 'sch', '-t', 'listed');
is($rc, 3, 'a table listed by a publication: refused');
like($err, qr/publication p_listed \(FOR TABLE public\.listed\)\. The copy put in the place of a table would not be in the publications/,
	'naming it');
is(leftovers($pub, 'sch'), '0', 'nothing was changed');

# a publication that comes while the rows are copied: the next run and the
# swap (hostile session) refuse, the undo (hostile session) undoes
$pub->safe_psql('sch', q{
	CREATE TABLE mid (id serial PRIMARY KEY); INSERT INTO mid SELECT FROM generate_series(1, 100);
});
($rc, $out, $err) = online($pub, 'sch', '-t', 'mid', '--until', 'copy');
is($rc, 0, 'migrated up to the copy') or diag($out, $err);
$pub->safe_psql('sch', 'CREATE PUBLICATION p_mid FOR TABLES IN SCHEMA public');
($rc, $out, $err) = online($pub, 'sch', '-t', 'mid');
is($rc, 3, 'a publication since the copy began: the run refuses');
($rc, undef, $err) = $pub->psql('sch', $hostile . q{SELECT flake_internal.online_swap('mid', 'id', 'flake_next', NULL)});
like($err, qr/cannot migrate tables online that a publication publishes/, 'the swap called in a hostile session refuses');
$pub->safe_psql('sch', $hostile . q{
	DO $$
	DECLARE
		s text;
	BEGIN
		FOR s IN SELECT u.statement FROM flake_internal.online_undo('mid') u LOOP
			EXECUTE s;
		END LOOP;
	END
	$$});
is(leftovers($pub, 'sch'), '0', 'the undo in a hostile session leaves nothing');
$pub->safe_psql('sch', 'DROP PUBLICATION p_mid');

# the validation, in a hostile session, of a table put in a FOR ALL TABLES
# publication after its swap: validated, the list dropped
$pub->safe_psql('sch', q{
	CREATE TABLE val (id serial PRIMARY KEY);
	CREATE TABLE val_child (id serial PRIMARY KEY, val_id int REFERENCES val);
	INSERT INTO val SELECT FROM generate_series(1, 100); INSERT INTO val_child (val_id) SELECT id FROM val;
});
($rc, $out, $err) = online($pub, 'sch', '-t', 'val', '--until', 'swap');
is($rc, 0, 'swapped') or diag($out, $err);
$pub->safe_psql('sch', 'CREATE PUBLICATION p_val FOR ALL TABLES');
is($pub->safe_psql('sch', $hostile . q{SELECT flake_internal.online_validate('public.val__flake_validate')}),
	'1', 'the validation in a hostile session validates the foreign key');
is( $pub->safe_psql('sch', q{
		SELECT convalidated FROM pg_constraint WHERE conrelid = 'val_child'::regclass AND contype = 'f';
		SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'}),
	"t\n0", 'and drops its list');

$sub->stop;
$pub->stop;
done_testing();
