use std::process::ExitCode;

use clap::Parser;
use colored::Colorize;
use kubectl_migrate::cli::Cli;
use kubectl_migrate::{commands, completion, error::exit};

// schema-diff builds and drops millions of small values across threads; glibc's malloc spent a
// quarter of its time there, mimalloc about half of that.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the bindings list v2's options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Freed memory stays with the process instead of going back to the OS after 10 ms: each
    // phase of schema-diff frees what the last one built, and the kernel then zeroed it again,
    // 2 MiB at a time, for a tenth of the CPU time. The peak (what is resident) is the same.
    // SAFETY: sets a plain integer option; mimalloc reads options at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // kubectl's plugin completion runs `kubectl_complete-migrate WORDS...`, which calls this.
    if args
        .get(1)
        .is_some_and(|a| a == completion::COMPLETE_SUBCOMMAND)
    {
        return ExitCode::from(completion::print_kubectl_completions(args[2..].to_vec()));
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            // clap uses 2 for usage errors and 0 for --help/--version.
            return ExitCode::from(err.exit_code() as u8);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
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
        Err(err) => {
            eprintln!("{} {err}", "error:".red().bold());
            ExitCode::from(err.exit_code())
        }
    }
}
