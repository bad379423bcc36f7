# A faked wall clock for a test cluster, through libfaketime (Debian package
# libfaketime): every process started after FlakeClock->new (server, psql,
# pgbench) reads its wall clock through a file that set() rewrites at run
# time: "+0" is the real clock, "-10s" ten seconds back, and an absolute
# "YYYY-MM-DD HH:MM:SS" a clock frozen at that time.  The monotonic clock
# is left alone, so timeouts and sleeps behave.
package FlakeClock;

use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;

sub new
{
	my ($class, $node) = @_;
	my ($libfaketime) = grep { -e } glob('/usr/lib/*/faketime/libfaketime.so.1');
	BAIL_OUT('libfaketime is missing (Debian package libfaketime)') unless $libfaketime;

	my $self = bless { file => $node->basedir . '/faketime' }, $class;
	$self->set('+0');
	$ENV{LD_PRELOAD} = $libfaketime;
	$ENV{FAKETIME_TIMESTAMP_FILE} = $self->{file};
	$ENV{FAKETIME_NO_CACHE} = '1';
	$ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	return $self;
}

# Write the setting to a new file and rename it over the old one, so that a
# process never reads the file half-written: newer libfaketime exits the
# process when it finds the file empty ("failed to parse FAKETIME
# timestamp").
sub set
{
	my ($self, $setting) = @_;
	my $tmp = "$self->{file}.new";
	open my $fh, '>', $tmp or die "could not write $tmp: $!";
	print $fh "$setting\n";
	close $fh or die "could not write $tmp: $!";
	rename $tmp, $self->{file} or die "could not rename $tmp to $self->{file}: $!";
}

1;
