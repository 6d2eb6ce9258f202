//! `schema-diff --object FILE`, locally: the file's documents (read as the loader reads files)
//! checked against fixed schemas: the test CRDs, one CRD with every keyword the validator
//! knows, and the built-in batch/v1 Job of a real API server. The first byte picks the schema.
#![no_main]

use std::sync::OnceLock;

use kubectl_migrate::schema::load::{self, Selection};
use kubectl_migrate::schema::model::Schema;
use kubectl_migrate::schema::validate::validate_object;
use libfuzzer_sys::fuzz_target;

/// A CRD that uses every keyword `validate` checks.
const EVERY_KEYWORD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.km.example.com}
spec:
  group: km.example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.spec.size > 0"
        properties:
          spec:
            type: object
            required: [size]
            minProperties: 1
            maxProperties: 12
            properties:
              size: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true, multipleOf: 2}
              ratio: {type: number, minimum: 0.5, exclusiveMinimum: true, multipleOf: 0.25}
              name: {type: string, minLength: 2, maxLength: 8, pattern: "^[a-z]+(-[a-z]+)*$"}
              when: {type: string, format: date-time}
              day: {type: string, format: date}
              id: {type: string, format: uuid}
              blob: {type: string, format: byte}
              ip: {type: string, format: ipv4}
              ip6: {type: string, format: ipv6}
              other: {type: string, format: hostname}
              mode: {type: string, enum: [fast, safe], nullable: true}
              port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              tags:
                type: array
                x-kubernetes-list-type: set
                minItems: 1
                maxItems: 4
                items: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
              labels: {type: object, additionalProperties: {type: string, maxLength: 3}}
              closed: {type: object, properties: {a: {type: boolean}}}
              open: {type: object, x-kubernetes-preserve-unknown-fields: true}
              embedded:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              choice:
                type: object
                properties:
                  a: {type: string}
                  b: {type: string}
                oneOf:
                - required: [a]
                - required: [b]
                not: {required: [c]}
                allOf:
                - properties: {a: {maxLength: 4}}
              never:
                type: string
                x-kubernetes-validations:
                - {rule: "false", message: "may not be set"}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

fn schemas() -> &'static [Schema] {
    static SCHEMAS: OnceLock<Vec<Schema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let files = [
            (
                "widgets-a",
                include_str!("../../tests/data/schema/widgets-a.yaml"),
            ),
            (
                "widgets-b",
                include_str!("../../tests/data/schema/widgets-b.yaml"),
            ),
            ("every-keyword", EVERY_KEYWORD),
            (
                "batch-v1",
                include_str!("../../tests/data/schema/openapi/v1.36/apis-batch-v1.json"),
            ),
        ];
        let mut out = Vec::new();
        for (name, text) in files {
            let docs = load::parse_documents(text, name).expect("a fixture parses");
            let apis = load::stored_apis_from_documents(&docs, name, &Selection::default())
                .expect("a fixture is valid");
            for api in apis.values() {
                out.extend(api.def().versions.values().map(|v| v.schema.clone()));
            }
        }
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let schemas = schemas();
    let schema = &schemas[usize::from(pick) % schemas.len()];
    let Ok(docs) = load::parse_documents(text, "object") else {
        return;
    };
    for doc in &docs {
        let outcome = validate_object(schema, doc);
        // Every violation names where it is.
        for v in &outcome.violations {
            assert!(!v.path.is_empty() && !v.message.is_empty(), "{v:?}");
        }
    }
});
