//! Running CMD: spawned with coordctl's stdin, stdout and stderr, owned by
//! a task that reaps it and delivers signals to it (only while it is
//! unreaped, so a signal never reaches a recycled pid).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio::sync::{mpsc, watch};

use crate::exit::{self, Failure};

/// How long CMD gets after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(10);

/// A running (or finished) CMD.
#[derive(Clone)]
pub struct Proc {
    signals: mpsc::UnboundedSender<Signal>,
    status: watch::Receiver<Option<u8>>,
}

impl Proc {
    /// Send `sig` to CMD if it is still running.
    pub fn signal(&self, sig: Signal) {
        let _ = self.signals.send(sig);
    }

    /// Whether CMD has ended.
    pub fn finished(&self) -> bool {
        self.status.borrow().is_some()
    }

    /// Wait for CMD to end: its exit code (128+S when killed by signal S).
    pub async fn wait(&self) -> u8 {
        let mut rx = self.status.clone();
        let code = match rx.wait_for(Option::is_some).await {
            Ok(s) => s.unwrap_or(exit::BACKEND),
            // The reaper is gone: it can only have ended with CMD.
            Err(_) => exit::BACKEND,
        };
        code
    }

    /// SIGTERM, then SIGKILL after [`GRACE`]; returns CMD's exit code.
    pub async fn terminate(&self) -> u8 {
        self.signal(Signal::SIGTERM);
        self.reap().await
    }

    /// Wait for CMD, already sent SIGTERM, to end: SIGKILL if it has not
    /// after [`GRACE`]. Returns CMD's exit code.
    pub async fn reap(&self) -> u8 {
        match tokio::time::timeout(GRACE, self.wait()).await {
            Ok(code) => code,
            Err(_) => {
                self.signal(Signal::SIGKILL);
                self.wait().await
            }
        }
    }
}

/// The CMD of this coordctl, if one has been started.
#[derive(Clone, Default)]
pub struct Children {
    current: Arc<Mutex<Option<Proc>>>,
}

impl Children {
    /// Start `cmd` with `env` added to coordctl's environment.
    pub fn spawn(&self, cmd: &[String], env: &[(&str, String)]) -> Result<Proc, Failure> {
        let (program, args) = cmd
            .split_first()
            .ok_or_else(|| Failure::new(exit::USAGE, "no command given after --"))?;
        let mut command = Command::new(program);
        command.args(args);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().map_err(|e| {
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => exit::NOT_FOUND,
                _ => exit::CANNOT_EXECUTE,
            };
            Failure::new(code, format!("cannot run {program:?}: {e}"))
        })?;
        let (sig_tx, mut sig_rx) = mpsc::unbounded_channel::<Signal>();
        let (status_tx, status_rx) = watch::channel(None);
        tokio::spawn(async move {
            let code = loop {
                tokio::select! {
                    status = child.wait() => break match status {
                        Ok(s) => exit_code(s),
                        Err(_) => exit::BACKEND,
                    },
                    Some(sig) = sig_rx.recv() => {
                        // Not reaped yet: the pid is still CMD's.
                        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                            let _ = kill(Pid::from_raw(pid), sig);
                        }
                    }
                }
            };
            let _ = status_tx.send(Some(code));
        });
        let proc = Proc {
            signals: sig_tx,
            status: status_rx,
        };
        if let Ok(mut c) = self.current.lock() {
            *c = Some(proc.clone());
        }
        Ok(proc)
    }

    /// The CMD still running, if any.
    pub fn running(&self) -> Option<Proc> {
        self.current
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .filter(|p| !p.finished())
    }
}

/// A shell-style exit code: the status, or 128+S for a death by signal S.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(exit::BACKEND),
        (None, Some(s)) => u8::try_from(128 + (s & 0x7f)).unwrap_or(exit::BACKEND),
        (None, None) => exit::BACKEND,
    }
}

/// Terminates CMD when dropped before CMD ended (a job future dropped by
/// its recipe when the lock is lost).
pub struct TermOnDrop(pub Proc);

impl Drop for TermOnDrop {
    fn drop(&mut self) {
        if !self.0.finished() {
            let p = self.0.clone();
            tokio::spawn(async move {
                p.terminate().await;
            });
        }
    }
}
