//! `kubectl migrate version`: the plugin's version and the server's, like `kubectl version`.
//! It is also the quickest way to check that a context is reachable.
use comfy_table::Table;
use serde::Serialize;

use crate::cli::{GlobalArgs, OutputArgs};
use crate::error::Result;
use crate::output::{self, Tabular};

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Print the client version only; do not contact a cluster
    #[arg(long)]
    pub client: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    pub schema_version: u32,
    pub client_version: String,
    /// The commit the plugin was built from (`-dirty` with uncommitted changes to its sources,
    /// see build.rs).
    pub git_commit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVersion>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVersion {
    pub context: String,
    pub server: String,
    pub git_version: String,
    pub git_commit: String,
    pub platform: String,
}

impl Tabular for VersionReport {
    fn table(&self) -> Table {
        let mut t = output::new_table(["component", "version", "commit", "context", "server"]);
        t.add_row([
            "client",
            self.client_version.as_str(),
            self.git_commit.as_str(),
            "",
            "",
        ]);
        if let Some(s) = &self.server {
            t.add_row([
                "server",
                s.git_version.as_str(),
                s.git_commit.as_str(),
                s.context.as_str(),
                s.server.as_str(),
            ]);
        }
        // The server's address, then the commits, give way on a narrow terminal.
        output::fit(&mut t, &[], &[&[4], &[2]], 0);
        t
    }
}

pub async fn exec(global: &GlobalArgs, args: &Args) -> Result<()> {
    let mut report = VersionReport {
        schema_version: 1,
        client_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("KM_GIT_COMMIT").to_string(),
        server: None,
    };
    // Resolved before any network traffic: an unknown context is an error at once.
    let target = if args.client {
        None
    } else {
        Some(global.target())
    };
    // As kubectl: the client's version is shown whatever happens to the server's.
    let connected = match target {
        None => Ok(()),
        Some(target) => match target {
            Err(e) => Err(e),
            Ok(target) => {
                output::log(
                    1,
                    format!(
                        "connecting to context {} at {}",
                        target.context, target.server
                    ),
                );
                target.connect(global.request_timeout).await.map(|c| {
                    report.server = Some(ServerVersion {
                        context: c.context.clone(),
                        server: c.server.clone(),
                        git_version: c.version.git_version.clone(),
                        git_commit: c.version.git_commit.clone(),
                        platform: c.version.platform.clone(),
                    });
                })
            }
        },
    };
    output::print(&report, args.output.format())?;
    connected
}
