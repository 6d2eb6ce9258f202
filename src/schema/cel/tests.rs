//! CEL rules evaluated: each conversion the server makes, each failure it rejects on, and each
//! case this module leaves undecided (named).
use serde_json::json;

use super::*;
use crate::schema::load::{Selection, apis_from_documents, parse_documents};

fn rule(text: &str) -> CelRule {
    CelRule {
        rule: text.into(),
        message: None,
        message_expression: None,
        reason: None,
        field_path: None,
        optional_old_self: None,
    }
}

/// The `.spec` schema of a one-version CRD (YAML flow style).
fn spec(schema: &str) -> Schema {
    let text = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.example.com}}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{plural: widgets, kind: Widget}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, properties: {{spec: {schema}}}}}\n"
    );
    let docs = parse_documents(&text, "t.yaml").unwrap();
    let mut apis = apis_from_documents(docs, "t.yaml", &Selection::default()).unwrap();
    let api = apis.pop_first().unwrap().1;
    api.versions["v1"].schema.properties["spec"].clone()
}

fn eval(schema: &Schema, text: &str, value: Value) -> Verdict {
    Rule::compile(&rule(text)).unwrap().evaluate(schema, &value)
}

#[test]
fn the_gateway_api_rules_decide_as_the_server_does() {
    let tls = spec(
        "{type: object, properties: {mode: {type: string}, certificateRefs: {type: array, items: {type: object}}, options: {type: object, additionalProperties: {type: string}}}}",
    );
    let r = "self.mode == 'Terminate' ? size(self.certificateRefs) > 0 || size(self.options) > 0 : true";
    assert_eq!(eval(&tls, r, json!({"mode": "Passthrough"})), Verdict::Pass);
    assert_eq!(
        eval(
            &tls,
            r,
            json!({"mode": "Terminate", "certificateRefs": [{}]})
        ),
        Verdict::Pass
    );
    // certificateRefs empty, options absent: the select of options fails, so the server rejects.
    let Verdict::Fail(why) = eval(&tls, r, json!({"mode": "Terminate", "certificateRefs": []}))
    else {
        panic!("an absent field selected fails");
    };
    assert!(why.contains("No such key: options"), "{why}");
    let listeners = spec(
        "{type: array, items: {type: object, properties: {protocol: {type: string}, tls: {type: object}}}}",
    );
    let all = "self.all(l, l.protocol in ['HTTPS', 'TLS'] ? has(l.tls) : true)";
    assert_eq!(
        eval(
            &listeners,
            all,
            json!([{"protocol": "HTTP"}, {"protocol": "TLS", "tls": {}}])
        ),
        Verdict::Pass
    );
    assert_eq!(
        eval(&listeners, all, json!([{"protocol": "HTTPS"}])),
        Verdict::Fail(format!("failed rule: {all}"))
    );
}

#[test]
fn numbers_are_typed_by_the_schema() {
    let s = spec(
        "{type: object, properties: {i: {type: integer}, num: {type: number}, ios: {x-kubernetes-int-or-string: true}}}",
    );
    assert_eq!(eval(&s, "self.i + 1 == 3", json!({"i": 2})), Verdict::Pass);
    // A number written 1 is a double: 1.0 / 2 is 0.5 (an int would give 0).
    assert_eq!(
        eval(&s, "self.num / 2.0 == 0.5", json!({"num": 1})),
        Verdict::Pass
    );
    assert_eq!(
        eval(&s, "type(self.num) == double", json!({"num": 1})),
        Verdict::Pass
    );
    assert_eq!(
        eval(&s, "type(self.ios) == string", json!({"ios": "50%"})),
        Verdict::Pass
    );
    assert_eq!(
        eval(&s, "type(self.ios) == int", json!({"ios": 5})),
        Verdict::Pass
    );
    assert!(matches!(
        eval(&s, "self.i / 0 == 1", json!({"i": 2})),
        Verdict::Fail(_)
    ));
}

#[test]
fn strings_lists_and_maps_have_their_functions() {
    let s = spec(
        "{type: object, properties: {name: {type: string}, tags: {type: array, items: {type: string}}, labels: {type: object, additionalProperties: {type: string}}}}",
    );
    let v = json!({"name": "Web-1", "tags": ["a", "b"], "labels": {"app": "web"}});
    for pass in [
        "self.name.lowerAscii() == 'web-1'",
        "self.name.startsWith('We') && self.name.endsWith('1') && self.name.contains('b-')",
        "self.name.split('-').size() == 2 && self.name.indexOf('-') == 3",
        "self.tags.exists(t, t == 'b') && self.tags.all(t, t.size() == 1)",
        "self.tags.map(t, t + t) == ['aa', 'bb'] && self.tags.filter(t, t == 'a').size() == 1",
        "'app' in self.labels && self.labels['app'] == 'web' && !has(self.labels.db)",
        "size(self.tags) <= 2 && self.tags.exists_one(t, t == 'a')",
        "self.name.matches('^[A-Z][a-z]+-[0-9]$')",
    ] {
        assert_eq!(eval(&s, pass, v.clone()), Verdict::Pass, "{pass}");
    }
    assert!(matches!(
        eval(&s, "self.tags[5] == 'x'", v.clone()),
        Verdict::Fail(_)
    ));
}

#[test]
fn property_names_are_escaped_as_the_server_escapes_them() {
    let s = spec(
        "{type: object, properties: {namespace: {type: string}, x-y: {type: string}, a.b: {type: string}}}",
    );
    let v = json!({"namespace": "n", "x-y": "d", "a.b": "p"});
    assert_eq!(
        eval(
            &s,
            "self.__namespace__ == 'n' && self.x__dash__y == 'd' && self.a__dot__b == 'p'",
            v
        ),
        Verdict::Pass
    );
    let l = Rule::compile(&rule("has(self.__namespace__) && self.x__dash__y == 'q'")).unwrap();
    assert!(l.literals().fields.contains(&"namespace".to_string()));
    assert!(l.literals().fields.contains(&"x-y".to_string()));
    assert_eq!(l.literals().strings, ["q"]);
}

#[test]
fn what_is_not_modelled_is_undecided_and_named() {
    let s = spec(
        "{type: object, properties: {q: {type: string}, t: {type: string, format: date-time}, u: {type: string}}}",
    );
    for (text, named) in [
        (
            "quantity(self.q).isGreaterThan(quantity('1'))",
            "quantity()",
        ),
        ("isURL(self.u)", "isURL()"),
        ("self.u.matches('^\\\\d+$')", "\\d"),
    ] {
        let Err(why) = Rule::compile(&rule(text)) else {
            panic!("{text} compiles");
        };
        assert!(why.contains(named), "{text}: {why}");
    }
    assert!(matches!(
        eval(&s, "self.t == 'x'", json!({"t": "2024-01-01T00:00:00Z"})),
        Verdict::Undecided(w) if w.contains("date-time")
    ));
    let transition = Rule::compile(&rule("self.u == oldSelf.u")).unwrap();
    assert!(transition.uses_old_self());
    assert!(matches!(
        transition.evaluate(&s, &json!({"u": "a"})),
        Verdict::Undecided(w) if w.contains("oldSelf")
    ));
    assert!(matches!(
        eval(&s, "self.u + 1 == 2", json!({"u": "a"})),
        Verdict::Undecided(_)
    ));
}

#[test]
fn a_transition_rule_is_evaluated_on_an_update_with_old_self_bound() {
    let s = spec("{type: object, properties: {u: {type: string}, t: {type: string}}}");
    let immutable = Rule::compile(&rule("!has(oldSelf.t) || self == oldSelf")).unwrap();
    let update = |new: Value, old: Value| immutable.evaluate_update(&s, &new, &old);
    assert_eq!(update(json!({"u": "a"}), json!({"u": "b"})), Verdict::Pass);
    assert_eq!(
        update(json!({"u": "a", "t": "x"}), json!({"u": "a", "t": "x"})),
        Verdict::Pass
    );
    assert!(matches!(
        update(json!({"u": "a", "t": "x"}), json!({"u": "b", "t": "x"})),
        Verdict::Fail(_)
    ));
}

#[test]
fn a_rule_is_compiled_once_and_kept() {
    let r = rule("self.size() > 1");
    assert!(Arc::ptr_eq(&compiled(&r), &compiled(&r)));
    let Ok(c) = &*compiled(&r) else { panic!() };
    assert_eq!(c.literals().integers, [1]);
}

#[test]
fn comparisons_of_two_fields_are_read_from_the_text() {
    let names = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    let rule = "self.source.name != self.destination.name || (has(self.source.__namespace__) ? self.source.__namespace__ : '') != ''";
    assert_eq!(
        comparisons_of(rule),
        [Comparison {
            left: names(&["source", "name"]),
            equal: false,
            right: names(&["destination", "name"]),
        }]
    );
    assert_eq!(
        comparisons_of("self.a==self.b.c"),
        [Comparison {
            left: names(&["a"]),
            equal: true,
            right: names(&["b", "c"]),
        }]
    );
    for none in [
        "self.a[0] == self.b",
        "size(self.a) != size(self.b)",
        "self.a.size() == self.b",
        "self == oldSelf",
        "myself.a == self.b",
        "self.a == 'x'",
    ] {
        assert_eq!(comparisons_of(none), [], "{none}");
    }
}
