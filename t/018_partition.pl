# A follower cut off from the leader.  Cluster A is connected to member 1 of
# a 3-member ensemble; member 1 reaches the other members only through
# proxies, which the test blackholes.  Member 1 then goes on answering A's
# pings (and reads) for syncLimit x tickTime (10 s here), longer than A's
# session timeout (4 s), while the leader, hearing nothing of A, expires A's
# session and another cluster, B, is granted A's keys.  Only the commit proof
# (requests the leader answered) keeps A from committing:
#  - A holds 'idle' (idle in its transaction, sending nothing), B waits for
#    it; after B is granted, A tries to COMMIT: 40001.  (Before the commit
#    proof, A's worker still counted itself connected then, and A committed.)
#  - Healed and cut again: A commits one transaction after another under
#    'k'; B asks for 'k' after the cut.  A's last commit comes before B's
#    grant.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use List::Util ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my ($ports, $proxies) = start_partitionable_ensemble('part', 20);
END { proxy_do($_, 'pass') for @{ $proxies // [] }; }

# member 1 must be a follower: restarted, it joins the ensemble as one
if (zk_member('part', 1)->{mode} eq 'leader')
{
	kill 'KILL', zk_member('part', 1)->{pid};
	ok(wait_for(sub { grep { zk_member('part', $_)->{mode} eq 'leader' } 2, 3 }, 20),
		'a new leader among members 2 and 3');
	zk_restart_member('part', 1);
}
is(zk_member('part', 1)->{mode}, 'follower', 'member 1 is a follower');

my $conf = "zk_lock.session_timeout = '4s'\nzk_lock.connect_timeout = '30s'\n"
  . "zk_lock.proof_bound = '1s'\nzk_lock.lock_delay = '2s'\n";
my $a = new_zk_cluster('pa', undef, hosts => "127.0.0.1:$ports->[0]", conf => $conf);
my $b = new_zk_cluster('pb', undef, hosts => "127.0.0.1:$ports->[1],127.0.0.1:$ports->[2]",
	conf => $conf);
# `dump` lists ephemeral nodes on the leader only
sub leader_port
{
	my ($m) = grep { $_->{mode} eq 'leader' } map { zk_member('part', $_) } 1 .. 3;
	return $m ? $m->{port} : $ports->[1];
}

for my $node ($a, $b)
{
	ok(wait_for(sub { $node->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 30),
		$node->name . ' grants');
}

# --- A holds 'idle' (and sends nothing); B waits for it ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('idle')");
my $wb = $b->background_psql('postgres', on_error_stop => 0);
$wb->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('idle');\n\\echo idle granted\n");
ok(wait_for(sub { key_queue_len(leader_port(), 'idle') == 2 }, 10), 'A holds idle, B waits');
# the cut isolates member 1 only: members 2 and 3 keep a leader, and B its session
ok(wait_for(sub { (grep { zk_member('part', $_)->{mode} eq 'leader' } 2, 3) && zk_status($b, 'state') eq 'connected' },
		20), 'a leader among members 2 and 3, B connected, before the cut');

proxy_do($_, 'blackhole') for @$proxies;
my $cut = time();
# about 6 s (A's session timeout, then B's lock_delay); the bound only keeps a slow machine from failing it
ok(wait_for(sub { $wb->{run}->pump_nb; $wb->{stdout} =~ /idle granted/ }, 40),
	'B is granted idle once the leader expired A\'s session');
note(sprintf('B granted idle %.1f s after the cut; A\'s worker: %s; B\'s: %s; modes %s', time() - $cut,
		zk_status($a, 'state'), zk_status($b, 'state'), join(' ', map { zk_member('part', $_)->{mode} } 1 .. 3)));
my $t = time();
$ha->query('COMMIT');
like($ha->{stderr}, qr/ERROR:  40001: (could not prove the zk_lock session alive before commit|zk_lock lock on key "idle" was lost)/,
	'A\'s commit under idle fails with 40001');
note(sprintf('A\'s commit failed after %.1f s; %.1f s after the cut', time() - $t, time() - $cut));
$wb->query_safe('COMMIT');

proxy_do($_, 'pass') for @$proxies;
ok(wait_for(sub { zk_member('part', 1)->{mode} eq 'follower' }, 60), 'member 1 rejoins');
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 60),
	'A works again, in a new session');

# --- A commits under 'k' in a loop across the cut; B asks for 'k' after it ---
my $g0 = zk_status($a, 'grants');
my $loop = start_commit_loop($a, 'k', 15);
# a slow machine's loop may need more than a second for its first commits
ok(wait_for(sub { zk_status($a, 'grants') >= $g0 + 20 }, 10), 'A\'s loop commits under k');
proxy_do($_, 'blackhole') for @$proxies;
$cut = time();
my $kb = $b->background_psql('postgres', on_error_stop => 0);
$kb->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('k');\n\\echo k granted\n");
ok(wait_for(sub { $kb->{run}->pump_nb; $kb->{stdout} =~ /k granted/ }, 30), 'B is granted k');
my ($granted) = $kb->query_safe("SELECT extract(epoch FROM granted_at) FROM zk_locks WHERE key = 'k'")
  =~ /([\d.]+)\s*$/;
note(sprintf('B granted k %.1f s after the cut', $granted - $cut));
my (undef, undef, @ends) = finish_commit_loop($loop);
cmp_ok(scalar(@ends), '>', 10, scalar(@ends) . ' commits of A under k');
my $last = List::Util::max(@ends);
cmp_ok($last, '<', $granted, sprintf('A\'s last commit under k came %.2f s before B\'s grant', $granted - $last));
note(sprintf('A\'s last commit under k: %.2f s after the cut', $last - $cut));
$kb->query_safe('COMMIT');

proxy_do($_, 'pass') for @$proxies;
ok(wait_for(sub { zk_member('part', 1)->{mode} eq 'follower' }, 60), 'member 1 rejoins again');
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 60),
	'A works again');

$_->quit for ($ha, $wb, $kb);
ok(wait_for(sub { scalar(zk_lock_nodes(leader_port())) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes(leader_port())));
$a->stop;
$b->stop;
done_testing();
