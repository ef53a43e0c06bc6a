//! The one macro a backend calls, [`conformance_tests!`](crate::conformance_tests):
//! it names every test area's macro, in the suite's order.

/// Instantiate every conformance test for a backend: one `#[test]` each.
/// `$make` is an expression that builds the backend's
/// [`Harness`](crate::Harness); it is evaluated inside each test's own tokio
/// runtime.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::__primitives_tests!($make);
        $crate::__lock_tests!($make);
        $crate::__multi_lock_tests!($make);
        $crate::__reentrant_tests!($make);
        $crate::__revocation_tests!($make);
        $crate::__participants_tests!($make);
        $crate::__scoped_tests!($make);
        $crate::__election_tests!($make);
        $crate::__latch_tests!($make);
        $crate::__queue_tests!($make);
        $crate::__priority_delay_queue_tests!($make);
        $crate::__group_tests!($make);
        $crate::__partitioner_tests!($make);
        $crate::__barrier_tests!($make);
        $crate::__periodic_job_tests!($make);
        $crate::__counter_tests!($make);
        $crate::__discovery_tests!($make);
        $crate::__shared_value_tests!($make);
        $crate::__cache_tests!($make);
        $crate::__tree_watch_tests!($make);
        $crate::__ttl_tests!($make);
        $crate::__inspect_tests!($make);
        $crate::__fault_tests!($make);
        $crate::__loss_reason_tests!($make);
        $crate::__come_back_tests!($make);
        $crate::__recipe_faults_tests!($make);
        $crate::__round_trips_tests!($make);
        $crate::__persistent_node_tests!($make);
        $crate::__come_back_nodes_tests!($make);
        $crate::__follow_caches_tests!($make);
        $crate::__rejoining_partitioner_tests!($make);
    };
}
