//! Reads that recipes retry while the connection is down, and the small
//! helpers around them.

use crate::backend::backoff::Backoff;
use crate::backend::node::{Child, Node};
use crate::backend::order::{Blockers, Place};
use crate::backend::watch::Watch;
use crate::error::{Error, Result};
use crate::session::Session;

/// Backoff between retries of a read that failed with a retryable error:
/// [`Backoff::RECIPES`] (20 ms, doubling to 1 s, with jitter).
pub(crate) async fn backoff(attempt: &mut u32) {
    Backoff::RECIPES.sleep(attempt).await;
}

/// Wait before retrying a write that failed with a retryable error: the
/// next backoff step, or less if the session's state changes meanwhile (the
/// connection came back: retry at once; the session ended: the retry fails
/// at once and says so).
pub(crate) async fn pause(session: &Session, attempt: &mut u32) {
    let mut state = session.state_watch();
    state.borrow_and_update();
    tokio::select! {
        () = backoff(attempt) => {}
        _ = state.changed() => {}
    }
}

/// List `dir`, retrying retryable errors; a missing directory is empty.
pub(crate) async fn list_retrying(session: &Session, dir: &str) -> Result<Vec<Child>> {
    let mut attempt = 0;
    loop {
        match session.children(dir).await {
            Ok(c) => return Ok(c),
            Err(Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

/// Read the nodes at `paths` ([`Session::get_many`]), retrying retryable
/// errors (the whole batch again: it only reads).
pub(crate) async fn get_many_retrying(
    session: &Session,
    paths: &[String],
) -> Result<Vec<Option<Node>>> {
    let mut attempt = 0;
    loop {
        match session.get_many(paths).await {
            Ok(nodes) => return Ok(nodes),
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

/// The first `n` children of `dir` ([`Session::first_children`]),
/// retrying retryable errors; a missing directory is empty.
pub(crate) async fn first_retrying(session: &Session, dir: &str, n: usize) -> Result<Vec<Child>> {
    let mut attempt = 0;
    loop {
        match session.first_children(dir, n).await {
            Ok(c) => return Ok(c),
            Err(Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

/// Where `me` stands in `dir` ([`Session::place`]), retrying retryable
/// errors.
pub(crate) async fn place_retrying(
    session: &Session,
    dir: &str,
    me: &Child,
    blockers: Blockers<'_>,
) -> Result<Place> {
    let mut attempt = 0;
    loop {
        match session.place(dir, me, blockers).await {
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            r => return r,
        }
    }
}

/// List `dir` with a watch, making the directory if it is missing and
/// retrying retryable errors.
pub(crate) async fn list_watch_retrying(
    session: &Session,
    dir: &str,
) -> Result<(Vec<Child>, Watch)> {
    let mut attempt = 0;
    loop {
        match session.children_watch(dir).await {
            Ok(r) => return Ok(r),
            Err(Error::NotFound { .. }) => session.ensure_dir(dir).await?,
            Err(e) if e.is_retryable() => backoff(&mut attempt).await,
            Err(e) => return Err(e),
        }
    }
}

/// Await the pending watch, if any, and clear it; a connection error only
/// backs off (the caller reads again), any other error is returned.
/// Dropped while waiting, the watch stays pending for the next call.
pub(crate) async fn settle_watch(watch: &mut Option<Watch>, attempt: &mut u32) -> Result<()> {
    if let Some(w) = watch.as_mut() {
        let r = w.await;
        *watch = None;
        match r {
            Ok(()) => {}
            Err(e) if e.is_retryable() => backoff(attempt).await,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
