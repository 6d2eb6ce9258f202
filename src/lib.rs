//! kubectl-migrate: a kubectl plugin that moves stateful workloads between clusters.
//!
//! The layers, top to bottom (a module only uses the ones below it):
//! - `main.rs`: parses the command line, runs it, maps the error to an exit code.
//! - [`cli`]: the clap definitions of the root command and the kubectl-style flags; the
//!   completions and man pages generated from them.
//! - [`commands`]: one module per subcommand: its flags, `resolve()` to typed settings without
//!   touching a cluster, `exec()` to run the domain code and show the result (`output`).
//! - the domains, [`statefulset`], [`schema`], [`failure_policy`], and [`controller`] (the
//!   statefulset core driven by resources in a cluster): pure cores (decisions,
//!   diffs, plans, the Job controller's rules) and a thin layer that talks to the API servers.
//!   They see neither clap nor the printers; they return data and events.
//! - shared pieces: [`cluster`] (kubeconfig and connections), [`manifest`] (the files users
//!   name), [`error`] (one error type whose variants know their exit codes), `sync` (the one way
//!   to take a lock, and the process-wide caches), `interrupt` (Ctrl-C, caught where a command
//!   stops cleanly), `serve` (the HTTP server of `/metrics` and the probes), `words` (counts said in words).
#![forbid(unsafe_code)]

// Public: what the binary, the integration tests, the benchmarks and the fuzz targets use.
// Everything else is the crate's own, so that the dead-code lint sees it.
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod controller;
pub mod duration;
pub mod error;
pub mod failure_policy;
mod interrupt;
pub mod manifest;
mod output;
pub mod rng;
pub mod schema;
mod serve;
mod statefulset;
mod sync;
mod words;

pub use error::{Error, Result};
