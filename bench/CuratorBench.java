// Apache Curator's recipes, the peers zk_lock is measured against: THREADS
// threads acquiring and releasing for SECONDS, spread over CLIENTS
// CuratorFramework clients (ZooKeeper sessions; default one).
//
//   java CuratorBench HOST:PORT THREADS same|distinct SECONDS
//       InterProcessMutex on one path, or one path per thread
//   java CuratorBench HOST:PORT THREADS semaphore SECONDS LEASES CLIENTS
//       InterProcessSemaphoreV2 of LEASES leases on one path
//   java CuratorBench HOST:PORT THREADS multi SECONDS KEYS CLIENTS
//       InterProcessMultiLock on two random paths of KEYS, listed in one
//       order (Curator takes them one by one: other orders can deadlock)
//
// Prints "cycles <n> seconds <s> cycles_per_s <rate>".
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    interface Cycle {
        void run() throws Exception;
    }

    static CuratorFramework connect(String hosts) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(hosts, 10000, 10000,
                new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS))
            throw new IllegalStateException("could not connect to " + hosts);
        return client;
    }

    // What one thread does per cycle, with its client.
    static Cycle cycle(String kind, CuratorFramework client, int thread, int arg) {
        switch (kind) {
            case "semaphore": {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, "/bench_curator/sem", arg);
                return () -> {
                    Lease lease = sem.acquire();
                    sem.returnLease(lease);
                };
            }
            case "multi":
                return () -> {
                    int a = ThreadLocalRandom.current().nextInt(arg);
                    int b = (a + 1 + ThreadLocalRandom.current().nextInt(arg - 1)) % arg;
                    InterProcessLock lock = new InterProcessMultiLock(client, Arrays.asList(
                            "/bench_curator/m" + Math.min(a, b), "/bench_curator/m" + Math.max(a, b)));
                    lock.acquire();
                    lock.release();
                };
            default: {
                InterProcessMutex mutex = new InterProcessMutex(client,
                        "/bench_curator/" + (kind.equals("same") ? "one" : "k" + thread));
                return () -> {
                    mutex.acquire();
                    mutex.release();
                };
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        int threads = Integer.parseInt(args[1]);
        String kind = args[2];
        long seconds = Long.parseLong(args[3]);
        int arg = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        int nclients = args.length > 5 ? Integer.parseInt(args[5]) : 1;

        CuratorFramework[] clients = new CuratorFramework[nclients];
        for (int c = 0; c < nclients; c++)
            clients[c] = connect(hosts);

        AtomicLong cycles = new AtomicLong();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            Cycle c = cycle(kind, clients[i % nclients], i, arg);
            workers[i] = new Thread(() -> {
                try {
                    while (System.nanoTime() < deadline) {
                        c.run();
                        cycles.incrementAndGet();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        long t0 = System.nanoTime();
        for (Thread t : workers) t.start();
        for (Thread t : workers) t.join();
        double elapsed = (System.nanoTime() - t0) / 1e9;
        System.out.printf("cycles %d seconds %.3f cycles_per_s %.0f%n",
                cycles.get(), elapsed, cycles.get() / elapsed);
        for (CuratorFramework client : clients)
            client.close();
    }
}
