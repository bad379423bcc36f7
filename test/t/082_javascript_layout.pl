# The JavaScript-safe layout (issue 39): with flake.id_bits = 53 every
# flake_next() id is at most 2^53 - 1 = 9007199254740991.  On a clock
# frozen 551 ms before the layout's end (libfaketime), a node issues its
# ids up to exactly that id, borrowing the milliseconds ahead, and then
# refuses with 22003, never wrapping; a leased node the same.  JSON.parse
# in node reads the ids as the numbers the database holds, and reads a
# number above 2^53 - 1 as another (what the layout avoids).  A layout
# whose time ends within a year, or has ended, is named at start.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeClock;

my $max = '9007199254740991';
# 552 milliseconds (15:47:35.000 to .551) of 512 ids
my $per_node = 552 * 512;

my $node = PostgreSQL::Test::Cluster->new('javascript');
$node->init;
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.id_bits = 53
flake.node_bits = 3
flake.sequence_bits = 9
});
my $clock = FlakeClock->new($node);
$clock->set('2084-09-06 15:47:35');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flake');
like(slurp_file($node->logfile), qr/WARNING:  flake_next\(\) ids run out at 2084-09-0[67] /,
	'the server warns at start that the layout ends within a year');

is($node->safe_psql('postgres', q{SET timezone = 'UTC'; SELECT flake_timestamp(9007199254740991)}),
	'2084-09-06 15:47:35.551+00', 'the layout ends 2^41 - 1 ms after the epoch');

$node->safe_psql('postgres', qq{
	CREATE TABLE ids AS SELECT n, flake_next(7) AS id FROM generate_series(1, $per_node) n});
is($node->safe_psql('postgres', q{
		SELECT count(DISTINCT id), max(id), bool_and(id > prev) FROM (
			SELECT id, lag(id, 1, -1::bigint) OVER (ORDER BY n) AS prev FROM ids) s}),
	"$per_node|$max|t", "node 7 issues $per_node increasing ids, the last one 2^53 - 1");

my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET timezone = 'UTC';\nSELECT flake_next(7)");
like($stderr, qr/ERROR:  22003: flake_next\(\) timestamp overflow\nDETAIL:  With flake.id_bits = 53, flake.node_bits = 3 and flake.sequence_bits = 9, ids hold 41 bits of milliseconds since flake.epoch, which ran out at 2084-09-06 15:47:35.551\+00/,
	'the next one is refused with 22003');
is($stdout, '', '... and nothing is returned');

# a leased node: as many ids, then the same refusal
($ret, $stdout, $stderr) = $node->psql('postgres', q{
	DO $$
	DECLARE
		issued bigint := 0;
		top bigint := 0;
	BEGIN
		LOOP
			top := greatest(top, flake_next());
			issued := issued + 1;
		END LOOP;
	EXCEPTION WHEN numeric_value_out_of_range THEN
		RAISE NOTICE 'issued % up to %', issued, top;
	END
	$$});
like($stderr, qr/NOTICE:  issued $per_node up to 9007199254737407\b/,
	"leased node 0 issues $per_node ids, up to its last in the last millisecond, then refuses");

SKIP:
{
	skip 'Node is not installed (apt-get install nodejs)', 2 unless `node --version 2>/dev/null` =~ /^v/;

	my $json = $node->basedir . '/ids.json';
	my $texts = $node->safe_psql('postgres', q{
		SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM ids ORDER BY id DESC LIMIT 1000) s});
	append_to_file($json, $node->safe_psql('postgres', q{
		SELECT json_agg(id ORDER BY id) FROM (SELECT id FROM ids ORDER BY id DESC LIMIT 1000) s}));
	my $parse = q{process.stdout.write(JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).map(String).join(','))};
	is(`node -e "$parse" $json`, $texts, 'JSON.parse reads the last 1000 ids as the database holds them');

	my $beyond = $node->basedir . '/beyond.json';
	append_to_file($beyond, $node->safe_psql('postgres', 'SELECT json_agg(9007199254740993::bigint)'));
	isnt(`node -e "$parse" $beyond`, '9007199254740993', 'and a number above 2^53 - 1 as another');
}

# flake.id_bits = 53 alone leaves the default node and sequence bits 31
# bits of time, which ran out 24 days after the default epoch: the server
# says so at start, and flake_next() refuses.
my $short = PostgreSQL::Test::Cluster->new('short_layout');
$short->init;
$short->append_conf('postgresql.conf', qq{shared_preload_libraries = 'flake'
flake.id_bits = 53
});
$short->start;
like(slurp_file($short->logfile), qr/WARNING:  flake_next\(\) ids ran out at 2015-01-2[56] .*\n.*DETAIL:  flake.id_bits \(53\) less flake.node_bits \(10\) and flake.sequence_bits \(12\) leaves 31 bits/,
	'a layout that ran out is named at start');
$short->safe_psql('postgres', 'CREATE EXTENSION flake');
($ret, $stdout, $stderr) = $short->psql('postgres', "\\set VERBOSITY verbose\nSELECT flake_next()");
like($stderr, qr/ERROR:  22003: flake_next\(\) timestamp overflow/, 'and flake_next() refuses with 22003');
$short->stop;

done_testing();
