# The vectors of ../shared/vectors (test/data) that the SQL edition's
# functions cover, the text form of Randflake ids (randflake_text.tsv),
# pass in both editions: the same query, on the SQL edition and on a
# server with the C edition.
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

$c->stop;
$sql->stop;
done_testing();
