# A short soak (test/soak/Soak.pm) with a fixed seed, so that make test keeps
# the harness working: a real three-member ensemble behind proxies, three
# clusters and a store, faults drawn from the seed, and the checker's lines,
# each 0.  make soak runs the long one.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin, "$FindBin::RealBin/../test/soak";
use Test::More;
use Soak;

Soak::run(seconds => 30, seed => 4242);
done_testing();
