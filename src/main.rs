use std::process::ExitCode;

use clap::Parser;
use kubectl_migrate::commands::{Cli, completion, print_clap_output};
use kubectl_migrate::{commands, error::exit};

// schema-diff builds and drops millions of small values across threads; glibc's malloc spent a
// quarter of its time there, mimalloc about half of that.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // kubectl's plugin completion runs `kubectl_complete-migrate WORDS...`, which calls this.
    if args
        .get(1)
        .is_some_and(|a| a == completion::COMPLETE_SUBCOMMAND)
    {
        return ExitCode::from(completion::print_kubectl_completions(args[2..].to_vec()));
    }
    // The shell scripts of completions/ (`kubectl-migrate <TAB>`): answers and exits.
    completion::complete_from_env();
    let cli = match Cli::try_parse_from(kubectl_migrate::cli::expand_verbosity(args)) {
        Ok(cli) => cli,
        Err(err) => {
            print_clap_output(&err);
            // clap uses 2 for usage errors and 0 for --help/--version.
            return ExitCode::from(err.exit_code() as u8);
        }
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if matches!(cli.command, commands::Command::Statefulset(_)) {
        // A migration waits on its clusters nearly all the time. On one worker thread a watch
        // event wakes no second thread to steal it: a third fewer context switches, less CPU
        // per ordinal (BENCHMARKS.md). The runs themselves are polled by `block_on` on this
        // thread, so a question waiting for a person holds up none of the tasks on the worker
        // (the watches, the lease's renewal).
        runtime.worker_threads(1);
    }
    let runtime = match runtime
        .enable_all()
        // The stack the main thread has: the controller polls its migrations, whose futures
        // are deep, on these threads (2 MiB, tokio's default, overflowed in a debug build).
        .thread_stack_size(8 << 20)
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(err) if err.is_stdout_closed() => {
            // Whoever read stdout has what it wanted (`| head -1`): end as kubectl does, killed
            // by SIGPIPE without a word (141 in a shell).
            let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
            ExitCode::from(128 + signal_hook::consts::SIGPIPE as u8)
        }
        Err(err) => {
            commands::print_end(&err);
            ExitCode::from(err.exit_code())
        }
    }
}
