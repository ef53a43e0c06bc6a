//! The one macro a clustered backend calls,
//! [`cluster_tests!`](crate::cluster_tests), and the helper it expands
//! through: one `#[test]` per cluster test.

#[doc(hidden)]
#[macro_export]
macro_rules! __cluster_each {
    ($make:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::cluster::__run_cluster(stringify!($name), async {
                    let harness = $make;
                    $crate::cluster::heal(&harness).await;
                    $crate::cluster::$module::$name(&harness).await;
                });
            }
        )*
    };
}

/// Instantiate every cluster test for a clustered backend: one `#[test]`
/// each, run one at a time, each after [`heal`](crate::cluster::heal).
/// `$make` is an expression that builds the backend's
/// [`ClusterHarness`](crate::cluster::ClusterHarness); it is evaluated
/// inside each test's own tokio runtime.
#[macro_export]
macro_rules! cluster_tests {
    ($make:expr) => {
        $crate::__cluster_each!($make;
            handoff::cluster_lock_handoff_survives_member_kill,
            failover::cluster_election_failover_survives_leader_kill,
            failover::cluster_queue_drain_survives_leader_kill,
            quorum::cluster_quorum_loss_fails_fast_and_keeps_holds,
            restart::cluster_full_restart_never_double_grants,
            rejoin::cluster_rejoining_recipes_survive_member_kills,
        );
    };
}
