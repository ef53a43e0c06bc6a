//! Conformance of the primitive contract ([`coord_core::backend::PrimitiveSession`]
//! through [`coord_core::Session`]), one file per contract area.
//!
//! Each test asserts only what the contract promises, so it holds on every
//! backend: versions are compared for equality only, sequences and stamps
//! for order only, a watch may fire for a change that does not matter, and
//! another session's view is awaited (`wait_gone`, a watch) rather than
//! read at once where a server may answer it from a lagging replica.
//!
//! The areas: argument checks ([`paths`]), nodes and versions ([`nodes`]),
//! many nodes read at once ([`get_many`]),
//! sequences and stamps ([`order`]), ordered neighbours (`place`,
//! `first_children`: [`neighbours`]), listing children ([`listing`]),
//! children watches ([`children_watch`]), waiting for a node to go
//! ([`gone`]), sessions and ephemeral nodes ([`session_end`]), guarded
//! writes ([`guarded`]), transactions ([`txn`]), data watches ([`data_watch`]) and node metadata
//! ([`stat`]). Every test is also re-exported here, where the
//! [`conformance_tests!`](crate::conformance_tests) macro names it.

pub mod children_watch;
pub mod contender;
pub mod data_watch;
pub mod get_many;
pub mod gone;
pub mod guarded;
pub mod listing;
pub mod neighbours;
pub mod nodes;
pub mod order;
pub mod paths;
pub mod session_end;
pub mod stat;
mod suite;
mod support;
pub mod txn;

pub use children_watch::{
    prim_children_watch_fires, prim_children_watch_fires_on_session_end,
    prim_children_watch_never_misses, prim_children_watch_races_change,
};
pub use contender::{
    prim_create_contender_places_like_a_listing, prim_create_contender_under_churn,
};
pub use data_watch::{
    prim_get_watch_fires_on_delete, prim_get_watch_fires_on_owner_end,
    prim_get_watch_fires_on_set_by_other, prim_get_watch_ignores_other_nodes,
    prim_get_watch_missing_node, prim_get_watch_races_set,
};
pub use get_many::{
    prim_get_many_reads_like_gets, prim_get_many_through_a_cut, prim_get_many_under_churn,
};
pub use gone::{
    prim_wait_gone_basics, prim_wait_gone_races_delete, prim_watch_gone_is_armed,
    prim_watch_gone_listed_waits_for_the_listed_node,
};
pub use guarded::{
    prim_guarded_lost_when_fence_deleted, prim_guarded_lost_with_wrong_stamp,
    prim_guarded_op_constructors, prim_guarded_put_creates_or_overwrites,
    prim_guarded_put_only_current_holder_lands, prim_guarded_while_fence_holds,
};
pub use listing::{prim_children_in_creation_order, prim_children_prefixed_lists_only_those};
pub use neighbours::{
    prim_place_equals_a_listing, prim_place_gone_for_an_old_sequence, prim_place_under_churn,
};
pub use nodes::{
    prim_cas_versions, prim_create_get_basics, prim_delete_not_empty, prim_missing_nodes,
    prim_take_leaf_returns_the_data_once,
};
pub use order::{prim_sequences_increase, prim_stamps_increase};
pub use paths::{
    prim_path_limits_accepted, prim_path_rules_checked_before_io, prim_path_rules_typed_errors,
    prim_zookeeper_tree_reserved,
};
pub use session_end::{
    prim_child_of_ephemeral, prim_create_after_parent_replaced, prim_ephemeral_gone_on_close,
    prim_ephemeral_gone_on_expire, prim_pending_waits_end_with_session,
};
pub use stat::{prim_created_at, prim_owner_names_the_session};
pub use txn::{
    prim_txn_applies_every_op, prim_txn_at_the_limits_commits,
    prim_txn_checks_see_the_state_before, prim_txn_concurrent_conflicts_one_winner,
    prim_txn_cut_or_lost_answer_never_half_applied, prim_txn_failing_last_op_applies_nothing,
    prim_txn_fence_lost_refused, prim_txn_rules_refused_before_io,
    prim_txn_sequential_creates_in_order,
};
