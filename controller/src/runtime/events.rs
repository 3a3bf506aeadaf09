//! The Events a plan asks for, and how they are published.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

use crate::{context::Context, events::Reason};

/// The Event's `action`: its reason and a digest of its note. The recorder counts an Event
/// with the key of one it sent in the last minutes as a repeat of it and drops the new note;
/// so that an Event that says something new (a savepoint that now failed for good, a job in
/// another state) is shown, the key holds the note, and only a note said again is counted.
fn action(reason: Reason, note: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    note.hash(&mut digest);
    format!("{}-{:08x}", reason.as_str(), digest.finish() & 0xffff_ffff)
}

/// Publishes an Event about `object`; a failure to publish is logged, not fatal.
pub async fn publish(ctx: &Context, object: &ObjectReference, warning: bool, reason: Reason, note: String) {
    if let Err(fenced) = ctx.fence.check() {
        tracing::debug!(%reason, %fenced, "an Event not published");
        return;
    }
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.as_str().to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: action(reason, &note),
        secondary: None,
    };
    ctx.metrics.event_published(reason.as_str(), warning);
    if let Err(e) = ctx.recorder.publish(&event, object).await {
        tracing::debug!(error = %e, %reason, "could not publish an Event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_that_says_something_new_is_not_counted_as_a_repeat() {
        let first = action(
            Reason::SavepointError,
            "The savepoint failed (attempt 1), tried again in 10 s: x",
        );
        let last = action(
            Reason::SavepointError,
            "The savepoint failed (attempt 2, backoffLimit 1), for good: x",
        );
        assert_ne!(first, last);
        assert_eq!(
            first,
            action(
                Reason::SavepointError,
                "The savepoint failed (attempt 1), tried again in 10 s: x"
            ),
            "the same note is the same Event, counted"
        );
        assert!(
            first.starts_with("SavepointError-") && first.len() <= 128,
            "{first}"
        );
    }
}
