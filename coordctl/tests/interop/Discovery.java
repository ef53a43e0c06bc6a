// Curator x-discovery peers for coordctl/tests/interop_discovery.rs,
// compiled by that test with javac against Debian's
// /usr/share/java/curator-x-discovery.jar (libcurator-discovery-java) and
// curator-recipes.jar.
//
//   java Discovery register CONNECT BASE NAME ID ADDRESS PORT
//       registers the instance (payload {"zone":"curator"}, a map) with a
//       ServiceDiscovery on a 2 s session, prints `registered ID`, stays
//       until killed.
//   java Discovery query CONNECT BASE NAME
//       prints `instance ID ADDRESS PORT PAYLOAD_JSON` per instance
//       (queryForInstances, sorted by id), then `end`.
//   java Discovery pick CONNECT BASE NAME N
//       a ServiceProvider (round robin, Curator's default): prints
//       `picked ID ADDRESS PORT` for N getInstance() calls.
//   java Discovery watch CONNECT BASE NAME
//       a ServiceCache: prints `instances ID,ID,…` (sorted) once started
//       and after every change, until killed.
//
// Every role exits once its parent has gone (reparented) or after 120 s
// (Peers.watchdog, from Peers.java, compiled with this file).

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.framework.state.ConnectionState;

public class Discovery {
    public static void main(String[] a) throws Exception {
        String role = a[0];
        String connect = a[1];
        String base = a[2];
        String name = a[3];
        // Peers.java's (compiled beside this file).
        Peers.watchdog(System.currentTimeMillis() + 120_000);
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, 2000, 5000, new RetryNTimes(1000, 100));
        client.start();
        client.blockUntilConnected();
        ServiceDiscovery<Object> discovery = ServiceDiscoveryBuilder.builder(Object.class)
                .client(client)
                .basePath(base)
                .build();
        discovery.start();
        switch (role) {
            case "register": {
                Map<String, Object> payload = new LinkedHashMap<>();
                payload.put("zone", "curator");
                ServiceInstance<Object> me = ServiceInstance.builder()
                        .name(name)
                        .id(a[4])
                        .address(a[5])
                        .port(Integer.parseInt(a[6]))
                        .payload(payload)
                        .build();
                discovery.registerService(me);
                System.out.println("registered " + a[4]);
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
                break;
            }
            case "query": {
                ObjectMapper json = new ObjectMapper();
                List<ServiceInstance<Object>> all = new ArrayList<>(discovery.queryForInstances(name));
                all.sort((x, y) -> x.getId().compareTo(y.getId()));
                for (ServiceInstance<Object> i : all) {
                    System.out.println("instance " + i.getId() + " " + i.getAddress() + " "
                            + i.getPort() + " " + json.writeValueAsString(i.getPayload()));
                }
                System.out.println("end");
                break;
            }
            case "pick": {
                ServiceProvider<Object> provider =
                        discovery.serviceProviderBuilder().serviceName(name).build();
                provider.start();
                int n = Integer.parseInt(a[4]);
                for (int k = 0; k < n; k++) {
                    ServiceInstance<Object> i = provider.getInstance();
                    System.out.println(i == null ? "picked none"
                            : "picked " + i.getId() + " " + i.getAddress() + " " + i.getPort());
                }
                provider.close();
                break;
            }
            case "watch": {
                ServiceCache<Object> cache = discovery.serviceCacheBuilder().name(name).build();
                cache.addListener(new ServiceCacheListener() {
                    @Override
                    public void cacheChanged() {
                        print(cache.getInstances());
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState s) {
                    }
                });
                cache.start();
                print(cache.getInstances());
                Thread.sleep(Long.MAX_VALUE);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown role " + role);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static synchronized void print(Collection<ServiceInstance<Object>> instances) {
        List<String> ids = new ArrayList<>();
        for (ServiceInstance<Object> i : instances) {
            ids.add(i.getId());
        }
        Collections.sort(ids);
        System.out.println("instances " + String.join(",", ids));
        System.out.flush();
    }
}
