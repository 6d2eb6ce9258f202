//! PURE: CEL rules evaluated (placeholder until the interpreter lands: every rule is undecided).
use std::sync::Arc;

use serde_json::Value;

use super::model::{CelRule, Schema};

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    Fail(String),
    Undecided(String),
}

pub struct Rule {
    literals: Literals,
}

#[derive(Debug, Default, Clone)]
pub struct Literals {
    pub strings: Vec<String>,
    pub integers: Vec<i64>,
    pub fields: Vec<String>,
}

impl Rule {
    pub fn compile(_rule: &CelRule) -> Result<Rule, String> {
        Err("CEL is not evaluated yet".into())
    }
    pub fn uses_old_self(&self) -> bool {
        false
    }
    pub fn literals(&self) -> &Literals {
        &self.literals
    }
    pub fn evaluate(&self, _schema: &Schema, _value: &Value) -> Verdict {
        Verdict::Undecided("not evaluated".into())
    }
}

pub fn compiled(rule: &CelRule) -> Arc<Result<Rule, String>> {
    Arc::new(Rule::compile(rule))
}
