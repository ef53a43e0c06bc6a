//! The real coordctl binary against real ZooKeeper, etcd, Redis and
//! PostgreSQL servers (COORD_TEST_ZK, COORD_TEST_ETCD, COORD_TEST_REDIS,
//! COORD_TEST_PG, as scripts/test-all sets them). Each test runs on each backend; none skips: an unset or
//! unreachable server fails the test.

#[path = "../common/mod.rs"]
mod common;
mod elect;
mod inspect;
mod locks;
mod queue;
mod run_once;
mod watch;

use std::time::{Duration, Instant};

use common::*;
use elect::*;
use inspect::*;
use locks::*;
use nix::sys::signal::Signal;
use queue::*;
use run_once::*;
use watch::*;

/// The binary was built with every backend (see coordctl's Cargo.toml).
#[test]
fn binary_has_every_backend() {
    let out = run(coordctl("mem://", &["--version"]), 10);
    let version = stdout(&out);
    for b in ["mem", "zk", "etcd", "redis", "postgres"] {
        assert!(version.contains(b), "{b} missing from {version:?}");
    }
}

macro_rules! on_backend {
    ($backend:ident, $url:path) => {
        mod $backend {
            use super::*;

            #[test]
            fn locks_never_overlap_and_tokens_increase() {
                super::locks_never_overlap_and_tokens_increase(&$url());
            }

            #[test]
            fn leader_shows_the_elected_value() {
                super::leader_shows_the_elected_value(&$url());
            }

            #[test]
            fn killed_holder_hands_the_lock_on() {
                super::killed_holder_hands_the_lock_on(&$url());
            }

            #[test]
            fn lost_lock_stops_the_command() {
                super::lost_lock_stops_the_command(&$url());
            }

            #[test]
            fn shared_holders_share() {
                super::shared_holders_share(&$url());
            }

            #[test]
            fn write_excludes_shared_and_write() {
                super::write_excludes_shared_and_write(&$url());
            }

            #[test]
            fn leases_let_n_run_at_once() {
                super::leases_let_n_run_at_once(&$url());
            }

            #[test]
            fn queue_and_members() {
                super::queue_and_members(&$url());
            }

            #[test]
            fn signals_release_everything() {
                super::signals_release_everything(&$url());
            }

            #[test]
            fn run_once_runs_each_period_at_most_once() {
                super::run_once_runs_each_period_at_most_once(&$url());
            }

            #[test]
            fn watches_print_changes() {
                super::watches_print_changes(&$url());
            }

            #[test]
            fn interrupted_pops_lose_nothing() {
                super::interrupted_pops_lose_nothing(&$url());
            }

            #[test]
            fn pop_to_a_broken_stdout_keeps_the_item() {
                super::pop_to_a_broken_stdout_keeps_the_item(&$url());
            }

            #[test]
            fn cut_off_holder_stops_its_command() {
                super::cut_off_holder_stops_its_command(&$url());
            }

            #[test]
            fn lost_leadership_and_membership_stop_the_command() {
                super::lost_leadership_and_membership_stop_the_command(&$url());
            }

            #[test]
            fn participants_lists_holder_and_waiter() {
                super::participants_lists_holder_and_waiter(&$url());
            }

            #[test]
            fn revoke_stops_a_revocable_lock() {
                super::revoke_stops_a_revocable_lock(&$url());
            }

            #[test]
            fn revoke_is_ignored_without_revocable() {
                super::revoke_is_ignored_without_revocable(&$url());
            }

            #[test]
            fn inspect_reports_what_lives_there() {
                super::inspect_reports_what_lives_there(&$url());
            }

            #[test]
            fn run_once_on_crash_skip_and_retry() {
                super::run_once_on_crash_skip_and_retry(&$url());
            }

            #[test]
            fn counter_commands() {
                super::counter_commands(&$url());
            }

            #[test]
            fn watch_prints_cache_events() {
                super::watch_prints_cache_events(&$url());
            }

            #[test]
            fn watch_json_prints_cache_events() {
                super::watch_json_prints_cache_events(&$url());
            }

            #[test]
            fn demo_runs() {
                super::demo_runs(&$url());
            }
        }
    };
}

on_backend!(zk, common::zk_url);
on_backend!(etcd, common::etcd_url);
on_backend!(redis, common::redis_url);
on_backend!(pg, common::pg_url);
