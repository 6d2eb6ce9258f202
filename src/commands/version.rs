//! `kubectl migrate version`: the plugin's version and the server's, like `kubectl version`.
//! It is also the quickest way to check that a context is reachable.
use comfy_table::Table;
use serde::Serialize;

use crate::cli::{GlobalArgs, VersionArgs};
use crate::cluster;
use crate::error::Result;
use crate::output::{self, Tabular};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    pub client_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVersion>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVersion {
    pub context: String,
    pub server: String,
    pub git_version: String,
    pub platform: String,
}

impl Tabular for VersionReport {
    fn table(&self) -> Table {
        let mut t = output::new_table(["component", "version", "context", "server"]);
        t.add_row(["client", self.client_version.as_str(), "", ""]);
        if let Some(s) = &self.server {
            t.add_row([
                "server",
                s.git_version.as_str(),
                s.context.as_str(),
                s.server.as_str(),
            ]);
        }
        t
    }
}

pub async fn run(global: &GlobalArgs, args: &VersionArgs) -> Result<()> {
    let client_version = env!("CARGO_PKG_VERSION").to_string();
    let server = if args.client {
        None
    } else {
        let target = cluster::resolve(global.kubeconfig.as_deref(), global.context()?)?;
        output::log(
            1,
            format!(
                "connecting to context {} at {}",
                target.context, target.server
            ),
        );
        let c = target.connect(global.request_timeout).await?;
        Some(ServerVersion {
            context: c.context.clone(),
            server: c.server.clone(),
            git_version: c.version.git_version.clone(),
            platform: c.version.platform.clone(),
        })
    };
    output::print(
        &VersionReport {
            client_version,
            server,
        },
        global.output,
    )
}
