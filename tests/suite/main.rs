//! The integration tests, as one test binary with a module per area (the layout cargo and
//! ripgrep use): one binary links the dependency tree once, where a binary per file linked it
//! two dozen times. Run one module with `cargo test --test suite e2e_statefulset::`.
//!
//! The modules' tests run concurrently on the shared local clusters, so none may assume it is
//! alone on one. Tests that stop or restart an API server use the `km-outage` cluster, which no
//! other test uses, one at a time (`support::take_outage_cluster`).

mod support;

mod cli;
mod completions;
mod e2e_connection;
mod e2e_controller;
mod e2e_controller_cli;
mod e2e_controller_compat;
mod e2e_controller_gates;
mod e2e_controller_kill;
mod e2e_controller_leader;
mod e2e_controller_rbac;
mod e2e_failure_policy_check;
mod e2e_failure_policy_differential;
mod e2e_failure_policy_explain;
mod e2e_schema_diff;
mod e2e_schema_diff_applied;
mod e2e_schema_diff_watch;
mod e2e_screens;
mod e2e_smoke;
mod e2e_statefulset;
mod e2e_statefulset_bad_input;
mod e2e_statefulset_budgets;
mod e2e_statefulset_fresh;
mod e2e_statefulset_operators;
mod e2e_statefulset_recovery;
mod e2e_statefulset_restart;
mod e2e_statefulset_scheduling;
mod e2e_statefulset_selection;
mod e2e_zero_downtime;
mod failure_policy_scenarios;
mod generated_files;
mod layering;
mod schema_diff_cli;
mod schema_real_world;
mod screens;
mod yaml_truth;
