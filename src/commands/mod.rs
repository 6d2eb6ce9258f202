//! One module per subcommand, each with the kubectl shape: resolve flags, validate without
//! cluster calls, then run.
pub mod version;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};

/// Runs the command; `Ok` carries the exit code of a command that reports an outcome through
/// it (schema-diff exits 1 when it finds differences, like kubectl diff).
pub async fn run(cli: Cli) -> Result<u8> {
    crate::output::init(cli.global.color, cli.global.verbose);
    if cli.global.output == crate::cli::OutputFormat::Markdown
        && !matches!(cli.command, Command::SchemaDiff(_))
    {
        return Err(Error::Usage(format!(
            "-o markdown is for schema-diff reports; `{}` prints table, json or yaml",
            cli.command.name()
        )));
    }
    let done = |r: Result<()>| r.map(|()| crate::error::exit::OK);
    match cli.command {
        Command::Version(args) => done(version::run(&cli.global, &args).await),
        Command::Statefulset(args) => done(crate::statefulset::run(&cli.global, &args).await),
        Command::SchemaDiff(args) => crate::schema::run(&cli.global, &args)
            .await
            .map_err(|e| e.exit_at_least(2)),
        Command::FailurePolicy(args) => crate::failure_policy::run(&cli.global, &args).await,
    }
}
