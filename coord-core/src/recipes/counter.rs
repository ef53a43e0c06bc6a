//! A shared counter (`Counter`, `CounterWatcher`): one `i64` many sessions read, set and add to.

use super::shared::SharedValue;
use crate::backend::backoff::Backoff;
use crate::backend::watch::Watch;
use crate::error::{Error, Result};
use crate::machinery::retry::backoff;
use crate::machinery::stream::{resumable_stream, Advance, Resumable};
use crate::session::Session;

/// A shared counter: one `i64` many sessions read, set and add to (kazoo
/// `Counter`; Curator `SharedCount` and `DistributedAtomicLong`), made by
/// [`Counter::new`]`(session, path)` ([`Counter::with_initial`] for an
/// initial value other than 0). Read it with [`Counter::get`], add with
/// [`Counter::add`], set it with [`Counter::set`] or
/// [`Counter::compare_and_set`], follow it with
/// [`Counter::watch`].
///
/// The value lives in one persistent node, as ASCII decimal text (`-42`,
/// `0`, `1234`), with no sign for positive values, no padding and no
/// newline — what kazoo's `Counter` writes (`repr(int)`) and reads, so a
/// kazoo client and coord share a counter node on ZooKeeper. A node with
/// no data (made by someone else, or empty) reads as the counter's initial
/// value, as in kazoo. Curator's counters are **not** compatible: its
/// `SharedCount` stores a 4-byte and its `DistributedAtomicLong` an 8-byte
/// big-endian binary integer; coord refuses those bytes with
/// [`Error::InvalidArgument`] (they are not decimal text — unless they
/// happen to be ASCII digits, when coord misreads them), and Curator
/// misreads coord's text. Do not share a counter node with Curator: for
/// Curator's `SharedCount`, use [`SharedCount`](super::SharedCount).
///
/// Every change is a compare-and-set on the node's version: [`Counter::add`]
/// reads, computes, and writes only if nobody wrote meanwhile, and on a
/// version conflict reads again (with [`Backoff::RECIPES`]), so concurrent
/// adds from any number of sessions never lose an update. There is no
/// "promoted to a lock" fallback as in Curator's `DistributedAtomicLong`:
/// the retry loop with backoff is the whole mechanism.
///
/// The node's reads and writes are a [`SharedValue`]'s (the counter is
/// one, holding decimal text). A write whose answer is lost to a dropped
/// connection may or may not have landed. `add` then reads the node again: if it is still at the
/// version the write expected, the write did not land and the add goes on
/// (retrying); if it moved, nobody can tell (another session may have
/// written the same bytes), so `add` never writes again (which could count
/// twice) and fails with [`Error::OutcomeUnknown`]
/// (see [`Counter::add`]). kazoo and Curator retry such writes blindly and
/// can count twice.
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::recipes::Counter;
/// let hits = Counter::new(&session, "/stats/hits")?;
/// let added = hits.add(5).await?; // retried on conflicts, never lost
/// assert_eq!(added.post, added.pre + 5);
/// let (value, version) = hits.get().await?;
/// // Succeeds only if nobody wrote since that read.
/// let swapped = hits.compare_and_set(version, value * 2).await?;
/// let mut changes = hits.watch();
/// // The value now; each later `next` waits for a change.
/// let latest = changes.next().await.transpose()?;
/// # let _ = (swapped, latest);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Counter {
    /// The node, with the initial value's text as its initial bytes.
    value: SharedValue,
    initial: i64,
}

/// What an [`Counter::add`] did: the value it replaced and the value it
/// wrote (`post == pre + delta`), both as stored by that one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddOutcome {
    /// The value just before the add.
    pub pre: i64,
    /// The value the add wrote.
    pub post: i64,
    /// The node's version after the add.
    pub version: u64,
}

/// Parse a counter node's data: empty is `initial`, otherwise ASCII
/// decimal text for an `i64`.
fn parse(node: &str, data: &[u8], initial: i64) -> Result<i64> {
    if data.is_empty() {
        return Ok(initial);
    }
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| {
            let shown: String = String::from_utf8_lossy(&data[..data.len().min(32)])
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            Error::InvalidArgument(format!(
                "the counter node {node} does not hold a decimal i64 ({} bytes: {shown:?}{})",
                data.len(),
                if data.len() > 32 { "…" } else { "" }
            ))
        })
}

fn encode(value: i64) -> Vec<u8> {
    value.to_string().into_bytes()
}

impl Counter {
    /// A counter at `path` whose initial value (before any write, and for
    /// a node with no data) is 0; [`Counter::with_initial`] sets another.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or `/`.
    pub fn new(session: &Session, path: &str) -> Result<Self> {
        Ok(Counter {
            value: SharedValue::new(session, path)?.with_initial(encode(0)),
            initial: 0,
        })
    }

    /// Make `initial` the counter's initial value: what it reads as before
    /// anyone wrote it, and while its node has no data. The first read or
    /// write makes the node (holding `initial`, for a read); every session
    /// must agree on `initial` (kazoo's `default`, Curator's `seedValue`).
    pub fn with_initial(self, initial: i64) -> Self {
        Counter {
            value: self.value.with_initial(encode(initial)),
            initial,
        }
    }

    /// The counter's node.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// Read the node, creating it with the initial value when missing;
    /// retryable errors are retried. Returns the value and version.
    async fn read(&self) -> Result<(i64, u64)> {
        let now = self.value.read().await?;
        Ok((parse(self.path(), &now.value, self.initial)?, now.version))
    }

    /// The value and the node's version (for
    /// [`Counter::compare_and_set`]). A missing node is made, holding the
    /// initial value, so there is always a version to compare with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the node holds something other than
    /// decimal text for an `i64`; the session's end; backend errors. A lost
    /// connection is retried until the session ends.
    ///
    /// # Cancel safety
    /// Cancel safe: at most it made the node with the initial value.
    pub async fn get(&self) -> Result<(i64, u64)> {
        self.read().await
    }

    /// Set the value, whatever it was (also over a node that does not hold
    /// a number). Returns the new version.
    ///
    /// It is a compare-and-set against the version just read, retried on
    /// conflicts, so a write whose answer was lost is never repeated over
    /// someone else's later write (which would undo it).
    ///
    /// # Errors
    /// The session's end; backend errors. A lost connection is retried
    /// while a read shows the write did not land; when the node moved
    /// meanwhile, [`Error::OutcomeUnknown`], as for
    /// [`Counter::add`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn set(&self, value: i64) -> Result<u64> {
        self.value.set(encode(value)).await
    }

    /// Set the value to `value` only if the node is still at `version` (as
    /// read by [`Counter::get`] or returned by a write). `Ok(true)` when it
    /// was set, `Ok(false)` when someone wrote since (or the node was
    /// deleted): read again and decide again.
    ///
    /// # Errors
    /// The session's end; backend errors. A lost connection whose write may
    /// have landed is [`Error::OutcomeUnknown`], as for
    /// [`Counter::add`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn compare_and_set(&self, version: u64, value: i64) -> Result<bool> {
        Ok(self.try_write(version, value).await?.is_some())
    }

    /// [`Counter::compare_and_set`] against an expected *value*: set
    /// `value` only if the counter now holds `expected` (Curator's
    /// `compareAndSet(expected, new)`). `Ok(false)` when it holds something
    /// else; a write by another session between the read and the write is
    /// retried when it left `expected` in place.
    ///
    /// # Errors
    /// As [`Counter::compare_and_set`], and [`Error::InvalidArgument`] for a
    /// node that does not hold a decimal `i64`.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the value may or may not have been set.
    pub async fn compare_value_and_set(&self, expected: i64, value: i64) -> Result<bool> {
        let mut attempt = 0;
        loop {
            let (now, version) = self.read().await?;
            if now != expected {
                return Ok(false);
            }
            if self.try_write(version, value).await?.is_some() {
                return Ok(true);
            }
            backoff(&mut attempt).await;
        }
    }

    /// Write `value` if the node is at `version`: `Some(new version)`, or
    /// `None` when it is not (a conflict); see [`SharedValue::try_set`].
    async fn try_write(&self, version: u64, value: i64) -> Result<Option<u64>> {
        self.value.try_write(version, &encode(value)).await
    }

    /// Add `delta` (negative to subtract) atomically: read, write
    /// `pre + delta` if nobody wrote meanwhile, and on a conflict read
    /// again after a [`Backoff::RECIPES`] step, until it lands. Concurrent
    /// adds from any number of sessions all count, each exactly once:
    /// every outcome's `pre` is the `post` of the write before it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `pre + delta` overflows an `i64`
    /// (nothing is written; the counter never wraps) or the node does not
    /// hold a decimal `i64`; the session's end; backend errors.
    /// A lost connection is retried while a read shows the write did not
    /// land; when the node moved meanwhile, whether it landed cannot be
    /// known, and the add fails with [`Error::OutcomeUnknown`]
    /// rather than risk counting twice.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped, the delta may or may not have been added
    /// (once at most).
    pub async fn add(&self, delta: i64) -> Result<AddOutcome> {
        let mut attempt = 0;
        loop {
            let (pre, version) = self.read().await?;
            let post = pre.checked_add(delta).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "adding {delta} to the counter {} ({pre}) overflows an i64",
                    self.path()
                ))
            })?;
            if let Some(version) = self.try_write(version, post).await? {
                return Ok(AddOutcome { pre, post, version });
            }
            Backoff::RECIPES.sleep(&mut attempt).await;
        }
    }

    /// [`Counter::add`] of 1.
    ///
    /// # Errors
    /// As [`Counter::add`].
    ///
    /// # Cancel safety
    /// As [`Counter::add`].
    pub async fn increment(&self) -> Result<AddOutcome> {
        self.add(1).await
    }

    /// [`Counter::add`] of -1.
    ///
    /// # Errors
    /// As [`Counter::add`].
    ///
    /// # Cancel safety
    /// As [`Counter::add`].
    pub async fn decrement(&self) -> Result<AddOutcome> {
        self.add(-1).await
    }

    /// Watch the value change; see [`CounterWatcher`].
    pub fn watch(&self) -> CounterWatcher {
        CounterWatcher(Resumable::new(Follow {
            counter: self.clone(),
            last: None,
            watch: None,
        }))
    }
}

/// The changes of a [`Counter`]'s value, one [`CounterWatcher::next`] at a
/// time (Curator `SharedCount` listeners). The first `next` returns the
/// value now; each later one waits for a change and returns the value
/// then. Changes between two calls are coalesced: a burst of writes may be
/// seen as its last value only, but the latest value is never missed (the
/// watch is re-armed with each read). A write that leaves the value as it
/// was (a `set` of the same number) is not reported.
///
/// An [event stream](crate#event-streams) of `Result<i64>`: an
/// [`Error::InvalidArgument`] (a value that is not decimal text) or a lost
/// connection leaves it going; any other error is its last item.
#[derive(Debug)]
pub struct CounterWatcher(Resumable<Follow>);

/// What a [`CounterWatcher`] carries from one value to the next.
#[derive(Debug)]
struct Follow {
    counter: Counter,
    /// The value last returned.
    last: Option<i64>,
    /// Armed at the read that gave `last`.
    watch: Option<Watch>,
}

resumable_stream!(
    CounterWatcher,
    i64,
    /// The next value: the current one on the first call, then the first
    /// value different from the last one returned; `None` after an error
    /// other than `InvalidArgument` or `ConnectionLost`. The same as
    /// [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next).
    ///
    /// # Errors
    /// `Some(Err)`: [`Error::InvalidArgument`] when the node holds
    /// something other than decimal text for an `i64` (the watcher stays
    /// usable: the next call waits for the next change); the session's
    /// end; backend errors. Lost connections are retried.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while waiting, no change is consumed; the next
    /// call goes on from where this one was.
);

impl Advance for Follow {
    type Item = i64;

    async fn advance(&mut self) -> Result<i64> {
        let mut attempt = 0;
        loop {
            if let Some(w) = self.watch.as_mut() {
                let r = w.await;
                self.watch = None;
                match r {
                    Ok(()) => {}
                    Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                    Err(e) => return Err(e),
                }
            }
            let session = self.counter.value.session();
            let node = self.counter.path();
            match session.get_watch(node).await {
                Ok(Some((n, w))) => {
                    self.watch = Some(w);
                    let value = parse(node, &n.data, self.counter.initial)?;
                    if self.last != Some(value) {
                        self.last = Some(value);
                        return Ok(value);
                    }
                }
                Ok(None) => {
                    // No node (never written, or deleted): make it with
                    // the initial value, as `get` does, and watch that.
                    self.counter.read().await?;
                }
                Err(e) if e.is_retryable() => backoff(&mut attempt).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// A value that is not decimal text: the watch is armed, so the next
    /// step waits for the next change.
    fn goes_on(e: &Error) -> bool {
        e.is_retryable() || matches!(e, Error::InvalidArgument(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_text_only() {
        assert_eq!(parse("/c", b"", 7).ok(), Some(7));
        assert_eq!(parse("/c", b"-42", 0).ok(), Some(-42));
        assert_eq!(parse("/c", b"9223372036854775807", 0).ok(), Some(i64::MAX));
        for bad in [
            &b"x"[..],
            b"1.5",
            b"\x00\x00\x00\x05",
            b"99999999999999999999",
            b" 1",
        ] {
            assert!(
                matches!(parse("/c", bad, 0), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
        assert_eq!(encode(-5), b"-5");
    }
}
