# ulidflake_next() (both forms) continues above every value it issued
# across a restart with the clock set back, and across a backend crash
# (shared memory reset) after a burst that ran values ahead of the clock:
# its high-water mark is persisted in flake.hwm like the other families'.
# A flake.hwm in the formats of earlier releases (before the ulidflake
# mark, "FLK2", and before the servers, "FLK3") is read and replaced in the
# new format, which names the server that wrote it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use POSIX qw(strftime);
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;
use FlakeClock;

my $node = flake_cluster('ulid_marks', qq{flake.randflake_secret = '$flake_secret'
flake.max_borrow = '60s'
restart_after_crash = on
});

# every process started from here on runs on the faked clock
my $clock = FlakeClock->new($node);
$node->start;

my $phase = 0;
sub generate
{
	my ($count) = @_;
	$phase++;
	$node->safe_psql('postgres', qq{
		INSERT INTO ids (phase, v) SELECT $phase, ulidflake_next() FROM generate_series(1, $count);
		INSERT INTO ids (phase, v) SELECT $phase, ulidflake_next(n % 32) FROM generate_series(1, $count / 10) n;
	});
}

# values of the last phase at or below the largest value of the earlier ones
sub not_above_before
{
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM ids
		WHERE phase = $phase AND v <= (SELECT max(v) FROM ids WHERE phase < $phase)});
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION flake;
	CREATE TABLE ids (phase int NOT NULL, v ulidflake NOT NULL);
});
generate(20000);

# 1. a clean restart with the clock 5 s back
$clock->set('-5s');
$node->restart;
generate(20000);
is(not_above_before(), '0', 'after a restart with the clock 5 s back, every value is above those issued before');

# 2. a burst on a frozen clock runs values ahead of it (the entropy carries
# into later milliseconds); then a backend crash resets shared memory
$clock->set(strftime('%Y-%m-%d %H:%M:%S', gmtime(time() + 30)));
generate(200000);
ok( $node->safe_psql('postgres', qq{
		SELECT flake_timestamp(max(v)) > clock_timestamp() + interval '5 ms' FROM ids WHERE phase = $phase}),
	'the burst ran ahead of the frozen clock');
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
back_after_crash($node);
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through crash recovery');
generate(20000);
is(not_above_before(), '0', 'after a crash, every value is above those issued before, on the same frozen clock');

is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT v) FROM ids'), 't', 'no value repeated');
$clock->set('+0');
$victim->quit;

# 3. upgrades from the releases that wrote "FLK2" and "FLK3"
my $hwm = $node->data_dir . '/flake.hwm';
my $sysid = $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');

# the formats of earlier releases: "FLK2" (no ulidflake mark) and "FLK3"
# (no servers)
for my $format ('FLK2', 'FLK3')
{
	$node->stop;
	my $snowflake_mark = (time() + 20) * 1000;
	my $randflake_mark = time() + 40;
	my $old_file = $format eq 'FLK2'
	  ? pack('L<L<q<q<', 0x464C4B32, 0, $snowflake_mark, $randflake_mark)
	  : pack('L<L<q<q<q<', 0x464C4B33, 0, $snowflake_mark, $randflake_mark, 0);
	$old_file .= pack('L<L<', crc32c($old_file), 0);
	write_state_file($hwm, $old_file);

	$node->start;
	is( $node->safe_psql('postgres', qq{
			SELECT extract(epoch FROM flake_timestamp(flake_next())) * 1000 > $snowflake_mark,
				   extract(epoch FROM (randflake_decode(randflake_next())).ts) > $randflake_mark,
				   ulidflake_next() IS NOT NULL}),
		't|t|t', "the marks of an \"$format\" file are read");
	my $written = slurp_file($hwm);
	is(length($written), 160, 'the file is rewritten in the new format');
	is(unpack('L<', $written), 0x464C4B34, 'its magic is "FLK4"');
	cmp_ok(unpack('q<', substr($written, 24, 8)), '>', time() * 1000 - 60000, 'it holds the ulidflake mark');
	is(unpack('Q<', substr($written, 32, 8)), $sysid, 'and names this server as its writer');
}

$node->stop;
done_testing();
