//! The primitive areas' macro, which the crate's
//! [`conformance_tests!`](crate::conformance_tests) calls: every primitive
//! test, named through its re-export in [`primitives`](crate::primitives).

#[doc(hidden)]
#[macro_export]
macro_rules! __primitives_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            primitives::prim_watch_gone_is_armed,
            primitives::prim_watch_gone_listed_waits_for_the_listed_node,
            primitives::prim_path_rules_typed_errors,
            primitives::prim_path_rules_checked_before_io,
            primitives::prim_zookeeper_tree_reserved,
            primitives::prim_path_limits_accepted,
            primitives::prim_create_get_basics,
            primitives::prim_missing_nodes,
            primitives::prim_delete_not_empty,
            primitives::prim_take_leaf_returns_the_data_once,
            primitives::prim_children_prefixed_lists_only_those,
            primitives::prim_cas_versions,
            primitives::prim_sequences_increase,
            primitives::prim_stamps_increase,
            primitives::prim_children_in_creation_order,
            primitives::prim_place_equals_a_listing,
            primitives::prim_place_under_churn,
            primitives::prim_place_gone_for_an_old_sequence,
            primitives::prim_children_watch_fires,
            primitives::prim_children_watch_fires_on_session_end,
            primitives::prim_children_watch_never_misses,
            primitives::prim_children_watch_races_change,
            primitives::prim_wait_gone_basics,
            primitives::prim_wait_gone_races_delete,
            primitives::prim_ephemeral_gone_on_expire,
            primitives::prim_ephemeral_gone_on_close,
            primitives::prim_pending_waits_end_with_session,
            primitives::prim_child_of_ephemeral,
            primitives::prim_create_after_parent_replaced,
            primitives::prim_guarded_while_fence_holds,
            primitives::prim_guarded_lost_when_fence_deleted,
            primitives::prim_guarded_lost_with_wrong_stamp,
            primitives::prim_guarded_put_creates_or_overwrites,
            primitives::prim_guarded_op_constructors,
            primitives::prim_guarded_put_only_current_holder_lands,
            primitives::prim_txn_applies_every_op,
            primitives::prim_txn_failing_last_op_applies_nothing,
            primitives::prim_txn_checks_see_the_state_before,
            primitives::prim_txn_sequential_creates_in_order,
            primitives::prim_txn_fence_lost_refused,
            primitives::prim_txn_concurrent_conflicts_one_winner,
            primitives::prim_txn_rules_refused_before_io,
            primitives::prim_txn_at_the_limits_commits,
            primitives::prim_txn_cut_or_lost_answer_never_half_applied,
            primitives::prim_get_watch_missing_node,
            primitives::prim_get_watch_fires_on_set_by_other,
            primitives::prim_get_watch_fires_on_delete,
            primitives::prim_get_watch_fires_on_owner_end,
            primitives::prim_get_watch_ignores_other_nodes,
            primitives::prim_get_watch_races_set,
            primitives::prim_created_at,
            primitives::prim_owner_names_the_session,
        );
    };
}
