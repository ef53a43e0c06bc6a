//! SIGINT and SIGTERM: noticed, never fatal by themselves; `main` decides.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::signal::unix::{signal, Signal, SignalKind};

/// A signal coordctl acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    Int,
    Term,
}

impl Sig {
    /// The exit code of a process ended by this signal.
    pub fn exit_code(self) -> u8 {
        match self {
            Sig::Int => 130,
            Sig::Term => 143,
        }
    }

    pub fn nix(self) -> nix::sys::signal::Signal {
        match self {
            Sig::Int => nix::sys::signal::Signal::SIGINT,
            Sig::Term => nix::sys::signal::Signal::SIGTERM,
        }
    }
}

/// The SIGINT and SIGTERM streams, and a flag that says one arrived.
pub struct Signals {
    int: Signal,
    term: Signal,
    seen: Arc<AtomicBool>,
}

impl Signals {
    /// Take over SIGINT and SIGTERM (from now on they no longer kill us).
    pub fn install() -> std::io::Result<Self> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            seen: Arc::new(AtomicBool::new(false)),
        })
    }

    /// A flag set once any signal arrived, for commands that loop.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.seen.clone()
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Sig {
        let sig = tokio::select! {
            _ = self.int.recv() => Sig::Int,
            _ = self.term.recv() => Sig::Term,
        };
        self.seen.store(true, Ordering::SeqCst);
        sig
    }
}
