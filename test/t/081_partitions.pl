# Partitioning by the key itself (issue 39), as docs/partitioning.md does
# it: a year of daily partitions of a flake_next() key, natively and with
# pg_partman (skipped where it is not installed); every row in its day's
# partition, a one-day query that scans one partition, and a retention run
# that drops exactly the days before the cut.  And ulidflake keys, whose
# bounds are IMMUTABLE, pruned when the query is planned.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('partitions');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
max_locks_per_transaction = 512
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');

# Rows of every day of the year and of today: ids made from their times
# (any node and sequence), and ids of flake_next().
my $rows = q{
	INSERT INTO %1$s (id, at)
		SELECT flake_from_timestamp(t) + (random() * ((1 << 22) - 1))::bigint, t
		FROM generate_series(date_trunc('day', now() - interval '364 days', 'UTC'), now(),
							 interval '97 minutes') t;
	INSERT INTO %1$s (at) SELECT now() FROM generate_series(1, 1000);
};

# In which partition each row is, against the day of its id: the
# partitions are named by their first id, whose day is the rows'.
my $misplaced = q{
	SELECT count(*) FROM %1$s r JOIN pg_class c ON c.oid = r.tableoid
	WHERE date_trunc('day', flake_timestamp(r.id), 'UTC') <>
		  flake_timestamp(substring(c.relname FROM '_p(\d+)$')::bigint)
};

# The partitions whose rows all came before the cut.
my $before_cut = q{
	SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	WHERE i.inhparent = '%1$s'::regclass
	  AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''(\d+)''\)'))[1]::bigint
		  <= flake_from_timestamp(now() - interval '90 days')
};

sub one_day_plan
{
	my ($table) = @_;
	return $node->safe_psql('postgres', qq{
		EXPLAIN (COSTS OFF) SELECT * FROM $table
		WHERE id >= flake_from_timestamp(date_trunc('day', now() - interval '10 days', 'UTC'))
		  AND id < flake_from_timestamp(date_trunc('day', now() - interval '9 days', 'UTC'))});
}

# Natively: a partition per day, named by its first id as pg_partman
# names them, then the retention of docs/partitioning.md.
$node->safe_psql('postgres', q{
	CREATE TABLE events (id bigint NOT NULL DEFAULT flake_next(), at timestamptz)
		PARTITION BY RANGE (id);
	DO $$
	DECLARE
		day timestamptz;
	BEGIN
		FOR day IN SELECT generate_series(date_trunc('day', now() - interval '364 days', 'UTC'),
										  now() + interval '1 day', interval '1 day') LOOP
			EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
						   'events_p' || flake_from_timestamp(day),
						   flake_from_timestamp(day), flake_from_timestamp(day + interval '1 day'));
		END LOOP;
	END
	$$;
});
$node->safe_psql('postgres', sprintf($rows, 'events'));
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass}),
	'366', 'a year of daily partitions and tomorrow\'s');
is($node->safe_psql('postgres', sprintf($misplaced, 'events')), '0', 'every row is in its day\'s partition');

my $plan = one_day_plan('events');
is(scalar(() = $plan =~ /Seq Scan on/g), 1, 'a one-day query scans one partition');
like($plan, qr/Subplans Removed: 365/, 'the others are pruned when the query starts');
$plan = $node->safe_psql('postgres', q{
	EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id >= flake_from_timestamp(now() - interval '1 hour')});
cmp_ok(scalar(() = $plan =~ /Seq Scan on/g), '<=', 3, 'a query on the last hour scans today\'s partitions');

my $old = $node->safe_psql('postgres', sprintf($before_cut, 'events'));
my $kept_rows = $node->safe_psql('postgres',
	q{SELECT count(*) FROM events WHERE id >= flake_from_timestamp(date_trunc('day', now() - interval '90 days', 'UTC'))});
$node->safe_psql('postgres', q{
	DO $$
	DECLARE
		part regclass;
	BEGIN
		FOR part IN
			SELECT c.oid::regclass FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'events'::regclass
			  AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''(\d+)''\)'))[1]::bigint
				  <= flake_from_timestamp(now() - interval '90 days')
		LOOP
			EXECUTE format('DROP TABLE %s', part);
		END LOOP;
	END
	$$;
});
is($old, '274', '274 days lie wholly before the cut, 90 days ago');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass}),
	'92', 'the retention run dropped exactly those');
is($node->safe_psql('postgres', 'SELECT count(*) FROM events'), $kept_rows,
	'the rows of the days kept are all there');

# ulidflake: IMMUTABLE bounds, so constant bounds prune when planning.
$node->safe_psql('postgres', q{
	CREATE TABLE readings (id ulidflake NOT NULL DEFAULT ulidflake_next()) PARTITION BY RANGE (id);
	CREATE TABLE readings_1 PARTITION OF readings
		FOR VALUES FROM (ulidflake_from_timestamp('2026-01-01 00:00+00')) TO (ulidflake_from_timestamp('2026-01-02 00:00+00'));
	CREATE TABLE readings_2 PARTITION OF readings
		FOR VALUES FROM (ulidflake_from_timestamp('2026-01-02 00:00+00')) TO (ulidflake_from_timestamp('2026-01-03 00:00+00'));
	INSERT INTO readings SELECT ulidflake_from_timestamp(t) FROM generate_series(timestamptz '2026-01-01 00:00+00', '2026-01-02 23:59+00', interval '1 minute') t;
	INSERT INTO readings SELECT ulidflake_upper_bound(t) FROM generate_series(timestamptz '2026-01-01 00:00+00', '2026-01-02 23:59+00', interval '1 minute') t;
});
$plan = $node->safe_psql('postgres', q{
	EXPLAIN (COSTS OFF) SELECT * FROM readings
	WHERE id BETWEEN ulidflake_from_timestamp('2026-01-02 00:00+00') AND ulidflake_upper_bound('2026-01-02 23:59:59.999+00')});
like($plan, qr/^Seq Scan on readings_2/, 'ulidflake bounds prune when the query is planned');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE tableoid = 'readings_1'::regclass AND flake_timestamp(id) >= '2026-01-02 00:00+00'),
		   count(*) FILTER (WHERE tableoid = 'readings_2'::regclass AND flake_timestamp(id) < '2026-01-02 00:00+00'),
		   count(*)
	FROM readings}), '0|0|5760', 'the first and last ulidflake of each minute are in their day\'s partition');

# pg_partman 4.7, as Debian ships it: id partitioning with a day's ids as
# the interval, the year filled in, and its retention.
SKIP:
{
	skip 'pg_partman is not installed (apt-get install postgresql-' . $node->pg_version->major . '-partman)', 7
	  unless $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'}) eq '1';

	$node->safe_psql('postgres', q{
		CREATE SCHEMA partman;
		CREATE EXTENSION pg_partman SCHEMA partman;
		CREATE TABLE pevents (id bigint NOT NULL DEFAULT flake_next(), at timestamptz)
			PARTITION BY RANGE (id);
		SELECT partman.create_parent('public.pevents', 'id', 'native',
			p_interval := (flake_from_timestamp(now()) - flake_from_timestamp(now() - interval '1 day'))::text,
			p_start_partition := flake_from_timestamp(date_trunc('day', now() - interval '364 days', 'UTC'))::text,
			p_premake := 1);
		SELECT partman.create_partition_id('public.pevents',
			array(SELECT flake_from_timestamp(d)
				  FROM generate_series(date_trunc('day', now() - interval '364 days', 'UTC'), now(), interval '1 day') d));
	});
	$node->safe_psql('postgres', sprintf($rows, 'pevents'));
	$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.pevents')});
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'pevents'::regclass}),
		'367', 'pg_partman: a year of daily partitions, tomorrow\'s and the default');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pevents_default'), '0', 'pg_partman: no row in the default partition');
	is($node->safe_psql('postgres', sprintf($misplaced, 'pevents') . q{ AND c.relname <> 'pevents_default'}),
		'0', 'pg_partman: every row is in its day\'s partition');
	$plan = one_day_plan('pevents');
	is(scalar(() = $plan =~ /Seq Scan on/g), 1, 'pg_partman: a one-day query scans one partition');

	$old = $node->safe_psql('postgres', sprintf($before_cut, 'pevents'));
	$kept_rows = $node->safe_psql('postgres',
		q{SELECT count(*) FROM pevents WHERE id >= flake_from_timestamp(date_trunc('day', now() - interval '90 days', 'UTC'))});
	$node->safe_psql('postgres', q{
		UPDATE partman.part_config
		   SET retention = (flake_from_timestamp(now()) - flake_from_timestamp(now() - interval '90 days'))::text,
			   retention_keep_table = false
		 WHERE parent_table = 'public.pevents';
		SELECT partman.run_maintenance('public.pevents');
	});
	is($old, '274', 'pg_partman: 274 days lie wholly before the cut');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'pevents'::regclass}),
		'93', 'pg_partman: its retention run dropped exactly those');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pevents'), $kept_rows,
		'pg_partman: the rows of the days kept are all there');
}

done_testing();
