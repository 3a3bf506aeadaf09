//! Structured logging: human-readable on a terminal, one JSON object per line otherwise
//! (what log collectors in a cluster expect).

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

/// Installs the global subscriber. `RUST_LOG` overrides the default filter.
pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,kube=warn,hyper=warn"));
    let registry = tracing_subscriber::registry().with(filter);
    if std::io::stderr().is_terminal() {
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
