//! `kubectl migrate controller`: run the controller that reconciles StatefulSetMigration
//! resources (see `crate::controller`), or print the CRDs it serves.
use std::net::SocketAddr;

use crate::cli::GlobalArgs;
use crate::controller;
use crate::error::{Error, Result};

/// Migrations as Kubernetes resources, reconciled in a management cluster.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = super::help::CONTROLLER.after_help())]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Sub {
    /// Reconcile StatefulSetMigrations in the management cluster (--context, or in-cluster) until SIGTERM
    Run(RunArgs),
    /// Print the CustomResourceDefinitions the controller serves, for kubectl apply -f -
    Crds,
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Where /healthz, /readyz and /metrics are served
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    pub probe_addr: SocketAddr,

    /// Reconcile the resources of every namespace (default: only --namespace, if given)
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

pub async fn exec(global: &GlobalArgs, args: &Args) -> Result<()> {
    match &args.command {
        Sub::Crds => {
            let docs: Vec<String> = controller::api::crd_files()
                .into_iter()
                .map(|(_, yaml)| yaml)
                .collect();
            use std::io::Write;
            crate::output::stdout()
                .write_all(docs.join("---\n").as_bytes())
                .map_err(crate::output::stdout_error)
        }
        Sub::Run(run) => {
            let client = management_client(global).await?;
            let namespace = if run.all_namespaces {
                None
            } else {
                global.namespace.clone()
            };
            controller::run(controller::Options {
                client,
                probe_addr: run.probe_addr,
                namespace,
            })
            .await
        }
    }
}

/// The management cluster: the kubeconfig's context, or the Pod's ServiceAccount when the
/// controller runs in a cluster without one.
async fn management_client(global: &GlobalArgs) -> Result<kube::Client> {
    let in_cluster = global.kubeconfig.is_none()
        && global.contexts.is_empty()
        && std::env::var_os("KUBECONFIG").is_none()
        && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    if in_cluster {
        let config = kube::Config::incluster().map_err(|e| Error::Failed {
            message: format!("cannot use the Pod's ServiceAccount to reach the cluster: {e}"),
        })?;
        return kube::Client::try_from(config).map_err(|e| Error::Failed {
            message: format!(
                "cannot build a client for the cluster: {}",
                crate::cluster::describe_kube_error(&e)
            ),
        });
    }
    Ok(global
        .target()?
        .connect(global.request_timeout)
        .await?
        .client)
}
