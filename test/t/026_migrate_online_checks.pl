# What the online migration (flake_migrate_online) checks before it
# changes anything, and the names and keys it must handle (issue 27):
# foreign keys with another owner's table at one end (27.3: refused by the
# dry run; before, validating one ran that owner's code with the migrating
# role's rights, and a non-superuser owner's swap failed after the copy),
# the validate step called by another role; schemas and tables whose names
# need quoting (27.7), and the dry run's rehearsal, which fails where a
# step would; names of 52 bytes and more, and names taken (27.8); tables
# whose batches go by a uuid or text key (27.9).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = flake_cluster('checks', "flake.nodes = '0-1015'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE ROLE app LOGIN; GRANT CREATE ON SCHEMA public TO app;
	CREATE ROLE refr LOGIN; GRANT CREATE ON SCHEMA public TO refr;
});
# The command, as the user postgres (or with user => ROLE): exit code,
# stdout, stderr.
sub online
{
	my ($args, %opt) = @_;
	return online_run($node, $args, %opt);
}

# the copies, logs and lists of a migration in the database
sub leftovers
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_class WHERE relname LIKE '%\_\_flake\_%'});
}

# 27.3: a role that holds only REFERENCES on a superuser's table keys a
# table of its own to a non-key column; a function in a partial index's
# predicate makes it a superuser when it runs as another role (the planner
# folds it when it plans a query on the table, as validating the foreign
# key does; it calls a volatile function, which may write)
$node->safe_psql('postgres', q{
	CREATE TABLE k (id serial PRIMARY KEY, code text UNIQUE NOT NULL);
	INSERT INTO k (code) SELECT 'c' || n FROM generate_series(1, 50) n;
	GRANT REFERENCES ON k TO refr;
	SET ROLE refr;
	CREATE FUNCTION public.escalate() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		IF current_user <> 'refr' THEN
			ALTER ROLE refr SUPERUSER;
		END IF;
	END
	$$;
	CREATE FUNCTION promote(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
	BEGIN
		PERFORM public.escalate();
		RETURN true;
	END
	$$;
	CREATE TABLE refs (n int PRIMARY KEY, code text REFERENCES k (code));
	CREATE INDEX refs_n ON refs (n) WHERE promote(1);
	INSERT INTO refs SELECT n, 'c' || n FROM generate_series(1, 50) n;
	RESET ROLE;
});
my ($rc, $out, $err) = online([ '-t', 'k', '--dry-run' ]);
is($rc, 3, 'a foreign key from another owner\'s table: the dry run refuses');
like($err, qr/^(?=.*blocked: cannot migrate public\.k\.id online: tables of other owners )(?=.*public\.refs \(owner refr\))(?=.*Hint: Migrate with flake_migrate\(\) \(offline\))/s,
	'naming the table and its owner, and what to do');
($rc, $out, $err) = online([ '-t', 'k' ]);
is($rc, 3, 'and so does the run');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'refr'}),
	'f', 'the other owner\'s code never ran as the migrating role');
is(leftovers(), '0', 'nothing was changed');
# what the hint says: flake_migrate() offline leaves that foreign key alone
$node->safe_psql('postgres', q{SELECT flake_migrate('k')});
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'k'::regclass AND attname = 'id';
		SELECT convalidated FROM pg_constraint WHERE conrelid = 'refs'::regclass AND contype = 'f';
		SELECT rolsuper FROM pg_roles WHERE rolname = 'refr'}),
	"bigint\nt\nf", 'flake_migrate() offline migrates it, the foreign key as it was');

# the same with an owner that is not a superuser: the swap (ALTER TABLE
# refs2) would fail after the whole copy; a foreign key from a copied table
# to another owner's table too
$node->safe_psql('postgres', q{
	SET ROLE refr;
	CREATE TABLE products (code text PRIMARY KEY);
	INSERT INTO products VALUES ('p');
	GRANT REFERENCES ON products TO app;
	SET ROLE app;
	CREATE TABLE k2 (id serial PRIMARY KEY, code text UNIQUE NOT NULL);
	CREATE TABLE lines2 (id serial PRIMARY KEY, k2_id int REFERENCES k2, product text REFERENCES products);
	INSERT INTO k2 (code) SELECT 'c' || n FROM generate_series(1, 50) n;
	INSERT INTO lines2 (k2_id, product) SELECT id, 'p' FROM k2;
	GRANT REFERENCES ON k2 TO refr;
	SET ROLE refr;
	CREATE TABLE refs2 (n int PRIMARY KEY, code text REFERENCES k2 (code));
});
($rc, $out, $err) = online([ '-t', 'k2', '--dry-run' ], user => 'app');
is($rc, 3, 'a non-superuser owner: the dry run refuses');
like($err, qr/public\.products \(owner refr\), public\.refs2 \(owner refr\)/,
	'both ends: the table it references and the one referencing it');
($rc, $out, $err) = online([ '-t', 'k2' ], user => 'app');
is($rc, 3, 'and so does the run, before the copy');
is(leftovers(), '0', 'nothing was changed');
$node->safe_psql('postgres', 'DROP TABLE refs2, products CASCADE');
($rc, $out, $err) = online([ '-t', 'k2' ], user => 'app');
is($rc, 0, 'without them it migrates') or diag($out, $err);

# the validate step validates as the session's role: a superuser calling it
# on the owner's list is refused (the tables' code would run as it)
$node->safe_psql('postgres', q{
	SET ROLE app;
	CREATE TABLE v1 (id serial PRIMARY KEY);
	CREATE TABLE v1_child (id serial PRIMARY KEY, v1_id int REFERENCES v1);
	INSERT INTO v1 SELECT FROM generate_series(1, 10); INSERT INTO v1_child (v1_id) SELECT id FROM v1;
});
($rc, $out, $err) = online([ '-t', 'v1', '--until', 'swap' ], user => 'app');
is($rc, 0, 'migrated up to the swap') or diag($out, $err);
($rc, undef, $err) = $node->psql('postgres', q{SELECT flake_internal.online_validate('v1__flake_validate')});
like($err, qr/must be logged in as the owner of public\.v1, public\.v1_child/, 'the validate step called by a superuser: refused');
($rc, $out, $err) = online([ '-t', 'v1' ], user => 'app');
is($rc, 0, 'the owner validates') or diag($out, $err);
is($node->safe_psql('postgres', q{SELECT convalidated FROM pg_constraint WHERE conrelid = 'v1_child'::regclass AND contype = 'f'}),
	't', 'the foreign key is valid');

# 27.7: schemas, tables and columns whose names need quoting, a foreign key
# from one to the other; the dry run quotes each name once, and the run
# migrates them
$node->safe_psql('postgres', q{
	CREATE SCHEMA "Sales"; CREATE SCHEMA "my-app";
	CREATE TABLE "Sales"."Orders" ("Id" serial PRIMARY KEY, "Placed at" int NOT NULL DEFAULT 0);
	CREATE INDEX "Placed" ON "Sales"."Orders" ("Placed at");
	CREATE TABLE "my-app"."line-items" (id serial PRIMARY KEY, "Order" int NOT NULL REFERENCES "Sales"."Orders");
	INSERT INTO "Sales"."Orders" ("Placed at") SELECT n FROM generate_series(1, 300) n;
	INSERT INTO "my-app"."line-items" ("Order") SELECT "Id" FROM "Sales"."Orders";
});
my $quoted_rows = q{SELECT count(*), sum(o."Placed at") FROM "Sales"."Orders" o JOIN "my-app"."line-items" l ON l."Order" = o."Id"};
($rc, $out, $err) = online([ '-t', '"Sales"."Orders"', '-c', 'Id', '--dry-run' ]);
is($rc, 0, 'names that need quoting: the dry run exits 0') or diag($out, $err);
unlike($out, qr/"""|""[a-z]/, 'each name quoted once');
like($out, qr/rehearsal: every step/, 'having rehearsed every step');
is(leftovers(), '0', 'and changed nothing');
($rc, $out, $err) = online([ '-t', '"Sales"."Orders"', '-c', 'Id', '-b', '100' ]);
is($rc, 0, 'names that need quoting: migrated') or diag($out, $err);
is( $node->safe_psql('postgres', $quoted_rows . q{;
		SELECT string_agg(format_type(atttypid, NULL), ',' ORDER BY attrelid::regclass::text)
		FROM pg_attribute WHERE (attrelid, attname) IN (('"Sales"."Orders"'::regclass, 'Id'), ('"my-app"."line-items"'::regclass, 'Order'));
		SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = '"Sales"'::regnamespace}),
	"300|45150\nbigint,bigint\nOrders,Orders_pkey,Placed",
	'every row, the new types, the names as they were, nothing left');

# a step that would fail (a trigger's function the owner may no longer
# execute: the swap creates the trigger again): the dry run's rehearsal
# fails, with the step and the error, and so does the run, before changing
# anything
$node->safe_psql('postgres', q{
	CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
	SET ROLE app;
	CREATE TABLE stamped (id serial PRIMARY KEY);
	CREATE TRIGGER stamp BEFORE INSERT ON stamped FOR EACH ROW EXECUTE FUNCTION public.stamp();
	INSERT INTO stamped SELECT FROM generate_series(1, 10);
	RESET ROLE;
	REVOKE EXECUTE ON FUNCTION stamp() FROM PUBLIC;
});
($rc, $out, $err) = online([ '-t', 'stamped', '--dry-run' ], user => 'app');
is($rc, 3, 'a statement that would fail: the dry run exits 3');
like($err, qr/blocked: step \d+ \(swap: [^\n]*\) would fail: ERROR:  permission denied for function .*stamp.*Nothing was changed/s,
	'naming the step and the error');
($rc, $out, $err) = online([ '-t', 'stamped' ], user => 'app');
is($rc, 3, 'the run refuses too');
is(leftovers(), '0', 'before changing anything');

# 27.8: tables named with 52, 58 and 63 bytes (the primary key's index
# named as the table but for its end), with a child; and the names a
# migration needs taken by other objects
for my $len (52, 58, 63)
{
	my $name = 'long_' . ('n' x ($len - 5));
	my $child = substr("c_$name", 0, 63);
	$node->safe_psql('postgres', qq{
		CREATE TABLE $name (id serial PRIMARY KEY, v int);
		CREATE INDEX ON $name (v);
		CREATE TABLE $child (id serial PRIMARY KEY, p int REFERENCES $name);
		INSERT INTO $name (v) SELECT n FROM generate_series(1, 100) n;
		INSERT INTO $child (p) SELECT id FROM $name;
	});
	my $indexes = qq{SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
					 WHERE x.indrelid IN ('$name'::regclass, '$child'::regclass)};
	my $before = $node->safe_psql('postgres', $indexes);
	($rc, $out, $err) = online([ '-t', $name ]);
	is($rc, 0, "a table name of $len bytes: migrated") or diag($out, $err);
	is($node->safe_psql('postgres', $indexes), $before, 'its indexes keep their names');
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM $name t JOIN $child c ON c.p = t.id}), '100', 'every row');
}
is(leftovers(), '0', 'nothing is left of them');
$node->safe_psql('postgres', q{
	CREATE TABLE taken (id serial PRIMARY KEY, v int); CREATE INDEX taken_v ON taken (v);
	CREATE TABLE taken_v__flake_new (x int);
	CREATE TABLE typed (id serial PRIMARY KEY); CREATE DOMAIN typed__flake_log AS int;
});
($rc, $out, $err) = online([ '-t', 'taken', '--dry-run' ]);
is($rc, 3, 'the name of an index\'s copy taken: refused');
like($err, qr/names that the online migration of public\.taken\.id needs are taken.*taken_v__flake_new \(the copy of index taken_v\): taken by table public\.taken_v__flake_new/,
	'which name, and by what');
($rc, $out, $err) = online([ '-t', 'typed', '--dry-run' ]);
is($rc, 3, 'the name of a log taken by a type: refused');
like($err, qr/typed__flake_log \(the log of public\.typed\): taken by type public\.typed__flake_log/, 'and said');
is($node->safe_psql('postgres', 'SELECT count(*) FROM taken_v__flake_new'), '0', 'nothing was changed');

# 27.9: referencing tables whose batches go by a uuid key and by a text key
$node->safe_psql('postgres', q{
	CREATE TABLE parent (id serial PRIMARY KEY);
	CREATE TABLE by_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), parent_id int REFERENCES parent);
	CREATE TABLE by_text (code text PRIMARY KEY, parent_id int REFERENCES parent);
	INSERT INTO parent SELECT FROM generate_series(1, 500);
	INSERT INTO by_uuid (parent_id) SELECT id FROM parent;
	INSERT INTO by_text SELECT 'k' || id, id FROM parent;
});
my $keyed = q{SELECT (SELECT count(*) FROM by_uuid u JOIN parent p ON p.id = u.parent_id),
					 (SELECT count(*) FROM by_text t JOIN parent p ON p.id = t.parent_id)};
($rc, $out, $err) = online([ '-t', 'parent', '-b', '64', '--until', 'copy' ]);
is($rc, 0, 'tables keyed by a uuid and a text: copied in batches') or diag($out, $err);
like($out, qr/copy public\.by_uuid: done, 500 rows in 8 batches/, 'by their own keys');
# the copy stopped after a batch continues after its last key
$node->safe_psql('postgres', q{
	DELETE FROM by_text__flake_new WHERE code > (SELECT min(code) FROM by_text);
	INSERT INTO by_text SELECT 'z' || id, id FROM parent WHERE id <= 10;
});
($rc, $out, $err) = online([ '-t', 'parent' ]);
is($rc, 0, 'and migrated') or diag($out, $err);
like($out, qr/copy public\.by_text: continuing after key k1\n/, 'a copy that stopped continues after its last key');
is($node->safe_psql('postgres', $keyed), '500|510', 'every row');

$node->stop;
done_testing();
