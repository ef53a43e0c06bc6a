//! The recipes, with an example of each. They are written once, over the
//! primitive contract, and behave the same on every backend; the examples
//! run on `mem://` (swap the URL for a real server's).
//!
//! # [`Lock`]: an exclusive lock without herd effect
//!
//! FIFO; a waiter watches only its predecessor; the fencing token strictly
//! increases across holders, so a resource can refuse a stale holder.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::{Error, Lock};
//!
//! let session = coordination::connect("mem://").await?;
//! let lock = Lock::new(&session, "/locks/report")?;
//! let guard = lock.acquire().await?;
//! let first = guard.fencing_token();
//!
//! // Someone else (here: another session) cannot take it meanwhile.
//! let other = coordination::connect("mem://").await?;
//! let theirs = Lock::new(&other, "/locks/report")?;
//! assert!(theirs.try_acquire().await?.is_none());
//! assert!(matches!(
//!     theirs.acquire_timeout(Duration::from_millis(50)).await,
//!     Err(Error::Timeout(_))
//! ));
//!
//! guard.release().await?;
//! let next = theirs.acquire().await?;
//! assert!(next.fencing_token() > first);
//! next.release().await?;
//! # Ok(()) }
//! ```
//!
//! # [`RwLock`]: readers share, a writer is alone
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::RwLock;
//!
//! let session = coordination::connect("mem://").await?;
//! let rw = RwLock::new(&session, "/locks/config")?;
//! let r1 = rw.read().await?;
//! let r2 = rw.read().await?; // readers share
//! assert!(rw.try_write().await?.is_none()); // the writer waits for them
//! r1.release().await?;
//! r2.release().await?;
//! let w = rw.write().await?;
//! w.release().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Semaphore`] and [`SemaphoreMutex`]: N leases
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{Semaphore, SemaphoreMutex};
//!
//! let session = coordination::connect("mem://").await?;
//! let sem = Semaphore::new(&session, "/semaphores/db-connections", 3)?;
//! let two = sem.acquire(2).await?; // all or nothing
//! assert!(sem.try_acquire(2).await?.is_none()); // only 1 left
//! Semaphore::return_all(two).await?;
//!
//! // A non-reentrant mutex: not even the same handle takes it twice.
//! let mutex = SemaphoreMutex::new(&session, "/semaphores/migration")?;
//! let held = mutex.acquire().await?;
//! assert!(mutex.try_acquire().await?.is_none());
//! held.release().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Election`]: one leader, everyone can see who
//!
//! One way in, [`Election::new`]; then take part by
//! [`campaign`](Election::campaign) (wait, lead, resign: below),
//! `lead` (a scoped campaign, under "Any lock" below),
//! [`participate`](Election::participate) (a task and its events) or
//! [`latch`](Election::latch) (Curator's [`LeaderLatch`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::Election;
//!
//! let session = coordination::connect("mem://").await?;
//! let election = Election::new(&session, "/elections/scheduler")?;
//! let mut observer = election.observe(); // anyone can follow the leader
//!
//! let leadership = election.campaign(b"host-a").await?;
//! let leader = election.leader().await?.map(|l| l.value);
//! assert_eq!(leader.as_deref(), Some(&b"host-a"[..]));
//! assert_eq!(observer.next().await.ok_or("the observer ended")??.value, b"host-a");
//!
//! // Meanwhile host-b waits in line, and takes over on resignation.
//! let other = coordination::connect("mem://").await?;
//! let b = tokio::spawn({
//!     let election = Election::new(&other, "/elections/scheduler")?;
//!     async move { election.campaign(b"host-b").await }
//! });
//! leadership.resign().await?;
//! let b = b.await??;
//! assert_eq!(observer.next().await.ok_or("the observer ended")??.value, b"host-b");
//! b.resign().await?;
//! # Ok(()) }
//! ```
//!
//! [`Election::participate`] runs the ZooKeeper recipes'
//! `LeaderElectionSupport` state machine in a task instead, and streams its
//! events ([`ElectionEvent`]):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{Election, ElectionEvent};
//!
//! let session = coordination::connect("mem://").await?;
//! let election = Election::new(&session, "/elections/indexer")?;
//! let mut participant = election.participate(b"host-a")?;
//! let token = participant.wait_elected().await?;
//! assert!(participant.is_leader());
//! assert_eq!(participant.fencing_token(), Some(token));
//! participant.stop().await?;
//! let mut events = Vec::new();
//! while let Some(e) = participant.try_next() {
//!     events.push(e);
//! }
//! assert_eq!(events.first(), Some(&ElectionEvent::Start));
//! assert_eq!(events.last(), Some(&ElectionEvent::StopComplete));
//! # Ok(()) }
//! ```
//!
//! # [`Queue`] and [`ReliableQueue`]: FIFO, and nothing lost
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::Queue;
//!
//! let session = coordination::connect("mem://").await?;
//! let queue = Queue::new(&session, "/queues/jobs")?;
//! queue.offer(b"job 1").await?;
//! queue.offer(b"job 2").await?;
//! assert_eq!(queue.len().await?, 2);
//! assert_eq!(queue.take().await?, b"job 1");
//! assert_eq!(queue.poll().await?.as_deref(), Some(&b"job 2"[..]));
//! assert_eq!(queue.poll().await?, None);
//!
//! // Reliable mode: an item is leased until acknowledged; if the consumer
//! // dies first, the item is delivered again.
//! let reliable = Queue::reliable(&session, "/queues/payments")?;
//! reliable.offer(b"pay 42").await?;
//! let delivery = reliable.take().await?;
//! assert_eq!(delivery.data(), b"pay 42");
//! delivery.ack().await?;
//! # Ok(()) }
//! ```
//!
//! # [`PriorityQueue`] and [`DelayQueue`]: by priority, or from a time
//!
//! The same engine, plain or reliable ([`ReliablePriorityQueue`],
//! [`ReliableDelayQueue`]), with Curator's item names. Lower priority
//! numbers come first, FIFO among equals; a delayed item is taken from its
//! due time, by the taker's clock.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::{DelayQueue, PriorityQueue};
//!
//! let session = coordination::connect("mem://").await?;
//! let jobs = PriorityQueue::new(&session, "/queues/jobs")?;
//! jobs.offer(b"batch", 10).await?;
//! jobs.offer(b"interactive", 0).await?;
//! assert_eq!(jobs.take().await?, b"interactive");
//!
//! let reminders = DelayQueue::reliable(&session, "/queues/reminders")?;
//! reminders.offer(b"call back", Duration::from_millis(100)).await?;
//! assert!(reminders.poll().await?.is_none()); // not due yet
//! let delivery = reminders.take().await?; // waits until it is
//! assert_eq!(delivery.data(), b"call back");
//! delivery.ack().await?;
//! # Ok(()) }
//! ```
//!
//! # [`LeaderLatch`]: Curator's latch over the election
//!
//! [`Election::latch`] joins at once and stays until closed;
//! `has_leadership`, `await_leadership` and a watcher of `IsLeader` /
//! `NotLeader`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::{Election, Error, LatchEvent};
//!
//! let (a, b) = (coordination::connect("mem://").await?, coordination::connect("mem://").await?);
//! let first = Election::new(&a, "/latches/scheduler")?.latch(b"host-a")?;
//! let token = first.await_leadership().await?;
//! let second = Election::new(&b, "/latches/scheduler")?.latch(b"host-b")?;
//! assert!(matches!(
//!     second.await_leadership_timeout(Duration::from_millis(50)).await,
//!     Err(Error::Timeout(_))
//! ));
//! let mut events = second.watch();
//! assert_eq!(events.next().await, Some(LatchEvent::NotLeader));
//! first.close().await?; // the next latch in line leads
//! let next = second.await_leadership().await?;
//! assert!(next > token);
//! assert_eq!(events.next().await, Some(LatchEvent::IsLeader { token: next }));
//! second.close().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Partitioner`]: members split a set of items
//!
//! kazoo's `SetPartitioner`: each item has one owner (a lock per item), and
//! owners release before the set is split again. One way in:
//! [`SetPartitioner::new`] (then `settle`, if wanted), then `join`. On a
//! [`Client`], [`SetPartitioner::on_client`] makes a
//! [`RejoiningPartitioner`]: after a session
//! ends it reports `PartitionState::Lost`, joins again on the client's next
//! session and takes its share afresh, with larger fencing tokens.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{PartitionState, SetPartitioner};
//!
//! let (a, b) = (coordination::connect("mem://").await?, coordination::connect("mem://").await?);
//! let items = ["q0", "q1", "q2", "q3"];
//! let one = SetPartitioner::new(&a, "/partitions/queues", "worker-1", items)?.join().await?;
//! assert_eq!(one.wait_acquired().await?, items);
//!
//! let two = SetPartitioner::new(&b, "/partitions/queues", "worker-2", items)?.join().await?;
//! let mut states = one.watch();
//! while states.next().await != Some(PartitionState::Release) {}
//! one.release().await?; // done with q0..q3: let them be split again
//! assert_eq!(one.wait_acquired().await?, ["q0", "q2"]);
//! assert_eq!(two.wait_acquired().await?, ["q1", "q3"]);
//! one.close().await?;
//! two.close().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Group`]: who is alive
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::Group;
//!
//! let session = coordination::connect("mem://").await?;
//! let group = Group::new(&session, "/groups/workers")?;
//! let mut watcher = group.watch();
//! assert!(watcher.next().await.ok_or("the watcher ended")??.members.is_empty());
//!
//! let me = group.join(b"10.0.0.7:8080").await?; // gone when my session ends
//! let change = watcher.next().await.ok_or("the watcher ended")??;
//! assert_eq!(change.joined, [me.name().to_owned()]);
//! assert_eq!(group.members().await?[0].data, b"10.0.0.7:8080");
//!
//! me.leave().await?;
//! assert_eq!(watcher.next().await.ok_or("the watcher ended")??.left.len(), 1);
//! # Ok(()) }
//! ```
//!
//! # [`GroupMember`] and [`PersistentNode`]: back after the session ends
//!
//! Built on a [`Client`] (a session now, the next one after it ends)
//! rather than on one session: the member joins again, under the same name
//! with the same data, on every new session (Curator's `GroupMember`); a
//! [`PersistentNode`] is any node kept so (Curator's `PersistentNode`:
//! ephemeral at a path, under a unique name, or a TTL node). Their
//! [`Presence`] stream says `Absent` when the node is lost, always before
//! it is `Present` again.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::{Group, GroupMember, Presence};
//!
//! let client = coordination::client("mem://").await?;
//! let me = GroupMember::join(&client, "/groups/api", "host-7", b"10.0.0.7:8080")?;
//! me.wait_joined(Duration::from_secs(5)).await?;
//! let mut presence = me.watch();
//! assert!(matches!(presence.next().await, Some(Presence::Present { generation: 1, .. })));
//!
//! // The server ends the session: the member is gone, then back.
//! coordination::default_mem_store().expire(&client.session().await?.id());
//! assert!(matches!(presence.next().await, Some(Presence::Absent)));
//! assert!(matches!(presence.next().await, Some(Presence::Present { generation: 2, .. })));
//! let viewer = coordination::connect("mem://").await?;
//! let members = Group::new(&viewer, "/groups/api")?.members().await?;
//! assert_eq!((members[0].name.as_str(), members[0].data.as_slice()), ("host-7", &b"10.0.0.7:8080"[..]));
//!
//! me.leave().await?;
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! # [`ServiceRegistration`], [`ServiceCache`], [`ServiceProvider`]: service discovery
//!
//! Curator x-discovery's layout: an instance is the ephemeral node
//! `BASE/NAME/ID` holding Curator's JSON ([`ServiceInstance::to_json`]), so
//! Curator's `ServiceDiscovery` sees coord's instances and coord sees
//! Curator's. A registration is kept on every session of a [`Client`]; a
//! provider picks by round robin, at random or sticky, and skips an
//! instance noted in error twice for 30 s (Curator's `DownInstancePolicy`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::{
//!     DownInstancePolicy, ProviderStrategy, ServiceCache, ServiceInstance, ServiceProvider,
//!     ServiceRegistration,
//! };
//!
//! let client = coordination::client("mem://").await?;
//! let me = ServiceInstance::new("api", "10.0.0.7", 8080);
//! let reg = ServiceRegistration::register(&client, "/services", me)?;
//! reg.wait_registered(Duration::from_secs(5)).await?;
//!
//! let cache = ServiceCache::follow(&client, "/services", "api")?;
//! let provider =
//!     ServiceProvider::start(cache, ProviderStrategy::RoundRobin, DownInstancePolicy::default())
//!         .await?;
//! assert_eq!(provider.instance().map(|i| i.endpoint()).as_deref(), Some("10.0.0.7:8080"));
//! reg.unregister().await?;
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Barrier`] and [`DoubleBarrier`]
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{Barrier, DoubleBarrier};
//!
//! let session = coordination::connect("mem://").await?;
//! // A barrier holds every waiter until it is removed.
//! let barrier = Barrier::new(&session, "/barriers/deploy")?;
//! barrier.set().await?;
//! let waiter = tokio::spawn({
//!     let barrier = barrier.clone();
//!     async move { barrier.wait().await }
//! });
//! barrier.remove().await?;
//! waiter.await??;
//!
//! // A double barrier: enter when all 3 are in, leave when all are out.
//! let mut rounds = Vec::new();
//! for _ in 0..3 {
//!     let s = coordination::connect("mem://").await?;
//!     let round = DoubleBarrier::new(&s, "/barriers/round-1", 3)?;
//!     rounds.push(tokio::spawn(async move {
//!         let inside = round.enter().await?;
//!         // ... compute ...
//!         inside.leave().await
//!     }));
//! }
//! for r in rounds {
//!     r.await??;
//! }
//! # Ok(()) }
//! ```
//!
//! # [`PeriodicJob`]: at most once per period, across instances
//!
//! Every instance calls [`PeriodicJob::run`] each period; one runs the
//! job, the others find it done — also when the runner crashes mid-run
//! (what happens to that period is [`OnCrash`]'s choice).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::{Duration, SystemTime};
//! use coordination::{period_index, PeriodicJob, RunOutcome};
//!
//! let period = period_index(SystemTime::now(), Duration::from_secs(6 * 3600));
//! let mut ran = 0;
//! for _pod in 0..3 {
//!     let session = coordination::connect("mem://").await?;
//!     let job = PeriodicJob::new(&session, "/jobs/revenue-sql")?;
//!     let outcome = job
//!         .run(period, |ctx| async move {
//!             // Pass ctx.fencing_token() to what the job writes.
//!             Ok::<_, String>(ctx.period())
//!         })
//!         .await?;
//!     if let RunOutcome::Ran(_) = outcome {
//!         ran += 1;
//!     }
//! }
//! assert_eq!(ran, 1);
//! # Ok(()) }
//! ```
//!
//! # [`SimpleLock`]: the herd-effect baseline
//!
//! Exclusive, not FIFO: every waiter watches the one lock node, so every
//! release wakes them all (the ZooKeeper paper's simple lock, the baseline
//! [`Lock`] is measured against). Use [`Lock`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::SimpleLock;
//!
//! let session = coordination::connect("mem://").await?;
//! let lock = SimpleLock::new(&session, "/locks/baseline")?;
//! let guard = lock.acquire().await?;
//! assert!(lock.try_acquire().await?.is_none());
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Any lock: [`Lockable`](crate::prelude::Lockable), and scoped holds
//!
//! Every lock — [`Lock`], [`SimpleLock`], [`SemaphoreMutex`], the
//! [`ReadLock`] and [`WriteLock`] halves of a [`RwLock`], a
//! [`ReentrantLock`] — is a [`Lockable`](crate::prelude::Lockable) returning a
//! [`LockGuard`]; every guard (leadership, lease, membership, delivery too)
//! is a [`Hold`](crate::prelude::Hold). `run` and `lead` acquire, run a body and
//! release; if the hold is lost meanwhile, the body is dropped and the loss
//! returned.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::prelude::*;
//! use coordination::{Election, Lock, RwLock};
//!
//! let session = coordination::connect("mem://").await?;
//! let locks: Vec<Box<dyn Lockable>> = vec![
//!     Box::new(Lock::new(&session, "/locks/a")?),
//!     Box::new(RwLock::new(&session, "/locks/b")?.write_lock()),
//! ];
//! for lock in &locks {
//!     let token = lock.run(|held| async move { held.fencing_token() }).await?;
//!     assert!(token > 0);
//! }
//! let election = Election::new(&session, "/elections/cron")?;
//! let term = election.lead(b"me", |term| async move { term.fencing_token() }).await?;
//! assert!(term > 0);
//! # Ok(()) }
//! ```
//!
//! # [`MultiLock`]: several locks, all or nothing
//!
//! Taken in one global order (by path), so two multi-locks over
//! overlapping sets cannot deadlock; a timeout releases what was taken.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use coordination::prelude::*;
//! use coordination::{Error, Lock, MultiLock};
//!
//! let session = coordination::connect("mem://").await?;
//! let transfer = MultiLock::new(vec![
//!     Box::new(Lock::new(&session, "/accounts/2")?) as Box<dyn Lockable>,
//!     Box::new(Lock::new(&session, "/accounts/1")?),
//! ])?;
//! let both = transfer.acquire().await?;
//! assert_eq!(both.guards().len(), 2);
//!
//! // Another session cannot take either while both are held.
//! let other = coordination::connect("mem://").await?;
//! let one = Lock::new(&other, "/accounts/1")?;
//! assert!(matches!(one.acquire_timeout(Duration::from_millis(20)).await, Err(Error::Timeout(_))));
//! both.release().await?;
//! one.acquire().await?.release().await?;
//! # Ok(()) }
//! ```
//!
//! # [`ReentrantLock`]: re-enter as the same owner
//!
//! The owner is the `ReentrantLock` value and its clones, not the task;
//! holds are counted and the lock is released when the last one goes.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{Lock, ReentrantLock};
//!
//! let session = coordination::connect("mem://").await?;
//! let mine = ReentrantLock::new(Lock::new(&session, "/locks/ledger")?);
//! let outer = mine.acquire().await?;
//! let inner = mine.clone().acquire().await?; // the same owner: at once
//! assert_eq!(mine.hold_count(), 2);
//!
//! let theirs = ReentrantLock::new(Lock::new(&session, "/locks/ledger")?);
//! assert!(theirs.try_acquire().await?.is_none()); // another owner waits
//! inner.release().await?;
//! outer.release().await?; // the last hold: released
//! theirs.acquire().await?.release().await?;
//! # Ok(()) }
//! ```
//!
//! # [`Counter`]: a shared number, no update lost
//!
//! An `i64` stored as decimal text (kazoo `Counter`'s format). `add` is a
//! compare-and-set retried on conflicts, so concurrent adds all count;
//! `watch` reports changes (coalesced, never missing the latest value).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::Counter;
//!
//! let session = coordination::connect("mem://").await?;
//! let hits = Counter::new(&session, "/stats/hits")?;
//! let mut changes = hits.watch();
//! assert_eq!(changes.next().await.transpose()?, Some(0)); // the value now
//! let added = hits.add(5).await?;
//! assert_eq!((added.pre, added.post), (0, 5));
//! assert_eq!(changes.next().await.transpose()?, Some(5)); // the change
//! let (value, version) = hits.get().await?;
//! assert!(hits.compare_and_set(version, value + 1).await?);
//! assert!(!hits.compare_and_set(version, 0).await?); // stale version
//! assert!(matches!(hits.add(i64::MAX).await, Err(coordination::Error::InvalidArgument(_))));
//! # Ok(()) }
//! ```
//!
//! # [`NodeCache`], [`ChildrenCache`], [`TreeCache`]: a local view
//!
//! A node, a directory's children, or a subtree to a depth, kept current;
//! each change arrives as a [`CacheEvent`], and no change is missed.
//! `start(&session, ..)` caches on one session; `follow(&client, ..)` on
//! every session of a [`Client`], reloading after each
//! session's end and reporting only what changed (after a
//! [`CacheEvent::Reset`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::{CacheEvent, ChildrenCache, CreateMode};
//!
//! let session = coordination::connect("mem://").await?;
//! session.create("/services/api/10.0.0.7", b"up", CreateMode::Persistent).await?;
//! let mut cache = ChildrenCache::start(&session, "/services/api")?;
//! while cache.next().await.transpose()? != Some(CacheEvent::Initialized) {}
//! assert_eq!(cache.current()["/services/api/10.0.0.7"].data, b"up");
//!
//! let writer = coordination::connect("mem://").await?;
//! writer.delete("/services/api/10.0.0.7", None).await?;
//! let removed = CacheEvent::Removed { path: "/services/api/10.0.0.7".into() };
//! assert_eq!(cache.next().await.transpose()?, Some(removed));
//! cache.close();
//! # Ok(()) }
//! ```
//!
//! # Revocation and participants
//!
//! A contender can ask the holder to let go (Curator's `Revoker`, and the
//! same `__REVOKE__` request, so Curator holders hear ours); the holder sees
//! it on its guard and decides. `participants()` lists holders and waiters
//! in queue order.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use coordination::prelude::*;
//! use coordination::{ContenderState, Lock};
//!
//! let session = coordination::connect("mem://").await?;
//! let lock = Lock::new(&session, "/locks/report")?.with_data("host-a")?;
//! let guard = lock.acquire().await?;
//! let holders = lock.participants().await?;
//! assert_eq!(holders[0].state, ContenderState::Holding);
//! assert_eq!(holders[0].data, b"host-a");
//!
//! let other = coordination::connect("mem://").await?;
//! let asked = Lock::new(&other, "/locks/report")?.request_release().await?;
//! assert_eq!(asked, vec![guard.node_path().to_owned()]);
//! guard.revocation_requested().await?; // the holder hears it…
//! guard.release().await?; // …and decides to let go
//! # Ok(()) }
//! ```

// In scope for the links above; the types' one public path is `coordination::…`.
#[allow(unused_imports)]
use crate::*;
