//! What the controller's unit tests build their resources and observations from, shared so
//! that every suite looks at the same clock and reads conditions the same way.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::Condition;

/// The tests' "now", epoch milliseconds (2027-01-15).
pub const NOW: i64 = 1_800_000_000_000;

/// The condition of `type_` in `status` (a test fails without it).
pub fn condition<'a>(status: &'a impl LifecycleStatus, type_: &str) -> &'a Condition {
    status
        .conditions()
        .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some(type_)))
        .unwrap_or_else(|| panic!("no {type_} condition"))
}
