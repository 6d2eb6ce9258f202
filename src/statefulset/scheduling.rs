//! PURE: whether the destination has a node for each pod of the set, by the scheduler's filters
//! that depend only on the pod, its volumes and the node: NodeName, NodeUnschedulable,
//! NodeAffinity (nodeSelector and required node affinity), TaintToleration, and the node
//! affinity of a bound PV (VolumeBinding); plus the allowedTopologies of the volume's
//! StorageClass in the destination. Resources, pod (anti-)affinity and topology spread depend on
//! what else runs there and are not judged.
//!
//! The rules are Kubernetes' own (read in k8s.io/component-helpers scheduling/corev1 and its
//! nodeaffinity package, apimachinery's labels.Requirement, api's Toleration.ToleratesTaint and
//! the StorageClass topology match): node selector terms are ORed and a term with nothing in it
//! matches nothing; the expressions of a term are ANDed and a malformed one makes its term match
//! nothing; NotIn and DoesNotExist match a node without the label; Gt and Lt compare integers;
//! matchFields knows `metadata.name` with In/NotIn of one value; an empty toleration key with
//! Exists tolerates every taint; an empty allowedTopologies allows every node.
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration,
    TopologySelectorTerm,
};

/// The taint a cordoned node carries; a pod that tolerates it may use a cordoned node.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// A destination node, as the filters see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Cordoned (`spec.unschedulable`).
    pub unschedulable: bool,
}

impl NodeFacts {
    pub fn of(node: &Node) -> NodeFacts {
        let spec = node.spec.clone().unwrap_or_default();
        NodeFacts {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: spec.taints.unwrap_or_default(),
            unschedulable: spec.unschedulable.unwrap_or(false),
        }
    }
}

/// What a pod of the set asks of its node, from the pod template.
#[derive(Debug, Clone, Default)]
pub struct PodNeeds {
    /// `spec.nodeName`: the pod skips the scheduler and waits for that node.
    pub node_name: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    pub required_affinity: Option<NodeSelector>,
    pub tolerations: Vec<Toleration>,
}

impl PodNeeds {
    pub fn of(spec: &PodSpec) -> PodNeeds {
        PodNeeds {
            node_name: spec.node_name.clone().filter(|n| !n.is_empty()),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required_affinity: spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .clone()
                }),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
        }
    }
}

/// What one volume of an ordinal asks of the node: the PV's node affinity (its copy keeps it)
/// and the allowedTopologies of its StorageClass in the destination.
#[derive(Debug, Clone, Default)]
pub struct VolumeNeeds {
    pub volume: String,
    pub node_affinity: Option<NodeSelector>,
    /// The destination StorageClass (after --storage-class-map) and its allowedTopologies.
    pub class: Option<String>,
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}

/// Why a node cannot take a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Misfit {
    /// `spec.nodeName` names another node.
    NodeName,
    /// Cordoned, and the pod does not tolerate it.
    Cordoned,
    /// A `nodeSelector` entry the node's labels do not have.
    NodeSelector {
        key: String,
    },
    RequiredAffinity,
    /// A NoSchedule or NoExecute taint no toleration tolerates.
    Taint(Taint),
    VolumeAffinity {
        volume: String,
    },
    ClassTopology {
        volume: String,
        class: String,
    },
}

/// One expression against the node's labels: `None` when it is malformed (its term then
/// matches nothing, as in Kubernetes).
fn label_requirement(
    requirement: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> Option<bool> {
    let values = requirement.values.as_deref().unwrap_or_default();
    let label = labels.get(&requirement.key);
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => None,
        "In" => Some(label.is_some_and(|v| values.contains(v))),
        "NotIn" => Some(!label.is_some_and(|v| values.contains(v))),
        "Exists" | "DoesNotExist" if !values.is_empty() => None,
        "Exists" => Some(label.is_some()),
        "DoesNotExist" => Some(label.is_none()),
        operator @ ("Gt" | "Lt") => {
            let [bound] = values else { return None };
            let bound: i64 = bound.parse().ok()?;
            let value = label.and_then(|v| v.parse::<i64>().ok());
            Some(value.is_some_and(|v| {
                if operator == "Gt" {
                    v > bound
                } else {
                    v < bound
                }
            }))
        }
        _ => None,
    }
}

/// One matchFields expression: only `metadata.name` has a value; any other field reads as "".
fn field_requirement(requirement: &NodeSelectorRequirement, node_name: &str) -> Option<bool> {
    let value = if requirement.key == "metadata.name" {
        node_name
    } else {
        ""
    };
    match (
        requirement.operator.as_str(),
        requirement.values.as_deref().unwrap_or_default(),
    ) {
        ("In", [wanted]) => Some(value == wanted),
        ("NotIn", [unwanted]) => Some(value != unwanted),
        _ => None,
    }
}

/// A term: its expressions and fields ANDed. `node_name` is `None` where Kubernetes matches
/// labels only (a PV's node affinity), and then matchFields are not looked at.
fn term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    node_name: Option<&str>,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let labels_hold = expressions
        .iter()
        .map(|r| label_requirement(r, labels))
        .collect::<Option<Vec<bool>>>();
    let fields_hold = fields
        .iter()
        .map(|r| field_requirement(r, node_name.unwrap_or_default()))
        .collect::<Option<Vec<bool>>>();
    match (labels_hold, fields_hold) {
        (Some(labels_hold), Some(fields_hold)) => {
            labels_hold.iter().all(|h| *h)
                && (node_name.is_none() || fields_hold.iter().all(|h| *h))
        }
        // A malformed expression anywhere in the term.
        _ => false,
    }
}

/// A node selector: its terms ORed.
pub fn selector_matches(
    selector: &NodeSelector,
    labels: &BTreeMap<String, String>,
    node_name: Option<&str>,
) -> bool {
    selector
        .node_selector_terms
        .iter()
        .any(|t| term_matches(t, labels, node_name))
}

/// Whether `value` is a decimal integer as a toleration's Gt/Lt wants it: no sign but `-`, no
/// leading zero.
fn decimal_integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    well_formed.then(|| value.parse().ok()).flatten()
}

pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    if non_empty(&toleration.effect).is_some_and(|e| e != taint.effect) {
        return false;
    }
    if non_empty(&toleration.key).is_some_and(|k| k != taint.key) {
        return false;
    }
    let wanted = toleration.value.as_deref().unwrap_or_default();
    let value = taint.value.as_deref().unwrap_or_default();
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => wanted == value,
        "Exists" => true,
        // Behind the TaintTolerationComparisonOperators gate (alpha in 1.35); a server that
        // accepted such a toleration compares the taint's value with it.
        operator @ ("Lt" | "Gt") => match (decimal_integer(wanted), decimal_integer(value)) {
            (Some(bound), Some(v)) => {
                if operator == "Lt" {
                    v < bound
                } else {
                    v > bound
                }
            }
            _ => false,
        },
        _ => false,
    }
}

fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// A StorageClass's allowedTopologies: terms ORed, each `key in (values)` of a term ANDed; no
/// terms allow every node, a term with nothing in it allows none.
pub fn topology_allows(terms: &[TopologySelectorTerm], labels: &BTreeMap<String, String>) -> bool {
    terms.is_empty()
        || terms.iter().any(|term| {
            let expressions = term.match_label_expressions.as_deref().unwrap_or_default();
            !expressions.is_empty()
                && expressions.iter().all(|e| {
                    !e.values.is_empty() && labels.get(&e.key).is_some_and(|v| e.values.contains(v))
                })
        })
}

/// Every reason `node` cannot take a pod with `pod`'s needs and `volumes`; empty when it can.
pub fn misfits(pod: &PodNeeds, volumes: &[VolumeNeeds], node: &NodeFacts) -> Vec<Misfit> {
    let mut found = Vec::new();
    if pod.node_name.as_ref().is_some_and(|n| *n != node.name) {
        found.push(Misfit::NodeName);
    }
    let cordon = Taint {
        key: UNSCHEDULABLE_TAINT.into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    };
    let cordoned = node.unschedulable && !tolerated(&pod.tolerations, &cordon);
    if cordoned {
        found.push(Misfit::Cordoned);
    }
    for (key, wanted) in &pod.node_selector {
        if node.labels.get(key) != Some(wanted) {
            found.push(Misfit::NodeSelector { key: key.clone() });
        }
    }
    if let Some(affinity) = &pod.required_affinity
        && !selector_matches(affinity, &node.labels, Some(&node.name))
    {
        found.push(Misfit::RequiredAffinity);
    }
    for taint in &node.taints {
        let filtered = matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute");
        // A cordoned node's own taint is the cordon, already said.
        let the_cordon = cordoned && taint.key == UNSCHEDULABLE_TAINT;
        if filtered && !the_cordon && !tolerated(&pod.tolerations, taint) {
            found.push(Misfit::Taint(taint.clone()));
        }
    }
    for v in volumes {
        if let Some(affinity) = &v.node_affinity
            && !selector_matches(affinity, &node.labels, None)
        {
            found.push(Misfit::VolumeAffinity {
                volume: v.volume.clone(),
            });
        }
        if !topology_allows(&v.allowed_topologies, &node.labels) {
            found.push(Misfit::ClassTopology {
                volume: v.volume.clone(),
                class: v.class.clone().unwrap_or_default(),
            });
        }
    }
    found
}

fn requirement_text(r: &NodeSelectorRequirement) -> String {
    let values = r.values.clone().unwrap_or_default().join(", ");
    match r.operator.as_str() {
        "In" => format!("{} in ({values})", r.key),
        "NotIn" => format!("{} notin ({values})", r.key),
        "Exists" => format!("{} exists", r.key),
        "DoesNotExist" => format!("{} does not exist", r.key),
        "Gt" => format!("{} > {values}", r.key),
        "Lt" => format!("{} < {values}", r.key),
        other => format!("{} {other} ({values})", r.key),
    }
}

/// `(a in (x) and b exists) or (...)`, as a person reads a node selector.
pub fn selector_text(selector: &NodeSelector) -> String {
    let terms: Vec<String> = selector
        .node_selector_terms
        .iter()
        .map(|t| {
            let parts: Vec<String> = t
                .match_expressions
                .iter()
                .chain(t.match_fields.iter())
                .flatten()
                .map(requirement_text)
                .collect();
            if parts.is_empty() {
                "nothing".to_string()
            } else {
                parts.join(" and ")
            }
        })
        .collect();
    match terms.as_slice() {
        [] => "no terms".to_string(),
        [one] => one.clone(),
        _ => terms
            .iter()
            .map(|t| format!("({t})"))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

fn topology_text(terms: &[TopologySelectorTerm]) -> String {
    let texts: Vec<String> = terms
        .iter()
        .map(|t| {
            t.match_label_expressions
                .iter()
                .flatten()
                .map(|e| format!("{} in ({})", e.key, e.values.join(", ")))
                .collect::<Vec<_>>()
                .join(" and ")
        })
        .collect();
    texts.join(" or ")
}

fn taint_text(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={value}:{}", taint.key, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

/// What the node has of the label keys a constraint names: `k=v`, or `no label k`.
fn node_has(node: &NodeFacts, keys: impl IntoIterator<Item = String>) -> String {
    let mut keys: Vec<String> = keys.into_iter().collect();
    keys.sort();
    keys.dedup();
    let has: Vec<String> = keys
        .iter()
        .map(|k| match node.labels.get(k) {
            Some(v) => format!("{k}={v}"),
            None => format!("no label {k}"),
        })
        .collect();
    if has.is_empty() {
        "other labels".to_string()
    } else {
        has.join(", ")
    }
}

fn selector_keys(selector: &NodeSelector) -> Vec<String> {
    selector
        .node_selector_terms
        .iter()
        .flat_map(|t| t.match_expressions.iter().flatten())
        .map(|r| r.key.clone())
        .collect()
}

/// One misfit in words: the constraint, and what the node has instead.
fn misfit_text(
    misfit: &Misfit,
    pod: &PodNeeds,
    volumes: &[VolumeNeeds],
    node: &NodeFacts,
) -> String {
    let volume = |name: &str| volumes.iter().find(|v| v.volume == name);
    match misfit {
        Misfit::NodeName => format!(
            "the pod template's nodeName is {}",
            pod.node_name.clone().unwrap_or_default()
        ),
        Misfit::Cordoned => "cordoned (spec.unschedulable)".to_string(),
        Misfit::NodeSelector { key } => format!(
            "nodeSelector {key}={}, node has {}",
            pod.node_selector.get(key).cloned().unwrap_or_default(),
            node_has(node, [key.clone()])
        ),
        Misfit::RequiredAffinity => {
            let affinity = pod.required_affinity.clone().unwrap_or_default();
            format!(
                "required node affinity {}, node has {}",
                selector_text(&affinity),
                node_has(node, selector_keys(&affinity))
            )
        }
        Misfit::Taint(taint) => format!("taint {} not tolerated", taint_text(taint)),
        Misfit::VolumeAffinity { volume: name } => {
            let affinity = volume(name)
                .and_then(|v| v.node_affinity.clone())
                .unwrap_or_default();
            format!(
                "node affinity of PV {name} {}, node has {}",
                selector_text(&affinity),
                node_has(node, selector_keys(&affinity))
            )
        }
        Misfit::ClassTopology {
            volume: name,
            class,
        } => {
            let terms = volume(name)
                .map(|v| v.allowed_topologies.clone())
                .unwrap_or_default();
            let keys = terms
                .iter()
                .flat_map(|t| t.match_label_expressions.iter().flatten())
                .map(|e| e.key.clone());
            format!(
                "allowedTopologies of StorageClass {class} (PV {name}) {}, node has {}",
                topology_text(&terms),
                node_has(node, keys)
            )
        }
    }
}

/// At most this many groups of nodes, and names in a group, are listed in a refusal.
const LISTED: usize = 5;

/// Why no node takes the pod, node by node, nodes that fail alike grouped: one line a group.
fn no_node_lines(pod: &PodNeeds, volumes: &[VolumeNeeds], nodes: &[NodeFacts]) -> Vec<String> {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for node in nodes {
        let why = misfits(pod, volumes, node)
            .iter()
            .map(|m| misfit_text(m, pod, volumes, node))
            .collect::<Vec<_>>()
            .join("; ");
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(&node.name),
            None => groups.push((why, vec![&node.name])),
        }
    }
    let mut lines: Vec<String> = groups
        .iter()
        .take(LISTED)
        .map(|(why, names)| {
            let mut listed = names
                .iter()
                .take(LISTED)
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            if names.len() > LISTED {
                listed.push_str(&format!(" and {} more", names.len() - LISTED));
            }
            format!("{listed}: {why}")
        })
        .collect();
    if groups.len() > LISTED {
        let rest: usize = groups[LISTED..].iter().map(|(_, n)| n.len()).sum();
        lines.push(format!(
            "and {} for other reasons",
            super::words::count(rest as i64, "more node", "more nodes")
        ));
    }
    lines
}

/// The ordinals whose pod no destination node can take, as preflight problems: one per group
/// of ordinals that fail alike, each naming the constraints and what the nodes have instead.
/// `ordinals` are those still to move, each with what its volumes need.
pub fn unschedulable(
    set: &str,
    context: &str,
    pod: &PodNeeds,
    ordinals: &[(i32, Vec<VolumeNeeds>)],
    nodes: &[NodeFacts],
) -> Vec<String> {
    let mut failing: Vec<(Vec<String>, Vec<i32>)> = Vec::new();
    for (k, volumes) in ordinals {
        if nodes.iter().any(|n| misfits(pod, volumes, n).is_empty()) {
            continue;
        }
        let lines = no_node_lines(pod, volumes, nodes);
        match failing.iter_mut().find(|(l, _)| *l == lines) {
            Some((_, ks)) => ks.push(*k),
            None => failing.push((lines, vec![*k])),
        }
    }
    failing
        .into_iter()
        .map(|(lines, ks)| {
            let head = format!(
                "pods of {set} ({}) cannot be scheduled in {context}",
                super::words::ordinals(&ks)
            );
            if nodes.is_empty() {
                format!("{head}: it has no nodes")
            } else {
                format!(
                    "{head}: {}:\n    {}",
                    match nodes.len() {
                        1 => "its only node does not fit".to_string(),
                        n => format!("none of its {n} nodes fits"),
                    },
                    lines.join("\n    ")
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> NodeFacts {
        NodeFacts {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    fn selector(v: serde_json::Value) -> NodeSelector {
        serde_json::from_value(json!({ "nodeSelectorTerms": v })).unwrap()
    }

    fn toleration(v: serde_json::Value) -> Toleration {
        serde_json::from_value(v).unwrap()
    }

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> serde_json::Value {
        json!({"key": key, "operator": operator, "values": values})
    }

    fn matches(sel: &NodeSelector, n: &NodeFacts) -> bool {
        selector_matches(sel, &n.labels, Some(&n.name))
    }

    #[test]
    fn each_operator_reads_the_label_as_kubernetes_does() {
        let zone_a = node("n", &[("zone", "a"), ("cpus", "8")]);
        let bare = node("n", &[]);
        let one = |key: &str, op: &str, values: &[&str]| {
            selector(json!([{"matchExpressions": [expression(key, op, values)]}]))
        };
        let cases = [
            (one("zone", "In", &["a", "b"]), true, false),
            (one("zone", "In", &["b"]), false, false),
            // NotIn and DoesNotExist hold for a node without the label.
            (one("zone", "NotIn", &["b"]), true, true),
            (one("zone", "NotIn", &["a"]), false, true),
            (one("zone", "Exists", &[]), true, false),
            (one("zone", "DoesNotExist", &[]), false, true),
            (one("cpus", "Gt", &["4"]), true, false),
            (one("cpus", "Gt", &["8"]), false, false),
            (one("cpus", "Lt", &["16"]), true, false),
            // A label that is not an integer never compares.
            (one("zone", "Lt", &["16"]), false, false),
            // Malformed: no values for In, values for Exists, two for Gt, an unknown operator.
            (one("zone", "In", &[]), false, false),
            (one("zone", "Exists", &["a"]), false, false),
            (one("cpus", "Gt", &["1", "2"]), false, false),
            (one("cpus", "Gt", &["x"]), false, false),
            (one("zone", "Near", &["a"]), false, false),
        ];
        for (sel, on_zone_a, on_bare) in cases {
            assert_eq!(
                (matches(&sel, &zone_a), matches(&sel, &bare)),
                (on_zone_a, on_bare),
                "{}",
                selector_text(&sel)
            );
        }
    }

    #[test]
    fn terms_are_ored_expressions_anded_and_an_empty_term_matches_nothing() {
        let n = node("b-node-0", &[("zone", "a"), ("disk", "ssd")]);
        let both = selector(json!([{"matchExpressions": [
            expression("zone", "In", &["a"]), expression("disk", "In", &["hdd"])]}]));
        assert!(!matches(&both, &n));
        let either = selector(json!([
            {"matchExpressions": [expression("zone", "In", &["b"])]},
            {"matchExpressions": [expression("disk", "In", &["ssd"])]}]));
        assert!(matches(&either, &n));
        assert!(!matches(&selector(json!([{}])), &n));
        assert!(!matches(&selector(json!([])), &n));
        // A malformed expression spoils its own term only.
        let spoiled = selector(json!([
            {"matchExpressions": [expression("zone", "In", &["a"]), expression("x", "Bogus", &[])]},
            {"matchExpressions": [expression("disk", "Exists", &[])]}]));
        assert!(matches(&spoiled, &n));
    }

    #[test]
    fn match_fields_know_the_node_name_and_pv_affinity_ignores_them() {
        let n = node("b-node-0", &[("zone", "a")]);
        let named = |op: &str, name: &str| {
            selector(json!([{"matchFields": [expression("metadata.name", op, &[name])]}]))
        };
        assert!(matches(&named("In", "b-node-0"), &n));
        assert!(!matches(&named("In", "b-node-1"), &n));
        assert!(matches(&named("NotIn", "b-node-1"), &n));
        // Fields take one value, and In/NotIn only.
        let two =
            selector(json!([{"matchFields": [expression("metadata.name", "In", &["a", "b"])]}]));
        assert!(!matches(&two, &n));
        // With labels and fields in one term, both must hold.
        let both = selector(
            json!([{"matchExpressions": [expression("zone", "In", &["a"])],
            "matchFields": [expression("metadata.name", "In", &["b-node-1"])]}]),
        );
        assert!(!matches(&both, &n));
        // A PV's node affinity is matched on labels only.
        assert!(selector_matches(&both, &n.labels, None));
    }

    #[test]
    fn tolerations_match_key_value_and_effect() {
        let dedicated = taint("dedicated", "db", "NoSchedule");
        let cases = [
            (
                json!({"key": "dedicated", "operator": "Equal", "value": "db"}),
                true,
            ),
            (json!({"key": "dedicated", "value": "db"}), true),
            (json!({"key": "dedicated", "value": "web"}), false),
            (json!({"key": "dedicated", "operator": "Exists"}), true),
            (
                json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}),
                true,
            ),
            (
                json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}),
                false,
            ),
            (json!({"key": "other", "operator": "Exists"}), false),
            (json!({"operator": "Exists"}), true),
            (json!({"operator": "Exists", "effect": "NoExecute"}), false),
            (
                json!({"key": "dedicated", "operator": "Contains", "value": "db"}),
                false,
            ),
        ];
        for (t, expected) in cases {
            assert_eq!(
                tolerates(&toleration(t.clone()), &dedicated),
                expected,
                "{t}"
            );
        }
        let gpus = taint("gpus", "4", "NoSchedule");
        assert!(tolerates(
            &toleration(json!({"key": "gpus", "operator": "Lt", "value": "8"})),
            &gpus
        ));
        assert!(!tolerates(
            &toleration(json!({"key": "gpus", "operator": "Gt", "value": "4"})),
            &gpus
        ));
        assert!(!tolerates(
            &toleration(json!({"key": "gpus", "operator": "Lt", "value": "08"})),
            &gpus
        ));
    }

    fn pod(v: serde_json::Value) -> PodNeeds {
        PodNeeds::of(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn a_node_is_judged_on_every_filter_at_once() {
        let mut tainted = node("b-node-1", &[("zone", "a")]);
        tainted.taints = vec![
            taint("dedicated", "db", "NoSchedule"),
            taint("soft", "", "PreferNoSchedule"),
        ];
        let needs = pod(json!({"containers": [], "nodeSelector": {"zone": "a", "disk": "ssd"}}));
        assert_eq!(
            misfits(&needs, &[], &tainted),
            [
                Misfit::NodeSelector { key: "disk".into() },
                Misfit::Taint(taint("dedicated", "db", "NoSchedule")),
            ],
            "PreferNoSchedule never keeps a pod away"
        );
        let mut cordoned = node("b-node-2", &[("zone", "a"), ("disk", "ssd")]);
        cordoned.unschedulable = true;
        cordoned.taints = vec![taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")];
        assert_eq!(misfits(&needs, &[], &cordoned), [Misfit::Cordoned]);
        let tolerant = pod(
            json!({"containers": [], "nodeSelector": {"zone": "a", "disk": "ssd"},
            "tolerations": [{"key": UNSCHEDULABLE_TAINT, "operator": "Exists"}]}),
        );
        assert!(misfits(&tolerant, &[], &cordoned).is_empty());
        let pinned = pod(json!({"containers": [], "nodeName": "a-node-0"}));
        assert_eq!(
            misfits(&pinned, &[], &cordoned),
            [Misfit::NodeName, Misfit::Cordoned]
        );
    }

    #[test]
    fn volumes_need_their_pv_affinity_and_class_topology() {
        let n = node("b-node-0", &[("zone", "b")]);
        let volume = VolumeNeeds {
            volume: "pv-3".into(),
            node_affinity: Some(selector(
                json!([{"matchExpressions": [expression("zone", "In", &["a"])]}]),
            )),
            class: Some("fast".into()),
            allowed_topologies: serde_json::from_value(
                json!([{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]),
            )
            .unwrap(),
        };
        assert_eq!(
            misfits(&PodNeeds::default(), std::slice::from_ref(&volume), &n),
            [
                Misfit::VolumeAffinity {
                    volume: "pv-3".into()
                },
                Misfit::ClassTopology {
                    volume: "pv-3".into(),
                    class: "fast".into()
                },
            ]
        );
        let in_a = node("b-node-1", &[("zone", "a")]);
        assert!(misfits(&PodNeeds::default(), &[volume], &in_a).is_empty());
        assert!(topology_allows(&[], &n.labels));
        let empty_term: Vec<TopologySelectorTerm> = serde_json::from_value(json!([{}])).unwrap();
        assert!(!topology_allows(&empty_term, &n.labels));
    }

    #[test]
    fn a_refusal_names_the_constraint_and_what_each_node_has() {
        let nodes = [
            node("b-node-0", &[("zone", "b")]),
            node("b-node-1", &[("zone", "b")]),
            node("b-node-2", &[]),
        ];
        let needs = pod(json!({"containers": [], "nodeSelector": {"zone": "a"}}));
        let ordinals: Vec<(i32, Vec<VolumeNeeds>)> = (0..4).map(|k| (k, vec![])).collect();
        assert_eq!(
            unschedulable("web", "km-b", &needs, &ordinals, &nodes),
            [
                "pods of web (ordinals 0-3) cannot be scheduled in km-b: none of its 3 nodes fits:\n    \
              b-node-0, b-node-1: nodeSelector zone=a, node has zone=b\n    \
              b-node-2: nodeSelector zone=a, node has no label zone"
            ]
        );
        let affine = pod(json!({"containers": [], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [expression("kubernetes.io/hostname", "In", &["a-node-0", "a-node-1"])]},
                {"matchExpressions": [expression("gpu", "Exists", &[])]}]}}}}));
        let mut tainted = node(
            "b-node-0",
            &[("kubernetes.io/hostname", "b-node-0"), ("gpu", "1")],
        );
        tainted.taints = vec![taint("dedicated", "db", "NoExecute")];
        let problems = unschedulable(
            "web",
            "km-b",
            &affine,
            &[(2, vec![])],
            &[
                tainted.clone(),
                node("b-node-1", &[("kubernetes.io/hostname", "b-node-1")]),
            ],
        );
        assert_eq!(
            problems,
            [
                "pods of web (ordinal 2) cannot be scheduled in km-b: none of its 2 nodes fits:\n    \
              b-node-0: taint dedicated=db:NoExecute not tolerated\n    \
              b-node-1: required node affinity (kubernetes.io/hostname in (a-node-0, a-node-1)) or (gpu exists), \
              node has no label gpu, kubernetes.io/hostname=b-node-1"
            ]
        );
        // One node that fits is enough; no nodes at all is said so.
        assert!(
            unschedulable(
                "web",
                "km-b",
                &affine,
                &[(2, vec![])],
                &[node("b-node-3", &[("gpu", "2")])]
            )
            .is_empty()
        );
        assert_eq!(
            unschedulable("web", "km-b", &affine, &[(2, vec![])], &[]),
            ["pods of web (ordinal 2) cannot be scheduled in km-b: it has no nodes"]
        );
    }

    #[test]
    fn ordinals_whose_volumes_differ_are_judged_apart() {
        let nodes = [
            node("b-node-0", &[("zone", "a")]),
            node("b-node-1", &[("zone", "b")]),
        ];
        let in_zone = |k: i32, zone: &str| VolumeNeeds {
            volume: format!("pv-{k}"),
            node_affinity: Some(selector(
                json!([{"matchExpressions": [expression("zone", "In", &[zone])]}]),
            )),
            ..Default::default()
        };
        let ordinals = vec![
            (0, vec![in_zone(0, "a")]),
            (1, vec![in_zone(1, "c")]),
            (2, vec![in_zone(2, "b")]),
        ];
        let problems = unschedulable("web", "km-b", &PodNeeds::default(), &ordinals, &nodes);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("pods of web (ordinal 1) cannot"),
            "{problems:?}"
        );
        assert!(
            problems[0].contains("b-node-0: node affinity of PV pv-1 zone in (c), node has zone=a")
        );
    }

    #[test]
    fn many_nodes_are_summarised() {
        let nodes: Vec<NodeFacts> = (0..20)
            .map(|i| node(&format!("n{i:02}"), &[("rack", &format!("r{}", i % 7))]))
            .collect();
        let needs = pod(json!({"containers": [], "nodeSelector": {"rack": "r9"}}));
        let problem = &unschedulable("web", "km-b", &needs, &[(0, vec![])], &nodes)[0];
        assert!(
            problem.contains("n00, n07, n14: nodeSelector rack=r9, node has rack=r0"),
            "{problem}"
        );
        assert!(
            problem.ends_with("and 5 more nodes for other reasons"),
            "{problem}"
        );
        let same: Vec<NodeFacts> = (0..8).map(|i| node(&format!("n{i}"), &[])).collect();
        let problem = &unschedulable("web", "km-b", &needs, &[(0, vec![])], &same)[0];
        assert!(
            problem.contains("n0, n1, n2, n3, n4 and 3 more: nodeSelector"),
            "{problem}"
        );
    }

    // Properties, on a small alphabet of keys and values so that matches are common.
    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from)
    }
    fn value() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["1", "2", "x", "-3"]).prop_map(String::from)
    }
    fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(key(), value(), 0..3)
    }
    fn requirement() -> impl Strategy<Value = NodeSelectorRequirement> {
        let operator = prop::sample::select(vec![
            "In",
            "NotIn",
            "Exists",
            "DoesNotExist",
            "Gt",
            "Lt",
            "Odd",
        ]);
        (key(), operator, prop::collection::vec(value(), 0..3)).prop_map(
            |(key, operator, values)| NodeSelectorRequirement {
                key,
                operator: operator.into(),
                values: Some(values),
            },
        )
    }
    fn term() -> impl Strategy<Value = NodeSelectorTerm> {
        prop::collection::vec(requirement(), 1..3).prop_map(|e| NodeSelectorTerm {
            match_expressions: Some(e),
            match_fields: None,
        })
    }
    fn any_taint() -> impl Strategy<Value = Taint> {
        let effect = prop::sample::select(vec!["NoSchedule", "NoExecute", "PreferNoSchedule"]);
        (key(), prop::option::of(value()), effect).prop_map(|(key, value, effect)| Taint {
            key,
            value,
            effect: effect.into(),
            ..Default::default()
        })
    }
    fn any_toleration() -> impl Strategy<Value = Toleration> {
        let operator = prop::option::of(prop::sample::select(vec!["Equal", "Exists", "Lt", "Gt"]));
        let effect = prop::option::of(prop::sample::select(vec!["NoSchedule", "NoExecute"]));
        (
            prop::option::of(key()),
            operator,
            prop::option::of(value()),
            effect,
        )
            .prop_map(|(key, operator, value, effect)| Toleration {
                key,
                operator: operator.map(String::from),
                value,
                effect: effect.map(String::from),
                ..Default::default()
            })
    }

    proptest! {
        #[test]
        fn a_selector_is_the_or_of_its_terms(terms in prop::collection::vec(term(), 0..4), l in labels()) {
            let whole = NodeSelector { node_selector_terms: terms.clone() };
            let any = terms.iter().any(|t| selector_matches(&NodeSelector { node_selector_terms: vec![t.clone()] }, &l, Some("n")));
            prop_assert_eq!(selector_matches(&whole, &l, Some("n")), any);
        }

        #[test]
        fn a_term_is_the_and_of_its_expressions(x in term(), y in term(), l in labels()) {
            let mut joined = x.clone();
            joined.match_expressions.as_mut().unwrap().extend(y.match_expressions.clone().unwrap());
            prop_assert_eq!(
                term_matches(&joined, &l, None),
                term_matches(&x, &l, None) && term_matches(&y, &l, None)
            );
        }

        #[test]
        fn not_in_and_does_not_exist_are_the_negations(k in key(), values in prop::collection::vec(value(), 1..3), l in labels()) {
            let with = |operator: &str, values: &[String]| NodeSelectorRequirement {
                key: k.clone(), operator: operator.into(), values: Some(values.to_vec()),
            };
            prop_assert_eq!(label_requirement(&with("NotIn", &values), &l), label_requirement(&with("In", &values), &l).map(|b| !b));
            prop_assert_eq!(label_requirement(&with("DoesNotExist", &[]), &l), label_requirement(&with("Exists", &[]), &l).map(|b| !b));
        }

        #[test]
        fn the_empty_exists_toleration_tolerates_every_taint(t in any_taint()) {
            let all = Toleration { operator: Some("Exists".into()), ..Default::default() };
            prop_assert!(tolerates(&all, &t));
        }

        #[test]
        fn more_tolerations_never_add_misfits(
            taints in prop::collection::vec(any_taint(), 0..4),
            tolerations in prop::collection::vec(any_toleration(), 0..3),
            extra in any_toleration(),
            unschedulable in any::<bool>(),
        ) {
            let n = NodeFacts { name: "n".into(), taints, unschedulable, ..Default::default() };
            let fewer = PodNeeds { tolerations: tolerations.clone(), ..Default::default() };
            let mut more = fewer.clone();
            more.tolerations.push(extra);
            let before = misfits(&fewer, &[], &n);
            for m in misfits(&more, &[], &n) {
                prop_assert!(before.contains(&m), "{:?} appeared with a toleration more", m);
            }
        }

        #[test]
        fn a_node_that_fits_clears_every_refusal(
            selected in labels(),
            nodes in prop::collection::vec(labels(), 0..4),
        ) {
            let needs = PodNeeds { node_selector: selected.clone(), ..Default::default() };
            let mut facts: Vec<NodeFacts> = nodes.iter().enumerate()
                .map(|(i, l)| NodeFacts { name: format!("n{i}"), labels: l.clone(), ..Default::default() })
                .collect();
            let refused = unschedulable("web", "km-b", &needs, &[(0, vec![])], &facts);
            let fits = facts.iter().any(|n| selected.iter().all(|(k, v)| n.labels.get(k) == Some(v)));
            prop_assert_eq!(refused.is_empty(), fits);
            facts.push(NodeFacts { name: "fits".into(), labels: selected, ..Default::default() });
            prop_assert!(unschedulable("web", "km-b", &needs, &[(0, vec![])], &facts).is_empty());
        }
    }
}
