//! Every public future of the recipes is `Send`, and every recipe, guard
//! and session is `Send + Sync`: so they can be spawned on a multi-threaded
//! runtime and shared between tasks. Tokio's pattern: this file fails to
//! compile when one of them stops being `Send` (say, a `std` mutex guard or
//! an `Rc` held across an `.await` inside a recipe).

use std::time::Duration;

use coordination::prelude::*;
use coordination::{
    Barrier, ChildrenCache, CounterWatcher, Delivery, DoubleBarrier, Election, Group, GroupWatcher,
    Inside, LatchWatcher, LeaderObserver, Leadership, Lease, Lock, LockGuard, Membership,
    MultiLock, MultiLockGuard, NodeCache, Participant, PartitionWatcher, PeriodicJob, Queue,
    ReadLock, ReentrantLock, ReliableQueue, RwLock, Semaphore, SemaphoreMutex, Session, SimpleLock,
    TreeCache, WriteLock,
};

/// `f` is `Send`: checked at compile time; the future is dropped unpolled.
fn send<F: std::future::Future + Send>(f: F) {
    drop(f);
}

fn send_sync<T: Send + Sync>() {}

fn send_only<T: Send>() {}

#[test]
fn recipes_guards_and_sessions_are_send_and_sync() {
    send_sync::<Session>();
    send_sync::<Lock>();
    send_sync::<SimpleLock>();
    send_sync::<RwLock>();
    send_sync::<ReadLock>();
    send_sync::<WriteLock>();
    send_sync::<Semaphore>();
    send_sync::<SemaphoreMutex>();
    send_sync::<MultiLock>();
    send_sync::<ReentrantLock<Lock>>();
    send_sync::<Election>();
    send_sync::<Participant>();
    send_sync::<Queue>();
    send_sync::<ReliableQueue>();
    send_sync::<Group>();
    send_sync::<Barrier>();
    send_sync::<DoubleBarrier>();
    send_sync::<PeriodicJob>();
    // Guards.
    send_sync::<LockGuard>();
    send_sync::<MultiLockGuard>();
    send_sync::<Lease>();
    send_sync::<Leadership>();
    send_sync::<Membership>();
    send_sync::<Delivery>();
    send_sync::<Inside>();
    // Read through `&mut self` only: `Send` is what they need (each holds
    // a pending watch, a `Send` future).
    send_only::<LeaderObserver>();
    send_only::<GroupWatcher>();
    send_only::<CounterWatcher>();
    send_only::<coord_core::Watch>();
    // The other event streams keep their channel receivers: shareable.
    send_sync::<TreeCache>();
    send_sync::<NodeCache>();
    send_sync::<ChildrenCache>();
    send_sync::<LatchWatcher>();
    send_sync::<PartitionWatcher>();
    send_sync::<coord_core::TreeWatch>();
}

#[tokio::test]
async fn every_public_future_is_send() -> coordination::Result<()> {
    let s = coordination::connect("mem://")
        .await
        .map_err(|e| coordination::Error::InvalidArgument(e.to_string()))?;
    let t = Duration::from_millis(1);
    let data: &[u8] = b"x";

    send(coordination::connect("mem://"));
    send(s.create("/b/n", data, coordination::CreateMode::Ephemeral));
    send(s.get("/b/n"));
    send(s.children("/b"));
    send(s.children_watch("/b"));
    send(s.get_watch("/b/n"));
    send(s.wait_gone("/b/n"));
    send(s.ended());
    send(s.close());

    let lock = Lock::new(&s, "/b/lock")?;
    send(lock.acquire());
    send(lock.try_acquire());
    send(lock.acquire_timeout(t));
    send(lock.participants());
    send(lock.run(|_| async { Ok::<_, coordination::Error>(()) }));
    let simple = SimpleLock::new(&s, "/b/simple")?;
    send(simple.acquire());
    send(simple.try_acquire());
    send(simple.acquire_timeout(t));
    let rw = RwLock::new(&s, "/b/rw")?;
    send(rw.read());
    send(rw.try_read());
    send(rw.read_timeout(t));
    send(rw.write());
    send(rw.try_write());
    send(rw.write_timeout(t));
    let sem = Semaphore::new(&s, "/b/sem", 2)?;
    send(sem.acquire(1));
    send(sem.try_acquire(1));
    send(sem.acquire_timeout(1, t));
    send(Semaphore::return_all(Vec::new()));
    let mutex = SemaphoreMutex::new(&s, "/b/mutex")?;
    send(mutex.acquire());
    send(mutex.try_acquire());
    send(mutex.acquire_timeout(t));
    let multi = MultiLock::new(vec![Box::new(Lock::new(&s, "/b/m1")?)])?;
    send(multi.acquire());
    send(multi.try_acquire());
    send(multi.acquire_timeout(t));
    let reentrant = ReentrantLock::new(Lock::new(&s, "/b/re")?);
    send(reentrant.acquire());
    send(reentrant.try_acquire());
    send(reentrant.acquire_timeout(t));
    let dyn_lock: &dyn Lockable = &lock;
    send(dyn_lock.acquire());
    send(coordination::revocation::request(&s, "/b/lock/x"));

    let election = Election::new(&s, "/b/election")?;
    send(election.campaign(data));
    send(election.campaign_timeout(data, t));
    send(election.leader());
    send(election.participants());
    send(election.lead(data, |_| async { Ok::<_, coordination::Error>(()) }));
    let mut observer = election.observe();
    send(observer.next());
    let mut participant = election.participate(data)?;
    send(participant.next());
    send(participant.wait_elected());
    send(participant.stop());

    let queue = Queue::new(&s, "/b/queue")?;
    send(queue.offer(data));
    send(queue.peek());
    send(queue.poll());
    send(queue.take());
    send(queue.take_timeout(t));
    send(queue.len());
    let reliable = Queue::reliable(&s, "/b/reliable")?;
    send(reliable.offer(data));
    send(reliable.poll());
    send(reliable.take());
    send(reliable.take_timeout(t));

    let group = Group::new(&s, "/b/group")?;
    send(group.join(data));
    send(group.join_as("me", data));
    send(group.members());
    send(group.member_names());
    let mut watcher = group.watch();
    send(watcher.next());

    let barrier = Barrier::new(&s, "/b/barrier")?;
    send(barrier.set());
    send(barrier.remove());
    send(barrier.wait());
    send(barrier.wait_timeout(t));
    let double = DoubleBarrier::new(&s, "/b/double", 2)?;
    send(double.enter());
    send(double.enter_timeout(t));

    let job = PeriodicJob::new(&s, "/b/job")?;
    send(job.last_run());
    send(job.run(1, |_| async { Ok::<_, String>(()) }));
    send(job.try_run(1, |_| async { Ok::<_, String>(()) }));

    // The guards' own futures, on real holds.
    let guard = lock.acquire().await?;
    send(guard.lost());
    send(guard.revocation_requested());
    send(guard.write(coordination::Op::Delete {
        path: "/b/none".into(),
        version: None,
    }));
    send(guard.release());
    let mut leadership = Election::new(&s, "/b/e2")?.campaign(data).await?;
    send(leadership.lost());
    send(leadership.proclaim(data));
    send(leadership.resign());
    let leases = sem.acquire(1).await?;
    for lease in leases {
        send(lease.lost());
        send(lease.data());
        send(lease.release());
    }
    let membership = group.join(data).await?;
    send(membership.lost());
    send(membership.set_data(data));
    send(membership.leave());
    reliable.offer(data).await?;
    let delivery = reliable.take().await?;
    send(delivery.lost());
    send(delivery.release());
    let held = multi.acquire().await?;
    send(held.lost());
    send(held.release());
    participant.stop().await?;
    s.close().await
}
