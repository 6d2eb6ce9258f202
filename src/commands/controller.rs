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

    /// Elect a leader on a Lease so that of several replicas one reconciles (false: a single replica)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,

    /// Where the leader-election Lease lives [default: the Pod's namespace, else --namespace]
    #[arg(long, value_name = "NAMESPACE", env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
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
            let leader_election = match run.leader_elect {
                false => None,
                true => Some(lease_namespace(run, global)?),
            };
            let management = management_cluster(global).await?;
            let namespace = if run.all_namespaces {
                None
            } else {
                global.namespace.clone()
            };
            controller::run(controller::Options {
                management,
                probe_addr: run.probe_addr,
                namespace,
                leader_election,
            })
            .await
        }
    }
}

/// The ServiceAccount's namespace file of a Pod.
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Where the leader-election Lease lives: --leader-election-namespace (or $POD_NAMESPACE), the
/// Pod's own namespace, or --namespace; a person running it elsewhere says which.
fn lease_namespace(run: &RunArgs, global: &GlobalArgs) -> Result<String> {
    let pods = || {
        std::fs::read_to_string(POD_NAMESPACE_FILE)
            .ok()
            .map(|ns| ns.trim().to_string())
            .filter(|ns| !ns.is_empty())
    };
    run.leader_election_namespace
        .clone()
        .or_else(pods)
        .or_else(|| global.namespace.clone())
        .ok_or_else(|| {
            Error::Usage("say in which namespace of the management cluster the replicas elect their leader: --leader-election-namespace NAMESPACE (or --leader-elect=false for a single replica)".into())
        })
}

/// The management cluster: the kubeconfig's context, or the Pod's ServiceAccount when the
/// controller runs in a cluster without one.
async fn management_cluster(global: &GlobalArgs) -> Result<crate::cluster::Cluster> {
    let in_cluster = global.kubeconfig.is_none()
        && global.contexts.is_empty()
        && std::env::var_os("KUBECONFIG").is_none()
        && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    if in_cluster {
        let config = kube::Config::incluster().map_err(|e| Error::Failed {
            message: format!("cannot use the Pod's ServiceAccount to reach the cluster: {e}"),
        })?;
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|e| Error::Failed {
            message: format!(
                "cannot build a client for the cluster: {}",
                crate::cluster::describe_kube_error(&e)
            ),
        })?;
        return Ok(crate::cluster::Cluster::of_client(
            client,
            "the management cluster",
            &server,
        ));
    }
    global.target()?.connect(global.request_timeout).await
}
