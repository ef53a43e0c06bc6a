//! The election trait, [`LeaderElection`], and its implementation by
//! [`Election`].

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::hold::contenders::Contender;
use crate::hold::{while_held, HoldContext};
use crate::recipes::election::leader::{Election, Leader, LeaderObserver};
use crate::recipes::election::leadership::Leadership;

/// A leader election (etcd's `Election`, Curator's `LeaderLatch`),
/// implemented by [`Election`](crate::recipes::Election). Campaign for
/// leadership, read or follow the leader, list the candidates; leadership
/// is a [`Hold`](crate::prelude::Hold), given up by resigning (its
/// `release`).
///
/// ```
/// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
/// use coord_core::prelude::*;
/// use coord_core::recipes::Election;
///
/// async fn serve_as_leader(election: &dyn LeaderElection) -> coord_core::Result<()> {
///     let leadership = election.campaign(b"host-a").await?;
///     let leader = election.leader().await?;
///     assert_eq!(leader.map(|l| l.token), Some(leadership.fencing_token()));
///     leadership.resign().await
/// }
/// serve_as_leader(&Election::new(&session, "/elections/scheduler")?).await?;
/// # Ok(()) }
/// ```
#[async_trait]
pub trait LeaderElection: Send + Sync + std::fmt::Debug {
    /// The election's path (its directory).
    fn path(&self) -> &str;

    /// Offer `value` and wait until this offer leads.
    ///
    /// `value` is `&[u8]` here, not `impl AsRef<[u8]>` as on the recipes:
    /// a generic method would make the trait unusable as
    /// `dyn LeaderElection`. [`Election::campaign`](crate::recipes::Election::campaign),
    /// which a call on an `Election` reaches first, takes any bytes and
    /// forwards here; through the trait, pass `b"…"`, `s.as_bytes()` or
    /// `&vec`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a value
    /// over the data limit; the session's end; backend errors.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped at any point, the offer is withdrawn.
    async fn campaign(&self, value: &[u8]) -> Result<Leadership>;

    /// [`LeaderElection::campaign`], giving up after `timeout` (`value`:
    /// `&[u8]`, for the same reason).
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when it runs out (the
    /// offer is withdrawn); otherwise as [`LeaderElection::campaign`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`LeaderElection::campaign`].
    async fn campaign_timeout(&self, value: &[u8], timeout: Duration) -> Result<Leadership>;

    /// The current leader, or `None` when nobody campaigns.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn leader(&self) -> Result<Option<Leader>>;

    /// Follow leader changes, participant or not.
    fn observe(&self) -> LeaderObserver;

    /// Every candidate in order: the leader first (holding), then the
    /// waiting ones.
    ///
    /// # Errors
    /// The session's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    async fn participants(&self) -> Result<Vec<Contender>>;
}

/// Scoped leadership for any [`LeaderElection`].
#[async_trait]
pub trait LeaderElectionExt: LeaderElection {
    /// Campaign with `value` (any bytes: `&str`, `String`, `&[u8]`,
    /// `Vec<u8>`, `b"…"`), run `body` as leader, resign. If leadership
    /// is lost while `body` runs, `body` is dropped and the reason
    /// returned; see [`while_held`](crate::recipes::while_held).
    ///
    /// ```
    /// # async fn demo(session: coord_core::Session) -> coord_core::Result<()> {
    /// use coord_core::prelude::*;
    /// let election = coord_core::recipes::Election::new(&session, "/elections/cron")?;
    /// election.lead(b"host-a", |term| async move {
    ///     println!("leading, term {}", term.fencing_token());
    /// }).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LeaderElection::campaign`]'s; the reason leadership was lost
    /// while `body` ran or before resigning.
    ///
    /// # Cancel safety
    /// Cancel safe in effect: dropped, `body` is dropped and the offer or
    /// leadership is withdrawn in the background.
    async fn lead<F, Fut, T>(&self, value: impl AsRef<[u8]> + Send, body: F) -> Result<T>
    where
        F: FnOnce(HoldContext) -> Fut + Send,
        Fut: Future<Output = T> + Send,
        T: Send,
    {
        while_held(self.campaign(value.as_ref()).await?, body).await
    }
}

impl<E: LeaderElection + ?Sized> LeaderElectionExt for E {}

#[async_trait]
impl LeaderElection for Election {
    fn path(&self) -> &str {
        Election::path(self)
    }
    async fn campaign(&self, value: &[u8]) -> Result<Leadership> {
        Election::campaign(self, value).await
    }
    async fn campaign_timeout(&self, value: &[u8], timeout: Duration) -> Result<Leadership> {
        Election::campaign_timeout(self, value, timeout).await
    }
    async fn leader(&self) -> Result<Option<Leader>> {
        Election::leader(self).await
    }
    fn observe(&self) -> LeaderObserver {
        Election::observe(self)
    }
    async fn participants(&self) -> Result<Vec<Contender>> {
        Election::participants(self).await
    }
}
