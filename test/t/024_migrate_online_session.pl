# The online migration (flake_migrate_online) under hostile sessions and
# roles: a role whose default isolation is REPEATABLE READ, and one whose
# settings are all hostile at once (SERIALIZABLE, statement, lock and idle
# timeouts, a read-only default, a search_path that puts a schema of
# planted look-alike types, functions and operators first, replica mode,
# its own tablespace and table access method, default privileges for
# another role), through every step of the program, each run on its own;
# a second run started while the first runs; tables renamed during the
# migration; DDL during the migration, carried or refused; default
# privileges; and a hostile role trying every SQL entry point of the
# online path.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('online_session',
	"flake.nodes = '0-1015'\nflake.randflake_nodes = '0-1015'\nflake.randflake_secret = '$flake_secret'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE ROLE mallory LOGIN;
	GRANT CREATE ON SCHEMA public TO mallory;
});

sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

# psql as a role (logged in as it): exit code, stdout, stderr
sub psql_as
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return ($rc, $out, $err);
}

# An owner role and its tables: NAME (a serial key) with N rows and
# NAME_lines referencing it.
sub make_owned
{
	my ($role, $name, $n) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $name (id serial PRIMARY KEY, v int);
		CREATE TABLE ${name}_lines (id serial PRIMARY KEY, ${name}_id int NOT NULL REFERENCES $name, v int);
		INSERT INTO $name (v) SELECT n FROM generate_series(1, $n) n;
		INSERT INTO ${name}_lines (${name}_id, v) SELECT id, id FROM $name;
		ALTER TABLE $name OWNER TO $role; ALTER TABLE ${name}_lines OWNER TO $role;
		ALTER SEQUENCE ${name}_id_seq OWNER TO $role; ALTER SEQUENCE ${name}_lines_id_seq OWNER TO $role;
	});
}

# No copy, log or list of the migration is left for the tables NAME*.
sub leftovers
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_class WHERE relname LIKE '${name}%\\_\\_flake\\_%'});
}

sub role
{
	my ($role) = @_;
	$node->safe_psql('postgres', "CREATE ROLE $role LOGIN; GRANT CREATE ON SCHEMA public TO $role");
}

###########################################################################
# 27.1: a role whose default isolation is REPEATABLE READ.  A writer's
# transaction is open when the swap begins to wait for its lock, and
# commits while it waits: the swap must see its rows (its snapshots come
# after its locks).
role('rr');
$node->safe_psql('postgres', q{ALTER ROLE rr SET default_transaction_isolation = 'repeatable read'});
make_owned('rr', 'rro', 200);
my ($rc, $out, $err) = online([ '-t', 'rro', '--until', 'analyze' ], user => 'rr');
is($rc, 0, 'repeatable read by default: up to the swap') or diag($out, $err);
($rc, undef, $err) = psql_as('rr', q{
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
role('hs');
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
make_owned('hs', 'hso', 300);
make_owned('hs', 'hsu', 100);
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
is(leftovers('hso'), '0', 'nothing of the migration is left');
($rc, $out, $err) = online([ '-t', 'hsu', '--until', 'analyze' ], user => 'hs');
is($rc, 0, 'hostile settings: another table up to the swap') or diag($out, $err);
($rc, $out, $err) = online([ '-t', 'hsu', '--undo' ], user => 'hs');
is($rc, 0, 'hostile settings: undo') or diag($out, $err);
is(leftovers('hsu'), '0', 'and nothing is left');

###########################################################################
# 27.10: a second run started while the first waits to swap waits for it,
# then finds the table it swapped in, and finishes.
role('two');
make_owned('two', 'twoo', 100);
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

###########################################################################
# 27.12: tables renamed during the migration.  Copies and logs are found
# by the oid they record: continuing finishes, undoing drops them, and
# the list of foreign keys to validate is found after a rename too.
role('ren');
make_owned('ren', 'reno', 100);
make_owned('ren', 'renu', 100);
make_owned('ren', 'renv', 100);
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
is(leftovers('reno'), '0', 'no copy or log left');
($rc, $out, $err) = online([ '-t', 'renu', '--until', 'analyze' ], user => 'ren');
is($rc, 0, 'renamed, then undone: up to the swap') or diag($out, $err);
$node->safe_psql('postgres', 'ALTER TABLE renu RENAME TO renu2; ALTER TABLE renu_lines RENAME TO renu2_lines');
($rc, $out, $err) = online([ '-t', 'renu2', '--undo' ], user => 'ren');
is($rc, 0, 'undo after a rename') or diag($out, $err);
is(leftovers('renu'), '0', 'drops the copies and logs');
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
is(leftovers('renv'), '0', 'and the list of them dropped');

###########################################################################
# 27.6: DDL during the migration.  What the copy lacks (NOT NULL, a
# default) is refused before anything changes; dropped and changed
# indexes, triggers, grants and column comments are carried; a policy or
# another change under the swap's locks makes the swap refuse.
role('ddl');
make_owned('ddl', 'ddlo', 100);
make_owned('ddl', 'ddlc', 100);
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
($rc, undef, $err) = psql_as('ddl', q{
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
role('dp');
role('reader');
make_owned('dp', 'dpo', 100);
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
($rc, undef, $err) = psql_as('mallory', 'SELECT count(*) FROM dpo__flake_new');
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
role('vic');
make_owned('vic', 'vico', 100);
$node->safe_psql('postgres', q{
	CREATE TABLE vic_other (k int); ALTER TABLE vic_other ADD CONSTRAINT positive CHECK (k > 0) NOT VALID;
	ALTER TABLE vic_other OWNER TO vic;
	GRANT TRIGGER ON vico TO mallory;
});
my $vico = $node->safe_psql('postgres', q{SELECT 'vico'::regclass::oid});
# a copy and a log planted before the migration, marked as vico's, that
# anybody may write: the migration must not take them for its own
psql_as('mallory', qq{
	CREATE TABLE vico__flake_new (id bigint, v int); GRANT ALL ON vico__flake_new TO PUBLIC;
	COMMENT ON TABLE vico__flake_new IS 'flake_migrate_online: the copy of $vico';
	CREATE TABLE vico__flake_log (k int); GRANT ALL ON vico__flake_log TO PUBLIC;
	COMMENT ON TABLE vico__flake_log IS 'flake_migrate_online: the log of $vico'});
($rc, $out, $err) = online([ '-t', 'vico' ], user => 'vic');
is($rc, 3, 'a copy and a log planted by another role: refused') or diag($out, $err);
like($err, qr/public\.vico: a copy or log of it belongs to another role/, 'and says why');
is($node->safe_psql('postgres', 'SELECT count(*) FROM vico__flake_new'), '0', 'nothing was copied into the planted copy');
psql_as('mallory', 'DROP TABLE vico__flake_new, vico__flake_log');
($rc, $out, $err) = online([ '-t', 'vico', '--until', 'analyze' ], user => 'vic');
is($rc, 0, 'vic migrates vico, up to the swap') or diag($out, $err);
# the log trigger (27.16): pointed by mallory at another table of vic, or
# at vico's log from another table, it refuses to write
$node->safe_psql('postgres', q{GRANT TRIGGER ON vico_lines TO mallory});
($rc, undef, $err) = psql_as('mallory', q{
	CREATE TRIGGER t AFTER INSERT ON vico FOR EACH ROW
		EXECUTE FUNCTION flake_internal.online_log('public.vic_other', 'id');
	CREATE TRIGGER t AFTER INSERT ON vico_lines FOR EACH ROW
		EXECUTE FUNCTION flake_internal.online_log('public.vico__flake_log', 'vico_id')});
is($rc, 0, 'mallory attaches the log trigger to vic\'s tables') or diag($err);
($rc, undef, $err) = psql_as('vic', 'INSERT INTO vico (v) VALUES (1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'pointed at another table of vic: refused');
($rc, undef, $err) = psql_as('vic', 'INSERT INTO vico_lines (vico_id, v) VALUES (1, 1)');
like($err, qr/flake_internal\.online_log\(\) needs a log table and a key column/, 'pointed at another table\'s log: refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM vic_other'), '0', 'nothing was written');
$node->safe_psql('postgres', 'DROP TRIGGER t ON vico; DROP TRIGGER t ON vico_lines');
# the functions the program calls, called by mallory
my $cols = qq{ARRAY[ROW($vico, 1, true)]::flake_internal.migrate_column[]};
($rc, undef, $err) = psql_as('mallory', q{SELECT flake_internal.online_plan('vico')});
like($err, qr/must be owner of table public\.vico\b/, 'plan: refused');
($rc, undef, $err) = psql_as('mallory', q{SELECT flake_internal.online_swap('vico', 'id', 'flake_next', NULL)});
like($err, qr/permission denied for table vico|must be logged in as the owner of public\.vico\b/, 'swap: refused');
($rc, undef, $err) = psql_as('mallory', q{SELECT flake_internal.online_swap_lock('vico', 'id', 'flake_next', NULL)});
like($err, qr/permission denied for table vico|must be owner of table public\.vico\b/, 'its locks: refused');
($rc, undef, $err) = psql_as('mallory', q{SELECT flake_internal.online_private('vico')});
like($err, qr/must be owner of table public\.vico\b/, 'private: refused');
($rc, undef, $err) = psql_as('mallory', q{
	CREATE TABLE mine (rel regclass, conname name);
	COMMENT ON TABLE mine IS 'flake_migrate_online: the foreign keys to validate';
	INSERT INTO mine VALUES ('vic_other', 'positive');
	SELECT flake_internal.online_validate('mine')});
like($err, qr/must be owner of table vic_other/, 'validate: refused');
($rc, $out, $err) = psql_as('mallory', qq{
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
