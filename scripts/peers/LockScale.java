// Curator's side of coord-bench's lock-scale workload (scripts/bench-scale
// compiles it with javac against Debian's /usr/share/java/curator-*.jar, as
// scripts/bench-peers-queue compiles QueueDrain.java; coord-bench runs it
// once per block).
//
//   java LockScale CONNECT PATH K HANDOFFS DEADLINE_SECONDS [WARMUP]
//
// 1. Warm-up (not timed): WARMUP (default 300) acquire/release cycles on
//    PATH-warmup, so the JIT has compiled the lock before the clock starts
//    (coord has no JIT to warm).
// 2. K threads, each with its own CuratorFramework (its own ZooKeeper
//    session) and its own InterProcessMutex(PATH), connected before the
//    clock starts, then released together; each loops acquire -> release
//    until HANDOFFS acquisitions were counted. Timed from the release to
//    the HANDOFFS-th acquisition, and, for the steady rate, from the K-th
//    acquisition (every thread has had its turn to arrive) to the
//    HANDOFFS-th (as coord-bench's contender loop).
// 3. Checks mutual exclusion (no two threads between acquire and release
//    at once) and that the threads' own counts add up to the shared one.
// Prints one JSON line: {"impl":"curator","k":K,"handoffs":N,"per_s":...,
// "steady_per_s":...};
// exits 1 if a check fails or a thread threw, 2 past DEADLINE_SECONDS.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class LockScale {
    static CuratorFramework client(String connect) throws InterruptedException {
        CuratorFramework c =
                CuratorFrameworkFactory.newClient(connect, 10000, 10000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    public static void main(String[] a) throws Exception {
        String connect = a[0];
        String path = a[1];
        int k = Integer.parseInt(a[2]);
        long total = Long.parseLong(a[3]);
        long deadline = Long.parseLong(a[4]);
        int warmup = a.length > 5 ? Integer.parseInt(a[5]) : 300;

        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(deadline * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("LockScale: past the deadline of " + deadline + " s");
            Runtime.getRuntime().halt(2);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        if (warmup > 0) {
            CuratorFramework w = client(connect);
            InterProcessMutex m = new InterProcessMutex(w, path + "-warmup");
            for (int i = 0; i < warmup; i++) {
                m.acquire();
                m.release();
            }
            w.close();
        }

        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            clients.add(client(connect));
        }
        CyclicBarrier gate = new CyclicBarrier(k + 1);
        AtomicLong count = new AtomicLong();
        AtomicLong tallied = new AtomicLong();
        AtomicLong violations = new AtomicLong();
        AtomicLong end = new AtomicLong();
        AtomicLong steady = new AtomicLong();
        AtomicBoolean holding = new AtomicBoolean();
        List<Throwable> errors = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i), path);
            Thread t = new Thread(() -> {
                long mine = 0;
                try {
                    gate.await();
                    while (count.get() < total) {
                        m.acquire();
                        if (holding.getAndSet(true)) {
                            violations.incrementAndGet();
                        }
                        mine++;
                        long c = count.incrementAndGet();
                        if (c == k) {
                            steady.set(System.nanoTime());
                        }
                        if (c == total) {
                            end.set(System.nanoTime());
                        }
                        holding.set(false);
                        m.release();
                        if (c >= total) {
                            break;
                        }
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                } finally {
                    tallied.addAndGet(mine);
                }
            });
            t.start();
            threads.add(t);
        }
        long start = System.nanoTime();
        gate.await();
        for (Thread t : threads) {
            t.join();
        }
        for (CuratorFramework c : clients) {
            c.close();
        }
        double seconds = (end.get() - start) / 1e9;
        double steadySeconds = (end.get() - steady.get()) / 1e9;
        double steadyPerS = total > k && steadySeconds > 0 ? (total - k) / steadySeconds : total / seconds;
        System.out.printf(
                "{\"impl\":\"curator\",\"k\":%d,\"handoffs\":%d,\"seconds\":%.6f,\"per_s\":%.3f,"
                        + "\"steady_per_s\":%.3f,"
                        + "\"acquisitions\":%d,\"tallied\":%d,\"violations\":%d,\"errors\":%d}%n",
                k, total, seconds, total / seconds, steadyPerS, count.get(), tallied.get(), violations.get(),
                errors.size());
        if (!errors.isEmpty()) {
            errors.get(0).printStackTrace();
        }
        System.exit(errors.isEmpty() && violations.get() == 0 && count.get() == tallied.get() ? 0 : 1);
    }
}
