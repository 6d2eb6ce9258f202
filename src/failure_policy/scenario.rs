//! Scenarios: the ordered pod outcomes `simulate` plays through the engine, from a file or from
//! the compact `--fail` form.
//!
//! File format (YAML or JSON):
//!
//! ```yaml
//! outcomes:                 # in order, one pod each
//! - index: 0                # Indexed Jobs: which index's pod
//!   after: 30s              # optional: time since the previous outcome (deadline, backoff);
//!                           # pods without an outcome keep running until the deadline, if any
//!   fail:
//!     exitCodes: {main: 137, sidecar: 0}    # terminated containers
//!     initExitCodes: {setup: 5}             # terminated init containers
//!     conditions:                           # pod conditions
//!     - {type: DisruptionTarget, status: "True", reason: EvictionByEvictionAPI}
//! - succeed: {}
//! - restart:                # restartPolicy OnFailure: containers of the running pod exit
//!     exitCodes: {main: 1}  # and restart in place (each adds 1 to its restartCount)
//! - delete: {}              # the running pod is deleted (or evicted) and stays Terminating
//! - delete:                 # deleted, then its containers stop: it reaches phase Failed so
//!     fail: {exitCodes: {main: 143}}
//! ```
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::engine::{Outcome, PodResult};
use super::model::{ContainerState, FailedPod, JobModel, PodCondition};
use crate::error::Error;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub outcomes: Vec<OutcomeSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutcomeSpec {
    #[serde(default, deserialize_with = "index")]
    pub index: Option<i32>,
    #[serde(default, deserialize_with = "duration")]
    pub after: Option<String>,
    pub fail: Option<FailSpec>,
    pub succeed: Option<SucceedSpec>,
    pub restart: Option<RestartSpec>,
    pub delete: Option<DeleteSpec>,
}

/// A running pod deleted (or evicted). Without `fail` it stays Terminating (its node is gone,
/// nothing reports its end); with it, its containers then stop and it reaches phase Failed
/// in that state.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteSpec {
    pub fail: Option<FailSpec>,
}

/// A pod that succeeds: every container exits 0. It has nothing more to say: the controller
/// looks at no detail of a succeeded pod, so any field is refused rather than ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SucceedSpec {}

/// Containers of a running pod that exit and are restarted in place (restartPolicy
/// OnFailure). The exit codes are what the pod's lastState shows; the controller counts only
/// the restarts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestartSpec {
    #[serde(default, deserialize_with = "restart_exit_codes")]
    pub exit_codes: BTreeMap<String, i32>,
    #[serde(default, deserialize_with = "restart_exit_codes")]
    pub init_exit_codes: BTreeMap<String, i32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailSpec {
    #[serde(default)]
    pub exit_codes: BTreeMap<String, i32>,
    #[serde(default)]
    pub init_exit_codes: BTreeMap<String, i32>,
    #[serde(default, deserialize_with = "conditions")]
    pub conditions: Vec<ConditionSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionSpec {
    #[serde(rename = "type", deserialize_with = "condition_type")]
    pub type_: String,
    #[serde(default = "true_status", deserialize_with = "condition_status")]
    pub status: String,
    pub reason: Option<String>,
    /// Accepted for completeness; the policy never looks at messages.
    pub message: Option<String>,
}

fn true_status() -> String {
    "True".into()
}

// What the scenario cannot model is refused while it is read, so the message names the line
// and the field.

fn index<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    let index = i32::deserialize(d)?;
    if index < 0 {
        return Err(serde::de::Error::custom(format!(
            "index {index}: an index is 0 or more"
        )));
    }
    Ok(Some(index))
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(d)?;
    crate::duration::parse(&text).map_err(|e| serde::de::Error::custom(format!("after: {e}")))?;
    Ok(Some(text))
}

/// A container restarted in place exited non-zero: with restartPolicy OnFailure one that
/// exits 0 is done, not restarted.
fn restart_exit_codes<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, i32>, D::Error> {
    let codes = BTreeMap::<String, i32>::deserialize(d)?;
    if let Some((name, _)) = codes.iter().find(|(_, code)| **code == 0) {
        return Err(serde::de::Error::custom(format!(
            "restart: container {name:?} exits 0, so it is not restarted (restartPolicy OnFailure restarts failed containers only)"
        )));
    }
    Ok(codes)
}

/// A pod has at most one condition of a type (its status is patched by type).
fn conditions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ConditionSpec>, D::Error> {
    let conditions = Vec::<ConditionSpec>::deserialize(d)?;
    let mut seen = std::collections::BTreeSet::new();
    for c in &conditions {
        if !seen.insert(c.type_.as_str()) {
            return Err(serde::de::Error::custom(format!(
                "conditions: type {} is given twice; a pod has one condition of each type",
                c.type_
            )));
        }
    }
    Ok(conditions)
}

fn condition_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let type_ = String::deserialize(d)?;
    if type_.trim().is_empty() {
        return Err(serde::de::Error::custom("a condition's type is empty"));
    }
    Ok(type_)
}

fn condition_status<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let status = String::deserialize(d)?;
    if !["True", "False", "Unknown"].contains(&status.as_str()) {
        return Err(serde::de::Error::custom(format!(
            "condition status {status:?}: it is True, False or Unknown"
        )));
    }
    Ok(status)
}

/// Reads a scenario file's outcomes.
pub fn parse_file(text: &str, source: &str) -> Result<Vec<OutcomeSpec>, Error> {
    let docs = crate::manifest::yaml::documents(text, source)?;
    <[Value; 1]>::try_from(docs).map_err(|docs| {
        Error::input(
            source,
            format!("holds {} documents; a scenario is one", docs.len()),
        )
    })?;
    // Read again into the types, so that what is refused is named with its line.
    let file: ScenarioFile = serde_saphyr::from_str(text).map_err(|e| {
        // The first line of the reader's message says where and what (the rest quotes the
        // text).
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        Error::input(
            source,
            format!("not a scenario: {}", first.trim_start_matches("error: ")),
        )
    })?;
    Ok(file.outcomes)
}

/// The help text of `--fail`, kept next to its parser.
pub const FAIL_HELP: &str = "A failed pod, in order (repeatable). Comma-separated parts: \
exit=N (the first container exits N), exit=NAME:N (that container; repeat for several), \
init=NAME:N (an init container), condition=TYPE[/REASON][=STATUS] (a pod condition, status True \
by default), index=I (Indexed Jobs), after=DURATION (time since the previous outcome). \
Shorthands: oom (exit=137), evicted (condition=DisruptionTarget/EvictionByEvictionAPI), \
preempted (condition=DisruptionTarget/PreemptionByScheduler). \
Example: --fail exit=137 --fail index=2,condition=DisruptionTarget/EvictionByEvictionAPI";

/// Parses one `--fail` (or, with `succeed`, one `--succeed`) value.
pub fn parse_inline(text: &str, succeed: bool) -> Result<OutcomeSpec, String> {
    let mut spec = OutcomeSpec {
        index: None,
        after: None,
        fail: (!succeed).then(FailSpec::default),
        succeed: succeed.then(SucceedSpec::default),
        restart: None,
        delete: None,
    };
    let bad = |part: &str, why: &str| {
        format!(
            "--{} {text:?}: {part:?}: {why}",
            if succeed { "succeed" } else { "fail" }
        )
    };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        match (key, spec.fail.as_mut()) {
            ("index", _) => {
                spec.index = Some(
                    value
                        .parse()
                        .map_err(|_| bad(part, "index=I takes a number"))?,
                )
            }
            ("after", _) => {
                crate::duration::parse(value).map_err(|e| bad(part, &e))?;
                spec.after = Some(value.to_string());
            }
            ("oom", Some(f)) => {
                f.exit_codes.insert(String::new(), 137);
            }
            ("evicted", Some(f)) => f.conditions.push(disruption("EvictionByEvictionAPI")),
            ("preempted", Some(f)) => f.conditions.push(disruption("PreemptionByScheduler")),
            ("exit" | "init", Some(f)) => {
                let (name, code) = match value.split_once(':') {
                    Some((n, c)) => (n.to_string(), c),
                    None => (String::new(), value),
                };
                let code: i32 = code
                    .parse()
                    .map_err(|_| bad(part, "expected exit=N or exit=NAME:N"))?;
                let map = if key == "exit" {
                    &mut f.exit_codes
                } else {
                    &mut f.init_exit_codes
                };
                map.insert(name, code);
            }
            ("condition", Some(f)) => {
                let (head, status) = match value.split_once('=') {
                    Some((h, s)) => (h, s.to_string()),
                    None => (value, "True".to_string()),
                };
                if !["True", "False", "Unknown"].contains(&status.as_str()) {
                    return Err(bad(part, "the status is True, False or Unknown"));
                }
                let (type_, reason) = match head.split_once('/') {
                    Some((t, r)) => (t, Some(r.to_string())),
                    None => (head, None),
                };
                if type_.is_empty() {
                    return Err(bad(part, "expected condition=TYPE[/REASON][=STATUS]"));
                }
                f.conditions.push(ConditionSpec {
                    type_: type_.into(),
                    status,
                    reason,
                    message: None,
                });
            }
            _ => return Err(bad(part, "unknown part; see --help")),
        }
    }
    Ok(spec)
}

fn disruption(reason: &str) -> ConditionSpec {
    ConditionSpec {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: None,
    }
}

/// Checks the outcomes against the Job and turns them into engine input. Unnamed exit codes
/// (`exit=N`) belong to the first container (or init container).
pub fn resolve(specs: &[OutcomeSpec], job: &JobModel) -> Result<Vec<Outcome>, Error> {
    resolve_each(specs, job).map_err(|message| Error::Invalid {
        input: "outcomes".into(),
        message,
    })
}

fn resolve_each(specs: &[OutcomeSpec], job: &JobModel) -> Result<Vec<Outcome>, String> {
    let mut out = Vec::new();
    for (n, spec) in specs.iter().enumerate() {
        let at = format!("outcome {}", n + 1);
        let result = match (&spec.fail, &spec.succeed, &spec.restart, &spec.delete) {
            (Some(f), None, None, None) => PodResult::Failed(failed_pod(f, job, &at)?),
            (None, Some(_), None, None) => PodResult::Succeeded,
            (None, None, Some(r), None) => restarted(r, job, &at)?,
            (None, None, None, Some(d)) => PodResult::Deleted(
                d.fail
                    .as_ref()
                    .map(|f| failed_pod(f, job, &format!("{at}: delete")))
                    .transpose()?,
            ),
            (None, None, None, None) => {
                return Err(format!("{at}: give fail, succeed, restart or delete"));
            }
            _ => {
                return Err(format!(
                    "{at}: give one of fail, succeed, restart and delete, not several"
                ));
            }
        };
        match (job.indexed, spec.index) {
            (true, None) => {
                return Err(format!(
                    "{at}: the Job is Indexed: say which index (index: I)"
                ));
            }
            (false, Some(_)) => return Err(format!("{at}: index is only for Indexed Jobs")),
            (true, Some(i)) if i < 0 || i >= job.completions.unwrap_or(0) => {
                // The valid indexes, 0 to completions - 1, as the Job's pods are numbered.
                return Err(match job.completions.unwrap_or(0) {
                    0 => format!("{at}: index {i}: the Job has no indexes (completions is 0)"),
                    c => format!("{at}: index {i} is outside 0..{}", c - 1),
                });
            }
            _ => {}
        }
        let after_seconds = match &spec.after {
            Some(d) => crate::duration::parse(d)
                .map_err(|e| format!("{at}: after: {e}"))?
                .as_secs(),
            None => 0,
        };
        out.push(Outcome {
            index: spec.index,
            result,
            after_seconds,
        });
    }
    Ok(out)
}

/// A restart outcome: only with restartPolicy OnFailure (with Never a container that exits
/// ends its pod: that is a `fail`), naming at least one container of the Job.
fn restarted(r: &RestartSpec, job: &JobModel, at: &str) -> Result<PodResult, String> {
    if job.restart_policy != "OnFailure" {
        return Err(format!(
            "{at}: restart: the Job's restartPolicy is {}, so a container that exits ends its pod; use fail",
            job.restart_policy
        ));
    }
    let spec = FailSpec {
        exit_codes: r.exit_codes.clone(),
        init_exit_codes: r.init_exit_codes.clone(),
        conditions: Vec::new(),
    };
    // The same checks of the names as for a failure.
    failed_pod(&spec, job, at)?;
    let containers = r.exit_codes.len() + r.init_exit_codes.len();
    if containers == 0 {
        return Err(format!(
            "{at}: restart: name the containers that restart (exitCodes: {{NAME: CODE}})"
        ));
    }
    Ok(PodResult::Restarted(containers as u32))
}

fn failed_pod(f: &FailSpec, job: &JobModel, at: &str) -> Result<FailedPod, String> {
    let states = |codes: &BTreeMap<String, i32>,
                  names: &[String],
                  what: &str|
     -> Result<Vec<ContainerState>, String> {
        for name in codes.keys() {
            if name.is_empty() && names.is_empty() {
                return Err(format!("{at}: the Job has no {what}s"));
            }
            if !name.is_empty() && !names.contains(name) {
                return Err(if names.is_empty() {
                    format!("{at}: the Job has no {what}s, so none named {name:?}")
                } else {
                    format!(
                        "{at}: the Job has no {what} named {name:?} (it has: {})",
                        names.join(", ")
                    )
                });
            }
        }
        // Status lists containers in spec order; containers not mentioned have not terminated.
        Ok(names
            .iter()
            .enumerate()
            .map(|(i, name)| ContainerState {
                name: name.clone(),
                exit_code: codes
                    .get(name)
                    .copied()
                    .or_else(|| if i == 0 { codes.get("").copied() } else { None }),
            })
            .collect())
    };
    Ok(FailedPod {
        name: String::new(),
        containers: states(&f.exit_codes, &job.containers, "container")?,
        init_containers: states(&f.init_exit_codes, &job.init_containers, "init container")?,
        conditions: f
            .conditions
            .iter()
            .map(|c| PodCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_is_refused_unless_containers_restart_in_place() {
        let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "x"}]}}},
        }))
        .unwrap();
        let mut model = JobModel::from_job(&job).unwrap();
        let file = parse_file("outcomes: [{restart: {exitCodes: {main: 1}}}]", "s.yaml").unwrap();
        let refused = resolve_each(&file, &model).unwrap_err();
        assert!(refused.contains("restartPolicy is Never"), "{refused}");
        model.restart_policy = "OnFailure".into();
        assert_eq!(
            resolve_each(&file, &model).unwrap()[0].result,
            PodResult::Restarted(1)
        );
        let nameless = parse_file("outcomes: [{restart: {}}]", "s.yaml").unwrap();
        assert!(resolve_each(&nameless, &model).is_err());
        let conditions = "outcomes: [{restart: {conditions: [{type: X}]}}]";
        assert!(parse_file(conditions, "s.yaml").is_err());
    }

    /// Issue 32, item 4: what a scenario cannot model is refused, never ignored.
    #[test]
    fn a_success_with_contents_is_refused() {
        assert!(parse_file("outcomes: [{succeed: {}}]", "s.yaml").is_ok());
        for text in [
            "outcomes: [{succeed: {conditions: [{type: Ready}]}}]",
            "outcomes: [{succeed: {exitCodes: {main: 0}}}]",
            "outcomes: [{succeed: 1}]",
        ] {
            let refused = parse_file(text, "s.yaml").unwrap_err().to_string();
            assert!(refused.contains("s.yaml"), "{text}: {refused}");
        }
    }

    /// Issue 32, item 4: every field of the format is checked while the file is read, and a
    /// refusal names the file, the line and the field.
    #[test]
    fn what_a_scenario_cannot_model_is_refused_with_its_line() {
        for (text, line, says) in [
            (
                "outcomes:\n- fail:\n    exitCodes: {main: 1}\n    bogus: 1\n",
                4,
                "bogus",
            ),
            (
                "outcomes:\n- fail:\n    conditions:\n    - {type: X, status: Maybe}\n",
                4,
                "Maybe",
            ),
            (
                "outcomes:\n- fail:\n    conditions:\n    - {type: '', status: 'True'}\n",
                4,
                "type is empty",
            ),
            (
                "outcomes:\n- fail:\n    conditions:\n    - {type: A}\n    - {type: A}\n",
                4,
                "twice",
            ),
            ("outcomes:\n- succeed: {}\n  after: soon\n", 3, "after"),
            ("outcomes:\n- succeed: {}\n  index: -1\n", 3, "index -1"),
            (
                "outcomes:\n- restart:\n    exitCodes: {main: 0}\n",
                3,
                "exits 0",
            ),
            (
                "outcomes:\n- delete:\n    fail: {}\n    conditions: []\n",
                4,
                "conditions",
            ),
            ("outcomes:\n- delete: {}\n  extra: 1\n", 3, "extra"),
        ] {
            let refused = parse_file(text, "s.yaml").unwrap_err().to_string();
            assert!(
                refused.starts_with("s.yaml: not a scenario: line ")
                    && refused.contains(&format!("line {line} "))
                    && refused.contains(says)
                    && !refused.contains('\n'),
                "{text:?}: {refused}"
            );
        }
        let fine = "outcomes:\n- fail: {conditions: [{type: DisruptionTarget, status: Unknown}]}\n";
        assert!(parse_file(fine, "s.yaml").is_ok());
    }

    #[test]
    fn inline_failures_read_like_the_help_says() {
        let s = parse_inline("exit=137", false).unwrap();
        assert_eq!(s.fail.unwrap().exit_codes[""], 137);
        let s = parse_inline(
            "index=2,condition=DisruptionTarget/EvictionByEvictionAPI,after=30s",
            false,
        )
        .unwrap();
        assert_eq!(s.index, Some(2));
        assert_eq!(s.after.as_deref(), Some("30s"));
        let c = &s.fail.unwrap().conditions[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()),
            ("DisruptionTarget", "True", Some("EvictionByEvictionAPI"))
        );
        let s = parse_inline("exit=main:1,exit=sidecar:0,init=setup:5", false).unwrap();
        let f = s.fail.unwrap();
        assert_eq!(
            (
                f.exit_codes["main"],
                f.exit_codes["sidecar"],
                f.init_exit_codes["setup"]
            ),
            (1, 0, 5)
        );
        assert_eq!(
            parse_inline("oom", false).unwrap().fail.unwrap().exit_codes[""],
            137
        );
        assert_eq!(
            parse_inline("condition=Ready=False", false)
                .unwrap()
                .fail
                .unwrap()
                .conditions[0]
                .status,
            "False"
        );
        for bad in [
            "exit=x",
            "index=a",
            "wat",
            "condition=",
            "condition=X=Maybe",
            "after=soon",
        ] {
            assert!(parse_inline(bad, false).is_err(), "{bad}");
        }
    }
}
