// Curator participants for coordctl/tests/interop_peers/, compiled by
// that test with javac against Debian's /usr/share/java/curator-*.jar.
//
//   java Peers ROLE CONNECT PATH DIR ID DEADLINE_MS [LEASES]
//
// ROLE: latch (LeaderLatch), selector (LeaderSelector), read / write
// (InterProcessReadWriteLock), lease (InterProcessSemaphoreV2 with LEASES).
// Loops: acquire, the marker protocol of peers.py (create
// DIR/holders/<KIND>.curator.<ID> exclusively, list, log a violation if
// what it sees is not allowed, log the hold, hold 100..300 ms, remove the
// marker), release, again. Exits at DEADLINE_MS or once its parent is gone.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public class Peers {
    static Path dir;
    static Path holders;
    static String id;
    static String kind;
    static int max;

    public static void main(String[] a) throws Exception {
        String role = a[0];
        String connect = a[1];
        String path = a[2];
        dir = Paths.get(a[3]);
        holders = dir.resolve("holders");
        id = a[4];
        long deadline = Long.parseLong(a[5]);
        int leases = a.length > 6 ? Integer.parseInt(a[6]) : 1;
        kind = role.equals("read") || role.equals("lease") ? "R" : "W";
        max = role.equals("lease") ? leases : role.equals("read") ? 1000 : 1;
        watchdog(deadline);

        // Sessions of 2 s, as coordctl's in the test: a killed holder's
        // nodes go soon.
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, 2000, 5000, new RetryNTimes(1000, 100));
        client.start();
        client.blockUntilConnected();
        System.out.println(id + " connected");
        while (System.currentTimeMillis() < deadline) {
            switch (role) {
                case "latch": {
                    LeaderLatch latch = new LeaderLatch(client, path, id);
                    latch.start();
                    while (!latch.await(1, TimeUnit.SECONDS)) {
                        // keep waiting; the watchdog ends us at the deadline
                    }
                    hold();
                    latch.close();
                    break;
                }
                case "selector": {
                    CountDownLatch done = new CountDownLatch(1);
                    LeaderSelector selector =
                            new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                                @Override
                                public void takeLeadership(CuratorFramework c) throws Exception {
                                    try {
                                        hold();
                                    } finally {
                                        done.countDown();
                                    }
                                }
                            });
                    selector.setId(id);
                    selector.start();
                    done.await();
                    selector.close();
                    break;
                }
                case "read":
                case "write": {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                    InterProcessMutex m = role.equals("read") ? rw.readLock() : rw.writeLock();
                    m.acquire();
                    try {
                        hold();
                    } finally {
                        m.release();
                    }
                    break;
                }
                case "mutex": {
                    InterProcessMutex m = new InterProcessMutex(client, path);
                    m.acquire();
                    try {
                        hold();
                    } finally {
                        m.release();
                    }
                    break;
                }
                case "lease": {
                    InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, leases);
                    Lease lease = sem.acquire();
                    try {
                        hold();
                    } finally {
                        sem.returnLease(lease);
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown role " + role);
            }
        }
        client.close();
        System.exit(0);
    }

    /** Halt at the deadline, or once the parent has gone (reparented). */
    static void watchdog(long deadline) {
        long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        Thread t = new Thread(() -> {
            while (true) {
                long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
                if (System.currentTimeMillis() > deadline || now != parent) {
                    Runtime.getRuntime().halt(3);
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        t.setDaemon(true);
        t.start();
    }

    static void append(String file, String line) throws IOException {
        Files.write(dir.resolve(file), (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    }

    static void hold() throws Exception {
        String name = kind + ".curator." + id;
        Path marker = holders.resolve(name);
        Files.write(marker, Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        try {
            List<String> seen = new ArrayList<>();
            try (Stream<Path> s = Files.list(holders)) {
                s.forEach(p -> seen.add(p.getFileName().toString()));
            }
            Collections.sort(seen);
            boolean writer = seen.stream().anyMatch(m -> m.startsWith("W."));
            if ((writer && seen.size() > 1) || seen.size() > max) {
                append("violations.log", String.format("%.3f %s saw %s",
                        System.currentTimeMillis() / 1000.0, name, String.join(" ", seen)));
            }
            append("holds.log", String.format("curator %s %s %d %.3f %s", id, kind, seen.size(),
                    System.currentTimeMillis() / 1000.0, String.join(",", seen)));
            Thread.sleep(ThreadLocalRandom.current().nextInt(100, 301));
        } finally {
            Files.deleteIfExists(marker);
        }
    }
}
