# What the ORM tests (07x_orm_*.pl) share: a server where the database
# "app", owned by the login role "app", has the extension and the role has
# flake.serial_default = 'flake_next' (as docs/orms.md sets them up), and
# logs the DDL; the checks of what an ORM's application printed; the
# DDL the ORM's migrations ran, from the server log.
#
# Each application (test/orm/<orm>/) runs its ORM's own migrations, which
# create two models, authors and books, a book referencing its author by a
# foreign key; inserts three authors and a book of each through the ORM in
# one transaction; and prints one line of JSON:
#
#   orm          the ORM's name and version, and its driver's
#   started_ms, finished_ms   the application's clock around the inserts
#   authors      the ids the ORM gave back, in the order made, as text
#   books        [id, author_id] of each book, in the order made
#   names        the authors' names read back through the books' relation
#   fk_refused   whether a book of an author that does not exist was refused
#   id_class     the class (type) of an id in the ORM's language
package FlakeOrm;

use strict;
use warnings;
use Exporter 'import';
use File::Basename qw(dirname);
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FlakeTest;

our @EXPORT = qw(orm_server orm_exec orm_run orm_check orm_check_js_ids orm_ddl orm_flake_ids
  orm_node_modules);

# The started server, set up as docs/orms.md tells a DBA to: the extension
# in template1, so that every database made after it has it (the test
# databases an ORM's test runner makes among them), and the setting on the
# application's role, so that it reaches those databases too; the role may
# create databases, as test runners need.  Then the database app, owned by
# that role.
sub orm_server
{
	my ($name) = @_;
	my $node = flake_cluster($name, "log_statement = 'ddl'\n");
	$node->start;
	$node->safe_psql('template1', 'CREATE EXTENSION flake');
	$node->safe_psql('postgres', q{
		CREATE ROLE app LOGIN CREATEDB;
		ALTER ROLE app SET flake.serial_default = 'flake_next';
		CREATE DATABASE app OWNER app});
	return $node;
}

# Run a command as an application or its ORM's tool: against the server's
# database app as the role app (PGHOST, PGPORT, PGUSER and PGDATABASE set),
# with the given environment too, in the directory chdir => DIR if given,
# under the tests' timeout.  Returns whether it exited 0, its stdout and
# its stderr.
sub orm_exec
{
	my ($node, $command, %env) = @_;
	my $dir = delete $env{chdir};
	local %ENV = (%ENV, PGHOST => $node->host, PGPORT => $node->port,
		PGUSER => 'app', PGDATABASE => 'app', %env);
	my ($stdout, $stderr);
	my $ok = IPC::Run::run($command, '<', \undef, '>', \$stdout, '2>', \$stderr,
		($dir ? (init => sub { chdir $dir or die "chdir $dir: $!" }) : ()),
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return ($ok, $stdout // '', $stderr // '');
}

# Run an application (a command) against the server's database app (see
# orm_exec); returns what it printed, decoded.
sub orm_run
{
	my ($node, $command, %env) = @_;
	my ($ok, $stdout, $stderr) = orm_exec($node, $command, %env);
	ok($ok, "the application ran: @$command") or diag($stderr);
	note($stderr) if $stderr;
	my ($line) = grep { /^\{/ } split /\n/, $stdout;
	return $line ? decode_json($line) : {};
}

# Check what an application printed, and the tables its migrations made
# ($authors and $books, as the ORM names them).
sub orm_check
{
	my ($node, $out, $authors, $books) = @_;
	note("ORM: $out->{orm}");
	my @authors = @{ $out->{authors} // [] };
	my @books = @{ $out->{books} // [] };
	is(scalar(@authors) . ' ' . scalar(@books), '3 3', 'the ORM gave back the ids of three authors and three books');
	my $ids = join(',', @authors, map { $_->[0] } @books);
	my ($from, $to) = ($out->{started_ms} / 1000 - 2, $out->{finished_ms} / 1000 + 2);
	is( $node->safe_psql('app', qq{
			SELECT count(*) FILTER (WHERE id <= prev),
				   bool_and(flake_timestamp(id) BETWEEN to_timestamp($from) AND to_timestamp($to))
			FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
				  FROM unnest('{$ids}'::bigint[]) WITH ORDINALITY AS u(id, n)) s}),
		'0|t', 'they are flake ids: made within seconds of the application\'s clock, strictly increasing in the order made');
	is(join(',', map { $_->[1] } @books), join(',', @authors), 'each book references its author');
	is(join(',', @{ $out->{names} // [] }), 'Ada,Grace,Edsger', 'the authors are read back through the books\' relation');
	ok($out->{fk_refused}, 'a book of an author that does not exist is refused');
	is( $node->safe_psql('app', qq{
			SELECT pg_get_expr(d.adbin, d.adrelid), pg_get_serial_sequence(d.adrelid::regclass::text, 'id')
			FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
			WHERE a.attname = 'id' AND d.adrelid IN ('$authors'::regclass, '$books'::regclass)
			ORDER BY d.adrelid::regclass::text;
			SELECT count(*) FROM pg_constraint
			WHERE contype = 'f' AND conrelid = '$books'::regclass AND confrelid = '$authors'::regclass}),
		"flake_next()|\nflake_next()|\n1",
		"$authors and $books are keyed by flake_next(), with no sequence, and $books references $authors");
	is( $node->safe_psql('app', qq{SELECT count(*) FROM $authors JOIN $books b ON b.author_id = $authors.id}),
		'3', 'the rows are in the tables');
}

# What every Node ORM's application shows of its ids: node-postgres gives
# a bigint as a string, so an id above 2^53 (which a Number would round)
# comes back whole through a lookup by it and through JSON.stringify.
sub orm_check_js_ids
{
	my ($out) = @_;
	is($out->{id_class}, 'string', 'the ids reach JavaScript as strings');
	is($out->{looked_up}, 'Grace', 'a lookup by an id finds its row');
	ok($out->{json_id_whole}, 'whose id comes back whole through JSON.stringify, above 2^53');
}

# The node_modules of the Node ORMs' tests: test/orm/js/package.json's
# packages, which .ci/run installs with npm ci in $FLAKE_ORM_CACHE/js
# (/var/cache/flake-orm/js), outside the clone.  Skips the test when Node
# or one of the given packages is missing.
sub orm_node_modules
{
	my (@packages) = @_;
	my $modules = ($ENV{FLAKE_ORM_CACHE} // '/var/cache/flake-orm') . '/js/node_modules';
	plan skip_all => 'Node is not installed (apt-get install nodejs npm)'
	  unless system('node --version >/dev/null 2>&1') == 0;
	my @missing = grep { !-e "$modules/$_/package.json" } @packages;
	my $dir = dirname($modules);
	plan skip_all => "@missing not installed in $modules (mkdir -p $dir && cp test/orm/js/package*.json $dir && cd $dir && npm ci)"
	  if @missing;
	return $modules;
}

# Whether every id of the list is a flake id of this server's, made by
# flake_next() (above 2^53, on a node), in database $db.
sub orm_flake_ids
{
	my ($node, $db, @ids) = @_;
	return 0 unless @ids && !grep { !/^[0-9]+$/ } @ids;
	my $list = join(',', @ids);
	return $node->safe_psql($db, qq{
		SELECT bool_and(id > 2 ^ 53 AND flake_timestamp(id) > now() - interval '10 minutes')
		FROM unnest('{$list}'::bigint[]) id}) eq 't';
}

# The DDL statements the server logged (log_statement = 'ddl') since the
# log's offset $from, one a line.
sub orm_ddl
{
	my ($node, $from) = @_;
	my $log = substr(slurp_file($node->logfile), $from // 0);
	my @ddl;
	while ($log =~ /LOG:  statement: (.*?)(?=\n\S|\z)/gs)
	{
		(my $statement = $1) =~ s/\s+/ /g;
		push @ddl, $statement if $statement =~ /^\s*(CREATE|ALTER)\b/i;
	}
	return join("\n", @ddl);
}

1;
