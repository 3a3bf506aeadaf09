//! What a refused Kubernetes API request means to a pass: a conflict (the object changed
//! since it was read) is looked at again soon, and any error is said in one line.

/// Whether `error` is a write refused because the object changed since it was read (its
/// resourceVersion precondition failed): the next reconcile reads it again.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// What the Kubernetes API said, in one line: its message for a refused request (kube's
/// own rendering appends the whole Status object), else the error.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => {
            format!("{} ({})", status.message, status.reason)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_refusal_is_its_message_and_reason_in_one_line() {
        let status = kube::core::Status::failure(
            "Deployment.apps \"x\" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"logs\"",
            "Invalid",
        );
        assert_eq!(
            api_message(&kube::Error::Api(status.boxed())),
            "Deployment.apps \"x\" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"logs\" (Invalid)"
        );
    }
}
