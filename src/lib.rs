//! kubectl-migrate: a kubectl plugin that moves stateful workloads between clusters.
//!
//! `main.rs` only parses and maps errors to exit codes; everything else lives here so that
//! tests can reach it.
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod completion;
pub mod error;
pub mod failure_policy;
pub mod output;
pub mod schema;
pub mod statefulset;

pub use error::{Error, Result};
