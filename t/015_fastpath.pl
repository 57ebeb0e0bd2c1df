# Every lock function overload called through libpq's fast-path interface
# (PQfn), which some drivers use: a fast-path call has no parse tree, so a
# function must not read its argument types from it.  Each call works on the
# right key space, or fails with an SQLSTATE; the server never crashes.
# Also: how keys show in a database that is not UTF-8.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('fastpath');
my $node = new_zk_cluster('fp', $zk);

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
chomp(my $inc = `$pg_config --includedir`);
chomp(my $lib = `$pg_config --libdir`);
my $client = "${ZkLockTest::scratch}/fastpath";
system('cc', '-o', $client, "-I$inc", "$FindBin::RealBin/../test/fastpath.c", "-L$lib", '-lpq') == 0
  or BAIL_OUT('could not build the fast-path client');

my $conninfo = sprintf('host=%s port=%d dbname=postgres', $node->host, $node->port);

sub fastpath
{
	my ($sig, @args) = @_;
	my ($out, $err);
	IPC::Run::run([ $client, $conninfo, $sig, @args ], '>', \$out, '2>', \$err,
		IPC::Run::timeout(60));
	return ($out // '') . ($err // '');
}

# signature, arguments, what the session then holds
my @granting = (
	[ 'zk_lock(text)', ['t:fp-k'], 'text:fp-k:exclusive' ],
	[ 'zk_lock(bigint)', ['b:4242424242'], 'bigint:4242424242:exclusive' ],
	[ 'zk_try_lock(text)', ['t:fp-k'], 'text:fp-k:exclusive' ],
	[ 'zk_try_lock(bigint)', ['b:-7'], 'bigint:-7:exclusive' ],
	[ 'zk_try_lock(text,integer)', [ 't:fp-k', 'i:1000' ], 'text:fp-k:exclusive' ],
	[ 'zk_try_lock(bigint,integer)', [ 'b:42', 'i:0' ], 'bigint:42:exclusive' ],
	[ 'zk_lock_shared(text)', ['t:fp-s'], 'text:fp-s:shared' ],
	[ 'zk_lock_shared(bigint)', ['b:43'], 'bigint:43:shared' ],
	[ 'zk_try_lock_shared(text)', ['t:fp-s'], 'text:fp-s:shared' ],
	[ 'zk_try_lock_shared(bigint)', ['b:43'], 'bigint:43:shared' ],
	[ 'zk_try_lock_shared(text,integer)', [ 't:fp-s', 'i:500' ], 'text:fp-s:shared' ],
	[ 'zk_try_lock_shared(bigint,integer)', [ 'b:43', 'i:500' ], 'bigint:43:shared' ],
	[ 'zk_lock(integer,integer)', [ 'i:1', 'i:2' ], 'integer pair:1,2:exclusive' ],
	[ 'zk_try_lock(integer,integer,integer)', [ 'i:-1', 'i:2', 'i:0' ], 'integer pair:-1,2:exclusive' ],
	[ 'zk_lock_shared(integer,integer)', [ 'i:3', 'i:4' ], 'integer pair:3,4:shared' ],
	[ 'zk_try_lock_shared(integer,integer,integer)', [ 'i:3', 'i:4', 'i:500' ], 'integer pair:3,4:shared' ],
);
for my $c (@granting)
{
	my ($sig, $args, $held) = @$c;
	my $out = fastpath($sig, @$args);
	like($out, qr/^result (01)?\nheld 1 \Q$held\E\nalive 1$/m, "$sig through the fast path takes $held")
	  or diag($out);
}

# the ones that take nothing: false (with core's warning) or a clear error
for my $c (
	[ 'zk_unlock(text)', ['t:fp-k'] ],
	[ 'zk_unlock(bigint)', ['b:42'] ],
	[ 'zk_unlock_shared(text)', ['t:fp-s'] ],
	[ 'zk_unlock_shared(bigint)', ['b:43'] ],
	[ 'zk_unlock(integer,integer)', [ 'i:1', 'i:2' ] ],
	[ 'zk_unlock_shared(integer,integer)', [ 'i:3', 'i:4' ] ])
{
	my ($sig, $args) = @$c;
	like(fastpath($sig, @$args), qr/^result 00\nheld 0 \nalive 1$/m, "$sig: false, nothing held");
}
like(fastpath('zk_lock_token(text)', 't:fp-k'), qr/^error 55000 .*holds no zk_lock lock on key "fp-k"/m,
	'zk_lock_token(text): a clear error');
like(fastpath('zk_lock_token(bigint)', 'b:42'), qr/^error 55000 .*holds no zk_lock lock on key "42"/m,
	'zk_lock_token(bigint): the key read as a bigint');
like(fastpath('zk_lock_token(integer,integer)', 'i:1', 'i:2'), qr/^error 55000 .*holds no zk_lock lock on key "1,2"/m,
	'zk_lock_token(integer,integer): the key read as a pair');
like(fastpath('zk_lock_queue_raw(bigint)', 'b:42'), qr/^error \w{5} /m,
	'a set-returning function fails with an SQLSTATE');
like(fastpath('zk_lock(text)', 't:'), qr/^error 22023 .*must not be empty/m, 'an empty key: 22023');

# Keys are compared as UTF-8 in every database; in a database of another
# encoding a key is shown with its non-ASCII characters escaped, never as
# UTF-8 bytes read as that encoding.
$node->safe_psql('postgres',
	"CREATE DATABASE l1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$node->safe_psql('l1', 'CREATE EXTENSION zk_lock');
is($node->safe_psql('l1', "BEGIN; SELECT zk_lock(convert_from('\\x636166e9', 'LATIN1')); SELECT key FROM zk_locks; COMMIT;"),
	"\ncaf\\u00E9", 'a LATIN1 database shows the key with its accent escaped');
is($node->safe_psql('postgres', "BEGIN; SELECT zk_lock(convert_from('\\x636166c3a9', 'UTF8')); SELECT key FROM zk_locks; COMMIT;"),
	"\ncaf\xc3\xa9", 'a UTF-8 database shows it as it is');

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');
unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left behind');

$node->stop;
done_testing();
