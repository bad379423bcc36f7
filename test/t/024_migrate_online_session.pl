# The online migration (flake_migrate_online) under hostile sessions and
# roles: a role whose default isolation is REPEATABLE READ, and one whose
# settings are all hostile at once (SERIALIZABLE, statement, lock and idle
# timeouts, a read-only default, a search_path that puts a schema of
# planted look-alike types, functions and operators first, replica mode,
# its own tablespace and table access method, default privileges for
# another role), through every step of the program, each run on its own;
# a second run started while the first runs.  Renames, DDL, default
# privileges and a hostile role during the migration: 029.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = online_server('online_session');
online_role($node, 'mallory');

sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

###########################################################################
# 27.1: a role whose default isolation is REPEATABLE READ.  A writer's
# transaction is open when the swap begins to wait for its lock, and
# commits while it waits: the swap must see its rows (its snapshots come
# after its locks).
online_role($node, 'rr');
$node->safe_psql('postgres', q{ALTER ROLE rr SET default_transaction_isolation = 'repeatable read'});
online_owned_tables($node, 'rr', 'rro', 200);
my ($rc, $out, $err) = online([ '-t', 'rro', '--until', 'analyze' ], user => 'rr');
is($rc, 0, 'repeatable read by default: up to the swap') or diag($out, $err);
($rc, undef, $err) = online_psql_as($node, 'rr', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT flake_internal.online_swap('rro', 'id', 'flake_next', NULL)});
like($err, qr/the swap must run at isolation level read committed, not repeatable read/,
	'the swap function refuses a REPEATABLE READ transaction');
my $writer = online_hold($node, q{
	INSERT INTO rro (v) VALUES (-1);
	INSERT INTO rro_lines (rro_id, v) SELECT max(id), -1 FROM rro;
	UPDATE rro_lines SET v = -2 WHERE id = 7;
	DELETE FROM rro_lines WHERE id = 8});
my ($h, $o, $e) = online_start($node, [ '-t', 'rro', '--lock-timeout', '600000' ], user => 'rr', phase => 'swap');
like($$o, qr/\(swap: /, 'the swap waits for the writer');
$writer->('COMMIT');
$h->finish;
is($h->result(0), 0, 'and swaps once it has committed') or diag($$o, $$e);
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM rro WHERE v = -1;
		SELECT count(*) FROM rro_lines WHERE v = -1;
		SELECT v FROM rro_lines WHERE id = 7;
		SELECT count(*) FROM rro_lines WHERE id = 8;
		SELECT count(*) FROM rro}),
	"1\n1\n-2\n0\n201", 'every write the writer committed while the swap waited is kept');

###########################################################################
# Every step of the program, each run on its own, for a role whose
# settings are all hostile: the program sets its own session.  An index
# expression that takes longer than the statement timeout to build and
# analyze (27.11), a lock held on the copy for longer than the lock
# timeout, a pause between batches longer than the idle timeout, planted
# look-alikes first in the search_path (any call of them fails), replica
# mode, a tablespace and an access method of the role's own, and default
# privileges for mallory (27.5).
my $ts = $node->basedir . '/ts';
mkdir $ts or die;
$node->safe_psql('postgres', qq{
	CREATE TABLESPACE hs_space LOCATION '$ts';
	CREATE ACCESS METHOD heap2 TYPE TABLE HANDLER heap_tableam_handler;
	CREATE SCHEMA evil AUTHORIZATION mallory;
});
online_role($node, 'hs');
$node->safe_psql('postgres', q{
	GRANT CREATE ON TABLESPACE hs_space TO hs;
	SET ROLE mallory;
	CREATE FUNCTION evil.spy() RETURNS boolean LANGUAGE plpgsql
		AS $$BEGIN RAISE EXCEPTION 'a planted function ran as %', current_user; END$$;
	CREATE FUNCTION evil.spy_oid(oid, oid) RETURNS boolean LANGUAGE sql AS 'SELECT evil.spy()';
	CREATE FUNCTION evil.spy_text(text, text) RETURNS text LANGUAGE sql AS 'SELECT evil.spy()::text';
	CREATE FUNCTION evil.spy_name(name, name) RETURNS boolean LANGUAGE sql AS 'SELECT evil.spy()';
	CREATE DOMAIN evil.regclass AS pg_catalog.regclass CHECK (evil.spy());
	CREATE DOMAIN evil.oid AS pg_catalog.oid CHECK (evil.spy());
	CREATE DOMAIN evil.name AS pg_catalog.name CHECK (evil.spy());
	CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = evil.spy_oid);
	CREATE OPERATOR evil.= (LEFTARG = name, RIGHTARG = name, FUNCTION = evil.spy_name);
	CREATE FUNCTION evil.spy_texts(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT evil.spy()';
	CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.spy_texts);
	CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.spy_text);
	CREATE FUNCTION evil.hashtext(text) RETURNS integer LANGUAGE sql AS 'SELECT evil.spy()::integer';
	CREATE FUNCTION evil.pg_advisory_lock(integer, integer) RETURNS void LANGUAGE sql AS 'SELECT evil.spy()';
	CREATE FUNCTION evil.string_to_array(text, text) RETURNS text[] LANGUAGE sql AS 'SELECT ARRAY[evil.spy()::text]';
	CREATE FUNCTION evil.set_config(text, text, boolean) RETURNS text LANGUAGE sql AS 'SELECT evil.spy()::text';
	CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE sql AS 'SELECT evil.spy()::text';
	GRANT USAGE ON SCHEMA evil TO PUBLIC;
	RESET ROLE;
	CREATE FUNCTION public.slow(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog
		AS $$BEGIN PERFORM pg_sleep(0.003); RETURN $1; END$$;
});
online_owned_tables($node, 'hs', 'hso', 300);
online_owned_tables($node, 'hs', 'hsu', 100);
$node->safe_psql('postgres', q{
	CREATE INDEX hso_slow ON hso (public.slow(v));
	GRANT SELECT ON hso TO PUBLIC;
	CREATE TABLE mirror AS SELECT id::bigint, v FROM hso;
	ALTER ROLE hs SET default_transaction_isolation = 'serializable';
	ALTER ROLE hs SET default_transaction_read_only = on;
	ALTER ROLE hs SET statement_timeout = '300ms';
	ALTER ROLE hs SET lock_timeout = '300ms';
	ALTER ROLE hs SET idle_in_transaction_session_timeout = '1ms';
	ALTER ROLE hs SET idle_session_timeout = '100ms';
	ALTER ROLE hs SET search_path = evil, pg_catalog, public;
	ALTER ROLE hs SET session_replication_role = replica;
	ALTER ROLE hs SET default_tablespace = hs_space;
	ALTER ROLE hs SET default_table_access_method = heap2;
	ALTER ROLE hs SET extra_float_digits = -15;
	ALTER DEFAULT PRIVILEGES FOR ROLE hs GRANT ALL ON TABLES TO mallory;
});
my $hso_acl = $node->safe_psql('postgres', q{SELECT relacl FROM pg_class WHERE relname = 'hso'});
# the application writes between the steps, to the table and the mirror
my $k = 0;
sub writes
{
	$k++;
	$node->safe_psql('postgres', qq{
		WITH o AS (INSERT INTO hso (v) VALUES ($k) RETURNING id, v) INSERT INTO mirror SELECT * FROM o;
		UPDATE hso SET v = -v WHERE id = $k; UPDATE mirror SET v = -v WHERE id = $k;
		DELETE FROM hso_lines WHERE hso_id = $k + 100; DELETE FROM hso WHERE id = $k + 100; DELETE FROM mirror WHERE id = $k + 100;
	});
}
($rc, $out, $err) = online([ '-t', 'hso', '--dry-run' ], user => 'hs');
is($rc, 0, 'hostile settings: the dry run') or diag($out, $err);
# (the steps before the swap in the sessions of --jobs too, which pin the
# same settings)
for my $step ([ 'create', '--jobs', '2' ], [ 'copy', '-b', '100', '--sleep', '300', '--jobs', '2' ],
	[ 'apply', '--jobs', '2' ], [ 'index' ], [ 'analyze' ], [ 'swap' ], [])
{
	my ($phase, @more) = @$step;
	writes();
	my @until = defined $phase ? ('--until', $phase) : ();
	if (($phase // '') eq 'index')
	{
		# the copy locked for longer than the role's lock_timeout
		my $release = online_hold($node, 'LOCK hso__flake_new IN SHARE ROW EXCLUSIVE MODE');
		($h, $o, $e) = online_start($node, [ '-t', 'hso', @until ], user => 'hs');
		sleep 1;
		$release->();
		$h->finish;
		($rc, $out, $err) = ($h->result(0), $$o, $$e);
	}
	else
	{
		($rc, $out, $err) = online([ '-t', 'hso', @until, @more ], user => 'hs');
	}
	is($rc, 0, 'hostile settings: ' . ($phase // 'validate')) or diag($out, $err);
	if (($phase // '') eq 'create')
	{
		is( $node->safe_psql('postgres', q{
				SELECT string_agg(format('%s %s %s %s', relname, amname, reltablespace,
										 has_table_privilege('mallory', c.oid, 'SELECT, INSERT, DELETE')), ', ' ORDER BY relname)
				FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname IN ('hso__flake_new', 'hso__flake_log')}),
			'hso__flake_log heap 0 f, hso__flake_new heap 0 f',
			'the copy and the log: heap, in the database\'s tablespace, and mallory may not use them');
	}
}
writes();
is( $node->safe_psql('postgres', q{
		SELECT (SELECT md5(string_agg(id || ' ' || v, ',' ORDER BY id)) FROM hso)
			   IS NOT DISTINCT FROM (SELECT md5(string_agg(id || ' ' || v, ',' ORDER BY id)) FROM mirror);
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'hso'::regclass AND attname = 'id';
		SELECT string_agg(format('%s %s %s', relname, amname, reltablespace), ', ' ORDER BY relname)
		FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname IN ('hso', 'hso_lines');
		SELECT relacl FROM pg_class WHERE relname = 'hso';
		SELECT has_table_privilege('mallory', 'hso_lines', 'SELECT');
		SELECT count(*) FROM pg_constraint WHERE conrelid = 'hso_lines'::regclass AND contype = 'f' AND convalidated}),
	"t\nbigint\nhso heap 0, hso_lines heap 0\n$hso_acl\nf\n1",
	'every row as written; the tables heap, in their tablespace, with their own grants, the key validated');
is(online_leftovers($node, 'hso'), '0', 'nothing of the migration is left');
($rc, $out, $err) = online([ '-t', 'hsu', '--until', 'analyze' ], user => 'hs');
is($rc, 0, 'hostile settings: another table up to the swap') or diag($out, $err);
($rc, $out, $err) = online([ '-t', 'hsu', '--undo' ], user => 'hs');
is($rc, 0, 'hostile settings: undo') or diag($out, $err);
is(online_leftovers($node, 'hsu'), '0', 'and nothing is left');

###########################################################################
# 27.10: a second run started while the first waits to swap waits for it,
# then finds the table it swapped in, and finishes.
online_role($node, 'two');
online_owned_tables($node, 'two', 'twoo', 100);
($rc, $out, $err) = online([ '-t', 'twoo', '--until', 'analyze' ], user => 'two');
is($rc, 0, 'two runs: the first up to the swap') or diag($out, $err);
my $release = online_hold($node, 'LOCK twoo IN ACCESS SHARE MODE');
my ($h1, $o1, $e1) = online_start($node, [ '-t', 'twoo', '--lock-timeout', '600000', '--until', 'swap' ],
	user => 'two', phase => 'swap');
my ($o2, $e2) = ('', '');
my $h2 = IPC::Run::start([ FlakeTest::online_command($node, [ '-t', 'twoo' ], user => 'two') ], '>', \$o2, '2>', \$e2);
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted})
  or die 'the second run does not wait for the first';
$release->();
$h1->finish;
$h2->finish;
is($h1->result(0), 0, 'the first swaps') or diag($$o1, $$e1);
is($h2->result(0), 0, 'the second, which waited for it, exits 0') or diag($o2, $e2);
like($o2, qr/validate/, 'and validates what the first swapped');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'twoo'::regclass AND attname = 'id';
		SELECT bool_and(convalidated) FROM pg_constraint WHERE conrelid = 'twoo_lines'::regclass AND contype = 'f'}),
	"bigint\nt", 'twoo is migrated, its foreign key validated');

$node->stop;
done_testing();
