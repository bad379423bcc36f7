# Ids sent as strings decode (issue 45).  A JavaScript application keeps
# a Snowflake id as a string, and node-postgres sends it back untyped (as
# Prisma's $queryRaw and Sequelize's replacements do theirs): the decoders
# flake_timestamp, flake_node, flake_sequence and flake_decode read it, and
# typed text, as they read the bigint; so they do a quoted literal in
# psql.  On 1.4, flake_timestamp took such a text for a ulidflake and
# failed with 22P02.  A ulidflake's Base32 text still decodes as one, and
# a text of 13 characters, digits only or not, is a ulidflake's: that is
# the rule for a text both could be (README, "Ids as text").
#
# The node-postgres half needs Node and pg as test/orm/js/package-lock.json
# pins them (see orm_node_modules in FlakeOrm.pm); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $node = orm_server('ids_as_text');

# psql: a quoted literal, which is untyped, as the bigint
my $id = $node->safe_psql('app', 'SELECT flake_next()');
is( $node->safe_psql('app', qq{
		SELECT flake_timestamp('$id') = flake_timestamp($id), flake_node('$id') = flake_node($id),
			   flake_sequence('$id') = flake_sequence($id), flake_decode('$id') = flake_decode($id),
			   flake_timestamp('$id'::text) = flake_timestamp($id)}),
	't|t|t|t|t', 'psql: a Snowflake id as a quoted literal decodes as the bigint, by every decoder, as text too');
my $ulid = $node->safe_psql('app', 'SELECT ulidflake_next()');
is( $node->safe_psql('app', qq{
		SELECT flake_timestamp('$ulid') = flake_timestamp('$ulid'::ulidflake),
			   flake_timestamp(lower('$ulid')) = flake_timestamp('$ulid'::ulidflake)}),
	't|t', 'a ulidflake\'s Base32 text still decodes as the ulidflake, in either case');
# the text both could be: 13 characters, all digits, is a ulidflake's
is( $node->safe_psql('app', q{
		SELECT flake_timestamp('0000000000001') = flake_timestamp('0000000000001'::ulidflake),
			   flake_timestamp('0000000000001') <> flake_timestamp('0000000000001'::bigint),
			   flake_node('0000000000001') = flake_node(1)}),
	't|t|t', '13 digits are a ulidflake\'s to flake_timestamp (cast to bigint for the Snowflake id); the others read them as decimal');
my ($ret, $stdout, $stderr) = $node->psql('app', q{SELECT flake_timestamp('12x4')});
like($stderr, qr/invalid input syntax for type bigint: "12x4"/, 'a text neither way is refused as a bigint\'s');

SKIP:
{
	my $dir = ($ENV{FLAKE_ORM_CACHE} // '/var/cache/flake-orm') . '/js';
	my $modules = "$dir/node_modules";
	skip "Node or node-postgres is not installed (apt-get install nodejs npm; mkdir -p $dir && cp test/orm/js/package*.json $dir && cd $dir && npm ci)", 5
	  unless system('node --version >/dev/null 2>&1') == 0 && -e "$modules/pg/package.json";
	my $out = orm_run($node, [ 'node', 'test/orm/pg/app.js' ], NODE_PATH => $modules);
	is($out->{id_class}, 'string', 'node-postgres gives the id as a string');
	my $bigint = encode_json_sorted($out->{decoded}{bigint});
	is_deeply([ map { encode_json_sorted($out->{decoded}{$_}) } qw(untyped text) ], [ $bigint, $bigint ],
		"node-postgres: the id sent untyped and as text decodes as the bigint: $bigint");
	like($out->{decoded}{bigint}{ts} // '', qr/^\d{4}-/, 'to a timestamp');
	is_deeply([ @{ $out->{ulid_ts} }{qw(untyped text)} ], [ ($out->{ulid_ts}{ulidflake}) x 2 ],
		'node-postgres: a ulidflake\'s text sent untyped and as text decodes as the ulidflake');
}

sub encode_json_sorted
{
	my ($value) = @_;
	return JSON::PP->new->canonical->encode($value // {});
}

$node->stop;
done_testing();
