//! Structured logging (`--log-format`): human-readable lines, or one JSON object per line
//! (what log collectors in a cluster expect); by default text on a terminal, else JSON.

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::cli::LogFormat;

/// Installs the global subscriber, writing `format` (`auto`: text on a terminal, else JSON).
/// `RUST_LOG` overrides the default filter.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,kube=warn,hyper=warn"));
    let registry = tracing_subscriber::registry().with(filter);
    if resolved(format, std::io::stderr().is_terminal()) == LogFormat::Text {
        registry.with(fmt::layer().with_writer(std::io::stderr)).init();
    } else {
        registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .init();
    }
}

/// `format` with `auto` decided by whether stderr is a `terminal`.
fn resolved(format: LogFormat, terminal: bool) -> LogFormat {
    match format {
        LogFormat::Auto if terminal => LogFormat::Text,
        LogFormat::Auto => LogFormat::Json,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_text_on_a_terminal_and_json_elsewhere() {
        assert_eq!(resolved(LogFormat::Auto, true), LogFormat::Text);
        assert_eq!(resolved(LogFormat::Auto, false), LogFormat::Json);
        assert_eq!(resolved(LogFormat::Json, true), LogFormat::Json);
        assert_eq!(resolved(LogFormat::Text, false), LogFormat::Text);
    }
}
