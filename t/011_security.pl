# zk_lock.auth and ACLs, roots, and live reconfiguration.
#  - With an identity (from a file, or inline), lock nodes can be changed by
#    that identity only: a ZooKeeper client without it cannot delete a held
#    lock's node nor create under the root.
#  - Wrong credentials, or none, on a root that belongs to an identity fail
#    fast with 42501; an unusable setting (a file others can read) fails fast
#    with 28000; zk_lock_status().auth says which.
#  - The secret never shows: not to other roles, not in pg_settings, not
#    even to a superuser, not in the server log after a reload.
#  - Two roots on one ensemble do not interfere.
#  - On reload: a new host list for the same ensemble keeps the session and
#    a held lock; a new root applies to locks asked for afterwards.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('sec');
my $secret = 'Sesame-' . int(rand(1e9));
my $credfile = "${ZkLockTest::scratch}/zk_cred";
append_to_file($credfile, "zkl:$secret\n");
chmod 0600, $credfile;

# A reaches ZooKeeper through a proxy, so that the host-list reload below
# can be proven by cutting that path.
my $p1 = start_proxy('sec1', $zk);
my $a = new_zk_cluster('sa', undef, hosts => "127.0.0.1:$p1->{port}", conf => "zk_lock.auth = '$credfile'\n");
my $b = new_zk_cluster('sb', $zk, conf => "zk_lock.auth = 'zkl:$secret'\n");

sub zkcli { return zk_cli($zk, @_); }
sub zkcli_as { my ($cred, @command) = @_; return zk_cli($zk, { auth => $cred }, @command); }

ok(wait_for(sub { zk_status($a, 'auth') =~ /^zkl: accepted/ }, 20), 'A authenticated (credential from a file)');
ok(wait_for(sub { zk_status($b, 'auth') =~ /^zkl: accepted/ }, 20), 'B authenticated (inline credential)');

# --- the same identity shares locks; nobody else can touch them ---
my $ha = $a->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_lock('guarded')");
is($b->safe_psql('postgres', "SELECT zk_try_lock('guarded')"), 'f', 'B (same identity) sees A\'s lock');
my ($node) = grep { m{/tguarded/} } zk_lock_nodes($zk);
ok($node, "A's lock node exists ($node)");
like(zkcli('delete', $node), qr/Insufficient permission/, 'a client without the identity cannot delete it');
like(zkcli('create', '/zk_lock/intruder'), qr/Insufficient permission/, 'nor create under the root');
like(zkcli('create', '/zk_lock/tguarded/intruder'), qr/Insufficient permission/, 'nor under the key node');
ok(scalar(grep { $_ eq $node } zk_lock_nodes($zk)), 'the lock node is still there');
like(zkcli('getAcl', $node), qr/Insufficient permission/, 'nor read its ACL');
my $acl = zkcli_as("zkl:$secret", 'getAcl', $node);
like($acl, qr/'digest,'zkl:\S+\s*: cdrwa/, 'its ACL gives every right to the identity');
unlike($acl, qr/'world,'anyone/, 'and none to anyone else');
$ha->query_safe('COMMIT');
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT zk_try_lock('guarded')") eq 't' }, 10),
	'the owner releases it as usual');

# --- wrong credentials, or none, on a root that belongs to zkl ---
my $w = new_zk_cluster('sw', $zk, conf => "zk_lock.auth = 'zkl:wrong'\nlog_min_messages = debug2\n");
my $n = new_zk_cluster('sn', $zk);
# ZooKeeper takes any password for an identity; the root's ACL tells a wrong one
ok(wait_for(sub { zk_status($w, 'auth') =~ /^zkl: refused: zk_lock.root belongs to another identity/ }, 20),
	'wrong credentials: zk_lock_status() says refused before any lock is asked for')
  or diag(zk_status($w, 'auth'));
ok(wait_for(sub { zk_status($a, 'auth') eq 'zkl: accepted, owner of zk_lock.root' }, 20),
	'the right ones: accepted, as the owner of the root')
  or diag(zk_status($a, 'auth'));
for my $case ([ $w, 'wrong credentials' ], [ $n, 'no credentials' ])
{
	my ($node, $what) = @$case;
	my $t0 = time();
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT zk_lock('guarded')",
		on_error_stop => 0);
	like($err, qr/ERROR:  42501: ZooKeeper denied access under zk_lock.root\n.*DETAIL:  denied under \/zk_lock: its nodes belong to another ZooKeeper identity/,
		"$what: the function fails with 42501");
	cmp_ok(time() - $t0, '<', 3, "$what: fast");
	like(zk_status($node, 'auth'), qr/denied under \/zk_lock/, "$what: zk_lock_status() says so");
}

# --- an unusable setting fails fast, and nothing is created ---
my $loose = "${ZkLockTest::scratch}/zk_cred_loose";
append_to_file($loose, "zkl:$secret\n");
chmod 0644, $loose;
my $u = new_zk_cluster('su', $zk, conf => "zk_lock.auth = '$loose'\n");
my ($ret, $out, $err) = $u->psql('postgres', "\\set VERBOSITY verbose\nSELECT zk_lock('guarded')", on_error_stop => 0);
like($err, qr/ERROR:  28000: zk_lock.auth is unusable\n.*DETAIL:  file ".*zk_cred_loose" must be a regular file owned by the server's user, without access for group or others/,
	'a credential file others can read is refused (28000)');
like($err, qr/HINT:  Fix zk_lock.auth \(a credential file must be owned by the server's user, mode 0600\), then reload/,
	'with a hint about the file');
like(zk_status($u, 'auth'), qr/without access for group or others/, 'zk_lock_status() says why');
is(zk_status($u, 'session_id'), '', 'and no session was opened with it');

# the file checked is the file read: no symbolic link; and no silent cut
my $link = "${ZkLockTest::scratch}/zk_cred_link";
symlink($credfile, $link) or die "symlink: $!";
$u->append_conf('postgresql.conf', "zk_lock.auth = '$link'\n");
$u->reload;
ok(wait_for(sub { zk_status($u, 'auth') =~ /zk_cred_link" is a symbolic link/ }, 10),
	'a credential file reached through a symbolic link is refused');
my $long = "${ZkLockTest::scratch}/zk_cred_long";
append_to_file($long, 'zkl:' . ('s' x 300) . "\n");
chmod 0600, $long;
$u->append_conf('postgresql.conf', "zk_lock.auth = '$long'\n");
$u->reload;
ok(wait_for(sub { zk_status($u, 'auth') =~ /zk_cred_long" is too long/ }, 10),
	'a credential line too long for zk_lock is refused, not cut short');
is(zk_status($u, 'session_id'), '', 'still no session');

# --- the secret never shows ---
$a->safe_psql('postgres', 'CREATE ROLE app LOGIN');
($ret, $out, $err) = $a->psql('postgres', 'SHOW zk_lock.auth', extra_params => [ '-U', 'app' ]);
like($err, qr/must be superuser or have privileges of pg_read_all_settings/, 'other roles cannot SHOW it');
is($a->safe_psql('postgres', "SELECT count(*) FROM pg_settings WHERE name = 'zk_lock.auth'", extra_params => [ '-U', 'app' ]),
	'0', 'nor see it in pg_settings');
is($a->safe_psql('postgres', 'SHOW zk_lock.auth'), '********', 'a superuser sees only that it is set');
is($a->safe_psql('postgres', "SELECT current_setting('zk_lock.auth')"), '********', 'also through current_setting()');
is($a->safe_psql('postgres', "SELECT zk_try_lock('app-key')", extra_params => [ '-U', 'app' ]), 't',
	'other roles can lock, as with core advisory locks');
unlike($a->safe_psql('postgres', 'SELECT zk_lock_status()::text', extra_params => [ '-U', 'app' ]), qr/\Q$secret\E/,
	'zk_lock_status() shows no secret');

my $new_secret = 'Other-' . int(rand(1e9));
$b->append_conf('postgresql.conf', "zk_lock.auth = 'zkl2:$new_secret'\n");
$b->reload;
ok(wait_for(sub { zk_status($b, 'auth') =~ /^zkl2: accepted; zk_lock.root belongs to an identity this session added before/ }, 10),
	'B took a new identity on reload (and keeps the one that owns the root)');
like(slurp_file($b->logfile), qr/parameter "zk_lock.auth" \(value hidden\)/, 'the reload is logged');
for my $node ($a, $b, $w, $u)
{
	my $log = slurp_file($node->logfile);
	ok($log !~ /\Q$secret\E/ && $log !~ /\Q$new_secret\E/, $node->name . ': no secret in the server log');
}

# --- roots: two roots on one ensemble never interfere ---
my $o = new_zk_cluster('so', $zk, conf => "zk_lock.root = '/other/app'\n");
$ha->query_safe("BEGIN; SELECT zk_lock('guarded')");
is($o->safe_psql('postgres', "SELECT zk_try_lock('guarded')"), 't', 'the same key under another root is another lock');
$ha->query_safe('COMMIT');

# --- reload: a new host list for the same ensemble keeps session and lock ---
my $p2 = start_proxy('sec2', $zk);
my $session = zk_status($a, 'session_id');
$ha->query_safe("BEGIN; SELECT zk_lock('across reload')");
my $new_hosts = "127.0.0.1:$p1->{port},127.0.0.1:$p2->{port}";
$a->append_conf('postgresql.conf', "zk_lock.hosts = '$new_hosts'\n");
$a->reload;
ok(wait_for(sub { slurp_file($a->logfile) =~ /ZooKeeper hosts changed to "\Q$new_hosts\E"/ }, 10),
	'A applied the new host list (logged)');
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 20), 'A is connected (it may have moved to the new host)');
is(zk_status($a, 'hosts'), $new_hosts, 'zk_lock_status() shows the new list');
is(zk_status($a, 'session_id'), $session, 'in the same session');
is(zk_status($a, 'lost'), '0', 'losing nothing');
is($b->safe_psql('postgres', "SELECT zk_try_lock('across reload')"), 'f', 'the held lock was kept');

# --- reload: a new root applies to new locks; held ones keep theirs ---
$a->append_conf('postgresql.conf', "zk_lock.root = '/zk_lock_v2'\n");
$a->reload;
ok(wait_for(sub { slurp_file($a->logfile) =~ /new locks go under zk_lock.root "\/zk_lock_v2"/ }, 10),
	'A applied the new root');
is($b->safe_psql('postgres', "SELECT zk_try_lock('across reload')"), 'f', 'the lock held before is still held');
$ha->query_safe("SELECT zk_lock('after reload')");
ok(scalar(grep { m{^/zk_lock_v2/tafter reload/} } zk_lock_nodes($zk, '/zk_lock_v2')), 'a new lock goes under the new root')
  or diag(join("\n", zk_lock_nodes($zk, '/zk_lock_v2')));
ok(scalar(grep { m{^/zk_lock/tacross reload/} } zk_lock_nodes($zk)), 'the earlier one stays under the old root');
is($a->safe_psql('postgres', "SELECT zk_try_lock('across reload', 1000)"), 'f',
	'another backend of A asking for the held key waits: its request goes under the root the key is held under');
$ha->query_safe('COMMIT');
is($a->safe_psql('postgres', "SELECT zk_try_lock('across reload', 5000)"), 't',
	'once it is released, the key is free (under the new root)');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) + scalar(zk_lock_nodes($zk, '/zk_lock_v2')) == 0 }, 10),
	'both released: no node left under either root');

$ha->quit;
$_->stop for ($a, $b, $w, $n, $u, $o);
done_testing();
