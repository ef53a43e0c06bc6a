//! The listening connection is one per process for each server and schema,
//! shared by the sessions there: PostgreSQL wakes every listening
//! connection of a database at each change, so N sessions of a process
//! must cost the server one, not N. And a listener that ends under a
//! session (the runtime it ran on shut down) is replaced: the session's
//! watches keep hearing every change.
//!
//! Against the plain server of scripts/servers/pg.sh (`COORD_TEST_PG`);
//! without it every test fails.

mod common;

use std::time::Duration;

use common::{admin, fresh_schema, pg_url};
use coord_core::{CreateMode, Session, TreeChange};
use coord_pg::PgOptions;

/// The server processes listening for `schema` now (a listener's last
/// statement is always its `LISTEN`: it pings with it).
async fn listeners(admin: &tokio_postgres::Client, schema: &str) -> Vec<i32> {
    let rows = admin
        .query(
            "select pid from pg_stat_activity where query = $1 order by pid",
            &[&format!("listen {schema}")],
        )
        .await
        .expect("pg_stat_activity");
    rows.iter().map(|r| r.get(0)).collect()
}

/// Wait (up to 20 s) until the listeners for `schema` satisfy `ok`: them.
async fn await_listeners(
    admin: &tokio_postgres::Client,
    schema: &str,
    what: &str,
    ok: impl Fn(&[i32]) -> bool,
) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = listeners(admin, schema).await;
        if ok(&now) {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: the listeners for {schema} are {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait (up to 10 s) for `tree` to report a change at `path`: a change
/// named by path, not only a resync. (The directory's own creation may
/// come first: its notice can land after the watch is set.)
async fn await_heard(tree: &mut coord_core::TreeWatch, path: &str, who: &str) {
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match tree.next().await {
                Some(Ok(TreeChange::Changed(p))) if p == path => return,
                Some(Ok(_)) => {}
                other => panic!("{who} heard {other:?}"),
            }
        }
    })
    .await;
    assert!(heard.is_ok(), "{who} never heard the change at {path}");
}

async fn open(schema: &str) -> Session {
    coord_pg::connect(PgOptions::new(pg_url()).with_schema(schema))
        .await
        .expect("connect")
}

#[tokio::test]
async fn the_sessions_of_a_process_share_one_listening_connection() {
    let schema = fresh_schema("share");
    let admin = admin().await;
    // Opened side by side: those opening beside the first wait for its
    // listener rather than start their own.
    let sessions = futures_util::future::join_all((0..6).map(|_| open(&schema))).await;
    let one = listeners(&admin, &schema).await;
    assert_eq!(one.len(), 1, "six sessions, one listener: {one:?}");
    // Every one of them hears the others' changes through it.
    let dir = "/shared";
    sessions[0].ensure_dir(dir).await.expect("ensure_dir");
    let mut trees = Vec::new();
    for s in &sessions {
        trees.push(s.watch_tree(dir).await.expect("watch_tree"));
    }
    let path = format!("{dir}/n");
    sessions[5]
        .create(&path, b"", CreateMode::Persistent)
        .await
        .expect("create");
    for (i, tree) in trees.iter_mut().enumerate() {
        await_heard(tree, &path, &format!("session {i}")).await;
    }
    drop(trees);
    // It outlives all but the last; the last one's close stops it.
    let mut sessions = sessions.into_iter();
    let last = sessions.next().expect("a session");
    for s in sessions {
        s.close().await.expect("close");
    }
    assert_eq!(
        listeners(&admin, &schema).await,
        one,
        "still the one listener"
    );
    last.close().await.expect("close");
    await_listeners(&admin, &schema, "after the last close", <[i32]>::is_empty).await;
}

#[test]
fn a_listener_whose_runtime_ends_is_replaced_for_the_sessions_left() {
    let schema = fresh_schema("rehome");
    let first = tokio::runtime::Runtime::new().expect("runtime");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // The listener starts on the first runtime, with its session.
    let a = first.block_on(open(&schema));
    let (admin, b, before) = rt.block_on(async {
        let admin = admin().await;
        let b = open(&schema).await;
        let before = listeners(&admin, &schema).await;
        assert_eq!(before.len(), 1, "two sessions, one listener: {before:?}");
        (admin, b, before)
    });
    // The first runtime ends, and the listener's task with it.
    first.block_on(async move { drop(a) });
    drop(first);
    rt.block_on(async {
        let after = await_listeners(&admin, &schema, "after the runtime ended", |l| {
            l.len() == 1 && l != before.as_slice()
        })
        .await;
        // The session left hears changes through the new listener.
        let dir = "/rehomed";
        b.ensure_dir(dir).await.expect("ensure_dir");
        let mut tree = b.watch_tree(dir).await.expect("watch_tree");
        let other = open(&schema).await;
        let path = format!("{dir}/n");
        other
            .create(&path, b"", CreateMode::Persistent)
            .await
            .expect("create");
        await_heard(&mut tree, &path, "the session left").await;
        assert_eq!(
            listeners(&admin, &schema).await,
            after,
            "one listener still"
        );
        other.close().await.expect("close");
        b.close().await.expect("close");
    });
}

/// A session's create that waits at the server (here on its directory's
/// row, held by another transaction) for longer than the session's
/// timeout: the session's renewals, which would wait behind it on its
/// connection, go over the listening connection too, so the session lives
/// on and the create lands once let through.
#[tokio::test]
async fn a_session_whose_create_waits_at_the_server_is_renewed_meanwhile() {
    let schema = fresh_schema("waits");
    let timeout = Duration::from_secs(1);
    let options = PgOptions::new(pg_url())
        .with_schema(schema.clone())
        .with_session_timeout(timeout)
        .with_request_timeout(Duration::from_secs(30));
    let session = coord_pg::connect(options).await.expect("connect");
    let sid: i64 = session
        .id()
        .0
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("a postgres session id");
    session.ensure_dir("/q").await.expect("ensure_dir");
    // Another transaction holds the directory's row: sequential creates
    // there wait for it.
    let holder = admin().await;
    holder
        .batch_execute(&format!(
            "begin; select 1 from {schema}.nodes where path = '/q' for update"
        ))
        .await
        .expect("hold the directory's row");
    let creating = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .create("/q/n-", b"", CreateMode::EphemeralSequential)
                .await
        })
    };
    let watcher = admin().await;
    let waiting = format!(
        "select clock_timestamp() from pg_stat_activity \
         where wait_event_type = 'Lock' and query like '%{schema}.create%'"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let blocked_at: std::time::SystemTime = loop {
        if let Some(row) = watcher.query(&waiting, &[]).await.expect("poll").first() {
            break row.get(0);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the create never waited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Renewed, by the server's clock, past three timeouts after the create
    // began to wait (it would have ended one timeout after its last
    // renewal).
    let renewed = format!("select expires_at from {schema}.sessions where id = $1");
    loop {
        let row = watcher.query(&renewed, &[&sid]).await.expect("poll");
        let at: Option<std::time::SystemTime> = row.first().map(|r| r.get(0));
        match at {
            Some(at) if at > blocked_at + 3 * timeout => break,
            Some(_) => {}
            None => panic!("the session ended while its create waited"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session was not renewed while its create waited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    holder
        .batch_execute("commit")
        .await
        .expect("let the create through");
    let made = creating
        .await
        .expect("the create's task")
        .expect("the create");
    assert!(made.path.starts_with("/q/n-"), "made {}", made.path);
    assert_eq!(session.state(), coord_core::SessionState::Connected);
    session.close().await.expect("close");
}
