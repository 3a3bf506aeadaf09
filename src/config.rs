//! The operator's configuration file: Apache-operator-style keys
//! (`kubernetes.operator.*` and default Flink configuration), flat or nested YAML.

use std::{collections::BTreeMap, path::Path};

use flink_operator_api::FlinkConfiguration;

/// Why the configuration file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("operator configuration {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a YAML mapping.
    #[error("operator configuration {path}: not a YAML mapping of configuration keys: {source}")]
    Parse {
        /// The file.
        path: String,
        /// What the parser said.
        #[source]
        source: serde_yaml::Error,
    },
}

/// Loads the flattened operator configuration; no file means an empty one (all defaults).
pub fn load(path: Option<&Path>) -> Result<BTreeMap<String, String>, ConfigError> {
    let Some(path) = path else {
        return Ok(BTreeMap::new());
    };
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: display.clone(),
        source,
    })?;
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let config: FlinkConfiguration = serde_yaml::from_str(&text).map_err(|source| ConfigError::Parse {
        path: display,
        source,
    })?;
    Ok(config.flattened())
}
