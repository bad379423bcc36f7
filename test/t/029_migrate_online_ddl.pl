# The online migration (flake_migrate_online) while others change the
# tables: tables renamed during the migration; DDL during the migration,
# carried or refused; default privileges, which give others nothing on the
# copies and logs; and a hostile role, mallory, trying every SQL entry
# point of the online path.  (Hostile sessions of the migrating role: 024.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = online_server('online_ddl');
online_role($node, 'mallory');
my ($rc, $out, $err);

sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

###########################################################################
# 27.12: tables renamed during the migration.  Copies and logs are found
# by the oid they record: continuing finishes, undoing drops them, and
# the list of foreign keys to validate is found after a rename too.
online_role($node, 'ren');
online_owned_tables($node, 'ren', 'reno', 100);
online_owned_tables($node, 'ren', 'renu', 100);
online_owned_tables($node, 'ren', 'renv', 100);
($rc, $out, $err) = online([ '-t', 'reno', '--until', 'copy' ], user => 'ren');
is($rc, 0, 'renamed: up to the copy') or diag($out, $err);
$node->safe_psql('postgres', q{
	ALTER TABLE reno RENAME TO reno2; ALTER TABLE reno_lines RENAME TO reno2_lines;
	INSERT INTO reno2 (v) VALUES (-1)});
($rc, $out, $err) = online([ '-t', 'reno2' ], user => 'ren');
is($rc, 0, 'renamed during the copy: continuing finishes') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'reno2'::regclass AND attname = 'id';
		SELECT count(*) FROM reno2;
		SELECT string_agg(relname, ' ' ORDER BY relname) FROM pg_class WHERE relname LIKE 'reno%' AND relkind = 'r'}),
	"bigint\n101\nreno2 reno2_lines", 'the renamed tables migrated, every row kept');
is(online_leftovers($node, 'reno'), '0', 'no copy or log left');
($rc, $out, $err) = online([ '-t', 'renu', '--until', 'analyze' ], user => 'ren');
is($rc, 0, 'renamed, then undone: up to the swap') or diag($out, $err);
$node->safe_psql('postgres', 'ALTER TABLE renu RENAME TO renu2; ALTER TABLE renu_lines RENAME TO renu2_lines');
($rc, $out, $err) = online([ '-t', 'renu2', '--undo' ], user => 'ren');
is($rc, 0, 'undo after a rename') or diag($out, $err);
is(online_leftovers($node, 'renu'), '0', 'drops the copies and logs');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz\_flake\_migrate\_online%'}),
	'0', 'and the triggers');
($rc, $out, $err) = online([ '-t', 'renv', '--until', 'swap' ], user => 'ren');
is($rc, 0, 'renamed after the swap: up to the swap') or diag($out, $err);
$node->safe_psql('postgres', 'ALTER TABLE renv RENAME TO renv2');
($rc, $out, $err) = online([ '-t', 'renv2' ], user => 'ren');
is($rc, 0, 'continued') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT bool_and(convalidated) FROM pg_constraint WHERE conrelid = 'renv_lines'::regclass AND contype = 'f'}),
	't', 'the foreign keys are validated');
is(online_leftovers($node, 'renv'), '0', 'and the list of them dropped');

###########################################################################
# 27.6: DDL during the migration.  What the copy lacks (NOT NULL, a
# default) is refused before anything changes; dropped and changed
# indexes, triggers, grants and column comments are carried; a policy or
# another change under the swap's locks makes the swap refuse.
online_role($node, 'ddl');
online_owned_tables($node, 'ddl', 'ddlo', 100);
online_owned_tables($node, 'ddl', 'ddlc', 100);
for my $t ('ddlo', 'ddlc')
{
	$node->safe_psql('postgres', qq{
		ALTER TABLE $t ADD COLUMN c text DEFAULT 'c', ADD COLUMN b int;
		UPDATE $t SET b = id;
		CREATE INDEX ${t}_c ON $t (c); CREATE UNIQUE INDEX ${t}_b ON $t (b); CREATE INDEX ${t}_x ON $t (v);
		COMMENT ON COLUMN $t.c IS 'before';
	});
	($rc, $out, $err) = online([ '-t', $t, '--until', 'analyze' ], user => 'ddl');
	is($rc, 0, "DDL: $t up to the swap") or diag($out, $err);
}
for my $change (
	[ 'SET NOT NULL', 'ALTER TABLE ddlo ALTER COLUMN v SET NOT NULL', 'ALTER TABLE ddlo ALTER COLUMN v DROP NOT NULL' ],
	[ 'SET DEFAULT', q{ALTER TABLE ddlo ALTER COLUMN c SET DEFAULT 'd'}, q{ALTER TABLE ddlo ALTER COLUMN c SET DEFAULT 'c'} ],
	[ 'SET DEFAULT on a referencing table', 'ALTER TABLE ddlo_lines ALTER COLUMN v SET DEFAULT 0',
	  'ALTER TABLE ddlo_lines ALTER COLUMN v DROP DEFAULT' ],
	[ 'SET (fillfactor)', 'ALTER TABLE ddlo SET (fillfactor = 50)', 'ALTER TABLE ddlo RESET (fillfactor)' ])
{
	my ($what, $do, $undo) = @$change;
	$node->safe_psql('postgres', $do);
	($rc, $out, $err) = online([ '-t', 'ddlo' ], user => 'ddl');
	is($rc, 3, "$what during the migration: refused") or diag($out, $err);
	like($err, qr/its columns or checks changed while it was copied/, 'and says why');
	$node->safe_psql('postgres', $undo);
}
($rc, $out, $err) = online([ '-t', 'ddlo' ], user => 'ddl');
is($rc, 0, 'each change undone: the migration finishes') or diag($out, $err);
# carried: indexes dropped (a unique one, then a duplicate written) or
# made again differently, a trigger added, a grant, a column's comment
$node->safe_psql('postgres', q{
	DROP INDEX ddlc_c; DROP INDEX ddlc_b;
	INSERT INTO ddlc (v, b) VALUES (1000, 1), (1001, 1);
	DROP INDEX ddlc_x; CREATE INDEX ddlc_x ON ddlc (b DESC);
	CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
	CREATE TRIGGER keep BEFORE UPDATE ON ddlc FOR EACH ROW EXECUTE FUNCTION keep();
	GRANT SELECT ON ddlc TO mallory;
	COMMENT ON COLUMN ddlc.c IS 'after';
});
my $ddlc_acl = $node->safe_psql('postgres', q{SELECT relacl FROM pg_class WHERE relname = 'ddlc'});
($rc, $out, $err) = online([ '-t', 'ddlc', '--until', 'analyze' ], user => 'ddl');
is($rc, 0, 'indexes dropped and changed during the migration: the copies follow') or diag($out, $err);
# a policy made under the swap's locks, between the plan and the swap:
# the swap function, called as the client calls it, refuses
$node->safe_psql('postgres', 'CREATE POLICY mine ON ddlc USING (true)');
($rc, undef, $err) = online_psql_as($node, 'ddl', q{
	BEGIN; SELECT flake_internal.online_swap('ddlc', 'id', 'flake_next', NULL); COMMIT});
like($err, qr/the tables changed while they were copied: .*policy mine on table public\.ddlc/, 'a policy made meanwhile: the swap refuses');
$node->safe_psql('postgres', 'DROP POLICY mine ON ddlc');
($rc, $out, $err) = online([ '-t', 'ddlc' ], user => 'ddl');
is($rc, 0, 'then the migration finishes') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT string_agg(indexrelid::regclass || ' ' || pg_get_indexdef(indexrelid), ', ' ORDER BY indexrelid::regclass::text)
		FROM pg_index WHERE indrelid = 'ddlc'::regclass;
		SELECT string_agg(tgname, ' ') FROM pg_trigger WHERE tgrelid = 'ddlc'::regclass AND NOT tgisinternal;
		SELECT relacl FROM pg_class WHERE relname = 'ddlc';
		SELECT col_description('ddlc'::regclass, 3);
		SELECT count(*) FROM ddlc}),
	"ddlc_pkey CREATE UNIQUE INDEX ddlc_pkey ON public.ddlc USING btree (id), "
	  . "ddlc_x CREATE INDEX ddlc_x ON public.ddlc USING btree (b DESC)\nkeep\n$ddlc_acl\nafter\n102",
	'the indexes, triggers, grants and comments as the table had them at the swap, every row');

###########################################################################
# 27.5: default privileges give others nothing on the copies and logs,
# and the swap grants exactly the table's privileges: here only the
# owner's, and on another table one of its own.
online_role($node, 'dp');
online_role($node, 'reader');
online_owned_tables($node, 'dp', 'dpo', 100);
$node->safe_psql('postgres', q{
	ALTER DEFAULT PRIVILEGES FOR ROLE dp GRANT SELECT, INSERT, DELETE ON TABLES TO mallory;
	ALTER DEFAULT PRIVILEGES FOR ROLE dp IN SCHEMA public GRANT SELECT ON TABLES TO PUBLIC;
	ALTER DEFAULT PRIVILEGES FOR ROLE dp REVOKE DELETE ON TABLES FROM dp;
	GRANT SELECT ON dpo_lines TO reader;
});
($rc, $out, $err) = online([ '-t', 'dpo', '--until', 'analyze' ], user => 'dp');
is($rc, 0, 'default privileges: up to the swap') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT string_agg(format('%s %s %s', relname, has_table_privilege('mallory', oid, 'SELECT, INSERT, DELETE'),
								 has_table_privilege('reader', oid, 'SELECT')), ', ' ORDER BY relname)
		FROM pg_class WHERE relname LIKE 'dpo%\_\_flake\_%' AND relkind = 'r'}),
	'dpo__flake_log f f, dpo__flake_new f f, dpo_lines__flake_log f f, dpo_lines__flake_new f f',
	'no other role may use the copies and logs');
($rc, undef, $err) = online_psql_as($node, 'mallory', 'SELECT count(*) FROM dpo__flake_new');
like($err, qr/permission denied/, 'mallory may not read a copy');
($rc, $out, $err) = online([ '-t', 'dpo' ], user => 'dp');
is($rc, 0, 'default privileges: finished') or diag($out, $err);
# (the owner's privileges by default: PostgreSQL 17 adds MAINTAIN)
my $owner_acl = $node->safe_psql('postgres', q{SELECT a FROM unnest(acldefault('r', 'dp'::regrole)) a});
is( $node->safe_psql('postgres', q{
		SELECT string_agg(relname || ' ' || coalesce(array_to_string(ARRAY(SELECT a FROM unnest(relacl) a ORDER BY a::text), ','), 'default'), ', ' ORDER BY relname)
		FROM pg_class WHERE relname LIKE 'dpo%' AND relkind = 'r'}),
	"dpo $owner_acl, dpo_lines $owner_acl,reader=r/dp",
	'the tables have exactly their privileges');
is( $node->safe_psql('postgres', q{
		SELECT has_table_privilege('mallory', 'dpo', 'SELECT') OR has_table_privilege('mallory', 'dpo_lines', 'SELECT')
			   OR has_table_privilege('reader', 'dpo', 'SELECT')}),
	'f', 'no role got a privilege it did not have');

###########################################################################
# A hostile role, mallory, against every SQL entry point of the online
# path, on tables of vic, who migrates them.  mallory may create in the
# schema and has TRIGGER on vic's table.
online_role($node, 'vic');
online_owned_tables($node, 'vic', 'vico', 100);
$node->safe_psql('postgres', q{
	CREATE TABLE vic_other (k int); ALTER TABLE vic_other ADD CONSTRAINT positive CHECK (k > 0) NOT VALID;
	ALTER TABLE vic_other OWNER TO vic;
	GRANT TRIGGER ON vico TO mallory;
});
my $vico = $node->safe_psql('postgres', q{SELECT 'vico'::regclass::oid});
# a copy and a log planted before the migration, marked as vico's, that
# anybody may write: the migration must not take them for its own
online_psql_as($node, 'mallory', qq{
	CREATE TABLE vico__flake_new (id bigint, v int); GRANT ALL ON vico__flake_new TO PUBLIC;
	COMMENT ON TABLE vico__flake_new IS 'flake_migrate_online: the copy of $vico';
	CREATE TABLE vico__flake_log (k int); GRANT ALL ON vico__flake_log TO PUBLIC;
	COMMENT ON TABLE vico__flake_log IS 'flake_migrate_online: the log of $vico'});
($rc, $out, $err) = online([ '-t', 'vico' ], user => 'vic');
is($rc, 3, 'a copy and a log planted by another role: refused') or diag($out, $err);
like($err, qr/public\.vico: a copy or log of it belongs to another role/, 'and says why');
is($node->safe_psql('postgres', 'SELECT count(*) FROM vico__flake_new'), '0', 'nothing was copied into the planted copy');
online_psql_as($node, 'mallory', 'DROP TABLE vico__flake_new, vico__flake_log');
($rc, $out, $err) = online([ '-t', 'vico', '--until', 'analyze' ], user => 'vic');
is($rc, 0, 'vic migrates vico, up to the swap') or diag($out, $err);
# the log trigger (27.16): pointed by mallory at another table of vic, or
# at vico's log from another table, it refuses to write
$node->safe_psql('postgres', q{GRANT TRIGGER ON vico_lines TO mallory});
($rc, undef, $err) = online_psql_as($node, 'mallory', q{
	CREATE TRIGGER t AFTER INSERT ON vico FOR EACH ROW
		EXECUTE FUNCTION flake_internal.online_log('public.vic_other', 'id');
	CREATE TRIGGER t AFTER INSERT ON vico_lines FOR EACH ROW
		EXECUTE FUNCTION flake_internal.online_log('public.vico__flake_log', 'vico_id')});
is($rc, 0, 'mallory attaches the log trigger to vic\'s tables') or diag($err);
($rc, undef, $err) = online_psql_as($node, 'vic', 'INSERT INTO vico (v) VALUES (1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'pointed at another table of vic: refused');
($rc, undef, $err) = online_psql_as($node, 'vic', 'INSERT INTO vico_lines (vico_id, v) VALUES (1, 1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'pointed at another table\'s log: refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM vic_other'), '0', 'nothing was written');
$node->safe_psql('postgres', 'DROP TRIGGER t ON vico; DROP TRIGGER t ON vico_lines');
# the functions the program calls, called by mallory
my $cols = qq{ARRAY[ROW($vico, 1, true)]::flake_internal.migrate_column[]};
($rc, undef, $err) = online_psql_as($node, 'mallory', q{SELECT flake_internal.online_plan('vico')});
like($err, qr/must be owner of table public\.vico\b/, 'plan: refused');
($rc, undef, $err) = online_psql_as($node, 'mallory', q{SELECT flake_internal.online_swap('vico', 'id', 'flake_next', NULL)});
like($err, qr/permission denied for table vico|must be logged in as the owner of public\.vico\b/, 'swap: refused');
($rc, undef, $err) = online_psql_as($node, 'mallory', q{SELECT flake_internal.online_swap_lock('vico', 'id', 'flake_next', NULL)});
like($err, qr/permission denied for table vico|must be owner of table public\.vico\b/, 'its locks: refused');
($rc, undef, $err) = online_psql_as($node, 'mallory', q{SELECT flake_internal.online_private('vico')});
like($err, qr/must be owner of table public\.vico\b/, 'private: refused');
($rc, undef, $err) = online_psql_as($node, 'mallory', q{
	CREATE TABLE mine (rel regclass, conname name);
	COMMENT ON TABLE mine IS 'flake_migrate_online: the foreign keys to validate';
	INSERT INTO mine VALUES ('vic_other', 'positive');
	SELECT flake_internal.online_validate('mine')});
like($err, qr/must be owner of table vic_other/, 'validate: refused');
($rc, $out, $err) = online_psql_as($node, 'mallory', qq{
	SELECT count(*) FROM flake_internal.online_undo('vico');
	SELECT count(*) FROM flake_internal.online_tables($cols, 'bigint');
	SELECT count(*) FROM unnest(flake_internal.online_blockers($cols, 'bigint'));
	SELECT count(*) FROM flake_internal.online_indexes($cols, 'bigint');
	SELECT count(*) FROM flake_internal.online_prepare($cols, 'bigint');
	SELECT cardinality(flake_internal.online_swap_sql('vico', 'id', 'flake_next', $cols, 'bigint')) > 0;
	SELECT flake_internal.online_shape('vico'::regclass, '{id}', 'id') IS NOT NULL;
	SELECT flake_internal.online_marked($vico, 'copy') IS NOT NULL});
is($rc, 0, 'the helpers that read the catalogs run for mallory') or diag($err);
is( $node->safe_psql('postgres', q{
		SELECT has_table_privilege('mallory', c.oid, 'SELECT') FROM pg_class c WHERE relname = 'vico__flake_new';
		SELECT count(*) FROM pg_trigger WHERE tgrelid = 'vico'::regclass AND NOT tgisinternal}),
	"f\n2", 'mallory has gained nothing, and the migration is as vic left it');
($rc, $out, $err) = online([ '-t', 'vico' ], user => 'vic');
is($rc, 0, 'vic finishes it') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT has_table_privilege('mallory', 'vico', 'SELECT, INSERT, UPDATE, DELETE'), count(*) FROM vico}),
	'f|100', 'mallory has no right on the migrated table; every row kept');

$node->stop;
done_testing();
