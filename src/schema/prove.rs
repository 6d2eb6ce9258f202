//! `--prove` and `--witness-dir`: the witnesses of a report dry-run on the servers, and made into
//! manifests to write. The thin shell around [`super::witness`].
use std::collections::BTreeMap;

use serde_json::Value;

use super::report::{Proof, Report, StoredBy, WitnessReport};
use super::source::SourceSchemas;
use super::witness::Expect;
use super::{Request, create_then_dry_run_update, dry_run_create, list_selecting};
use crate::cluster::Cluster;
use crate::error::{Error, Result};

/// What `--prove` found: how many witnesses were dry-run, how many the servers confirmed, and
/// one line per witness where they contradict the local judgement (the shell prints them).
#[derive(Debug, Default)]
pub struct Proofs {
    pub asked: usize,
    pub proven: usize,
    pub defects: Vec<String>,
}

/// Dry-runs every witness on the baseline's cluster and on the cluster of the source that
/// should reject it, and records what they said in the report.
pub async fn prove(
    report: &mut Report,
    sources: &[SourceSchemas],
    clusters: &BTreeMap<String, Cluster>,
    request: &Request,
) -> Result<Proofs> {
    let baseline = report.baseline.clone();
    let mut defects = Vec::new();
    let mut proven = 0;
    let mut asked = 0;
    for api in &mut report.apis {
        // The request a client of the baseline makes: the baseline's plural and scope.
        let def = sources
            .iter()
            .find(|s| s.label == baseline)
            .and_then(|s| s.apis.get(&api.name))
            .or_else(|| sources.iter().find_map(|s| s.apis.get(&api.name)))
            .map(super::stored::StoredApi::def);
        for f in &mut api.findings {
            let Some(w) = &mut f.witness else { continue };
            let (Some(base), Some(other)) = (clusters.get(&baseline), clusters.get(&w.source))
            else {
                w.proof = Some(Proof {
                    verdict: "not-a-cluster".into(),
                    baseline: "-".into(),
                    baseline_message: None,
                    other: "-".into(),
                    other_message: None,
                });
                continue;
            };
            asked += 1;
            let def = def.as_deref();
            let input = format!("the witness of {} {}", api.name, f.rule);
            let ((b_state, b_message), (o_state, o_message), holds) =
                match (&w.field_selector, &w.update, def) {
                    (_, Some(update), _) => {
                        let (b, o) = futures::try_join!(
                            create_then_dry_run_update(
                                base,
                                &input,
                                &w.object,
                                update,
                                def,
                                request.namespace_of(&baseline)
                            ),
                            create_then_dry_run_update(
                                other,
                                &input,
                                &w.object,
                                update,
                                def,
                                request.namespace_of(&w.source)
                            ),
                        )?;
                        let holds = accepted(&b.0) && o.0 == "update rejected";
                        (b, o, holds)
                    }
                    (Some(selector), _, Some(def)) => {
                        let (b, o) = futures::try_join!(
                            list_selecting(
                                base,
                                &input,
                                &w.object,
                                def,
                                request.namespace_of(&baseline),
                                selector
                            ),
                            list_selecting(
                                other,
                                &input,
                                &w.object,
                                def,
                                request.namespace_of(&w.source),
                                selector
                            ),
                        )?;
                        let holds = accepted(&b.0) && !accepted(&o.0);
                        (b, o, holds)
                    }
                    _ => {
                        let (b, o) = futures::try_join!(
                            dry_run_create(
                                base,
                                &input,
                                &w.object,
                                def,
                                request.namespace_of(&baseline)
                            ),
                            dry_run_create(
                                other,
                                &input,
                                &w.object,
                                def,
                                request.namespace_of(&w.source)
                            ),
                        )?;
                        let holds = accepted(&b.0) && creates_show(w, &o.0, &b.2, &o.2);
                        ((b.0, b.1), (o.0, o.1), holds)
                    }
                };
            let verdict = if holds {
                proven += 1;
                "proven"
            } else {
                defects.push(format!(
                    "DEFECT: {} {} {}: the witness {} was judged accepted by {baseline} and {} by {}, but the servers said {b_state}{} and {o_state}{}",
                    api.name,
                    f.version.as_deref().unwrap_or("-"),
                    f.rule,
                    w.short,
                    w.expect.words(),
                    w.source,
                    b_message
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default(),
                    o_message
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default(),
                ));
                "disagrees"
            };
            w.proof = Some(Proof {
                verdict: verdict.into(),
                baseline: b_state,
                baseline_message: b_message,
                other: o_state,
                other_message: o_message,
            });
        }
    }
    Ok(Proofs {
        asked,
        proven,
        defects,
    })
}

fn accepted(state: &str) -> bool {
    state == "accepted"
}

/// Whether the other server's answer to a dry-run create shows the witness, the baseline's
/// having accepted it: refused, or stored otherwise (as predicted, where the witness says what
/// each side stores).
fn creates_show(
    w: &WitnessReport,
    other: &str,
    b_stored: &Option<Value>,
    o_stored: &Option<Value>,
) -> bool {
    match w.expect {
        Expect::Rejected => !accepted(other),
        Expect::StoredDifferently => match &w.stored[..] {
            [StoredBy { object: b, .. }, StoredBy { object: o, .. }] => {
                accepted(other)
                    && stored(b_stored.as_ref()) == stored(Some(b))
                    && stored(o_stored.as_ref()) == stored(Some(o))
            }
            _ => !accepted(other) || stored(b_stored.as_ref()) != stored(o_stored.as_ref()),
        },
        // A selector is asked by a list request, an update by an update: not by a create.
        Expect::SelectorRefused | Expect::UpdateRejected => false,
    }
}

/// What a stored object holds apart from what the server sets on every create.
fn stored(object: Option<&Value>) -> Option<Value> {
    let mut o = object?.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "generation",
            "managedFields",
            "namespace",
        ] {
            meta.remove(k);
        }
    }
    Some(o)
}

/// A witness as a manifest to write: `name` is `API.VERSION.N.RULE.yaml`; `text` is the object
/// in YAML after a comment line that says what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessFile {
    pub name: String,
    pub text: String,
}

/// Each witness of `report` as a manifest.
pub fn witness_files(report: &Report) -> Result<Vec<WitnessFile>> {
    let mut files = Vec::new();
    for api in &report.apis {
        for (n, f) in api.findings.iter().enumerate() {
            let Some(w) = &f.witness else { continue };
            let version = f.version.as_deref().unwrap_or("api");
            let yaml = |v: &Value| {
                serde_saphyr::to_string(v).map_err(|e| Error::Encode {
                    format: "YAML",
                    source: Box::new(e),
                })
            };
            let what = w.expect.words();
            let mut text = format!(
                "# {} {version} {} {}: accepted by {}, {what} by {}\n{}",
                api.name,
                f.path,
                f.rule,
                report.baseline,
                w.source,
                yaml(&w.object)?
            );
            // The pair as two documents: create the first, then apply the second to it.
            if let Some(update) = &w.update {
                text += &format!(
                    "---\n# the update of the object above that {} refuses\n{}",
                    w.source,
                    yaml(update)?
                );
            }
            files.push(WitnessFile {
                name: format!("{}.{version}.{n}.{}.yaml", api.name, f.rule),
                text,
            });
        }
    }
    Ok(files)
}
