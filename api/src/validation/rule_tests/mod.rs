//! Table tests of every rule: for each, a valid base object is changed in one way and the
//! exact violation (field and reason) is checked, next to the allowed neighbours.

mod blue_green;
mod deployment;
mod session_job;
mod snapshot;

use serde_json::Value;

use super::Violation;

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
