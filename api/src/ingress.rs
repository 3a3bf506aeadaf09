//! Where an Ingress template (`spec.ingress.template`) points: its host and path once
//! `{{name}}` and `{{namespace}}` are replaced, read as the Apache operator reads it
//! (`http://` put in front when it has no scheme, then taken as a URL). Admission and the
//! Ingress builder both read a template through [`address`], so that what admission lets
//! through is what the builder makes.

/// The placeholder of the resource's name (matched without regard to case).
pub const NAME_PLACEHOLDER: &str = "{{name}}";
/// The placeholder of the resource's namespace (matched without regard to case).
pub const NAMESPACE_PLACEHOLDER: &str = "{{namespace}}";

/// The scheme put in front of a template without one.
const DEFAULT_SCHEME: &str = "http";

/// The host and the path of an Ingress rule; either may be absent, not both in practice (a
/// template of neither is a bare scheme).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngressAddress {
    /// The host name, without a port (an Ingress rule has none).
    pub host: Option<String>,
    /// The path, up to a query or fragment; may hold a regular expression
    /// (`/{{namespace}}/{{name}}(/|$)(.*)`), which the Ingress controller interprets.
    pub path: Option<String>,
}

/// Why a template cannot become an Ingress rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("must be defined when spec.ingress is set")]
    Missing,
    #[error(
        "unable to process the Ingress template {template:?}: unknown scheme {scheme:?} (use http or https, or no scheme)"
    )]
    UnknownScheme { template: String, scheme: String },
    #[error("unable to process the Ingress template {template:?}: must not contain whitespace")]
    Whitespace { template: String },
    #[error("unable to process the Ingress template {template:?}: host {host:?} is not a valid host name")]
    InvalidHost { template: String, host: String },
    #[error(
        "the Ingress template {template:?} gives the host {host:?}, which is not a DNS name an Ingress can hold: \
         {why}"
    )]
    HostTooLong {
        template: String,
        host: String,
        why: String,
    },
}

/// The longest DNS name, and the longest of its labels (RFC 1035): the API server refuses an
/// Ingress whose host is longer.
const MAX_HOST_LEN: usize = 253;
const MAX_HOST_LABEL_LEN: usize = 63;

/// The address `template` gives the resource `name` in `namespace`.
pub fn address(template: Option<&str>, name: &str, namespace: &str) -> Result<IngressAddress, TemplateError> {
    let Some(template) = template.filter(|t| !t.trim().is_empty()) else {
        return Err(TemplateError::Missing);
    };
    let substituted = substitute(template, name, namespace);
    let url = if substituted.contains("://") {
        substituted
    } else {
        format!("{DEFAULT_SCHEME}://{substituted}")
    };
    let (scheme, rest) = url.split_once("://").unwrap_or(("", &url));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host = authority.rsplit_once(':').map_or(authority, |(host, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            host
        } else {
            authority
        }
    });
    let template = template.to_owned();
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(TemplateError::UnknownScheme {
            template,
            scheme: scheme.to_owned(),
        });
    }
    if url.chars().any(char::is_whitespace) {
        return Err(TemplateError::Whitespace { template });
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*'))
    {
        return Err(TemplateError::InvalidHost {
            template,
            host: host.to_owned(),
        });
    }
    // The name and namespace are substituted in, so a template that is fine for a short name
    // can give a host too long for a long one (a 45-character name and a 63-character
    // namespace in one label).
    let long_label = host.split('.').find(|label| label.len() > MAX_HOST_LABEL_LEN);
    if host.len() > MAX_HOST_LEN || long_label.is_some() {
        let why = match long_label {
            Some(label) => format!(
                "its part {label:?} has {} characters, more than {MAX_HOST_LABEL_LEN}",
                label.len()
            ),
            None => format!("it has {} characters, more than {MAX_HOST_LEN}", host.len()),
        };
        return Err(TemplateError::HostTooLong {
            template,
            host: host.to_owned(),
            why,
        });
    }
    let after_authority = &rest[authority_end..];
    let path = after_authority.split(['?', '#']).next().unwrap_or_default();
    let present = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Ok(IngressAddress {
        host: present(host),
        path: present(path),
    })
}

/// `template` with its placeholders replaced, whatever their case.
pub fn substitute(template: &str, name: &str, namespace: &str) -> String {
    replace_ignoring_case(
        &replace_ignoring_case(template, NAME_PLACEHOLDER, name),
        NAMESPACE_PLACEHOLDER,
        namespace,
    )
}

fn replace_ignoring_case(text: &str, pattern: &str, value: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut result = String::with_capacity(text.len());
    let mut last = 0;
    for (index, _) in lower.match_indices(pattern) {
        result.push_str(&text[last..index]);
        result.push_str(value);
        last = index + pattern.len();
    }
    result.push_str(&text[last..]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(host: Option<&str>, path: Option<&str>) -> Result<IngressAddress, TemplateError> {
        Ok(IngressAddress {
            host: host.map(str::to_owned),
            path: path.map(str::to_owned),
        })
    }

    #[test]
    fn a_host_too_long_for_a_dns_name_is_refused_naming_its_part() {
        let name = "a".repeat(45);
        let namespace = "b".repeat(63);
        let error = address(Some("{{name}}-{{namespace}}.example.com"), &name, &namespace).unwrap_err();
        assert!(
            matches!(&error, TemplateError::HostTooLong { why, .. } if why.contains("109 characters, more than 63")),
            "{error}"
        );
        // The same template for names that fit, and dotted parts of any number up to 253.
        assert!(address(Some("{{name}}-{{namespace}}.example.com"), "basic", "team-a").is_ok());
        assert!(address(Some("{{name}}.{{namespace}}.example.com"), &name, &namespace).is_ok());
        let long = format!("{}.example.com", vec!["c".repeat(60); 4].join("."));
        let error = address(Some(&long), &name, &namespace).unwrap_err();
        assert!(error.to_string().contains("more than 253"), "{error}");
    }

    #[test]
    fn templates_become_a_host_and_a_path_as_the_apache_operator_reads_them() {
        let cases = [
            (
                "{{name}}.{{namespace}}.flink.k8s.io",
                ok(Some("basic.team-a.flink.k8s.io"), None),
            ),
            (
                "{{NAME}}.{{Namespace}}.example.com",
                ok(Some("basic.team-a.example.com"), None),
            ),
            (
                "/{{namespace}}/{{name}}(/|$)(.*)",
                ok(None, Some("/team-a/basic(/|$)(.*)")),
            ),
            (
                "flink.k8s.io/{{namespace}}/{{name}}(/|$)(.*)",
                ok(Some("flink.k8s.io"), Some("/team-a/basic(/|$)(.*)")),
            ),
            (
                "https://ui.example.com:8443/{{name}}?x=1#top",
                ok(Some("ui.example.com"), Some("/basic")),
            ),
            ("*.example.com", ok(Some("*.example.com"), None)),
        ];
        for (template, expected) in cases {
            assert_eq!(address(Some(template), "basic", "team-a"), expected, "{template}");
        }
    }

    #[test]
    fn templates_that_make_no_rule_are_refused_with_the_reason() {
        assert_eq!(address(None, "b", "n"), Err(TemplateError::Missing));
        assert_eq!(address(Some("  "), "b", "n"), Err(TemplateError::Missing));
        assert!(matches!(
            address(Some("ftp://{{name}}.example.com"), "b", "n"),
            Err(TemplateError::UnknownScheme { scheme, .. }) if scheme == "ftp"
        ));
        assert!(matches!(
            address(Some("{{name}} .example.com"), "b", "n"),
            Err(TemplateError::Whitespace { .. })
        ));
        assert!(matches!(
            address(Some("{{name}}_x.example.com"), "b", "n"),
            Err(TemplateError::InvalidHost { host, .. }) if host == "b_x.example.com"
        ));
    }
}
