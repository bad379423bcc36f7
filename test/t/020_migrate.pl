# flake_migrate() on a larger scale: a 100k-row serial table rekeyed from its
# time column with its children in two schemas; a migration that fails half
# way and leaves schema and data as they were; a non-owner refused; and
# randflake_next(), with a check constraint its ids would fail.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('migrate');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'flake'\nflake.nodes = '0-1015'\nflake.rekey_nodes = '1016-1023'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

# 100k orders over three years, with 5000 of them at one instant (more than
# the 4096 ids of a millisecond), lines with a composite key in another
# schema, and notes that reference the lines.
$node->safe_psql('postgres', q{
	CREATE TABLE orders (id serial PRIMARY KEY, created_at timestamptz NOT NULL, customer int);
	CREATE SCHEMA sales;
	CREATE TABLE sales.lines (order_id int REFERENCES orders, line_no int, qty int,
							  PRIMARY KEY (order_id, line_no));
	CREATE TABLE notes (id serial PRIMARY KEY, order_id int CONSTRAINT notes_order_required NOT NULL,
						line_no int NOT NULL, body text,
						FOREIGN KEY (order_id, line_no) REFERENCES sales.lines);
	INSERT INTO orders (created_at, customer)
	SELECT CASE WHEN n % 20 = 0 THEN '2022-02-02 02:02:02.002+00'
				ELSE '2021-01-01 00:00:00+00'::timestamptz + (n * 7919 % 100000) * interval '947 s' END,
		   n % 97
	FROM generate_series(1, 100000) n;
	INSERT INTO sales.lines SELECT id, l, l FROM orders, generate_series(1, 2) l;
	INSERT INTO notes (order_id, line_no, body) SELECT order_id, line_no, 'n' FROM sales.lines WHERE line_no = 1;
	CREATE TABLE before AS
	SELECT o.id AS old_id, o.created_at, l.line_no, l.qty, n.id AS note_id
	FROM orders o JOIN sales.lines l ON l.order_id = o.id LEFT JOIN notes n USING (order_id, line_no);
});

# Every constraint of the three tables by name and kind; from PostgreSQL 18
# on, NOT NULL constraints are among them (kind n), with names of their own
# that a migration must keep like any other.
my $constraint_names = q{
	SELECT string_agg(format('%s %s %s', conrelid::regclass, conname, contype), ', '
					  ORDER BY conrelid::regclass::text, conname)
	FROM pg_constraint WHERE conrelid IN ('orders'::regclass, 'sales.lines'::regclass, 'notes'::regclass)};
my $names_before = $node->safe_psql('postgres', $constraint_names);

my $plan = $node->safe_psql('postgres', q{
	SELECT string_agg(action, ',' ORDER BY step)
	FROM flake_migrate('orders', rekey_from => 'created_at')});
is($plan,
	'lock,lock,lock,create map,comment,fill map,index map,drop constraint,drop constraint,drop default,drop sequence,'
	  . 'rekey,rekey,rekey,add constraint,add constraint,set default',
	'100k rows rekeyed in one call');

is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT o.id), count(n.id)
		FROM orders o JOIN sales.lines l ON l.order_id = o.id LEFT JOIN notes n USING (order_id, line_no)}),
	'200000|100000|100000', 'every line still joins its order, every note its line');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM before b
		JOIN orders_flake_map m ON m.old_id = b.old_id
		JOIN orders o ON o.id = m.new_id
		JOIN sales.lines l ON l.order_id = o.id AND l.line_no = b.line_no AND l.qty = b.qty
		WHERE o.created_at = b.created_at}),
	'200000', 'the mapping table takes each old id to its row and lines');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE id <= prev)
		FROM (SELECT o.id, lag(o.id) OVER (ORDER BY o.created_at, m.old_id) AS prev
			  FROM orders o JOIN orders_flake_map m ON m.new_id = o.id) s}),
	'0', 'ids follow the time column, ties in old id order');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE flake_timestamp(id) = date_trunc('milliseconds', created_at)),
			   count(*) FILTER (WHERE flake_timestamp(id) > created_at
								AND flake_timestamp(id) <= created_at + interval '1 ms'),
			   count(DISTINCT flake_node(id)), max(flake_sequence(id))
		FROM orders}),
	'99096|904|1|4095',
	'each id carries its row\'s millisecond; the 904 ids beyond 4096 in one millisecond the next');

is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute
		WHERE (attrelid, attname) IN (('orders'::regclass, 'id'), ('sales.lines'::regclass, 'order_id'),
									  ('notes'::regclass, 'order_id'))
		ORDER BY attrelid::regclass::text}),
	"bigint\nbigint\nbigint", 'the key and the columns referencing it are bigint');

is( $node->safe_psql('postgres', q{
		SELECT string_agg(conname || ':' || pg_get_constraintdef(oid), ' ' ORDER BY conname)
		FROM pg_constraint WHERE conrelid IN ('orders'::regclass, 'sales.lines'::regclass, 'notes'::regclass)
		  AND contype <> 'n'}),
	'lines_order_id_fkey:FOREIGN KEY (order_id) REFERENCES orders(id) '
	  . 'lines_pkey:PRIMARY KEY (order_id, line_no) '
	  . 'notes_order_id_line_no_fkey:FOREIGN KEY (order_id, line_no) REFERENCES sales.lines(order_id, line_no) '
	  . 'notes_pkey:PRIMARY KEY (id) '
	  . 'orders_pkey:PRIMARY KEY (id)',
	'keys keep their names and now reference bigint columns');
is($node->safe_psql('postgres', $constraint_names), $names_before, 'constraints keep their names');
SKIP:
{
	skip 'NOT NULL constraints are catalogued from PostgreSQL 18 on', 1 if $node->pg_version < 18;
	is( $node->safe_psql('postgres', q{
			SELECT string_agg(conname || ':' || pg_get_constraintdef(oid), ' ' ORDER BY conname)
			FROM pg_constraint WHERE contype = 'n'
			  AND conrelid IN ('orders'::regclass, 'sales.lines'::regclass, 'notes'::regclass)}),
		'lines_line_no_not_null:NOT NULL line_no lines_order_id_not_null:NOT NULL order_id '
		  . 'notes_id_not_null:NOT NULL id notes_line_no_not_null:NOT NULL line_no '
		  . 'notes_order_required:NOT NULL order_id orders_created_at_not_null:NOT NULL created_at '
		  . 'orders_id_not_null:NOT NULL id',
		'NOT NULL constraints keep their names, the named one too');
}

is( $node->safe_psql('postgres', q{
		INSERT INTO orders (created_at, customer) VALUES (now(), 1);
		SELECT count(*) FILTER (WHERE id > (SELECT max(new_id) FROM orders_flake_map)),
			   bool_and(abs(extract(epoch FROM flake_timestamp(id) - now())) < 60)
		FROM orders WHERE id NOT IN (SELECT new_id FROM orders_flake_map)}),
	'1|t', 'an insert without an id gets a flake id above every rekeyed one');

is( $node->safe_psql('postgres', q{
		SELECT o.created_at = b.created_at FROM orders o
		JOIN orders_flake_map m ON m.new_id = o.id
		JOIN (SELECT DISTINCT old_id, created_at FROM before) b ON b.old_id = m.old_id
		WHERE m.old_id = 4242}),
	't', 'an old id from outside still reaches its row');

# A failure half way: a check constraint that held for the serial ids of
# legacy logins stops the rekeying of a child after the parent's ids were
# rewritten.  (flake_migrate tries check constraints beforehand on one row
# of the table, the first, which is not a legacy one.)  Nothing of the
# migration may remain.
$node->safe_psql('postgres', q{
	CREATE TABLE accounts (id serial PRIMARY KEY, opened timestamptz NOT NULL DEFAULT now());
	CREATE TABLE logins (id bigserial PRIMARY KEY, account int REFERENCES accounts,
						 legacy boolean NOT NULL,
						 CONSTRAINT logins_account_check CHECK (NOT legacy OR account BETWEEN 1 AND 2147483647));
	INSERT INTO accounts (opened) SELECT '2023-01-01'::timestamptz + n * interval '1 min'
	FROM generate_series(1, 1000) n;
	INSERT INTO logins (account, legacy) SELECT 1 + n % 1000, n > 1 FROM generate_series(1, 3000) n;
});
# pg_dump of the two tables and their sequences, without the random key of
# the \restrict lines that newer minor releases print
sub dump_tables
{
	my ($what) = @_;
	my ($out) = run_command(
		[
			'pg_dump', '--no-sync', $what, '-d', $node->connstr('postgres'),
			map { ('-t', $_) } qw(accounts logins accounts_id_seq logins_id_seq)
		]);
	$out =~ s/^\\(un)?restrict .*$//mg;
	return $out;
}
my $schema_before = dump_tables('--schema-only');
my $data_before = dump_tables('--data-only');
like($schema_before, qr/CREATE SEQUENCE public.accounts_id_seq/, 'schema dumped');

my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT * FROM flake_migrate('accounts', rekey_from => 'opened')});
isnt($ret, 0, 'the migration fails');
like($stderr, qr/ERROR:  23514: check constraint "logins_account_check" of relation "logins" is violated by some row/,
	'at the check constraint of the child');
like($stderr, qr/ALTER TABLE public\.logins ALTER COLUMN account TYPE bigint USING flake_internal\.migrate_lookup/,
	'while rekeying the child, half way');

is(dump_tables('--schema-only'), $schema_before, 'the schema is as it was');
is(dump_tables('--data-only'), $data_before, 'the data is as it was');
is($node->safe_psql('postgres', q{SELECT to_regclass('accounts_flake_map') IS NULL, nextval('accounts_id_seq')}),
	't|1001', 'no mapping table; the sequence carries on');

# ... and with the constraint gone, the same call succeeds
$node->safe_psql('postgres', 'ALTER TABLE logins DROP CONSTRAINT logins_account_check');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM flake_migrate('accounts', rekey_from => 'opened') WHERE action = 'rekey';
		SELECT count(*) FROM logins JOIN accounts ON accounts.id = logins.account}),
	"2\n3000", 'after fixing the cause the migration goes through');

# A role that does not own the table is refused before anything changes.
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE TABLE payments (id serial PRIMARY KEY, amount int);
	INSERT INTO payments (amount) VALUES (1), (2);
	GRANT ALL ON payments, payments_id_seq TO mallory;
});
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT * FROM flake_migrate('payments')}, extra_params => [ '-U', 'mallory' ]);
like($stderr, qr/ERROR:  42501: must be owner of table public\.payments/,
	'a non-owner is refused (42501)');
like($stderr, qr/DETAIL:  flake_migrate alters public\.payments; only its owner \S+ \(or a member of that role\) can\./,
	'the refusal names the owner');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL), pg_get_expr(adbin, adrelid)
		FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
		WHERE attrelid = 'payments'::regclass AND attname = 'id'}),
	q{integer|nextval('payments_id_seq'::regclass)}, 'the table is untouched');

# randflake_next(): ids for new rows only.
$node->append_conf('postgresql.conf', "flake.randflake_secret = '000102030405060708090a0b0c0d0e0f'\n");
$node->restart;
$node->safe_psql('postgres', q{
	CREATE TABLE tokens (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, t text);
	INSERT INTO tokens (t) VALUES ('old');
});
is( $node->safe_psql('postgres', q{
		SELECT string_agg(action, ',' ORDER BY step)
		FROM flake_migrate('tokens', generator => 'randflake_next', dry_run => true)}),
	'lock,note,drop identity,set default', 'dry run: a note that the ids are not ordered');
is( $node->safe_psql('postgres', q{
		SELECT detail FROM flake_migrate('tokens', generator => 'randflake_next') WHERE action = 'set default'}),
	'ALTER TABLE public.tokens ALTER COLUMN id SET DEFAULT public.randflake_next()', 'migrated');
is( $node->safe_psql('postgres', q{
		INSERT INTO tokens (t) VALUES ('new');
		SELECT count(*), count(*) FILTER (WHERE t = 'old' AND id = 1) FROM tokens}),
	'2|1', 'new rows get randflake ids, the old row keeps its id');
is( $node->safe_psql('postgres', q{
		SELECT (randflake_decode(id)).ts > now() - interval '1 min' FROM tokens WHERE t = 'new'}),
	't', 'the new id decodes to now');

# randflake ids take any bigint value: a check that only positive ids
# pass would refuse half of them
$node->safe_psql('postgres', q{
	CREATE TABLE grants (id serial PRIMARY KEY CHECK (id > 0));
});
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	SELECT * FROM flake_migrate('grants', generator => 'randflake_next')});
like($stderr,
	qr/ERROR:  the ids of public\.randflake_next\(\) would not pass constraints or indexes\n.*check constraint grants_id_check on public\.grants is false for them in column id\.\n.*negative ones too/s,
	'a check that randflake ids fail is found beforehand');

$node->stop;
done_testing();
