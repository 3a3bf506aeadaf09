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

/// Loads the flattened operator configuration of several files, each over the ones before
/// it (a later file's key wins); no file means an empty one (all defaults).
pub fn load_layered<P: AsRef<Path>>(paths: &[P]) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut config = BTreeMap::new();
    for path in paths {
        config.extend(load(Some(path.as_ref()))?);
    }
    Ok(config)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn later_files_win_over_earlier_ones_key_by_key() {
        let dir = std::env::temp_dir().join(format!("flink-operator-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let defaults = dir.join("defaults.yaml");
        let overlay = dir.join("overlay.yaml");
        std::fs::write(
            &defaults,
            "kubernetes.operator.reconcile.interval: 60 s\nkubernetes:\n  operator:\n    user.artifacts.allowed-schemes: https\n",
        )
        .unwrap();
        std::fs::write(
            &overlay,
            "kubernetes.operator.user.artifacts.allowed-schemes: https,file\n",
        )
        .unwrap();
        let config = load_layered(&[&defaults, &overlay]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(config["kubernetes.operator.reconcile.interval"], "60 s");
        assert_eq!(
            config["kubernetes.operator.user.artifacts.allowed-schemes"],
            "https,file"
        );
        assert_eq!(config.len(), 2);
        assert!(load_layered::<&Path>(&[]).unwrap().is_empty());
    }
}
