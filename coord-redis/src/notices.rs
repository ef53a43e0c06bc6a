//! The pub/sub side: one connection per session carries change notices to
//! local waiters ([`Waiter`]), plus the notices that a session ended.
//!
//! Each channel is subscribed on the server while at least one local waiter
//! wants it. Registration, subscription and pruning go through one lock, so
//! a `SUBSCRIBE` and an `UNSUBSCRIBE` of the same channel never cross, and a
//! waiter is registered *and* its channel confirmed subscribed before the
//! caller reads: a change made after that read is always delivered.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use coord_core::backend::Backoff;
use coord_core::{Error, Result};
use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::oneshot;

use crate::error;

/// What wakes a waiter: a notice's message, or `None` for a spurious
/// wake-up (the connection dropped).
pub(crate) type Notice = Option<Vec<u8>>;

/// How long a channel no waiter wants stays subscribed.
const PRUNE_GRACE: Duration = Duration::from_millis(500);

type Waiters = HashMap<String, HashMap<u64, oneshot::Sender<Notice>>>;

/// The shared pub/sub connection of one session and its local dispatcher.
pub(crate) struct Hub {
    client: redis::Client,
    /// `__keyspace@<db>__:<prefix>s:*`: sessions' keys expiring.
    pub(crate) keyspace_pattern: String,
    /// `<prefix>ended`: a session was reaped.
    pub(crate) ended_channel: String,
    waiters: Mutex<Waiters>,
    next_id: AtomicU64,
    link: tokio::sync::Mutex<Link>,
    /// How long a registration waits for a dropped link to come back.
    patience: Duration,
}

struct Link {
    /// `None` while the connection is down.
    sink: Option<PubSubSink>,
    /// Channels subscribed (or being subscribed) on the current connection.
    subscribed: HashSet<String>,
}

impl Hub {
    pub(crate) fn new(
        client: redis::Client,
        keyspace_pattern: String,
        ended_channel: String,
        patience: Duration,
    ) -> Arc<Self> {
        Arc::new(Hub {
            client,
            keyspace_pattern,
            ended_channel,
            waiters: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            link: tokio::sync::Mutex::new(Link {
                sink: None,
                subscribed: HashSet::new(),
            }),
            patience,
        })
    }

    /// The client every pub/sub connection of this hub is opened with.
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        // A panic while holding it leaves a valid map: keep going.
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open a (new) pub/sub connection with the session notices subscribed,
    /// and make it the one waiters use. The caller drives the stream.
    pub(crate) async fn connect(&self) -> Result<PubSubStream> {
        // The whole of it within the patience: a server that accepts the
        // connection and then stalls must not hold the caller.
        let (sink, stream) = tokio::time::timeout(self.patience, async {
            let pubsub = self
                .client
                .get_async_pubsub()
                .await
                .map_err(|e| error::map(e, None))?;
            let (mut sink, stream) = pubsub.split();
            sink.psubscribe(&self.keyspace_pattern)
                .await
                .map_err(|e| error::map(e, None))?;
            sink.subscribe(&self.ended_channel)
                .await
                .map_err(|e| error::map(e, None))?;
            Ok::<_, Error>((sink, stream))
        })
        .await
        .map_err(|_| Error::ConnectionLost("redis pub/sub connect timed out".into()))??;
        let mut link = self.link.lock().await;
        link.sink = Some(sink);
        link.subscribed.clear();
        Ok(stream)
    }

    /// The connection dropped: forget its subscriptions and wake every
    /// waiter (a spurious wake-up: each reads again, and cannot have missed
    /// a change that way).
    pub(crate) async fn disconnected(&self) {
        {
            let mut link = self.link.lock().await;
            link.sink = None;
            link.subscribed.clear();
        }
        let all = std::mem::take(&mut *self.waiters());
        for (_, senders) in all {
            for (_, tx) in senders {
                let _ = tx.send(None);
            }
        }
    }

    /// Wake every waiter of `channel` (a notice arrived on it).
    pub(crate) fn fire(self: &Arc<Self>, channel: &str, message: &[u8]) {
        let senders = self.waiters().remove(channel);
        if let Some(senders) = senders {
            for (_, tx) in senders {
                let _ = tx.send(Some(message.to_vec()));
            }
            self.schedule_prune(channel.to_owned());
        }
    }

    /// Register interest in `channel`; returns once the server has
    /// confirmed the subscription.
    pub(crate) async fn register(self: &Arc<Self>, channel: String) -> Result<Waiter> {
        let deadline = tokio::time::Instant::now().checked_add(self.patience);
        // A poll for the link: a fixed step (first = cap), jittered.
        let poll = Backoff::new(Duration::from_millis(50), Duration::from_millis(50));
        let mut attempt = 0;
        loop {
            let mut link = self.link.lock().await;
            let Some(sink) = link.sink.clone() else {
                drop(link);
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    return Err(Error::ConnectionLost(
                        "the redis pub/sub connection is down".into(),
                    ));
                }
                poll.sleep(&mut attempt).await;
                continue;
            };
            let (tx, rx) = oneshot::channel();
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            self.waiters()
                .entry(channel.clone())
                .or_default()
                .insert(id, tx);
            // From here a drop of the future (or an error) prunes it.
            let waiter = Waiter {
                hub: Arc::clone(self),
                channel: channel.clone(),
                id,
                rx,
            };
            // Marked before the await, so a cancelled subscribe is undone
            // by the prune the waiter's drop schedules.
            // Within the patience: the link lock is held meanwhile.
            // A failed one is forgotten, so the next waiter subscribes anew.
            if link.subscribed.insert(channel.clone()) {
                let mut sink = sink;
                let confirmed = tokio::time::timeout(self.patience, sink.subscribe(&channel))
                    .await
                    .map_err(|_| {
                        Error::ConnectionLost("redis SUBSCRIBE was not confirmed in time".into())
                    })
                    .and_then(|r| r.map_err(|e| error::map(e, None)));
                if let Err(e) = confirmed {
                    link.subscribed.remove(&channel);
                    return Err(e);
                }
            }
            return Ok(waiter);
        }
    }

    /// Unsubscribe `channel` after [`PRUNE_GRACE`] unless a waiter wants
    /// it again by then (recipes often wait on the same node or directory
    /// again at once: that saves a round trip each time).
    fn schedule_prune(self: &Arc<Self>, channel: String) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hub = Arc::downgrade(self);
        rt.spawn(async move {
            tokio::time::sleep(PRUNE_GRACE).await;
            if let Some(hub) = hub.upgrade() {
                hub.prune(channel).await;
            }
        });
    }

    /// Unsubscribe `channel` if no waiter wants it any more.
    async fn prune(&self, channel: String) {
        let mut link = self.link.lock().await;
        if self.waiters().contains_key(&channel) || !link.subscribed.remove(&channel) {
            return;
        }
        if let Some(sink) = link.sink.as_mut() {
            match tokio::time::timeout(self.patience, sink.unsubscribe(&channel)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(%channel, error = %e, "redis unsubscribe failed"),
                Err(_) => tracing::debug!(%channel, "redis unsubscribe timed out"),
            }
        }
    }

    /// How many channels are subscribed for waiters (tests).
    pub(crate) async fn subscribed_count(&self) -> usize {
        self.link.lock().await.subscribed.len()
    }
}

/// One waiter's interest in one channel. Dropping it unregisters, and
/// unsubscribes the channel when it was the last.
pub(crate) struct Waiter {
    hub: Arc<Hub>,
    channel: String,
    id: u64,
    rx: oneshot::Receiver<Notice>,
}

impl Waiter {
    /// Resolve at the first notice on the channel after registration, with
    /// its message, or with `None` at a spurious wake-up (the connection
    /// dropped).
    pub(crate) async fn fired(&mut self) -> Notice {
        (&mut self.rx).await.ok().flatten()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let last = {
            let mut waiters = self.hub.waiters();
            match waiters.get_mut(&self.channel) {
                Some(ids) => {
                    ids.remove(&self.id);
                    let empty = ids.is_empty();
                    if empty {
                        waiters.remove(&self.channel);
                    }
                    empty
                }
                // Fired: whoever fired it schedules the prune.
                None => false,
            }
        };
        if last {
            self.hub.schedule_prune(std::mem::take(&mut self.channel));
        }
    }
}
