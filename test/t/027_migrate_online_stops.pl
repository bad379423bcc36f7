# The online migration (flake_migrate_online) stopped and resumed: with
# --jobs, a session killed, the program stopped by SIGINT and killed, and
# no session left each time; an identity key to ulidflake, the command
# stopped in each phase by SIGINT or SIGKILL and resumed; a server crash
# while it copies and while it swaps, then undone; changes under the swap
# it refuses.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use FlakeTest;

my $node = online_server('online_stops');
my $db = $node->connstr('postgres');
my $pg_dump = $node->config_data('--bindir') . '/pg_dump';
my ($rc, $out, $err);

# The command, as the user postgres (or with user => ROLE): exit code,
# stdout, stderr.
sub online { my ($args, %opt) = @_; return online_run($node, $args, %opt); }

# A session that holds a lock until released: the command waits in the
# phase that needs it, and is stopped there.
sub hold { return online_hold($node, @_); }

# The command started with @args, once it waits for a lock in $phase.
sub start_waiting { my ($phase, @args) = @_; return online_start($node, \@args, phase => $phase); }

# --jobs: the sessions of the tables (above, the migration under writes
# ran so) are stopped with the program, and the program with them: a
# session killed, the program stopped by SIGINT, the program killed.
# Each time no session is left, and the next run goes on from there.
online_parent_and_child($node, 'jb', 600);
# the program, copying slowly (10 rows a batch, 100 ms apart), once both
# tables' sessions have copied rows (or go on from a run before): its
# handle, its output and its processes' pids.  With -q (its sessions then
# write nothing to a pipe that would break when it is gone), once both
# copies have rows more.
sub start_copying
{
	my @quiet = @_;
	my ($o, $e) = ('', '');
	my ($jb, $jbc) = @quiet
	  ? split(/\|/, $node->safe_psql('postgres',
			q{SELECT (SELECT count(*) FROM jb__flake_new), (SELECT count(*) FROM jbc__flake_new)}))
	  : ();
	my $h = IPC::Run::start(
		[ FlakeTest::online_command($node, [ '-t', 'jb', '--jobs', '2', '-b', '10', '--sleep', '100', @quiet ]) ],
		'>', \$o, '2>', \$e);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	until (!$h->pumpable || time > $deadline
		|| (@quiet
			? $node->safe_psql('postgres', "SELECT (SELECT count(*) FROM jb__flake_new) > $jb
											   AND (SELECT count(*) FROM jbc__flake_new) > $jbc") eq 't'
			: keys %{ { map { $_ => 1 } $o =~ /^\[([^\]]+)\]   copy \S+: (?:\d+ (?:of about|rows)|continuing)/mg } }
			== 2))
	{
		$h->pump_nb;
		select(undef, undef, undef, 0.05);
	}
	my $pid = $h->{KIDS}[0]{PID};
	return ($h, \$o, \$e, $pid, children_of($pid));
}
# the state and parent of the process $1 ("S", 123), from /proc; none once
# it is gone
sub process_of
{
	my ($pid) = @_;
	my $stat = eval { slurp_file("/proc/$pid/stat") } // return;
	return $stat =~ /.*\) (\S) (\d+)/s ? ($1, $2) : ();
}
# the pids of the processes whose parent is $1
sub children_of
{
	my ($parent) = @_;
	return grep { ((process_of($_))[1] // 0) == $parent } map { m{/proc/(\d+)$} } glob '/proc/[0-9]*';
}
my ($jh, $jo, $je, $jpid, @jobs) = start_copying();
is(scalar @jobs, 2, 'with --jobs 2, two sessions copy') or diag($$jo, $$je);
kill 'KILL', $jobs[0];
$jh->finish;
is($jh->result(0), 1, 'a session killed: the program stops the other and exits 1');
like($$je, qr/the session of --jobs for public\.jbc? ended by signal 9/, 'saying which session ended how')
  or diag($$je);
like($$je, qr/stopped during/, 'and the other session says it was stopped');
ok($node->poll_query_until('postgres', $online_sessions_gone), 'no session is left');
($jh, $jo, $je, $jpid, @jobs) = start_copying();
like($$jo, qr/continuing after key/, 'the next run continues the copies');
kill 'INT', $jpid;
$jh->finish;
is($jh->result(0), 5, 'the program stopped by SIGINT: exit 5');
like($$je, qr/stopped during the steps of the tables/, 'saying what it stopped') or diag($$je);
ok($node->poll_query_until('postgres', $online_sessions_gone), 'its sessions are stopped with it');
($jh, $jo, $je, $jpid, @jobs) = start_copying('-q');
kill 'KILL', $jpid;
$jh->finish;
ok($node->poll_query_until('postgres', $online_sessions_gone), 'the program killed: its sessions stop');
# (a process ended may stay a zombie until its new parent reaps it)
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
my $running = sub { grep { my ($state) = process_of($_); defined $state && $state ne 'Z' } @jobs };
select(undef, undef, undef, 0.1) while $running->() && time < $deadline;
ok(!$running->(), 'and their processes end');
($rc, $out, $err) = online([ '-t', 'jb', '--jobs', '2' ]);
is($rc, 0, 'the next run finishes') or diag($out, $err);
like($out, qr/copy public\.jbc?: done, [1-9]\d* rows/,
	'copying the rows left: the killed program\'s sessions stopped copying with it');
is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT c.id), sum(c.v) FROM jbc c JOIN jb p ON p.id = c.jb_id;
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'jbc'::regclass AND attname = 'jb_id'}),
	"600|600|180300\nbigint", 'every row copied once, by a bigint');
($rc, undef, $err) = online([ '-t', 'jb', '--jobs', '0' ]);
is($rc, 2, '--jobs 0: exit code 2');
like($err, qr/invalid jobs "0": a whole number of at least 1/, 'saying what it takes');

# an identity key to ulidflake, the command stopped in each phase by
# SIGINT or SIGKILL while it waits for a lock that another session holds,
# resumed each time, then finished
$node->safe_psql('postgres', q{
	CREATE TABLE tags (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text);
	CREATE INDEX ON tags (name);
	CREATE TABLE tagged (tag_id int REFERENCES tags, n int PRIMARY KEY);
	INSERT INTO tags (name) SELECT 't' || n FROM generate_series(1, 3000) n;
	INSERT INTO tagged SELECT id, id FROM tags;
});
my $tags_before = $node->safe_psql('postgres',
	q{SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id});
my $usable = q{
	WITH t AS (INSERT INTO tags (name) VALUES ('new') RETURNING id)
	INSERT INTO tagged SELECT id, (SELECT least(min(n), 0) - 1 FROM tagged) FROM t RETURNING 1};
my @ulid = ('-t', 'tags', '-g', 'ulidflake_next');
my $signal = 'KILL';
for my $stop (
	[ create   => undef,      'LOCK tags IN ROW EXCLUSIVE MODE' ],
	[ copy     => 'create',   'LOCK tags__flake_new IN SHARE MODE' ],
	[ apply    => 'copy',     'LOCK tags__flake_new IN SHARE MODE' ],
	[ index    => 'apply',    'LOCK tags__flake_new IN ROW EXCLUSIVE MODE' ],
	[ analyze  => 'index',    'LOCK tags__flake_new IN SHARE MODE' ],
	[ swap     => 'analyze',  'LOCK tags IN ACCESS SHARE MODE' ],
	[ validate => 'swap',     'LOCK tagged IN SHARE MODE' ])
{
	my ($phase, $before, $lock) = @$stop;
	if (defined $before)
	{
		($rc, $out, $err) = online([ @ulid, '--until', $before ]);
		is($rc, 0, "resumed up to $before") or diag($out, $err);
	}
	my $release = hold($lock);
	my ($h, $o, $e) = start_waiting($phase, @ulid);
	like($$o, qr/\($phase: [^\n]*\n(  (lock not free|copy .*: continuing)[^\n]*\n)*\z/, "the command waits in $phase");
	$signal = $signal eq 'INT' ? 'KILL' : 'INT';
	$h->signal($signal);
	eval { $h->finish };
	is($h->result, 5, "SIGINT in $phase: exits 5") if $signal eq 'INT';
	like($$e, qr/stopped during .*Run the same command again/s, 'and says how to go on') if $signal eq 'INT';
	$release->();
	is($node->safe_psql('postgres', $usable), '1', "after SIG$signal in $phase the tables are in use");
}
($rc, $out, $err) = online([@ulid]);
is($rc, 0, 'resumed to the end') or diag($out, $err);
is( $node->safe_psql('postgres', q{
		SELECT md5(string_agg(concat_ws('|', t.id::bigint, t.name, g.n), ',' ORDER BY t.id)) FROM tags t JOIN tagged g ON g.tag_id = t.id
		WHERE g.n > 0}),
	$tags_before, 'every row as it was');
is( $node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) || ' ' || attidentity::text FROM pg_attribute WHERE attrelid = 'tags'::regclass AND attname = 'id'
		UNION ALL SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'tagged'::regclass AND attname = 'tag_id'
		UNION ALL SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'tags'::regclass
		UNION ALL SELECT string_agg(conname || ' ' || convalidated, ',') FROM pg_constraint WHERE conrelid = 'tagged'::regclass AND contype = 'f'}),
	"ulidflake \nulidflake\nulidflake_next()\ntagged_tag_id_fkey true",
	'tags.id is a ulidflake without identity, tagged.tag_id too, its foreign key validated');

# a crash of the server while the command copies, and while it waits to
# swap: it loses its connection (exit 1), the server recovers, the tables
# are in use; resumed; a column added meanwhile; then undone: the schema as
# before
$node->safe_psql('postgres', q{
	CREATE TABLE und (id serial PRIMARY KEY, v int);
	CREATE TABLE und_child (und_id int NOT NULL REFERENCES und, k int PRIMARY KEY);
	INSERT INTO und (v) SELECT n FROM generate_series(1, 500) n;
	INSERT INTO und_child SELECT id, id FROM und;
});
# pg_dump of some tables, without the lines that change at every run
sub dump_of
{
	my ($pattern) = @_;
	return join("\n", grep { !/^\\(un)?restrict / } split /\n/, `$pg_dump --schema-only -t '$pattern' '$db'`);
}
my $und_schema = dump_of('und*');
my $und_usable = q{WITH t AS (INSERT INTO und (v) VALUES (0) RETURNING id) INSERT INTO und_child SELECT id, -id FROM t RETURNING 1};
for my $stop ([ copy => 'create', 'LOCK und__flake_new IN SHARE MODE' ], [ swap => 'analyze', 'LOCK und IN ACCESS SHARE MODE' ])
{
	my ($phase, $before, $lock) = @$stop;
	($rc, $out, $err) = online([ '-t', 'und', '--until', $before ]);
	is($rc, 0, "und up to $before") or diag($out, $err);
	my $release = hold($lock);
	my ($h, $o, $e) = start_waiting($phase, '-t', 'und');
	like($$o, qr/\($phase: /, "the command waits in $phase");
	$node->stop('immediate');
	eval { $h->finish };
	$release->();
	is($h->result, 1, "a server crash in $phase: exits 1");
	like($$e, qr/connection lost.*run the same command again/s, 'and says how to go on');
	$node->start;
	is($node->safe_psql('postgres', $und_usable), '1', "after the crash in $phase the tables are in use");
}
# a column added meanwhile: the swap refuses, the tables as they are
$node->safe_psql('postgres', 'ALTER TABLE und ADD COLUMN w int');
($rc, $out, $err) = online([ '-t', 'und' ]);
is($rc, 3, 'a column added during the migration: refused');
like($err, qr/public\.und: its columns or checks changed while it was copied/, 'and says why');
is($node->safe_psql('postgres', $und_usable), '1', 'the tables are in use');
$node->safe_psql('postgres', 'ALTER TABLE und DROP COLUMN w');
# the log trigger disabled meanwhile: the swap refuses
$node->safe_psql('postgres', 'ALTER TABLE und_child DISABLE TRIGGER zz_flake_migrate_online_log');
($rc, $out, $err) = online([ '-t', 'und' ]);
is($rc, 1, 'the log trigger disabled during the migration: the swap refuses');
like($err, qr/the log trigger of public\.und_child was disabled or dropped during the copy/, 'and says why');
($rc, $out, $err) = online([ '-t', 'und', '--undo' ]);
is($rc, 0, 'undone') or diag($out, $err);
$node->safe_psql('postgres', 'DELETE FROM und_child WHERE k < 0; DELETE FROM und WHERE v = 0');
is(dump_of('und*'), $und_schema, 'the schema is as before');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'und%\_\_flake\_%'}),
	'0', 'no copy or log is left');


$node->stop;
done_testing();
