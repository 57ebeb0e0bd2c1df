# make soak: the real system under random, overlapping faults for SOAK_S
# seconds (default 600), judged by the data the locks protect
# (test/soak/Soak.pm).  SOAK_SEED replays a run's schedule of faults;
# SOAK_OUT is where its summary and picture go.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin, "$FindBin::RealBin/../../t";
use Test::More;
use Soak;

my $seed = $ENV{SOAK_SEED};
$seed = undef if defined $seed && $seed eq '';
Soak::run(seconds => $ENV{SOAK_S} || 600, seed => $seed, out => $ENV{SOAK_OUT});
done_testing();
