//! Table tests of every rule: for each, a valid base object is changed in one way and the
//! exact violation (field and reason) is checked, next to the allowed neighbours.
//!
//! The tables are ordinary code rather than test-only code because the admission-rules
//! reference (`docs/reference/admission-rules.md`) is generated from them: [`all`] runs
//! every case through the real rule, and the page shows the field and message each one
//! produced.

mod blue_green;
mod deployment;
mod session_job;
mod snapshot;

use serde_json::Value;

use super::Violation;

/// One case of a rule table: an object that breaks one rule, and what the rule said.
#[derive(Clone, Debug)]
pub struct RuleCase {
    /// The kind judged.
    pub kind: &'static str,
    /// The rule (the Apache operator's number where it has one) and how it is broken.
    pub name: String,
    /// What the real rule reported for the object.
    pub violations: Vec<Violation>,
    /// The field the test expects.
    pub field: String,
    /// A part of the reason the test expects.
    pub reason: String,
}

impl RuleCase {
    pub(super) fn new(
        kind: &'static str,
        name: &str,
        violations: Vec<Violation>,
        field: &str,
        reason: &str,
    ) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            violations,
            field: field.to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// Asserts that exactly the expected violation was reported.
    #[track_caller]
    pub fn check(&self) {
        assert_single(&self.name, &self.violations, &self.field, &self.reason);
    }
}

/// Every case of every kind's rule table, each run through the real rule.
pub fn all() -> Vec<RuleCase> {
    let mut cases = deployment::cases();
    cases.extend(session_job::cases());
    cases.extend(snapshot::cases());
    cases.extend(blue_green::cases());
    cases
}

#[test]
fn every_case_reports_exactly_its_violation() {
    for case in all() {
        case.check();
    }
}

/// Deserialises a typed object from a JSON value, panicking with the reason on failure.
pub(super) fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture decodes")
}

/// Sets `value` at the dotted `path` (creating objects on the way); `Value::Null` removes it.
pub(super) fn set(object: &mut Value, path: &str, value: Value) {
    let mut parts: Vec<&str> = path.split('/').collect();
    let last = parts.pop().expect("non-empty path");
    let mut current = object;
    for part in parts {
        current = current
            .as_object_mut()
            .expect("object on the path")
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let map = current.as_object_mut().expect("object at the end of the path");
    if value.is_null() {
        map.remove(last);
    } else {
        map.insert(last.to_owned(), value);
    }
}

/// Asserts that exactly the expected violation is reported: the field, and a reason
/// containing `reason`.
#[track_caller]
pub(super) fn assert_single(case: &str, violations: &[Violation], field: &str, reason: &str) {
    assert_eq!(
        violations.len(),
        1,
        "{case}: expected one violation of {field}, got {violations:#?}"
    );
    assert_eq!(violations[0].field, field, "{case}: {violations:#?}");
    assert!(
        violations[0].reason.contains(reason),
        "{case}: reason {:?} lacks {reason:?}",
        violations[0].reason
    );
}
