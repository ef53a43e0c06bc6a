//! Many sessions ending at once while many live ones heartbeat. Every
//! heartbeat (and every operation) of any client reaps the expired sessions,
//! so hundreds of reapers go at the same rows together: none may wait on
//! another. A reaper that waits can deadlock (PostgreSQL then aborts one
//! transaction, 40P01), and an aborted renewal leaves a live session's lease
//! unrenewed: with a few hundred sessions, live ones expired waiting.
//!
//! Against `COORD_TEST_PG` (scripts/servers/pg.sh); fails without it. Its own
//! schema, so other tests' sessions are not part of it.

mod common;

use std::time::Duration;

use common::pg_url;
use coord_core::{Session, SessionState};
use coord_pg::PgOptions;
use futures_util::future::join_all;
use tokio::time::Instant;

/// Sessions that end together (opened and left by raw SQL, so they hold no
/// connection: a dead process's sessions).
const DYING: usize = 150;
/// The raw connections the dying sessions work over.
const DYING_CONNS: usize = 6;
/// Live coord sessions heartbeating (a connection each, and the process's
/// listening one; the test server's max_connections is 400).
const LIVE: usize = 100;
/// The live sessions' timeout: a heartbeat every second.
const LIVE_TIMEOUT: Duration = Duration::from_secs(3);
/// The dying sessions' timeout while the test makes them (then it moves
/// their end to the same moment).
const DYING_TIMEOUT_MS: i32 = 120_000;
/// Persistent nodes in the database besides the dying sessions' ones.
const TREE: i32 = 20_000;
/// The dying sessions' timeout once they are let go: about what a pass of
/// renewals over them takes, so they renew late and end.
const DYING_TIMEOUT_LATE_MS: i32 = 300;
/// Ephemeral nodes of each dying session: their deletion is the reapers'
/// work (the cascade, a notice each).
const EPHEMERALS: i32 = 20;

/// `url` with an `application_name`, to find its connections in
/// `pg_stat_activity`.
fn tagged(url: &str, app: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={app}")
}

async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("raw connection");
    tokio::spawn(conn);
    client
}

/// The database's deadlock count, as the statistics have it now.
async fn deadlocks(admin: &tokio_postgres::Client) -> i64 {
    admin
        .batch_execute("select pg_stat_clear_snapshot()")
        .await
        .expect("clear the stats snapshot");
    admin
        .query_one(
            "select deadlocks from pg_stat_database where datname = current_database()",
            &[],
        )
        .await
        .expect("pg_stat_database")
        .get(0)
}

/// Wait until `sql` (one bigint) reads 0, or panic after `within`.
async fn until_zero(
    admin: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    within: Duration,
    what: &str,
) {
    let deadline = Instant::now() + within;
    loop {
        let left: i64 = admin.query_one(sql, params).await.expect("poll").get(0);
        if left == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{left} {what} left after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Run `sql` once, again after a deadlock (40P01: the statistics count
/// it; the setup goes on).
async fn execute(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> tokio_postgres::Row {
    loop {
        match client.query_one(sql, params).await {
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED) => {
            }
            other => return other.unwrap_or_else(|e| panic!("{sql}: {e:?}")),
        }
    }
}

/// Open `n` sessions of `schema` over `client` by raw SQL, each with
/// [`EPHEMERALS`] ephemeral nodes in one shared directory and a TTL node;
/// their ids.
async fn open_dying(client: &tokio_postgres::Client, schema: &str, n: usize) -> Vec<i64> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let sid: i64 = execute(
            client,
            &format!("select id from {schema}.open($1)"),
            &[&DYING_TIMEOUT_MS],
        )
        .await
        .get(0);
        execute(
            client,
            &format!(
                "select count(*) from generate_series(1, $2) g, lateral {schema}.create($1::bigint, \
                 '/storm/e-' || $1::bigint || '-' || g, ''::bytea, true, false, null)"
            ),
            &[&sid, &EPHEMERALS],
        )
        .await;
        execute(
            client,
            &format!(
                "select 1 from {schema}.create($1::bigint, '/storm-ttl/t-' || $1::bigint, \
                 ''::bytea, false, false, $2)"
            ),
            &[&sid, &i64::from(DYING_TIMEOUT_MS)],
        )
        .await;
        ids.push(sid);
    }
    ids
}

/// Keep `ids` working until the server ends them: each renews itself late
/// (a pass over them takes about their timeout, as a loaded process's
/// heartbeats) and makes ten sequential TTL nodes in one transaction (as a
/// coord transaction of ten creates: every create reaps, so it reaps ten
/// times, holding what the first reaped), until the server answers that it
/// is over. So they end at the edge of their renewals and in the middle of
/// their operations, and their TTL nodes expire all the while. Renewals
/// stop at `renew_until`: on a server quick enough for a pass to take less
/// than their timeout, the ones renewed in time would otherwise live on.
async fn work_until_over(
    client: &tokio_postgres::Client,
    schema: &str,
    mut ids: Vec<i64>,
    renew_until: Instant,
) {
    let renew = format!("select {schema}.renew($1)");
    let create = format!(
        "select count(*) from generate_series(1, 10) g, lateral {schema}.create($1::bigint, \
             '/storm-ttl/q-', ''::bytea, false, true, 100)"
    );
    while !ids.is_empty() {
        let mut left = Vec::with_capacity(ids.len());
        let renewing = Instant::now() < renew_until;
        for sid in ids {
            let renewed = if !renewing {
                true
            } else {
                match client.query_one(&renew, &[&sid]).await {
                    Ok(row) => row.get::<_, bool>(0),
                    // A deadlock's victim (40P01): the statistics count it.
                    Err(_) => true,
                }
            };
            match client.execute(&create, &[&sid]).await {
                Err(e) if e.code().map(tokio_postgres::error::SqlState::code) == Some("CXSES") => {}
                _ if !renewed => {}
                _ => left.push(sid),
            }
        }
        ids = left;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_ending_together_deadlock_no_reaper_and_expire_no_live_session() {
    let schema = format!("storm_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let url = tagged(&pg_url(), &schema);
    let admin = raw(&pg_url()).await;
    let options = PgOptions::new(url.clone())
        .with_schema(schema.clone())
        .with_session_timeout(LIVE_TIMEOUT);

    // The first session installs the schema; the others find it. Before
    // they come, a tree of persistent nodes as a service has (their notices
    // go to the first session only): every reaper's work is proportionate.
    let first = coord_pg::connect(options.clone()).await.expect("connect");
    let filler = raw(&url).await;
    let owner: i64 = execute(
        &filler,
        &format!("select id from {schema}.open($1)"),
        &[&DYING_TIMEOUT_MS],
    )
    .await
    .get(0);
    execute(
        &filler,
        &format!(
            "select count(*) from generate_series(1, $2) g, lateral {schema}.create($1::bigint, \
             '/tree/n-' || g, ''::bytea, false, false, null)"
        ),
        &[&owner, &TREE],
    )
    .await;
    execute(&filler, &format!("select {schema}.close($1)"), &[&owner]).await;
    drop(filler);
    let mut live: Vec<Session> = vec![first];
    for batch in 0..(LIVE - 1).div_ceil(20) {
        let n = 20.min(LIVE - 1 - batch * 20);
        for s in join_all((0..n).map(|_| coord_pg::connect(options.clone()))).await {
            live.push(s.expect("connect a live session"));
        }
    }
    let states: Vec<_> = live.iter().map(Session::state_watch).collect();
    let before = deadlocks(&admin).await;

    // The dying sessions: opened together, then working until the server
    // ends them.
    let conns = join_all((0..DYING_CONNS).map(|_| raw(&url))).await;
    let per = DYING / DYING_CONNS;
    let dying: Vec<Vec<i64>> = join_all(conns.iter().map(|c| open_dying(c, &schema, per))).await;
    let all: Vec<i64> = dying.concat();
    // One moment for all of them to end, and their TTL nodes with them.
    admin
        .execute(
            &format!(
                "update {schema}.sessions set timeout_ms = $2, \
                 expires_at = clock_timestamp() + interval '1 s' where id = any($1)"
            ),
            &[&all, &DYING_TIMEOUT_LATE_MS],
        )
        .await
        .expect("end the dying sessions in a second");
    admin
        .execute(
            &format!(
                "update {schema}.nodes set ttl_ms = 1000, mtime = clock_timestamp() \
                 where parent = '/storm-ttl'"
            ),
            &[],
        )
        .await
        .expect("end the TTL nodes in a second");
    // Three of the live sessions' timeouts of late renewals, then none.
    let renew_until = Instant::now() + 3 * LIVE_TIMEOUT;
    join_all(
        conns
            .iter()
            .zip(dying)
            .map(|(c, ids)| work_until_over(c, &schema, ids, renew_until)),
    )
    .await;

    // Then reaped.
    until_zero(
        &admin,
        &format!("select count(*) from {schema}.sessions where id = any($1)"),
        &[&all],
        Duration::from_secs(30),
        "dying sessions",
    )
    .await;
    until_zero(
        &admin,
        &format!("select count(*) from {schema}.nodes where parent in ('/storm', '/storm-ttl')"),
        &[],
        Duration::from_secs(30),
        "nodes of the dying sessions",
    )
    .await;
    // A few more heartbeats of every live session after the reaping: a
    // renewal aborted during it shows as an expired lease by then.
    tokio::time::sleep(LIVE_TIMEOUT).await;

    let over: Vec<(usize, SessionState)> = live
        .iter()
        .enumerate()
        .filter(|(_, s)| s.state() != SessionState::Connected)
        .map(|(i, s)| (i, s.state()))
        .collect();
    let wavered = states
        .iter()
        .filter(|w| w.has_changed().unwrap_or(true))
        .count();
    for s in &live {
        s.close().await.expect("close");
    }
    drop(live);
    drop(conns);
    // A backend reports its deadlocks to the statistics by its exit at the
    // latest: wait for every connection of the test to be gone.
    until_zero(
        &admin,
        "select count(*) from pg_stat_activity where application_name = $1",
        &[&schema],
        Duration::from_secs(30),
        "connections of the test",
    )
    .await;
    let after = deadlocks(&admin).await;
    admin
        .batch_execute(&format!("drop schema {schema} cascade"))
        .await
        .expect("drop the test's schema");

    assert!(
        after == before && over.is_empty() && wavered == 0,
        "while {DYING} sessions ended: {} deadlocks; live sessions not Connected: {over:?}; \
         {wavered} of {LIVE} live sessions changed state",
        after - before
    );
}
