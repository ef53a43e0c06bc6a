//! Faults the suite injects between one session and its server: the one
//! [`Fault`] interface every backend's harness provides, and the one TCP
//! [`FaultProxy`] every server backend's harness puts a session behind.
//!
//! | fault | what the session sees | what the server sees |
//! |---|---|---|
//! | [`Fault::partition`] | silence: requests stall, no answer | silence |
//! | [`Fault::silence`] | no answer | every request (heartbeats too) |
//! | [`Fault::cut`] | connections closed, new ones refused | the connections close |
//! | [`Fault::lose_next_answer`] | the next request's answer never comes; its connection closes | the request |
//!
//! [`Fault::heal`] ends any of them.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A fault injector between one session and its server; see the module
/// docs. Each call takes effect at once for every connection of that
/// session, open or new.
pub trait Fault: Send + Sync {
    /// Stall traffic both ways, as a partition does: nothing the client
    /// sends reaches the server, nothing comes back; connections stay open
    /// (and carry on where they stopped after [`Fault::heal`]).
    fn partition(&self);

    /// Let requests reach the server but lose every answer (a one-way
    /// partition): the server keeps hearing the session's heartbeats while
    /// the client hears nothing.
    fn silence(&self);

    /// Close every connection and refuse new ones.
    fn cut(&self);

    /// Let traffic through again. After [`Fault::silence`] the connections
    /// that lost answers are closed (the client reconnects).
    fn heal(&self);

    /// Relay the next request to the server and lose its answer: the
    /// connection it went on is closed soon after, so the client sees a
    /// connection loss for a request that was applied.
    fn lose_next_answer(&self);
}

/// A shared fault injector is one: a client's opener keeps the proxy its
/// sessions go through while the test holds the faults.
impl<F: Fault + ?Sized> Fault for Arc<F> {
    fn partition(&self) {
        (**self).partition()
    }
    fn silence(&self) {
        (**self).silence()
    }
    fn cut(&self) {
        (**self).cut()
    }
    fn heal(&self) {
        (**self).heal()
    }
    fn lose_next_answer(&self) {
        (**self).lose_next_answer()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pass,
    Partition,
    Silence,
    Cut,
}

struct Ctl {
    mode: watch::Sender<Mode>,
    /// Bumped to close every open connection.
    kill: watch::Sender<u64>,
    lose_next: AtomicBool,
    lost_answers: AtomicUsize,
    connections: AtomicUsize,
}

/// A loopback TCP proxy in front of one server address, implementing
/// [`Fault`]. Start one per session under test and point the session's
/// connect string at [`FaultProxy::addr`]; it runs until dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    ctl: Arc<Ctl>,
    accept: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("mode", &*self.ctl.mode.borrow())
            .finish()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.ctl.kill.send_modify(|g| *g += 1);
    }
}

impl FaultProxy {
    /// Listen on a free loopback port and relay every connection to
    /// `upstream` (`host:port`).
    ///
    /// # Errors
    /// Panics when no loopback port can be bound: the test cannot run.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it returns, nothing is left listening.
    pub async fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the fault proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let ctl = Arc::new(Ctl {
            mode: watch::Sender::new(Mode::Pass),
            kill: watch::Sender::new(0),
            lose_next: AtomicBool::new(false),
            lost_answers: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        });
        let upstream = upstream.to_owned();
        let c = ctl.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *c.mode.borrow() == Mode::Cut {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                c.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(relay(client, server, c.clone()));
            }
        });
        FaultProxy { addr, ctl, accept }
    }

    /// The address to connect to instead of the server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many answers [`Fault::lose_next_answer`] has lost so far.
    pub fn lost_answers(&self) -> usize {
        self.ctl.lost_answers.load(Ordering::SeqCst)
    }

    /// How many connections the proxy has relayed so far.
    pub fn connections(&self) -> usize {
        self.ctl.connections.load(Ordering::SeqCst)
    }

    fn kill_all(&self) {
        self.ctl.kill.send_modify(|g| *g += 1);
    }
}

impl Fault for FaultProxy {
    fn partition(&self) {
        self.ctl.mode.send_replace(Mode::Partition);
    }

    fn silence(&self) {
        self.ctl.mode.send_replace(Mode::Silence);
    }

    fn cut(&self) {
        self.ctl.mode.send_replace(Mode::Cut);
        self.kill_all();
    }

    fn heal(&self) {
        let was = self.ctl.mode.send_replace(Mode::Pass);
        if was == Mode::Silence {
            // Answers were thrown away mid-stream: those connections are
            // garbage now; the client reconnects.
            self.kill_all();
        }
    }

    fn lose_next_answer(&self) {
        self.ctl.lose_next.store(true, Ordering::SeqCst);
    }
}

/// Wait while the proxy is partitioned; `false` when the connection must
/// close (cut, or killed).
async fn pass_partition(mode: &mut watch::Receiver<Mode>) -> bool {
    match mode.wait_for(|m| *m != Mode::Partition).await {
        Ok(m) => *m != Mode::Cut,
        Err(_) => false,
    }
}

/// Which way a [`pipe`] carries bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Client to server: requests.
    Up,
    /// Server to client: answers.
    Down,
}

/// Carry bytes one way until either side closes or the proxy cuts it:
/// stalled while partitioned (what was read before the partition is
/// delivered after it); upward, the request after which answers are lost;
/// downward, answers dropped while silenced or lost.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    way: Way,
    ctl: Arc<Ctl>,
    answers_lost: Arc<AtomicBool>,
) {
    let mut mode = ctl.mode.subscribe();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if !pass_partition(&mut mode).await {
            return;
        }
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            // A partition that starts while we wait: stop reading.
            _ = mode.wait_for(|m| *m == Mode::Partition) => continue,
        };
        if !pass_partition(&mut mode).await {
            return;
        }
        let dropped = way == Way::Down
            && (answers_lost.load(Ordering::SeqCst) || *mode.borrow() == Mode::Silence);
        if dropped {
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
        if way == Way::Up && ctl.lose_next.swap(false, Ordering::SeqCst) {
            ctl.lost_answers.fetch_add(1, Ordering::SeqCst);
            answers_lost.store(true, Ordering::SeqCst);
        }
    }
}

/// Relay one connection both ways until either side closes, the proxy
/// kills it, or a lost answer's grace period ends.
async fn relay(client: TcpStream, server: TcpStream, ctl: Arc<Ctl>) {
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let answers_lost = Arc::new(AtomicBool::new(false));
    let mut killed = ctl.kill.subscribe();
    let up = pipe(cr, sw, Way::Up, ctl.clone(), answers_lost.clone());
    let down = pipe(sr, cw, Way::Down, ctl.clone(), answers_lost.clone());
    // A connection whose answer was lost lives on long enough for the
    // server to apply the request and answer into the void, then closes.
    let lost_then_close = async {
        while !answers_lost.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    tokio::select! {
        () = up => {}
        () = down => {}
        () = lost_then_close => {}
        _ = killed.changed() => {}
    }
}

/// A [`Fault`] made of plain functions, for a backend whose faults are
/// hooks rather than a proxy (the in-memory backend).
pub struct FaultHooks {
    /// [`Fault::partition`].
    pub partition: Box<dyn Fn() + Send + Sync>,
    /// [`Fault::silence`].
    pub silence: Box<dyn Fn() + Send + Sync>,
    /// [`Fault::cut`].
    pub cut: Box<dyn Fn() + Send + Sync>,
    /// [`Fault::heal`].
    pub heal: Box<dyn Fn() + Send + Sync>,
    /// [`Fault::lose_next_answer`].
    pub lose_next_answer: Box<dyn Fn() + Send + Sync>,
}

impl Fault for FaultHooks {
    fn partition(&self) {
        (self.partition)()
    }
    fn silence(&self) {
        (self.silence)()
    }
    fn cut(&self) {
        (self.cut)()
    }
    fn heal(&self) {
        (self.heal)()
    }
    fn lose_next_answer(&self) {
        (self.lose_next_answer)()
    }
}
