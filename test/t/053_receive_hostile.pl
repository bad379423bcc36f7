# The entry points of ids received (issue 37) against hostile roles and
# sessions, and the refusal of an id too far ahead.
#
# flake_take_over_ids(): refused to a non-superuser, with EXECUTE granted
# too; a session's search_path with look-alike tables and generators
# changes nothing.  flake_internal.raise_marks(), given by a role to its
# own table: its ids do not raise the marks.  A subscription whose owner
# lost superuser: REFRESH PUBLICATION warns, naming the table it does not
# own.  An id made 10 minutes ahead of the subscriber's clock stops the
# apply worker with an error naming the column, id and time, and raises
# no mark.  A subscription made under flake 1.3 gets the trigger at ALTER
# EXTENSION flake UPDATE.  A role's own ids far ahead, in an INSERT, a COPY
# or a column made one of ids, are not read (a warning says so) and raise
# no mark.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $pub = flake_server('pub', '0-9');
my $sub = flake_server('sub', '10-19');

# this server issues no id ahead of its clock by more than a minute
sub marks_not_ahead
{
	my ($node, $what) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		q{SELECT flake_timestamp(flake_next()) < now() + interval '1 minute'});
	is($out, 't', "$what: the marks are not raised ahead") or diag($err);
}

# flake_take_over_ids() is a superuser's
$sub->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE SCHEMA mallory AUTHORIZATION mallory;
});
my ($ret, $out, $err) = $sub->psql('postgres', 'SELECT flake_take_over_ids()',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied for function flake_take_over_ids/,
	'flake_take_over_ids(): EXECUTE is not granted to PUBLIC');
$sub->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION flake_take_over_ids() TO mallory');
($ret, $out, $err) = $sub->psql('postgres',
	q{\set VERBOSITY verbose
	SELECT flake_take_over_ids()}, extra_params => [ '-U', 'mallory' ]);
like($err, qr/42501: permission denied to take over another server's flake state/,
	'flake_take_over_ids(): refused to a non-superuser granted EXECUTE');

# A role's trigger of flake_internal.raise_marks() on its own table
($ret, $out, $err) = $sub->psql('postgres', q{
	SET search_path = mallory;
	CREATE TABLE ahead (id bigint DEFAULT public.flake_next());
	CREATE TRIGGER raise BEFORE INSERT OR UPDATE ON ahead
		FOR EACH ROW EXECUTE FUNCTION flake_internal.raise_marks();
	INSERT INTO ahead VALUES (public.flake_from_timestamp(now() + interval '4 minutes'));
}, extra_params => [ '-U', 'mallory' ]);
is($ret, 0, 'a role gives its own table the trigger and inserts an id ahead') or diag($err);
marks_not_ahead($sub, "a role's own trigger of raise_marks()");

# Ids a role writes itself are read where they come in (an INSERT naming
# them, COPY, a column made one of ids), but beyond flake.max_borrow ahead
# of the clock they are not, for a role that is not a superuser: a warning
# says so
my $role_ahead = $sub->safe_psql('postgres', q{SELECT flake_from_timestamp(now() + interval '4 minutes')});
foreach my $load (
	[ 'an INSERT naming it', "INSERT INTO consts VALUES ($role_ahead);" ],
	[ 'COPY', "COPY consts FROM STDIN;\n$role_ahead\n\\.\n" ],
	[ 'SET DEFAULT', "CREATE TABLE later (id bigint); INSERT INTO later VALUES ($role_ahead);
		ALTER TABLE later ALTER COLUMN id SET DEFAULT public.flake_next();" ])
{
	($ret, $out, $err) = $sub->psql('postgres', qq{
		SET search_path = mallory;
		CREATE TABLE IF NOT EXISTS consts (id bigint DEFAULT public.flake_next());
		$load->[1]}, extra_params => [ '-U', 'mallory' ]);
	like($err, qr/later than this server's clock allows/,
		"a role's id 4 minutes ahead, through $load->[0]: not read, and said");
	marks_not_ahead($sub, "a role's id 4 minutes ahead, through $load->[0]");
}
# the rows are in, not read: flake_take_over_ids() below would read them
$sub->safe_psql('postgres', 'DROP TABLE mallory.consts, mallory.later');

# A session with look-alikes first in its search_path: a flake_origin
# naming a server, a generator of the role's in a column's default (its
# ids far ahead), pg_catalog after them.  Only flake's objects count.
$sub->safe_psql('postgres', q{
	TRUNCATE mallory.ahead;
	CREATE TABLE mallory.flake_origin (server bigint);
	INSERT INTO mallory.flake_origin VALUES (42);
	CREATE FUNCTION mallory.flake_next() RETURNS bigint LANGUAGE sql
		AS $$ SELECT public.flake_from_timestamp(now() + interval '1 year') $$;
	CREATE TABLE mallory.lookalike (id bigint DEFAULT mallory.flake_next());
	INSERT INTO mallory.lookalike DEFAULT VALUES;
	CREATE TABLE real_ids (id bigint DEFAULT flake_next());
	INSERT INTO real_ids SELECT FROM generate_series(1, 3);
	ALTER TABLE mallory.lookalike OWNER TO mallory;
	ALTER FUNCTION mallory.flake_next() OWNER TO mallory;
});
is( $sub->safe_psql('postgres', q{
		SET search_path = mallory, pg_catalog;
		SET statement_timeout = '1min';
		SELECT servers, ids FROM public.flake_take_over_ids()}),
	'{}|3',
	'flake_take_over_ids(): look-alikes on the search_path are not read');

# Replication: tables on both sides, a subscription of tf
foreach my $node ($pub, $sub)
{
	$node->safe_psql('postgres', q{
		CREATE TABLE tf (id bigint PRIMARY KEY DEFAULT flake_next());
		CREATE TABLE tg (id bigint PRIMARY KEY DEFAULT flake_next());
	});
}
$pub->safe_psql('postgres', 'CREATE PUBLICATION p FOR TABLE tf');
# The subscription connects as alice with a password the publisher asks
# for, as a subscription of a non-superuser owner must from 16 on.
$pub->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN REPLICATION PASSWORD 'alice';
	GRANT SELECT ON tf, tg TO alice;
});
my $hba = $pub->data_dir . '/pg_hba.conf';
my $rules = slurp_file($hba);
open my $fh, '>', $hba or die "could not write $hba: $!";
print $fh "local all alice scram-sha-256\nlocal replication alice scram-sha-256\n$rules";
close $fh;
$pub->reload;
my $connstr = $pub->connstr . ' dbname=postgres user=alice password=alice';
$sub->safe_psql('postgres', qq{
	CREATE ROLE alice SUPERUSER LOGIN;
	CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p;
	ALTER SUBSCRIPTION s OWNER TO alice;
	ALTER ROLE alice NOSUPERUSER;
});
$pub->safe_psql('postgres', 'ALTER PUBLICATION p ADD TABLE tg');
($ret, $out, $err) = $sub->psql('postgres', 'ALTER SUBSCRIPTION s REFRESH PUBLICATION',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/WARNING:  ids that replication brings into table public\.tg will not raise flake's high-water marks/,
	'a subscription owner that does not own a table: a warning names it');

# An id 10 minutes ahead of the subscriber's clock stops the apply worker
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION s OWNER TO postgres');
$sub->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
  or die 'initial copy timed out';
my $offset = -s $sub->logfile;
my $ahead = $pub->safe_psql('postgres',
	q{INSERT INTO tf VALUES (flake_from_timestamp(now() + interval '10 minutes')) RETURNING id});
$sub->wait_for_log(qr/the flake_next\(\) id $ahead in column "id" of table "tf" was made at \d{4}-\d\d-\d\d [\d:.+]+, later than this server's clock allows/,
	$offset);
pass('an id 10 minutes ahead: the subscription stops, naming column, id and time');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM tf'), '0', 'the id is not applied');
marks_not_ahead($sub, 'an id refused');

# A subscription made under flake 1.3, which had no trigger: ALTER
# EXTENSION flake UPDATE gives its tables the trigger, enabled for the
# subscription's workers, and the ids they bring raise the marks.
$pub->safe_psql('postgres', q{
	CREATE TABLE legacy (id bigint PRIMARY KEY DEFAULT flake_next());
	CREATE PUBLICATION legacy_pub FOR TABLE legacy;
});
$sub->safe_psql('postgres', 'CREATE DATABASE old');
my $legacy_conn = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('old', qq{
	CREATE EXTENSION flake VERSION '1.3';
	CREATE TABLE legacy (id bigint PRIMARY KEY DEFAULT flake_next());
	CREATE SUBSCRIPTION legacy_sub CONNECTION '$legacy_conn' PUBLICATION legacy_pub;
});
my $legacy_triggers = q{SELECT string_agg(format('%s %s', tgrelid::regclass, tgenabled), ',')
	FROM pg_trigger WHERE tgname = 'flake_raise_marks'};
is($sub->safe_psql('old', $legacy_triggers), '', 'under 1.3 the subscribed table has no trigger');
$sub->safe_psql('old', 'ALTER EXTENSION flake UPDATE');
is($sub->safe_psql('old', $legacy_triggers), 'legacy R',
	'ALTER EXTENSION flake UPDATE gives it the trigger, enabled for replica sessions');
$sub->poll_query_until('old',
	"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
  or die 'initial copy timed out';
# an id of node 10, the subscriber's own, 2 minutes ahead
$pub->safe_psql('postgres',
	q{INSERT INTO legacy VALUES (flake_from_timestamp(now() + interval '2 minutes') | (10 << 12))});
$sub->poll_query_until('old', 'SELECT count(*) = 1 FROM legacy') or die 'the row did not arrive';
($ret, $out, $err) = $sub->psql('old', 'SELECT flake_next(10)');
like($err, qr/the system clock is \d+ ms behind the last id of flake node 10/,
	'the id it brings raises node 10: its next id would have to come after it');
$sub->safe_psql('old', 'DROP SUBSCRIPTION legacy_sub');

done_testing();
