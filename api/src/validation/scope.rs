//! Where an admission lookup may look: only in the namespace of the object under review.
//!
//! The webhook answers whoever reaches it, and a lookup's result shows in its answer (a
//! snapshot of a job that does not exist is refused, one of a job that exists is admitted). A
//! lookup outside the namespace the API server authorised the request for would tell a caller
//! whether an object exists in a namespace it cannot read. So the namespace comes from the
//! request (the API server sets it from the URL it authorised), an object naming another one
//! is refused by its shape, without looking, and a request with no namespace (which the API
//! server never sends for these namespaced kinds) looks nowhere.

use super::Violation;

/// The namespace lookups for this request may use: the request's, which the object's own
/// `metadata.namespace` must repeat when set. An error names the field and why, and is the
/// same whatever exists anywhere.
pub fn lookup_namespace<'a>(
    request_namespace: Option<&'a str>,
    object_namespace: Option<&str>,
) -> Result<&'a str, Violation> {
    let Some(namespace) = request_namespace.filter(|ns| !ns.is_empty()) else {
        return Err(Violation::new(
            "request.namespace",
            "is missing: the kinds of flink.apache.org are namespaced, and the API server names the namespace \
             of every request for them; without it nothing is looked up",
        ));
    };
    match object_namespace.filter(|ns| !ns.is_empty()) {
        Some(own) if own != namespace => Err(Violation::new(
            "metadata.namespace",
            format!(
                "{own:?} is not the namespace of the request ({namespace:?}): an object is judged only in the \
                 namespace it is written to"
            ),
        )),
        _ => Ok(namespace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_stay_in_the_requests_namespace() {
        assert_eq!(lookup_namespace(Some("team-a"), Some("team-a")), Ok("team-a"));
        assert_eq!(lookup_namespace(Some("team-a"), None), Ok("team-a"));
        assert_eq!(lookup_namespace(Some("team-a"), Some("")), Ok("team-a"));
        let other = lookup_namespace(Some("team-a"), Some("team-b")).unwrap_err();
        assert_eq!(other.field, "metadata.namespace");
        for missing in [None, Some("")] {
            let error = lookup_namespace(missing, Some("team-b")).unwrap_err();
            assert_eq!(error.field, "request.namespace");
        }
    }
}
