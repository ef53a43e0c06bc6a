//! What a session, its keep-alive task and its watches share, and the one
//! way requests are sent: with the request timeout, sent again when that is
//! safe, errors mapped in `crate::error`.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use coord_core::backend::lease::LeaseClock;
use coord_core::{Error, Result, SessionState};
use etcd_client::{Client, GetOptions, Txn};
use tokio::sync::{watch, Notify};

use crate::error;
use crate::keys::KeySpace;

/// What the session, its keep-alive task and its watches share.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) keys: KeySpace,
    pub(crate) lease: i64,
    /// The TTL the server granted.
    pub(crate) ttl: Duration,
    /// The lease deadline on the client (see `coord_core::backend::lease`): renewed
    /// by every keep-alive the server answers with the lease alive, and by
    /// nothing else (a Put does not renew a lease).
    pub(crate) clock: LeaseClock,
    pub(crate) request_timeout: Duration,
    pub(crate) state: watch::Sender<SessionState>,
    /// The highest store revision any answer to this session carried: a
    /// listing older than it could miss this session's own writes.
    pub(crate) seen: AtomicI64,
    /// Set by `close` before it revokes the lease: a request that then
    /// finds the lease gone sees the close, not an expiry. Never set by
    /// `abandon`, whose end is an expiry.
    pub(crate) closing: AtomicBool,
    /// Wakes a keep-alive that is waiting to retry a failed beat: a request
    /// was just answered, so the connection is back.
    pub(crate) beat_now: Notify,
    /// Unary requests this session sent (see
    /// [`coord_core::backend::PrimitiveSession::requests_sent`]).
    pub(crate) requests: AtomicU64,
    /// The session authenticates with a user and password (so a token the
    /// server dropped can be had again; see [`Shared::refresh_token`]).
    pub(crate) authenticates: bool,
    /// Bumped by every token refresh [`Shared::refresh_token`] made.
    pub(crate) auth_epoch: AtomicU64,
    /// One refresh at a time: the watches refused together share it.
    pub(crate) auth_refresh: tokio::sync::Mutex<()>,
    /// The endpoints and options `connect` dialled with: a connection of
    /// its own can revoke the lease when this client's cannot (see
    /// [`coord_core::backend::PrimitiveSession::ender`]).
    pub(crate) redial: (Vec<String>, etcd_client::ConnectOptions),
}

/// The largest answer coord-etcd decodes: the largest etcd's server sends
/// (its gRPC send limit is `math.MaxInt32`; Go's clientv3 receives as much).
/// tonic's default, 4 MiB, refuses a listing of ~33,000 keys or a Txn
/// reading a few large values, and a watch answer holding one revision's
/// events (a lease revoke deleting thousands of keys is one revision).
/// Listings are read in pages anyway (see `crate::listing`).
const MAX_ANSWER: usize = i32::MAX as usize;

impl Shared {
    /// The KV client, taking answers of any size the server sends.
    pub(crate) fn kv_client(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_ANSWER)
    }

    /// The watch client, taking answers of any size the server sends.
    pub(crate) fn watch_client(&self) -> etcd_client::WatchClient {
        self.client
            .watch_client()
            .max_decoding_message_size(MAX_ANSWER)
    }

    /// Note the revision of an answer.
    pub(crate) fn saw(&self, revision: i64) {
        self.seen.fetch_max(revision, Ordering::Relaxed);
    }

    /// Note the revision of an answer's header.
    pub(crate) fn saw_header(&self, header: Option<&etcd_client::ResponseHeader>) -> i64 {
        let revision = header.map(|h| h.revision()).unwrap_or(0);
        self.saw(revision);
        revision
    }

    /// Move to `next`, unless the state is already final.
    pub(crate) fn set_state(&self, next: SessionState) {
        self.state.send_if_modified(|s| {
            if s.is_terminal() || *s == next {
                false
            } else {
                // Logged once, by coord-core's `Session` (target `coord`).
                tracing::trace!(lease = %format!("{:x}", self.lease), from = ?*s, to = ?next, "etcd session state");
                *s = next;
                true
            }
        });
    }

    /// A request was answered: the connection is up. A `Suspended` session
    /// is `Connected` again if its lease deadline has not passed (so the
    /// server still holds the lease), and its keep-alive beats at once
    /// rather than at its next retry, to renew the lease clock.
    pub(crate) fn answered(&self) {
        if *self.state.borrow() == SessionState::Suspended && !self.clock.expired() {
            self.set_state(SessionState::Connected);
            self.beat_now.notify_one();
        }
    }

    /// `Err` once the session is over.
    pub(crate) fn check_open(&self) -> Result<()> {
        let state = *self.state.borrow();
        state.end_error().map_or(Ok(()), Err)
    }

    /// Run one request within the request timeout, mapping its error; a
    /// lease the server no longer knows ends the session as `Expired`.
    ///
    /// With several endpoints the client may route a request to a member
    /// it cannot connect to; such a request never left, so it is sent again
    /// (the balancer then picks another member) until the timeout, as is
    /// one whose new connection was cut while it was made. So is a
    /// request etcd refused unapplied because the auth store changed under
    /// it (after a token refresh, as etcd's Go client does). A read
    /// (`idempotent`) is also sent again after any lost connection.
    pub(crate) async fn call<T, F, Fut>(&self, idempotent: bool, make: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        self.call_tracked(idempotent, make)
            .await
            .map_err(|(e, _)| e)
    }

    /// [`Shared::call`], its error paired with whether the request may
    /// have reached the server: `false` when every attempt failed before
    /// it was sent (or was refused unapplied), so nothing was applied.
    pub(crate) async fn call_tracked<T, F, Fut>(
        &self,
        idempotent: bool,
        mut make: F,
    ) -> std::result::Result<T, (Error, bool)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        // The request timeout is bounded by `EtcdOptions::check`; saturate
        // anyway rather than panic.
        let start = Instant::now();
        let deadline = start.checked_add(self.request_timeout).unwrap_or(start);
        loop {
            crate::testing::count_request();
            self.requests.fetch_add(1, Ordering::Relaxed);
            let epoch = self.auth_epoch();
            let left = deadline.saturating_duration_since(Instant::now());
            let err = match tokio::time::timeout(left, make()).await {
                Ok(Ok(v)) => {
                    self.answered();
                    return Ok(v);
                }
                Ok(Err(e)) => e,
                Err(_) => return Err((error::timed_out(self.request_timeout), true)),
            };
            let auth_old = error::auth_revision_old(&err);
            if auth_old {
                self.refresh_token(epoch).await;
            }
            let unsent =
                auth_old || error::never_sent(&err) || error::connection_cut_before_sent(&err);
            let mapped = error::map(err);
            if matches!(mapped, Error::SessionExpired) {
                if self.closing.load(Ordering::SeqCst) {
                    return Err((Error::SessionClosed, false));
                }
                self.set_state(SessionState::Expired);
                return Err((mapped, false));
            }
            let again = unsent || (idempotent && mapped.is_retryable());
            let pause = Duration::from_millis(20);
            if !again
                || deadline.saturating_duration_since(Instant::now()) <= pause
                || self.check_open().is_err()
            {
                return Err((mapped, !unsent));
            }
            tracing::debug!(error = %mapped, "etcd request failed before it was answered; again");
            tokio::time::sleep(pause).await;
        }
    }

    /// The token refresh count, to hand to [`Shared::refresh_token`] when
    /// what is sent now is refused for its token.
    pub(crate) fn auth_epoch(&self) -> u64 {
        self.auth_epoch.load(Ordering::SeqCst)
    }

    /// Authenticate again, unless a refresh was made since `seen` (from
    /// [`Shared::auth_epoch`] before the refused request): for a watch
    /// that etcd cancelled as not permitted. etcd checks a watch's
    /// permission when it is created, with the token its stream opened
    /// with, and cancels it when that token is gone (dropped after
    /// `--auth-token-ttl` of disuse, or when the user's password or roles
    /// change); the client refreshes a token only when a unary request is
    /// refused, so a session that only waits would have its watches
    /// cancelled for ever. A failed refresh is left to the next refusal.
    pub(crate) async fn refresh_token(&self, seen: u64) {
        if !self.authenticates {
            return;
        }
        let _one = self.auth_refresh.lock().await;
        if self.auth_epoch() != seen {
            return;
        }
        crate::testing::count_request();
        self.requests.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout(self.request_timeout, self.client.refresh_token()).await {
            Ok(Ok(())) => {
                self.auth_epoch.fetch_add(1, Ordering::SeqCst);
                tracing::debug!("etcd auth token refreshed for a refused watch");
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "etcd auth token refresh failed"),
            Err(_) => tracing::debug!("etcd auth token refresh timed out"),
        }
    }

    /// A range read.
    pub(crate) async fn get(
        &self,
        key: impl AsRef<[u8]>,
        options: Option<GetOptions>,
    ) -> Result<etcd_client::GetResponse> {
        self.call(true, || {
            let mut kv = self.kv_client();
            let options = options.clone();
            let key = key.as_ref().to_vec();
            async move { kv.get(key, options).await }
        })
        .await
    }

    /// A Txn; `read_only` when it writes nothing (then it is retried like
    /// a read).
    pub(crate) async fn txn(&self, txn: &Txn, read_only: bool) -> Result<etcd_client::TxnResponse> {
        self.call(read_only, || {
            let mut kv = self.kv_client();
            let txn = txn.clone();
            async move { kv.txn(txn).await }
        })
        .await
    }
}
