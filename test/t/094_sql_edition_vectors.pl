# The vectors of ../shared/vectors (test/data) that the SQL edition's
# functions cover pass in both editions, on the SQL edition and on a
# server with the C edition: the text form of Randflake ids
# (randflake_text.tsv), and Ulid-Flake ids (ulidflake.tsv,
# ulidflake_invalid.tsv), which are bigint in the SQL edition and the
# type ulidflake in the C edition.  The SQL edition's ulidflake_next()
# values decode with the C edition's functions.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeSqlEdition;

my $install = sql_edition_required();
my ($tle) = sql_edition_scripts();
my $sql = sql_edition_server('sql_edition_vectors', $install);
sql_edition_install_tle($sql, $tle);
my $c = PostgreSQL::Test::Cluster->new('sql_edition_vectors_c');
$c->init;
$c->append_conf('postgresql.conf', "shared_preload_libraries = 'flake'\n");
$c->start;
$c->safe_psql('postgres', 'CREATE EXTENSION flake');

# each vector: (direction, input, expected), the input of decode as JSON
my @vectors;
open my $fh, '<', "$FindBin::RealBin/../data/randflake_text.tsv" or die "randflake_text.tsv: $!";
<$fh>;
while (my $line = <$fh>)
{
	chomp $line;
	my ($direction, $input, $expected) = split /\t/, $line;
	push @vectors, [ $direction, $input, $expected ];
}
close $fh;
cmp_ok(scalar @vectors, '>=', 25, 'the Randflake text vectors are read');

# one statement per vector, printing what it returns or ERR:<SQLSTATE>
sub run_vectors
{
	my ($node) = @_;
	my @got;
	for my $v (@vectors)
	{
		my ($direction, $input) = @$v;
		my $call;
		if ($direction eq 'encode')
		{
			$call = "SELECT randflake_encode('$input'::bigint)";
		}
		else
		{
			$input =~ s/'/''/g;
			$call = "SELECT randflake_parse(('$input'::json) #>> '{}')";
		}
		my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$call");
		push @got, $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? "ERR:$1" : $out;
	}
	return @got;
}
for my $edition ([ 'the SQL edition', $sql ], [ 'the C edition', $c ])
{
	my @got = run_vectors($edition->[1]);
	my @wrong = grep { $got[$_] ne $vectors[$_][2] } 0 .. $#vectors;
	is(scalar @wrong, 0, "the Randflake text vectors pass in $edition->[0]")
	  or diag join("\n", map { "$vectors[$_][0] $vectors[$_][1]: got $got[$_], expected $vectors[$_][2]" } @wrong);
}

# Ulid-Flake: each valid vector (value, text, unix ms, entropy, sid),
# encoded, parsed and decoded, in one query per edition
sub read_tsv
{
	my ($name) = @_;
	open my $fh, '<', "$FindBin::RealBin/../data/$name" or die "$name: $!";
	<$fh>;
	my @rows = map { chomp; [ split /\t/ ] } <$fh>;
	close $fh;
	return @rows;
}
my @ulid = read_tsv('ulidflake.tsv');
cmp_ok(scalar @ulid, '>=', 80, 'the Ulid-Flake vectors are read');
my $values = join(",\n", map { "($_->[0]::bigint, '$_->[1]', $_->[2]::bigint, $_->[3], $_->[5])" } @ulid);
my %ulid_query = (
	'the SQL edition' => q{ulidflake_text(v) = t AND ulidflake_parse(t) = v
		AND extract(epoch FROM ulidflake_timestamp(v)) * 1000 = ms AND ulidflake_entropy(v) = e AND ulidflake_sid(v) = s
		AND ulidflake_from_timestamp(ulidflake_timestamp(v)) = v >> 20 << 20
		AND ulidflake_upper_bound(ulidflake_timestamp(v)) = v | 1048575},
	'the C edition' => q{v::ulidflake::text = t AND t::ulidflake::bigint = v
		AND extract(epoch FROM flake_timestamp(v::ulidflake)) * 1000 = ms AND ulidflake_entropy(v::ulidflake) = e
		AND ulidflake_sid(v::ulidflake) = s
		AND ulidflake_from_timestamp(flake_timestamp(v::ulidflake))::bigint = v >> 20 << 20
		AND ulidflake_upper_bound(flake_timestamp(v::ulidflake))::bigint = v | 1048575});
for my $edition ([ 'the SQL edition', $sql ], [ 'the C edition', $c ])
{
	my $wrong = $edition->[1]->safe_psql('postgres', qq{
		SELECT string_agg(t, ' ') FROM (VALUES $values) AS vector(v, t, ms, e, s)
		WHERE NOT ($ulid_query{$edition->[0]})});
	is($wrong, '', "the Ulid-Flake vectors pass in $edition->[0]");
}

# the invalid texts: the SQLSTATE, or (OK) the text in upper case
my @invalid = read_tsv('ulidflake_invalid.tsv');
cmp_ok(scalar @invalid, '>=', 40, 'the invalid Ulid-Flake texts are read');
for my $edition ([ 'the SQL edition', $sql, 'ulidflake_text(ulidflake_parse(%s))' ],
	[ 'the C edition', $c, '(%s)::ulidflake::text' ])
{
	my @wrong;
	for my $v (@invalid)
	{
		my ($json, $expected) = @$v;
		(my $quoted = $json) =~ s/'/''/g;
		my $call = sprintf($edition->[2], "('$quoted'::json) #>> '{}'");
		my ($ret, $out, $err) = $edition->[1]->psql('postgres', "\\set VERBOSITY verbose\nSELECT $call");
		my $got = $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : $out;
		if ($expected eq 'OK')
		{
			$expected = $edition->[1]->safe_psql('postgres', "SELECT upper(('$quoted'::json) #>> '{}')");
		}
		push @wrong, "$json: got $got, expected $expected" if $got ne $expected;
	}
	is(scalar @wrong, 0, "the invalid Ulid-Flake texts are refused as in the vectors, in $edition->[0]")
	  or diag join("\n", @wrong);
}

# the SQL edition's values: distinct, increasing in the session, of the
# clock's millisecond, and decoded alike by the C edition
my $made = $sql->safe_psql('postgres', q{
	SELECT string_agg(format('(%s::bigint, %L, %L::timestamptz, %s, %s, %s)', v, ulidflake_text(v),
			ulidflake_timestamp(v), ulidflake_entropy(v), ulidflake_sid(v), i), ',' ORDER BY i)
	FROM (SELECT i, CASE WHEN i % 2 = 0 THEN ulidflake_next() ELSE ulidflake_next(i % 32) END AS v
		  FROM generate_series(1, 2000) i) made});
is($sql->safe_psql('postgres', qq{
	SELECT count(DISTINCT v), bool_and(v > lag_v OR lag_v IS NULL),
		bool_and(abs(extract(epoch FROM t - now())) < 60)
	FROM (SELECT v, t, lag(v) OVER (ORDER BY ord) AS lag_v
		  FROM (VALUES $made) AS m(v, txt, t, e, s, ord)) m}),
	'2000|t|t', 'ulidflake_next() and ulidflake_next(sid): distinct, increasing, of the clock');
is($sql->safe_psql('postgres', q{
	SELECT bool_and(ulidflake_sid(ulidflake_next(i)) = i) FROM generate_series(0, 31) i}),
	't', 'ulidflake_next(sid) carries its sid');
is($c->safe_psql('postgres', qq{
	SELECT count(*) FROM (VALUES $made) AS m(v, txt, t, e, s, ord)
	WHERE v::ulidflake::text <> txt OR flake_timestamp(v::ulidflake) <> t
		OR ulidflake_entropy(v::ulidflake) <> e OR ulidflake_sid(v::ulidflake) <> s}),
	'0', "the SQL edition's ulidflake_next() values decode alike with the C edition's functions");
my ($ret, $out, $err) = $sql->psql('postgres', "\\set VERBOSITY verbose\nSELECT ulidflake_next(32)");
like($err, qr/ERROR:  22003:.*scalability id 32/, 'a sid above 31 is refused, as in the C edition');

# concurrent sessions: 8 on ulidflake_next(), 8 on ulidflake_next(sid)
# with sids that the stand-alone form's random bits also take
$sql->safe_psql('postgres', q{
	CREATE UNLOGGED TABLE ulids (session int NOT NULL, n int NOT NULL, v bigint NOT NULL);
	GRANT INSERT ON ulids TO PUBLIC;
});
my $script = PostgreSQL::Test::Utils::tempdir() . '/ulids.sql';
open my $sh, '>', $script or die "could not write $script: $!";
print $sh "INSERT INTO ulids SELECT :client_id, g, CASE WHEN :client_id % 2 = 0 THEN ulidflake_next() "
  . "ELSE ulidflake_next(:client_id % 4) END FROM generate_series(1, 20000) g;\n";
close $sh;
$sql->command_ok(
	[ 'pgbench', '-n', '-c', 16, '-j', 16, '-t', '1', '-f', $script, '-U', $sql_edition_owner,
	  '-h', $sql->host, '-p', $sql->port, 'postgres' ],
	'16 sessions take 20,000 ulidflakes each');
is($sql->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT v), count(*) FILTER (WHERE back) FROM (
		SELECT v, v <= lag(v) OVER (PARTITION BY session ORDER BY n) AS back FROM ulids) u}),
	'320000|320000|0', "no ulidflake repeated, and each session's increase");

# a clock behind the last value (the sequence set 5 s ahead, as before a
# step back): the millisecond already entered continues, the next one is
# refused beyond max_borrow_ms and 1 s, as the C edition refuses
$sql->safe_psql('postgres', q{
	SELECT setval('flake_internal.ulidflake', ((flake_internal.ulidflake_clock_ms() + 5000) << 15) + 32766)},
	extra_params => [ '-U', $sql_edition_owner ]);
my $last;
($ret, $last, $err) = $sql->psql('postgres', "\\set VERBOSITY verbose\nSELECT ulidflake_next();\nSELECT ulidflake_next()");
like($err, qr/ERROR:  55000: the system clock is \d+ ms behind the last ulidflake issued/,
	'a clock 5 s behind: the entered millisecond continues, the next refused');
is($sql->safe_psql('postgres', "SELECT ($last >> 5) & 32767"), '32767', 'the value before the refusal ends its millisecond');
$sql->safe_psql('postgres', 'UPDATE flake_internal.settings SET max_borrow_ms = 10000',
	extra_params => [ '-U', $sql_edition_owner ]);
is($sql->safe_psql('postgres', "SELECT ulidflake_next() > $last"), 't',
	'with room to borrow, the values continue above the last one');

$c->stop;
$sql->stop;
done_testing();
