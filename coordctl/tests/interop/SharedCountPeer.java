// A Curator 5.4 SharedCount peer for coordctl/tests/interop_shared.rs:
//   java SharedCountPeer HOSTS PATH add N        adds 1, N times, each by
//       Curator's own compare-and-set loop (trySetCount with the versioned
//       value it holds), and prints "added N"
//   java SharedCountPeer HOSTS PATH get          prints "count V version W"
//   java SharedCountPeer HOSTS PATH set V        setCount(V), prints "set V"
//   java SharedCountPeer HOSTS PATH await V      prints "saw V" once its
//       listener (or its first read) has seen the count V
// Every mode gives up after 60 s (exit 3, Peers.watchdog) so a stuck
// peer never outlives its test.

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class SharedCountPeer {
    public static void main(String[] args) throws Exception {
        String hosts = args[0], path = args[1], mode = args[2];
        // Peers.java's (compiled beside this file): halt at the deadline,
        // or once the test that started us is gone.
        Peers.watchdog(System.currentTimeMillis() + 60_000);
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            hosts, 10_000, 5_000, new ExponentialBackoffRetry(50, 10));
        client.start();
        client.blockUntilConnected();
        SharedCount count = new SharedCount(client, path, 0);
        CountDownLatch seen = new CountDownLatch(1);
        int target = mode.equals("await") ? Integer.parseInt(args[3]) : 0;
        count.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader reader, int newCount) {
                if (newCount == target) {
                    seen.countDown();
                }
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        });
        count.start();
        switch (mode) {
            case "add": {
                int n = Integer.parseInt(args[3]);
                for (int i = 0; i < n; i++) {
                    while (true) {
                        VersionedValue<Integer> now = count.getVersionedValue();
                        if (count.trySetCount(now, now.getValue() + 1)) {
                            break;
                        }
                        // A stale view is refreshed by the failed try (on a
                        // version conflict) or by the watcher: try again.
                        Thread.sleep(1);
                    }
                }
                System.out.println("added " + n);
                break;
            }
            case "get": {
                VersionedValue<Integer> now = count.getVersionedValue();
                System.out.println("count " + now.getValue() + " version " + now.getVersion());
                break;
            }
            case "set": {
                int v = Integer.parseInt(args[3]);
                count.setCount(v);
                System.out.println("set " + v);
                break;
            }
            case "await": {
                if (count.getCount() != target && !seen.await(55, TimeUnit.SECONDS)) {
                    System.err.println("never saw " + target + ", last " + count.getCount());
                    System.exit(1);
                }
                System.out.println("saw " + target);
                break;
            }
            default:
                System.err.println("unknown mode " + mode);
                System.exit(2);
        }
        System.out.flush();
        count.close();
        client.close();
        System.exit(0);
    }
}
