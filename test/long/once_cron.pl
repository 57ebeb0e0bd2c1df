# zk_once with real pg_cron (`make test-long`, about 11 minutes): three
# clusters schedule the same job every minute, the job writing its period to
# a fourth server through postgres_fdw; one cluster is stopped for three of
# the ten minutes.  Every minute's period is done exactly once: none lost,
# none twice.  (pg_cron 1.4 schedules by the minute, so this cannot be short.)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../../t";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $minutes = $ENV{ONCE_CRON_MINUTES} // 10;
my $zk = start_zookeeper('cron');
my $d = PostgreSQL::Test::Cluster->new('crond');
$d->init;
$d->start;
$d->safe_psql('postgres', 'CREATE TABLE done (period bigint, cluster text, at timestamptz DEFAULT clock_timestamp())');

my %node;
for my $n (qw(a b c))
{
	# pg_cron runs its jobs in background workers: no connection settings needed
	$node{$n} = new_zk_cluster("cron$n", $zk, conf => join("\n",
		"shared_preload_libraries = 'pg_cron,zk_lock'", "cron.database_name = 'postgres'",
		"cron.use_background_workers = on", "max_worker_processes = 24", "zk_lock.session_timeout = '4s'"));
	my ($host, $port) = ($d->host, $d->port);
	$node{$n}->safe_psql('postgres', qq{
		CREATE EXTENSION pg_cron;
		CREATE EXTENSION postgres_fdw;
		CREATE SERVER d FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres');
		CREATE USER MAPPING FOR CURRENT_USER SERVER d;
		CREATE FOREIGN TABLE done_remote (period bigint, cluster text) SERVER d OPTIONS (table_name 'done');
		CREATE FUNCTION run_job() RETURNS void LANGUAGE plpgsql AS \$\$
		DECLARE p timestamptz := zk_once('cron-job', interval '1 minute');
		BEGIN
		  IF p IS NOT NULL THEN
		    INSERT INTO done_remote VALUES (extract(epoch FROM p)::bigint, current_setting('cluster_name'));
		  END IF;
		END \$\$;
		SELECT cron.schedule('once-job', '* * * * *', 'SELECT run_job()');});
}
my $t0 = time();
note "scheduled in three clusters; running $minutes minutes";
sleep 60 * 3;
$node{c}->stop('fast');
note 'C stopped';
sleep 60 * 3;
$node{c}->start;
note 'C started again';
sleep 60 * ($minutes - 6) + 20;
$node{$_}->safe_psql('postgres', "SELECT cron.unschedule('once-job')") for qw(a b c);

my $rows = $d->safe_psql('postgres', 'SELECT count(*), count(DISTINCT period), min(period), max(period) FROM done');
my ($n, $distinct, $first, $last) = split /\|/, $rows;
note "rows: $rows";
cmp_ok($distinct, '>=', $minutes - 1, "$distinct minutes done in $minutes minutes");
is($n, $distinct, 'none twice');
is(($last - $first) / 60 + 1, $distinct, 'none lost between the first and the last');
is($d->safe_psql('postgres', "SELECT count(*) FROM done WHERE cluster = 'cronc' AND at > to_timestamp($t0 + 185)
	AND at < to_timestamp($t0 + 355)"), 0, 'nothing by C while it was stopped');
my $failed = join(',', map { $node{$_}->safe_psql('postgres',
	"SELECT count(*) FROM cron.job_run_details WHERE status <> 'succeeded'") } qw(a b c));
note "pg_cron runs not succeeded (a,b,c): $failed";
note sprintf('%.0f s', time() - $t0);
$node{$_}->stop for qw(a b c);
$d->stop;
done_testing();
