//! A process that dies without closing its session (kill -9, a lost
//! machine) leaves nobody to end it: on PostgreSQL the *live* clients reap
//! it. Every operation and every heartbeat of any client deletes the
//! sessions whose end the server's clock has passed, and their ephemeral
//! nodes with them. So with one live client, a dead session's nodes go
//! within its session timeout plus one heartbeat period of that client (a
//! third of its timeout), without anyone waiting for the dead process.
//!
//! Against `COORD_TEST_PG` (scripts/servers/pg.sh); fails without it.

mod common;

use std::time::Duration;

use common::pg_url;
use coord_core::CreateMode;
use coord_pg::PgOptions;
use tokio::time::Instant;

/// Open a session on a runtime of its own, make an ephemeral node, then
/// kill the runtime without closing the session: its connections drop and
/// nothing ends it, as with a process killed by `kill -9`.
fn dead_process(path: &'static str, timeout: Duration) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let s = coord_pg::connect(PgOptions::new(pg_url()).with_session_timeout(timeout))
                .await
                .expect("connect");
            s.create(path, b"alive", CreateMode::Ephemeral)
                .await
                .expect("create");
            // Never closed, never dropped: a dead process runs no code.
            std::mem::forget(s);
        });
        drop(rt);
    })
    .join()
    .expect("the dying process's thread");
}

#[tokio::test]
async fn a_dead_processs_nodes_are_reaped_by_the_live_clients() {
    let dead_timeout = Duration::from_secs(2);
    let path = "/reaping/dead-process";
    let killed = Instant::now();
    dead_process(path, dead_timeout);
    // One live client that only heartbeats: it reads nothing until the end.
    let live_timeout = Duration::from_secs(3);
    let live = coord_pg::connect(PgOptions::new(pg_url()).with_session_timeout(live_timeout))
        .await
        .expect("live client");
    let watcher = coord_pg::connect(PgOptions::new(pg_url()))
        .await
        .expect("watcher");
    let gone = watcher
        .watch_gone(path)
        .await
        .expect("watch")
        .expect("the dead process's node is there at first");
    let bound = dead_timeout + live_timeout / 3 + Duration::from_secs(1);
    tokio::time::timeout(bound * 2, gone)
        .await
        .unwrap_or_else(|_| panic!("the node outlived its dead session by far (bound {bound:?})"))
        .expect("the watch");
    let took = killed.elapsed();
    assert!(
        took >= dead_timeout,
        "the node went after {took:?}, before its session's timeout {dead_timeout:?}"
    );
    assert!(
        took <= bound,
        "the node went after {took:?}: over the bound {bound:?} (timeout + one heartbeat period)"
    );
    live.close().await.expect("close");
    watcher.close().await.expect("close");
}
