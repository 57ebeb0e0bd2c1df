// Apache Curator's InterProcessMutex, the peer zk_lock is measured against:
// one CuratorFramework client (one ZooKeeper session) shared by THREADS
// threads, each acquiring and releasing a mutex for SECONDS.
//
//   java CuratorBench HOST:PORT THREADS same|distinct SECONDS
//
// Prints "cycles <n> seconds <s> cycles_per_s <rate>".
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        int threads = Integer.parseInt(args[1]);
        boolean same = args[2].equals("same");
        long seconds = Long.parseLong(args[3]);

        CuratorFramework client = CuratorFrameworkFactory.newClient(hosts, 10000, 10000,
                new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS))
            throw new IllegalStateException("could not connect to " + hosts);

        AtomicLong cycles = new AtomicLong();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            String path = "/bench_curator/" + (same ? "one" : "k" + i);
            workers[i] = new Thread(() -> {
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                try {
                    while (System.nanoTime() < deadline) {
                        mutex.acquire();
                        mutex.release();
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
        client.close();
    }
}
