//! TTL nodes on etcd (see `coord_core::CreateMode`'s "TTL nodes"): the key
//! is attached to a lease of its own, granted with the node's TTL (whole
//! seconds, rounded up). Next to it, under a key outside the tree
//! (`<namespace>!ttl/<lease in hex>`, on the same lease, so it goes with
//! it), a marker says that lease is a TTL node's and not a session's: that
//! is how a `set` by any session knows to restart the TTL (one keep-alive
//! on the lease resets it to its granted TTL) without extending a
//! session's lease, and how `get` reports a TTL node as not ephemeral.
//!
//! A child under a TTL node is refused as under an ephemeral node (the
//! create's compares ask every ancestor to have no lease): etcd would
//! delete the TTL node's key alone and leave its children behind.

use std::time::Duration;

use coord_core::{Error, Result, Stat};
use etcd_client::PutOptions;

use crate::shared::Shared;

/// The lease of a TTL node's key, seconds rounded up (at least 1).
pub(crate) fn lease_secs(ttl: Duration) -> i64 {
    let secs = ttl.as_nanos().div_ceil(1_000_000_000);
    i64::try_from(secs).unwrap_or(i64::MAX).max(1)
}

/// Grant the lease for a TTL node of `ttl` and write its marker; the
/// lease's id. The lease is revoked again if the marker cannot be written.
///
/// Never through [`Shared::call`]'s mapping of "lease not found" to the
/// session's expiry: these leases are not the session's.
pub(crate) async fn grant(shared: &Shared, ttl: Duration) -> Result<i64> {
    let secs = lease_secs(ttl);
    let granted = shared
        .call(false, || {
            let mut lease = shared.client.lease_client();
            async move { lease.grant(secs, None).await }
        })
        .await?;
    let id = granted.id();
    let marker = shared.keys.ttl_marker(id);
    let put = shared
        .call(false, || {
            let mut kv = shared.kv_client();
            let marker = marker.clone();
            async move {
                kv.put(
                    marker,
                    secs.to_string(),
                    Some(PutOptions::new().with_lease(id)),
                )
                .await
            }
        })
        .await;
    if let Err(e) = put {
        revoke(shared, id).await;
        return Err(e);
    }
    Ok(id)
}

/// Revoke a TTL node's lease (its create failed), best effort: one left
/// behind expires on its own after its TTL.
pub(crate) async fn revoke(shared: &Shared, id: i64) {
    let mut lease = shared.client.lease_client();
    let left = shared.request_timeout;
    if let Ok(Err(e)) = tokio::time::timeout(left, lease.revoke(id)).await {
        tracing::debug!(error = %e, lease = id, "etcd: could not revoke a TTL node's lease");
    }
}

/// After a node on `lease` was deleted: if that lease is a TTL node's
/// (its marker is there), revoke it, which deletes the marker too, so a
/// TTL node deleted before its TTL leaves nothing on the server. A
/// session's lease (ours, or another session's whose ephemeral node was
/// deleted) has no marker and is left alone. Best effort, as the read and
/// the revoke are retried: a lease left behind expires on its own after
/// its TTL.
pub(crate) async fn forget_deleted(shared: &Shared, lease: i64) {
    if lease == 0 || lease == shared.lease {
        return;
    }
    match marked(shared, lease).await {
        Ok(false) => {}
        Ok(true) => revoke(shared, lease).await,
        Err(e) => {
            tracing::debug!(error = %e, lease, "etcd: could not read a deleted node's lease marker");
        }
    }
}

/// Whether `lease` carries a TTL marker: one read.
async fn marked(shared: &Shared, lease: i64) -> Result<bool> {
    let resp = shared.get(&shared.keys.ttl_marker(lease), None).await?;
    Ok(!resp.kvs().is_empty())
}

/// The lease a node's stat names, when it is not this session's own.
fn foreign_lease(shared: &Shared, stat: &Stat) -> Option<i64> {
    let owner = stat.owner.as_ref()?;
    let lease = i64::from_str_radix(&owner.0, 16).ok()?;
    (lease != 0 && lease != shared.lease).then_some(lease)
}

/// Whether the node with `stat` is a TTL node (its lease carries a
/// marker); its lease then. One read, only for a node on another lease
/// than this session's.
pub(crate) async fn ttl_lease(shared: &Shared, stat: &Stat) -> Result<Option<i64>> {
    let Some(lease) = foreign_lease(shared, stat) else {
        return Ok(None);
    };
    Ok(marked(shared, lease).await?.then_some(lease))
}

/// `stat` as a TTL node's: persistent, owned by no session.
pub(crate) fn persistent(stat: Stat) -> Stat {
    let mut stat = stat.with_owner(None);
    stat.ephemeral = false;
    stat
}

/// Restart a TTL node's TTL after a `set`: one keep-alive on its lease
/// resets the lease to its granted TTL. A lease already gone (the node
/// expired between the set and now) is no error: the node is gone.
///
/// # Errors
/// `ConnectionLost` when the keep-alive got no answer: the set landed,
/// but its TTL may run from the previous change.
pub(crate) async fn restart(shared: &Shared, lease: i64) -> Result<()> {
    let mut client = shared.client.lease_client();
    let left = shared.request_timeout;
    match tokio::time::timeout(left, client.keep_alive(lease)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.to_string().contains("lease not found") => Ok(()),
        Ok(Err(e)) => Err(Error::ConnectionLost(format!(
            "the set landed, but restarting the node's TTL failed: {e}"
        ))),
        Err(_) => Err(Error::ConnectionLost(
            "the set landed, but restarting the node's TTL timed out".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_seconds_round_up() {
        assert_eq!(lease_secs(Duration::from_millis(1)), 1);
        assert_eq!(lease_secs(Duration::from_millis(1000)), 1);
        assert_eq!(lease_secs(Duration::from_millis(1001)), 2);
        assert_eq!(lease_secs(coord_core::MAX_NODE_TTL), 1_099_511_628);
    }
}
