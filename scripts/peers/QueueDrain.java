// Curator's side of scripts/bench-peers-queue, compiled there with javac
// against Debian's /usr/share/java/curator-*.jar (as coordctl's interop
// tests compile tests/interop/Peers.java).
//
//   java QueueDrain CONNECT PATH ITEMS CONSUMERS [WARMUP]
//
// 1. Prefill (not timed): one client offers item-0 .. item-<ITEMS-1> to
//    SimpleDistributedQueue(PATH) (node names qn-<seq>).
// 2. Warm-up (not timed): WARMUP items (default 500) offered and polled
//    on PATH-warmup, so the JIT has compiled offer/poll before the clock
//    starts (coord and kazoo have no JIT to warm).
// 3. CONSUMERS threads, each with its own CuratorFramework (its own
//    ZooKeeper session), connected before the clock starts, then released
//    together; each polls until poll() returns null. Timed from the
//    release to the last consumer's end.
//    last_take_seconds: until the last item was taken.
// 4. Checks every item was taken exactly once.
// Prints one JSON line: {"impl":"curator","items":N,"seconds":S,...};
// exits 1 if the check fails or a consumer threw.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class QueueDrain {
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
        int items = Integer.parseInt(a[2]);
        int consumers = Integer.parseInt(a[3]);
        int warmup = a.length > 4 ? Integer.parseInt(a[4]) : 500;

        CuratorFramework producer = client(connect);
        SimpleDistributedQueue q = new SimpleDistributedQueue(producer, path);
        for (int i = 0; i < items; i++) {
            q.offer(("item-" + i).getBytes(StandardCharsets.UTF_8));
        }
        if (warmup > 0) {
            SimpleDistributedQueue w = new SimpleDistributedQueue(producer, path + "-warmup");
            for (int i = 0; i < warmup; i++) {
                w.offer(("w-" + i).getBytes(StandardCharsets.UTF_8));
            }
            while (w.poll() != null) {
                // drain the warm-up queue
            }
        }

        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            clients.add(client(connect));
        }
        CyclicBarrier gate = new CyclicBarrier(consumers + 1);
        List<List<String>> taken = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        AtomicLong end = new AtomicLong();
        AtomicLong lastTake = new AtomicLong(Long.MIN_VALUE);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            List<String> mine = new ArrayList<>();
            taken.add(mine);
            SimpleDistributedQueue cq = new SimpleDistributedQueue(clients.get(i), path);
            Thread t = new Thread(() -> {
                try {
                    gate.await();
                    byte[] b;
                    while ((b = cq.poll()) != null) {
                        mine.add(new String(b, StandardCharsets.UTF_8));
                        lastTake.accumulateAndGet(System.nanoTime(), Math::max);
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                } finally {
                    long now = System.nanoTime();
                    end.accumulateAndGet(now, Math::max);
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
        double seconds = (end.get() - start) / 1e9;
        double lastTakeSeconds =
                lastTake.get() == Long.MIN_VALUE ? 0 : Math.max(0, lastTake.get() - start) / 1e9;

        Map<String, Integer> seen = new HashMap<>();
        int total = 0;
        StringBuilder per = new StringBuilder();
        for (List<String> mine : taken) {
            total += mine.size();
            per.append(per.length() == 0 ? "" : ",").append(mine.size());
            for (String s : mine) {
                seen.merge(s, 1, Integer::sum);
            }
        }
        int duplicates = 0;
        for (int c : seen.values()) {
            duplicates += c - 1;
        }
        int missing = 0;
        for (int i = 0; i < items; i++) {
            if (!seen.containsKey("item-" + i)) {
                missing++;
            }
        }
        int unexpected = seen.size() + missing - items;
        boolean ok = total == items && duplicates == 0 && missing == 0 && unexpected == 0
                && errors.isEmpty();
        StringBuilder err = new StringBuilder();
        for (Throwable e : errors) {
            err.append(err.length() == 0 ? "" : "; ").append(e.toString().replace("\"", "'"));
        }
        System.out.println("{\"impl\":\"curator\",\"items\":" + items + ",\"seconds\":" + seconds
                + ",\"last_take_seconds\":" + lastTakeSeconds
                + ",\"taken\":" + total + ",\"duplicates\":" + duplicates + ",\"missing\":" + missing
                + ",\"unexpected\":" + unexpected + ",\"per_consumer\":[" + per + "]"
                + ",\"errors\":\"" + err + "\",\"ok\":" + ok + "}");
        for (CuratorFramework c : clients) {
            c.close();
        }
        producer.close();
        System.exit(ok ? 0 : 1);
    }
}
