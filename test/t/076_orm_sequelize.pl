# 32-bit keys under flake.serial_default, with Sequelize's default model
# (issue 45).  A model that declares no key gets INTEGER autoIncrement, a
# serial: it keeps its sequence, and the WARNING that says so reaches the
# server log (on 1.4 a NOTICE, which neither the ORM's user nor the log
# saw); flake_sequence_keys() names it.  A key declared DataTypes.BIGINT
# gets flake ids.  With flake.serial_default_narrow = error, sync() of the
# default model is refused and makes no table.  An id sent back through
# Sequelize's replacements decodes as the bigint.  See test/t/FlakeOrm.pm.
#
# Needs Node, and Sequelize with node-postgres as test/orm/js/package-lock.json
# pins them (see orm_node_modules in FlakeOrm.pm); skipped otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use FlakeOrm;

my $modules = orm_node_modules(qw(sequelize pg));

my $node = orm_server('sequelize');
my $from = -s $node->logfile;
my $out = orm_run($node, [ 'node', 'test/orm/sequelize/app.js' ], NODE_PATH => $modules);
note("ORM: $out->{orm}");
is($out->{widget_id}, 1, 'the default model (no key declared) keeps its sequence: its first id is 1');
ok(orm_flake_ids($node, 'app', $out->{author_id} // ''), "a key declared DataTypes.BIGINT gets flake ids: $out->{author_id}");
is($out->{author_id_class}, 'string', 'which reach JavaScript as strings');
is( join(',', map { "$_->{table_name}.$_->{column_name} $_->{type}" } @{ $out->{sequence_keys} // [] }),
	'"Widgets".id integer', 'flake_sequence_keys() names the default model\'s key, and only it');
my $log = substr(slurp_file($node->logfile), $from);
like($log, qr/WARNING:  column "id" of table "Widgets" keeps its sequence/,
	'the server log has the WARNING that names it');
like($out->{refused} // '', qr/column "id" of table "Gadgets" is too narrow for flake_next\(\) ids/,
	'with flake.serial_default_narrow = error, sync() of the default model is refused');
ok(!defined $out->{gadgets_made}, 'and makes no table');
is($out->{decoded}{as_text}, $out->{decoded}{as_bigint}, 'an id sent through replacements decodes as the bigint');
note("DDL of Sequelize's sync:\n" . orm_ddl($node, $from));

$node->stop;
done_testing();
