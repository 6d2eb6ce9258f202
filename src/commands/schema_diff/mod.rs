//! `kubectl migrate schema-diff`: compare API schemas across clusters and files (see
//! `crate::schema`), and print the report, the LCD manifests or the object verdicts.
mod render;
mod watch;

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};

use clap_complete::engine::ArgValueCandidates;

use crate::cli::{GlobalArgs, OutputFormat, ReportOutputArgs, crd_candidates};
use crate::cluster::{self, Target};
use crate::error::{Error, Result};
use crate::manifest;
use crate::output;
use crate::schema::load::{BuiltinRef, Selection};
use crate::schema::report::ApiReport;
use crate::schema::{self, Compared, FailOn, Mode, Outcome, Request, diff};
use crate::words::count;

/// --fail-on's words, with the help clap shows for each; the domain's [`FailOn`] reads them.
fn fail_on_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(FailOn::WORDS.map(|(word, help)| PossibleValue::new(word).help(help)))
}

/// Compare API schemas across clusters and files.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = super::help::SCHEMA_DIFF.after_help())]
pub struct Args {
    /// CRD names to compare, e.g. widgets.example.com (default: every CRD any source has)
    #[arg(value_name = "NAME", add = ArgValueCandidates::new(crd_candidates))]
    pub names: Vec<String>,

    /// A source: a CRD manifest, a multi-document YAML or JSON file, a directory of them, an
    /// OpenAPI v3 document (as served at /openapi/v3/...), or - for stdin. Repeatable; every
    /// --context is a source too
    #[arg(short = 'f', long = "filename", value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub files: Vec<PathBuf>,

    /// Only CRDs of this API group (repeatable)
    #[arg(long, value_name = "GROUP")]
    pub group: Vec<String>,

    /// Compare a built-in type through each source's OpenAPI v3, e.g. apps/v1/statefulsets or
    /// core/v1/pods (repeatable)
    #[arg(long, value_name = "GROUP/VERSION/RESOURCE")]
    pub builtin: Vec<String>,

    /// Print, per CRD, a CRD manifest whose schema every source accepts (YAML; a JSON list with
    /// -o json). Dropped fields and the reasons where there is no LCD go to stderr
    #[arg(long)]
    pub lcd: bool,

    /// Check which sources accept the objects in FILE (repeatable), locally against each schema
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub object: Vec<PathBuf>,

    /// With --object: also ask each cluster, by a server-side dry-run create with
    /// fieldValidation=Strict
    #[arg(long, requires = "object")]
    pub server: bool,

    /// Read each cluster's CRDs in pages of this many (as kubectl get --chunk-size); 0 reads
    /// them all in one request. Pages keep memory bounded on clusters with many large CRDs
    #[arg(long, value_name = "N", default_value_t = crate::schema::load::CRD_PAGE_SIZE)]
    pub chunk_size: usize,

    /// Do not build witness objects for breaking findings nor evaluate CEL rules added (they
    /// are then unproven)
    #[arg(long, conflicts_with_all = ["witness_dir", "prove"])]
    pub no_witnesses: bool,

    /// Write each witness as a manifest into DIR (created if missing), one file per finding
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub witness_dir: Option<PathBuf>,

    /// Dry-run each witness on the clusters (server-side create, fieldValidation=Strict): a
    /// finding is proven when the baseline's server accepts it and the other's rejects it or
    /// stores it differently. Exit 5 when a server contradicts the local judgement
    #[arg(long)]
    pub prove: bool,

    /// The classes whose findings make the exit code 1 (comma-separated or repeated)
    #[arg(long, default_value = "breaking", value_name = "CLASS", value_delimiter = ',', value_parser = fail_on_parser())]
    pub fail_on: Vec<String>,

    /// Leave out findings of this rule, e.g. enum-widened or description-changed (repeatable;
    /// see the README for the list)
    #[arg(long, value_name = "RULE")]
    pub ignore: Vec<String>,

    /// The source the others are judged against (a context name or path; default: the first
    /// --context, else the first -f)
    #[arg(long, value_name = "SOURCE")]
    pub baseline: Option<String>,

    /// Show informational findings (description changes, ...) in the table too
    #[arg(long)]
    pub all: bool,

    /// Keep watching the clusters' CRDs after the report, and print one event per change
    /// (an NDJSON line with -o json) until interrupted
    #[arg(long, help_heading = "Watch")]
    pub watch: bool,

    /// With --watch: coalesce writes that come within this long of each other
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::parse_duration, requires = "watch", help_heading = "Watch")]
    pub debounce: std::time::Duration,

    /// With --watch: run CMD (with sh -c) for each change of a class --fail-on counts
    /// (breaking by default); the event is on its stdin as JSON, and API, SOURCE and CLASS are
    /// in its environment
    #[arg(long, value_name = "CMD", requires = "watch", help_heading = "Watch")]
    pub on_breaking: Option<String>,

    /// With --watch: run CMD (with sh -c) for every event, as --on-breaking does
    #[arg(long, value_name = "CMD", requires = "watch", help_heading = "Watch")]
    pub on_change: Option<String>,

    /// With --watch: exit 1 at the first change of a class --fail-on counts ("breaking"; by
    /// default breaking ones), or at the first change at all ("change")
    #[arg(long, value_name = "WHAT", value_parser = ["breaking", "change"], requires = "watch", help_heading = "Watch")]
    pub exit_on: Option<String>,

    /// With --watch: serve Prometheus metrics on HOST:PORT (findings per API, class and
    /// source; LCD present per API; source up; events)
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "watch",
        help_heading = "Watch"
    )]
    pub metrics_addr: Option<std::net::SocketAddr>,

    /// With --watch: keep DIR/NAME.yaml the LCD manifest of each API (replaced atomically;
    /// removed while an API has no LCD)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, requires = "watch", help_heading = "Watch")]
    pub lcd_dir: Option<PathBuf>,

    #[command(flatten)]
    pub output: ReportOutputArgs,
}

/// The flags, resolved: what to compare, what to work out, and how to show it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub request: Request,
    pub task: Task,
    pub format: OutputFormat,
}

/// What the command does with the sources.
#[derive(Debug, Clone)]
pub enum Task {
    /// Work out `mode` once and show it; with `witness_dir`, write the witnesses there.
    Once {
        mode: Mode,
        witness_dir: Option<PathBuf>,
    },
    /// Keep watching the clusters.
    Watch {
        settings: schema::watch::Settings,
        options: watch::Options,
    },
}

/// The flags, checked and resolved without touching a cluster or a file (contexts are looked up
/// in the kubeconfig). Usage errors exit 2, as kubectl diff's errors do.
pub fn resolve(global: &GlobalArgs, args: &Args) -> Result<Resolved> {
    let usage = |m: String| Err(Error::Usage(m));
    let contexts = global.contexts.clone();
    let sources = contexts.len() + args.files.len();
    if args.object.is_empty() && sources < 2 {
        return usage(format!(
            "schema-diff needs at least two sources (--context and/or -f), got {sources}; with --object one is enough"
        ));
    }
    if sources == 0 {
        return usage("--object needs at least one source (--context or -f)".into());
    }
    if args.server && contexts.is_empty() {
        return usage("--server dry-runs on clusters: give at least one --context".into());
    }
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return usage("-f - (stdin) can be given only once".into());
    }
    if args.lcd && !args.object.is_empty() {
        return usage("--lcd and --object are separate modes; run them one at a time".into());
    }
    if (args.prove || args.witness_dir.is_some()) && (args.lcd || !args.object.is_empty()) {
        return usage(
            "--prove and --witness-dir go with the comparison report, not with --lcd or --object"
                .into(),
        );
    }
    if args.prove && contexts.is_empty() {
        return usage("--prove dry-runs witnesses on clusters: give --context sources".into());
    }
    if args.watch {
        if contexts.is_empty() {
            return usage("--watch follows clusters: give at least one --context".into());
        }
        if args.lcd || !args.object.is_empty() || args.prove || args.witness_dir.is_some() {
            return usage(
                "--watch reports changes of the comparison; it does not go with --lcd (use --lcd-dir), --object, --prove or --witness-dir".into(),
            );
        }
        if !args.builtin.is_empty() {
            return usage(
                "--watch follows CustomResourceDefinitions; built-in types (--builtin) are compared without it".into(),
            );
        }
        if !matches!(
            args.output.format(),
            OutputFormat::Table | OutputFormat::Json
        ) {
            return usage("--watch prints readable lines (-o table) or NDJSON (-o json)".into());
        }
        if args.debounce.is_zero() {
            return usage("--debounce must be more than 0".into());
        }
    }
    if args.lcd && args.output.format() == OutputFormat::Markdown {
        return usage("--lcd prints CRD manifests: use -o yaml (the default) or -o json".into());
    }
    let mut labels: Vec<String> = contexts.clone();
    labels.extend(args.files.iter().map(|f| manifest::label(f)));
    let mut seen = BTreeSet::new();
    for l in &labels {
        if !seen.insert(l) {
            return usage(format!("source {l:?} is given twice"));
        }
    }
    if let Some(b) = &args.baseline
        && !labels.contains(b)
    {
        return usage(format!(
            "--baseline {b:?} is not one of the sources: {}",
            labels.join(", ")
        ));
    }
    let known: BTreeSet<&str> = diff::RULES.iter().map(|(id, _)| *id).collect();
    for rule in &args.ignore {
        if !known.contains(rule.as_str()) {
            return usage(format!(
                "--ignore {rule:?} is not a rule; rules: {}",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let builtins = args
        .builtin
        .iter()
        .map(|b| BuiltinRef::parse(b))
        .collect::<Result<Vec<_>, String>>()
        .map_err(Error::Usage)?;
    for name in &args.names {
        if !name.contains('.') {
            return usage(format!(
                "{name:?} is not a CRD name: use the full name, plural.group (e.g. widgets.example.com)"
            ));
        }
    }
    // Every context is looked up now: an unknown one fails before any network traffic.
    let clusters = contexts
        .iter()
        .map(|c| cluster::resolve(global.kubeconfig.as_deref(), Some(c)))
        .collect::<Result<Vec<Target>>>()?;
    let namespaces = clusters
        .iter()
        .map(|t| (t.context.clone(), global.namespace_for(t)))
        .collect();
    let request = Request {
        clusters,
        namespaces,
        request_timeout: global.request_timeout,
        files: args.files.clone(),
        selection: Selection {
            names: args.names.clone(),
            groups: args.group.clone(),
            labels: None,
            builtins,
        },
        ignore: args.ignore.iter().cloned().collect(),
        baseline: args.baseline.clone(),
        fail_on: FailOn::parse(&args.fail_on).map_err(Error::Usage)?,
        chunk_size: args.chunk_size,
        witnesses: !args.no_witnesses,
    };
    let format = args.output.format();
    let task = if args.watch {
        Task::Watch {
            settings: schema::watch::Settings {
                debounce: args.debounce,
                show_informational: args.all,
            },
            options: watch::Options {
                on_breaking: args.on_breaking.clone(),
                on_change: args.on_change.clone(),
                exit_on: args.exit_on.as_deref().map(|w| match w {
                    "breaking" => watch::ExitOn::Breaking,
                    _ => watch::ExitOn::Change,
                }),
                metrics_addr: args.metrics_addr,
                lcd_dir: args.lcd_dir.clone(),
                format,
                show_informational: args.all,
                fail_on: FailOn::parse(&args.fail_on).map_err(Error::Usage)?,
            },
        }
    } else {
        let mode = if !args.object.is_empty() {
            Mode::Objects {
                files: args.object.clone(),
                server: args.server,
            }
        } else if args.lcd {
            Mode::Lcd
        } else {
            Mode::Compare {
                show_informational: args.all,
                prove: args.prove,
                witness_files: args.witness_dir.is_some(),
            }
        };
        Task::Once {
            mode,
            witness_dir: args.witness_dir.clone(),
        }
    };
    Ok(Resolved {
        request,
        task,
        format,
    })
}

/// Runs the command and returns its exit code (0 same, 1 different); errors exit 2 or more.
pub async fn exec(global: &GlobalArgs, args: &Args) -> Result<u8> {
    let Resolved {
        request,
        task,
        format,
    } = resolve(global, args)?;
    let (mode, witness_dir) = match task {
        Task::Watch { settings, options } => return watch::run(&request, &settings, options).await,
        Task::Once { mode, witness_dir } => (mode, witness_dir),
    };
    for t in &request.clusters {
        output::log(1, format!("reading context {} at {}", t.context, t.server));
    }
    match schema::run(&request, &mode).await? {
        Outcome::Objects(report) => {
            output::print(&report, format)?;
            Ok(report.exit_code())
        }
        Outcome::Lcd(lcds) => {
            let (written, summary) = lcds.consume(|reports| write_lcd(reports, format));
            written?;
            Ok(summary.exit_code())
        }
        Outcome::Compared(compared) => show_comparison(&compared, witness_dir.as_deref(), format),
    }
}

/// The report on stdout; on stderr, what `--prove` found and where `--witness-dir`'s manifests
/// went.
fn show_comparison(
    compared: &Compared,
    witness_dir: Option<&std::path::Path>,
    format: OutputFormat,
) -> Result<u8> {
    let defects = compared.proofs.as_ref().map_or(0, |proofs| {
        for defect in &proofs.defects {
            output::warn(defect.clone());
        }
        output::log(
            0,
            format!(
                "--prove: {} of {} proven on the servers",
                proofs.proven,
                count(proofs.asked as i64, "witness", "witnesses")
            ),
        );
        proofs.defects.len()
    });
    if let Some(dir) = witness_dir {
        write_witnesses(dir, &compared.witness_files)?;
        output::log(
            0,
            format!(
                "wrote {} to {}",
                count(
                    compared.witness_files.len() as i64,
                    "witness manifest",
                    "witness manifests"
                ),
                dir.display()
            ),
        );
    }
    output::print(&compared.report, format)?;
    if defects > 0 {
        output::warn(format!(
            "DEFECT in kubectl-migrate: for {} the servers contradict the local judgement (see \"disagrees\" in the report); please report it",
            count(defects as i64, "witness", "witnesses")
        ));
    }
    Ok(compared.exit_code())
}

/// `--witness-dir`: each witness manifest into DIR (created if missing).
fn write_witnesses(dir: &std::path::Path, files: &[schema::WitnessFile]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: format!("create --witness-dir {}", dir.display()),
        source,
    })?;
    for file in files {
        let path = dir.join(&file.name);
        std::fs::write(&path, &file.text).map_err(|source| Error::Io {
            what: format!("write {}", path.display()),
            source,
        })?;
    }
    Ok(())
}

/// `--lcd`: the LCD manifests of `reports` on stdout, what was given up on stderr, one API at a
/// time as the reports come.
fn write_lcd(reports: &mut dyn Iterator<Item = ApiReport>, format: OutputFormat) -> Result<()> {
    let manifests = reports.filter_map(|api| {
        let lcd = api.lcd?;
        for d in &lcd.dropped {
            output::warn(format!(
                "{}: dropped {} {} (declared in {}): {}",
                api.name,
                d.version,
                d.path,
                d.sources.join(", "),
                d.reason
            ));
        }
        for n in &lcd.notes {
            output::log(0, format!("{}: {n}", api.name));
        }
        if !lcd.exists {
            for c in &lcd.conflicts {
                let at = if c.version.is_empty() {
                    String::new()
                } else {
                    format!(" {} {}", c.version, c.path)
                };
                output::warn(format!("{}: no LCD{at}: {}", api.name, c.reason));
            }
            return None;
        }
        if lcd.manifest.is_none() {
            output::log(
                0,
                format!(
                    "{}: built-in type; its LCD is reported, not printed as a CRD",
                    api.name
                ),
            );
        }
        lcd.manifest
    });
    use std::io::Write;
    // Stdout is line-buffered: a line of JSON or YAML would cost a write each.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if format == OutputFormat::Json {
        // As serde_json pretty-prints `{"apiVersion": "v1", "items": [...], "kind": "List"}`,
        // item by item.
        out.write_all(b"{\n  \"apiVersion\": \"v1\",\n  \"items\": [")
            .map_err(output::stdout_error)?;
        let mut item = Vec::new();
        let mut first = true;
        for m in manifests {
            item.clear();
            item.extend_from_slice(if first { b"\n    " } else { b",\n    " });
            m.push_json_pretty(&mut item, 2);
            out.write_all(&item).map_err(output::stdout_error)?;
            first = false;
        }
        if !first {
            out.write_all(b"\n  ").map_err(output::stdout_error)?;
        }
        out.write_all(b"],\n  \"kind\": \"List\"\n}\n")
            .map_err(output::stdout_error)?;
    } else {
        for m in manifests {
            let text = serde_saphyr::to_string(&m.to_value()).map_err(|e| Error::Encode {
                format: "YAML",
                source: Box::new(e),
            })?;
            write!(out, "---\n{text}").map_err(output::stdout_error)?;
        }
    }
    out.flush().map_err(output::stdout_error)?;
    Ok(())
}
