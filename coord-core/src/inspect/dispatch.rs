//! [`inspect`]: what lives at a path, recognised by the signs each recipe
//! family leaves (one file per family).

use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::inspect::reader::{Listing, Reader};
use crate::inspect::report::{InspectOptions, Inspection, Kind, Role};
use crate::inspect::{election, group, job, lock, queue};
use crate::path;
use crate::session::Session;

/// Tell what lives at `path` and read its state; see the [module
/// docs](crate::inspect).
///
/// # Errors
/// [`Error::InvalidPath`] for a bad path (before any I/O); session and
/// backend errors. Connection drops are retried.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn inspect(session: &Session, path: &str) -> Result<Inspection> {
    inspect_with(session, path, &InspectOptions::default()).await
}

/// [`inspect`], with hints.
///
/// # Errors
/// As [`inspect`]; also [`Error::InvalidArgument`] for `max_leases` 0.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn inspect_with(
    session: &Session,
    path: &str,
    options: &InspectOptions,
) -> Result<Inspection> {
    path::validate(path)?;
    if options.max_leases == Some(0) {
        return Err(Error::InvalidArgument(
            "a semaphore has at least one lease".into(),
        ));
    }
    let now = SystemTime::now();
    let r = Reader { session, now };
    let mut out = Inspection {
        path: path.to_owned(),
        kind: Kind::Missing,
        entries: Vec::new(),
        queue: None,
        job: None,
        max_leases: None,
        notes: Vec::new(),
    };
    let node = r.get(path).await?;
    let children = match r.children(path).await? {
        Some(c) => c,
        None if node.is_none() => {
            out.notes.push(format!("nothing at {path}"));
            return Ok(out);
        }
        None => Vec::new(),
    };
    if children.is_empty() {
        match node {
            Some(n) if !n.data.is_empty() => {
                out.kind = Kind::Node;
                out.entries.push(r.entry(Role::Node, path, n));
                out.notes
                    .push("a node with data and nothing under it".to_owned());
            }
            _ => {
                out.kind = Kind::Empty;
                out.notes.push(format!(
                    "nothing under {path}: no recipe has anyone there now"
                ));
            }
        }
        return Ok(out);
    }
    let at = Listing {
        path,
        children: &children,
    };
    // In this order: a periodic job's `lock` directory, a semaphore's
    // `locks` and a queue's `items` would otherwise pass for what they hold.
    let found = job::probe(&r, &at, &mut out).await?
        || lock::probe_simple(&r, &at, &mut out).await?
        || lock::probe_semaphore(&r, &at, options.max_leases, &mut out).await?
        || queue::probe(&r, &at, &mut out).await?
        || lock::probe_rwlock(&r, &at, &mut out).await?
        || election::probe(&r, &at, &mut out).await?
        || lock::probe_lock(&r, &at, &mut out).await?
        || queue::probe_items(&r, &at, &mut out).await?
        || group::probe(&r, &at, &mut out).await?;
    if !found {
        group::named_or_unknown(&r, &at, &mut out).await?;
    }
    Ok(out)
}
