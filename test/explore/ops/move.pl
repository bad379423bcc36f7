# make explore: moving a server (docs/upgrading.md, docs/moving-data.md).
#
# Blue retired: stopped for good once green takes the writes (or before
# any subscription), its whole state taken over by green with
# flake_take_over() of its data directory, as after moving a server or a
# pg_upgrade.  The dumps of blue's databases restored on green then
# generate there without flake_take_over_ids(); none of blue's ids may
# come again.  Every later step that needs blue is skipped (retired() in
# explore.pl).
use strict;
use warnings;

our %op;

$op{retire_blue} = {
	weight => 2,
	args   => sub { my ($m) = @_; return $op{retire_blue}{pre}->($m, {}) ? ({}) : () },
	pre    => sub {
		my ($m) = @_;
		return 0 if $m->{retired} || $m->{dbs}{'blue/app'}{prepared};
		return 0 unless ($m->{dbs}{'green/app'}{ext} // '') eq 'current';
		# the writes on green, with no way back; or blue never replicated
		return ($m->{live} eq 'green' && !$m->{rsub}) || !$m->{sub};
	},
	apply => sub { my ($m) = @_; $m->{retired} = { blue => 1 }; $m->{live} = 'green' },
	run   => sub {
		my ($w) = @_;
		return stop($w, 'blue', 'fast')
		  // sql($w, 'green/app', "SELECT flake_take_over('" . $w->{node}{blue}->data_dir . "')");
	},
};

1;
