//! One module per subcommand, each with the kubectl shape: resolve flags, validate without
//! cluster calls, then run.
pub mod version;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};

pub async fn run(cli: Cli) -> Result<()> {
    crate::output::init(cli.global.color, cli.global.verbose);
    match cli.command {
        Command::Version(args) => version::run(&cli.global, &args).await,
        Command::Statefulset(args) => crate::statefulset::run(&cli.global, &args).await,
        Command::SchemaDiff(_) => Err(Error::NotYetAvailable {
            command: "schema-diff",
            issue: 4,
        }),
        Command::FailurePolicy(_) => Err(Error::NotYetAvailable {
            command: "failure-policy",
            issue: 5,
        }),
    }
}
