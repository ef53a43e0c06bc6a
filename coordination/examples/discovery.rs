//! Service discovery as Curator x-discovery lays it out: two instances of
//! `api` register (each the ephemeral node `/…/api/<id>` holding Curator's
//! JSON, registered again on the next session if theirs ends); a client
//! lists them, follows them with a cache, and picks one per request with a
//! provider that skips an instance reported in error twice. On ZooKeeper,
//! Curator's `ServiceDiscovery` under the same base path sees the same
//! instances.
//!
//! `cargo run -p coordination --example discovery [-- --url URL]`

mod common;

use std::time::Duration;

use coordination::{
    ClientOptions, Connector, DownInstancePolicy, ProviderStrategy, ServiceCache,
    ServiceCacheEvent, ServiceDiscovery, ServiceInstance, ServiceProvider, ServiceRegistration,
};

#[tokio::main]
async fn main() -> common::Result {
    let base = common::root("discovery");
    let connector = Connector::new(&common::url()?)?;

    // Two servers register, each on its own supervised client (as two
    // processes would): the instance comes back after a session loss.
    let mut regs = Vec::new();
    for (id, port) in [("api-1", 8081), ("api-2", 8082)] {
        let client = connector.client(ClientOptions::default()).await?;
        let mut me = ServiceInstance::new("api", "127.0.0.1", port);
        me.id = id.to_owned();
        me.payload = Some(serde_json::json!({ "zone": "eu-1" }));
        let reg = ServiceRegistration::register(&client, &base, me)?;
        reg.wait_registered(Duration::from_secs(10)).await?;
        regs.push((reg, client));
    }

    // What is registered, and the exact JSON in the node.
    let session = connector.connect().await?;
    let discovery = ServiceDiscovery::new(&session, &base)?;
    println!("services: {:?}", discovery.names().await?);
    for i in discovery.instances("api").await? {
        println!("{} at {}", i.id, i.endpoint());
    }
    let node = session
        .get(&format!("{base}/api/api-1"))
        .await?
        .ok_or("no node")?;
    println!("{}", String::from_utf8_lossy(&node.data));

    // A provider over a cache: round robin, Curator's down-instance policy.
    let client = connector.client(ClientOptions::default()).await?;
    let cache = ServiceCache::follow(&client, &base, "api")?;
    let provider = ServiceProvider::start(
        cache,
        ProviderStrategy::RoundRobin,
        DownInstancePolicy::default(),
    )
    .await?;
    let picks: Vec<String> = (0..4)
        .map(|_| provider.instance().map(|i| i.id))
        .collect::<Option<_>>()
        .ok_or("no instance")?;
    println!("round robin: {picks:?}");
    assert_eq!(picks[0..2], picks[2..4]);

    // api-1 fails twice: skipped for 30 s.
    let failing = discovery
        .instance("api", "api-1")
        .await?
        .ok_or("no api-1")?;
    provider.note_error(&failing);
    provider.note_error(&failing);
    for _ in 0..4 {
        assert_eq!(provider.instance().ok_or("no instance")?.id, "api-2");
    }
    println!("api-1 is down: every pick is api-2");

    // A cache sees api-2 leave.
    let mut cache = ServiceCache::start(&session, &base, "api")?;
    while cache.next().await.transpose()? != Some(ServiceCacheEvent::Initialized) {}
    let (reg, c) = regs.pop().ok_or("no registration")?;
    reg.unregister().await?;
    let ev = cache.next().await.transpose()?;
    println!("{ev:?}");
    assert_eq!(ev, Some(ServiceCacheEvent::Removed { id: "api-2".into() }));
    c.close().await?;
    for (reg, c) in regs {
        reg.unregister().await?;
        c.close().await?;
    }
    client.close().await?;
    session.close().await?;
    Ok(())
}
