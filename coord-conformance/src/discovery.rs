//! Service discovery ([`ServiceRegistration`], [`ServiceDiscovery`],
//! [`ServiceCache`], [`ServiceProvider`]) on every backend: an instance is
//! Curator's JSON, byte for byte, in the ephemeral node `BASE/NAME/ID`;
//! instances written as Curator writes them are read; it is registered
//! again after its session ends (expired, or cut off past its timeout); the cache reports every change; the
//! provider's strategies and down-instance policy behave as Curator's.

use std::collections::BTreeSet;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{
    DownInstancePolicy, Presence, ProviderStrategy, ServiceCache, ServiceCacheEvent,
    ServiceDiscovery, ServiceInstance, ServiceProvider, ServiceRegistration,
};
use coord_core::{CreateMode, Error};
use tokio::time::Instant;

use crate::come_back_nodes::{client, node_at, Recorder};
use crate::{eventually, within, Harness};

/// An instance of `name` with a fixed id and a payload.
fn instance(name: &str, id: &str, port: u16) -> ServiceInstance {
    let mut i = ServiceInstance::new(name, "127.0.0.1", port);
    i.id = id.to_owned();
    i.payload = Some(serde_json::json!({ "zone": "eu-1", "weight": port }));
    i
}

/// The next event of `cache` that is not `Initialized`.
async fn next_change(cache: &mut ServiceCache, what: &str) -> ServiceCacheEvent {
    loop {
        match within(what, cache.next()).await {
            Some(Ok(ServiceCacheEvent::Initialized)) => {}
            Some(Ok(ev)) => return ev,
            other => panic!("{what}: the cache ended: {other:?}"),
        }
    }
}

/// Read `cache` until it is loaded.
async fn initialized(cache: &mut ServiceCache) {
    loop {
        match within("the cache loads", cache.next()).await {
            Some(Ok(ServiceCacheEvent::Initialized)) => return,
            Some(Ok(_)) => {}
            other => panic!("the cache ended before it loaded: {other:?}"),
        }
    }
}

/// A registered instance is the ephemeral node `BASE/NAME/ID` holding
/// exactly [`ServiceInstance::to_json`] (Curator 5.4's bytes); the queries
/// see it (names, instances, instance by id); an update rewrites the
/// node; unregistering deletes it.
pub async fn discovery_registers_curator_json_at_base_name_id(h: &dyn Harness) {
    let base = h.root("discovery_registers");
    let other = h.open().await;
    let (client, _fault) = client(h).await;
    let me = instance("api", "api-1", 8080);
    let reg = ServiceRegistration::register(&client, &base, me.clone()).expect("register");
    within("registered", reg.wait_registered(crate::WAIT))
        .await
        .expect("registered");
    let path = join(&join(&base, "api"), "api-1");
    assert_eq!(reg.path(), path);
    let node = other.get(&path).await.expect("get").expect("the node");
    assert_eq!(
        String::from_utf8(node.data).expect("utf-8"),
        String::from_utf8(me.to_json()).expect("utf-8"),
        "not Curator's JSON"
    );
    assert!(node.stat.ephemeral, "an instance must be ephemeral");
    let discovery = ServiceDiscovery::new(&other, &base).expect("discovery");
    assert_eq!(discovery.names().await.expect("names"), ["api"]);
    assert_eq!(
        discovery.instances("api").await.expect("instances"),
        std::slice::from_ref(&me)
    );
    assert_eq!(
        discovery.instance("api", "api-1").await.expect("instance"),
        Some(me.clone())
    );
    assert_eq!(
        discovery.instance("api", "nope").await.expect("instance"),
        None
    );
    assert!(discovery
        .instances("none")
        .await
        .expect("instances")
        .is_empty());

    let mut moved = me.clone();
    moved.port = Some(9090);
    moved.ssl_port = Some(9443);
    reg.update(moved.clone()).await.expect("update");
    assert_eq!(
        discovery.instance("api", "api-1").await.expect("instance"),
        Some(moved.clone())
    );
    let mut renamed = moved.clone();
    renamed.id = "other".into();
    assert!(matches!(
        reg.update(renamed).await,
        Err(Error::InvalidArgument(_))
    ));
    reg.unregister().await.expect("unregister");
    assert_eq!(
        node_at(&other, &path).await,
        None,
        "unregistered, still there"
    );
    assert!(discovery
        .instances("api")
        .await
        .expect("instances")
        .is_empty());
    client.close().await.expect("close");
    let _ = other.close().await;
}

/// Instances written as Curator writes them (its key order, a typed
/// payload with `@class`, a `uriSpec`, `"enabled":false`, a key coord
/// does not know) are read; a node that holds no instance is left out of
/// the queries and never reported by the cache; a disabled instance is
/// never picked.
pub async fn discovery_reads_curator_instances(h: &dyn Harness) {
    let base = h.root("discovery_reads_curator");
    let s = h.open().await;
    let dir = join(&base, "svc");
    let curator = r#"{"name":"svc","id":"j1","address":"10.1.2.3","port":9003,"sslPort":null,"payload":{"@class":"java.util.LinkedHashMap","zone":"b"},"registrationTimeUTC":1795735731954,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://x","variable":false}]}}"#;
    let disabled = r#"{"name":"svc","id":"j2","address":"10.1.2.4","port":9004,"sslPort":null,"payload":"text","registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":false,"later":1}"#;
    for (id, data) in [
        ("j1", curator.as_bytes()),
        ("j2", disabled.as_bytes()),
        ("junk", b"not json"),
    ] {
        s.create(&join(&dir, id), data, CreateMode::Ephemeral)
            .await
            .expect("a Curator-written node");
    }
    let discovery = ServiceDiscovery::new(&s, &base).expect("discovery");
    let got = discovery.instances("svc").await.expect("instances");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].id, "j1");
    assert_eq!(got[0].endpoint(), "10.1.2.3:9003");
    assert_eq!(got[0].payload.as_ref().expect("payload")["zone"], "b");
    assert!(got[0].uri_spec.is_some() && got[0].enabled);
    assert_eq!(got[1].payload, Some(serde_json::json!("text")));
    assert!(!got[1].enabled);
    assert_eq!(discovery.instance("svc", "junk").await.expect("read"), None);

    let mut cache = ServiceCache::start(&s, &base, "svc").expect("cache");
    let mut added = BTreeSet::new();
    loop {
        match within("the cache loads", cache.next()).await {
            Some(Ok(ServiceCacheEvent::Added(i))) => {
                added.insert(i.id);
            }
            Some(Ok(ServiceCacheEvent::Initialized)) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, BTreeSet::from(["j1".to_owned(), "j2".to_owned()]));
    assert_eq!(cache.instances(), got);
    let provider = within(
        "the provider starts",
        ServiceProvider::start(
            cache,
            ProviderStrategy::RoundRobin,
            DownInstancePolicy::default(),
        ),
    )
    .await
    .expect("provider");
    for _ in 0..4 {
        assert_eq!(
            provider.instance().map(|i| i.id).as_deref(),
            Some("j1"),
            "a disabled instance was picked"
        );
    }
    let _ = s.close().await;
}

/// A registration comes back after its session ends on the server: the
/// loss reported (`Absent`) before it is back on the client's next
/// session, the node made again with the same JSON (a new node), and a
/// cache on another session sees it again.
pub async fn discovery_reregisters_after_session_loss(h: &dyn Harness) {
    let base = h.root("discovery_reregisters");
    let other = h.open().await;
    let (client, _fault) = client(h).await;
    let me = instance("api", "api-1", 8080);
    let reg = ServiceRegistration::register(&client, &base, me.clone()).expect("register");
    let mut events = Recorder::of(reg.watch());
    let mut cache = ServiceCache::start(&other, &base, "api").expect("cache");
    let path = loop {
        match events.next("registered").await {
            Some((_, Presence::Present { path, generation })) => {
                assert_eq!(generation, 1);
                break path;
            }
            Some((_, Presence::Absent)) => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        next_change(&mut cache, "the cache sees it").await,
        ServiceCacheEvent::Added(me.clone())
    );
    for round in 1..=2u64 {
        let (_, stamp) = node_at(&other, &path).await.expect("registered");
        let session = within("the live session", client.session())
            .await
            .expect("a session");
        h.expire(&session).await;
        events.absent("the loss is reported").await;
        let (_, again, generation) = events.present("registered again").await;
        assert_eq!(again, path, "round {round}: registered elsewhere");
        assert_eq!(generation, round + 1, "round {round}");
        let (data, new_stamp) = node_at(&other, &path)
            .await
            .unwrap_or_else(|| panic!("round {round}: present, not on the server"));
        assert_eq!(data, me.to_json(), "round {round}: other JSON");
        assert!(new_stamp > stamp, "round {round}: the old node");
        // The cache sees it back (gone and made again: removed then added,
        // or, if both fell between two reads, updated).
        loop {
            match next_change(&mut cache, "the cache sees it again").await {
                ServiceCacheEvent::Removed { id } => assert_eq!(id, "api-1"),
                ServiceCacheEvent::Added(i) | ServiceCacheEvent::Updated(i) => {
                    assert_eq!(i, me, "round {round}");
                    break;
                }
                ev => panic!("unexpected {ev:?}"),
            }
        }
        assert_eq!(cache.instances(), std::slice::from_ref(&me));
    }
    reg.unregister().await.expect("unregister");
    assert_eq!(
        next_change(&mut cache, "unregistered").await,
        ServiceCacheEvent::Removed { id: "api-1".into() }
    );
    client.close().await.expect("close");
    let _ = other.close().await;
}

/// Through a partition longer than the session timeout: the loss is
/// reported here (at the lease deadline), a cache on a healthy session
/// sees the instance leave once the server has ended the session, and
/// after the heal it is registered again on the client's next session,
/// with the same JSON, and the cache sees it back.
pub async fn discovery_reregisters_after_partition(h: &dyn Harness) {
    let base = h.root("discovery_partition");
    let other = h.open().await;
    let (client, fault) = client(h).await;
    let me = instance("api", "api-p", 8080);
    let reg = ServiceRegistration::register(&client, &base, me.clone()).expect("register");
    let mut events = Recorder::of(reg.watch());
    let mut cache = ServiceCache::start(&other, &base, "api").expect("cache");
    let (_, path, generation) = loop {
        match events.next("registered").await {
            Some((at, Presence::Present { path, generation })) => break (at, path, generation),
            Some((_, Presence::Absent)) => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        next_change(&mut cache, "the cache sees it").await,
        ServiceCacheEvent::Added(me.clone())
    );
    let (_, stamp) = node_at(&other, &path).await.expect("registered");
    fault.partition();
    events.absent("the loss is reported while cut off").await;
    assert_eq!(
        next_change(&mut cache, "the server ends the cut-off session").await,
        ServiceCacheEvent::Removed { id: "api-p".into() }
    );
    fault.heal();
    let (_, again, g) = events.present("registered again after the heal").await;
    assert_eq!(again, path);
    assert!(g > generation, "registered again on the same session");
    assert_eq!(
        next_change(&mut cache, "the cache sees it back").await,
        ServiceCacheEvent::Added(me.clone())
    );
    let (data, new_stamp) = node_at(&other, &path).await.expect("registered again");
    assert_eq!(data, me.to_json());
    assert!(new_stamp > stamp, "the old node");
    reg.unregister().await.expect("unregister");
    client.close().await.expect("close");
    let _ = other.close().await;
}

/// The cache reports each registration, update and unregistration of
/// another client's instances, and its view is theirs.
pub async fn discovery_cache_reports_changes(h: &dyn Harness) {
    let base = h.root("discovery_cache");
    let s = h.open().await;
    let (client, _fault) = client(h).await;
    let mut cache = ServiceCache::start(&s, &base, "web").expect("cache");
    initialized(&mut cache).await;
    assert!(cache.instances().is_empty());
    let a = instance("web", "a", 1);
    let b = instance("web", "b", 2);
    let ra = ServiceRegistration::register(&client, &base, a.clone()).expect("register");
    assert_eq!(
        next_change(&mut cache, "a added").await,
        ServiceCacheEvent::Added(a.clone())
    );
    let rb = ServiceRegistration::register(&client, &base, b.clone()).expect("register");
    assert_eq!(
        next_change(&mut cache, "b added").await,
        ServiceCacheEvent::Added(b.clone())
    );
    assert_eq!(cache.instances(), [a.clone(), b.clone()]);
    let mut a2 = a.clone();
    a2.payload = Some(serde_json::json!({ "tags": ["x", 1] }));
    ra.update(a2.clone()).await.expect("update");
    assert_eq!(
        next_change(&mut cache, "a updated").await,
        ServiceCacheEvent::Updated(a2.clone())
    );
    // Something that is not an instance is never reported.
    s.create(
        &join(&join(&base, "web"), "junk"),
        b"{",
        CreateMode::Ephemeral,
    )
    .await
    .expect("junk");
    rb.unregister().await.expect("unregister");
    assert_eq!(
        next_change(&mut cache, "b removed").await,
        ServiceCacheEvent::Removed { id: "b".into() }
    );
    assert_eq!(cache.instances(), [a2]);
    ra.unregister().await.expect("unregister");
    assert_eq!(
        next_change(&mut cache, "a removed").await,
        ServiceCacheEvent::Removed { id: "a".into() }
    );
    assert!(cache.instances().is_empty());
    client.close().await.expect("close");
    let _ = s.close().await;
}

/// The provider, over a cache that follows a client: round robin visits
/// every instance in turn, in id order; sticky keeps one until it is
/// down; random picks only registered ones; an instance noted in error
/// the threshold's number of times is skipped until the timeout has passed
/// since its first error, and never sooner; a new instance is picked up
/// without restarting the provider.
pub async fn discovery_provider_strategies_and_down_instances(h: &dyn Harness) {
    let base = h.root("discovery_provider");
    let (client, _fault) = client(h).await;
    let mut regs = Vec::new();
    for (id, port) in [("i1", 1), ("i2", 2), ("i3", 3)] {
        let reg = ServiceRegistration::register(&client, &base, instance("pay", id, port))
            .expect("register");
        within("registered", reg.wait_registered(crate::WAIT))
            .await
            .expect("registered");
        regs.push(reg);
    }
    let timeout = Duration::from_secs(1);
    let policy = DownInstancePolicy {
        timeout,
        error_threshold: 2,
    };
    let start = |strategy| {
        let cache = ServiceCache::follow(&client, &base, "pay").expect("cache");
        ServiceProvider::start(cache, strategy, policy)
    };
    let ids = |p: &ServiceProvider, n: usize| -> Vec<String> {
        (0..n)
            .map(|_| p.instance().expect("an instance").id)
            .collect()
    };

    let rr = start(ProviderStrategy::RoundRobin).await.expect("provider");
    let first = ids(&rr, 6);
    let at = first.iter().position(|i| i == "i1").expect("i1 picked");
    let order: Vec<&str> = (0..3).map(|k| first[at + k].as_str()).collect();
    assert_eq!(order, ["i1", "i2", "i3"], "round robin: {first:?}");
    assert_eq!(first[..3], first[3..], "round robin: {first:?}");
    // Down: one error is not enough, two are.
    let i2 = rr
        .all_instances()
        .into_iter()
        .find(|i| i.id == "i2")
        .expect("i2");
    let noted = Instant::now();
    rr.note_error(&i2);
    assert!(
        ids(&rr, 3).contains(&"i2".to_owned()),
        "down after one error"
    );
    rr.note_error(&i2);
    for id in ids(&rr, 6) {
        assert_ne!(id, "i2", "picked while down");
    }
    assert_eq!(rr.all_instances().len(), 2);
    eventually("the down instance is back after the timeout", || async {
        rr.all_instances().iter().any(|i| i.id == "i2")
    })
    .await;
    assert!(noted.elapsed() >= timeout, "back before the timeout");

    let sticky = start(ProviderStrategy::Sticky).await.expect("provider");
    let stuck = ids(&sticky, 5);
    assert!(
        stuck.iter().all(|i| *i == stuck[0]),
        "sticky moved: {stuck:?}"
    );
    let held = sticky.instance().expect("one");
    sticky.note_error(&held);
    sticky.note_error(&held);
    let next = ids(&sticky, 5);
    assert!(
        next.iter().all(|i| *i == next[0] && *i != held.id),
        "sticky: {next:?}"
    );

    let random = start(ProviderStrategy::Random).await.expect("provider");
    let seen: BTreeSet<String> = ids(&random, 60).into_iter().collect();
    assert!(seen
        .iter()
        .all(|i| ["i1", "i2", "i3"].contains(&i.as_str())));
    assert!(seen.len() > 1, "random picked one instance in 60: {seen:?}");

    // A new instance is picked up by the running provider; one that
    // leaves is no longer picked.
    let reg =
        ServiceRegistration::register(&client, &base, instance("pay", "i4", 4)).expect("register");
    eventually("the provider sees a new instance", || async {
        rr.all_instances().iter().any(|i| i.id == "i4")
    })
    .await;
    reg.unregister().await.expect("unregister");
    eventually("the provider sees it leave", || async {
        rr.all_instances().iter().all(|i| i.id != "i4")
    })
    .await;
    for reg in regs {
        reg.unregister().await.expect("unregister");
    }
    eventually("no instance left", || async { rr.instance().is_none() }).await;
    client.close().await.expect("close");
}

/// Arguments are checked before any I/O: a name or id that is not one
/// path segment, a bad base, a service type coord does not register, an
/// array payload (Curator cannot read one).
pub async fn discovery_refuses_bad_arguments(h: &dyn Harness) {
    let base = h.root("discovery_refuses");
    let s = h.open().await;
    let (client, _fault) = client(h).await;
    for (name, id) in [("a/b", "x"), ("", "x"), ("svc", "x/y"), ("svc", "")] {
        let mut i = instance(name, id, 1);
        i.name = name.into();
        assert!(
            matches!(
                ServiceRegistration::register(&client, &base, i),
                Err(Error::InvalidPath { .. })
            ),
            "{name:?}/{id:?} accepted"
        );
    }
    assert!(matches!(
        ServiceRegistration::register(&client, "no-slash", instance("svc", "x", 1)),
        Err(Error::InvalidPath { .. })
    ));
    let mut permanent = instance("svc", "x", 1);
    permanent.service_type = coord_core::recipes::ServiceType::Permanent;
    assert!(matches!(
        ServiceRegistration::register(&client, &base, permanent),
        Err(Error::InvalidArgument(_))
    ));
    let mut array = instance("svc", "x", 1);
    array.payload = Some(serde_json::json!(["a", 1]));
    assert!(
        matches!(
            ServiceRegistration::register(&client, &base, array.clone()),
            Err(Error::InvalidArgument(_))
        ),
        "an array payload, which Curator cannot read, was registered"
    );
    let reg =
        ServiceRegistration::register(&client, &base, instance("svc", "x", 1)).expect("register");
    assert!(matches!(
        reg.update(array).await,
        Err(Error::InvalidArgument(_))
    ));
    reg.unregister().await.expect("unregister");
    let d = ServiceDiscovery::new(&s, &base).expect("discovery");
    assert!(matches!(
        d.instances("a/b").await,
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        ServiceCache::start(&s, &base, "a/b"),
        Err(Error::InvalidPath { .. })
    ));
    client.close().await.expect("close");
    let _ = s.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __discovery_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            discovery::discovery_registers_curator_json_at_base_name_id,
            discovery::discovery_reads_curator_instances,
            discovery::discovery_reregisters_after_session_loss,
            discovery::discovery_reregisters_after_partition,
            discovery::discovery_cache_reports_changes,
            discovery::discovery_provider_strategies_and_down_instances,
            discovery::discovery_refuses_bad_arguments,
        );
    };
}
