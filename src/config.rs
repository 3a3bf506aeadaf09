//! The operator's configuration file: Apache-operator-style keys
//! (`kubernetes.operator.*` and default Flink configuration), flat or nested YAML.

use std::{collections::BTreeMap, path::Path};

use flink_operator_api::{
    FlinkConfiguration,
    options::{
        self,
        effect::{self, Place},
    },
};

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
    /// A key's value is not of the key's type.
    #[error("operator configuration: {key}: {reason}")]
    Value {
        /// The key, as the file sets it (an overlay's included).
        key: String,
        /// Why the value does not do.
        reason: String,
    },
}

/// Checks each key of a loaded configuration against the table of options: a value not of
/// its key's type is refused (the operator would otherwise act on a default the file does not
/// say), and each key that has no effect is returned as a warning to log.
pub fn check(config: &BTreeMap<String, String>) -> Result<Vec<String>, ConfigError> {
    for (key, value) in config {
        if let Some(ty) = options::value_type(effect::overlaid_key(key))
            && let Err(reason) = ty.check(value)
        {
            return Err(ConfigError::Value {
                key: key.clone(),
                reason,
            });
        }
    }
    Ok(effect::warnings("", Place::OperatorFile, config.keys())
        .chain(flink_operator_api::validation::session_job::settings_warnings(
            config,
        ))
        .collect())
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

    #[test]
    fn values_not_of_their_type_are_refused_and_keys_without_effect_are_said() {
        let config = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let refused = check(&config(&[(
            "kubernetes.operator.default-configuration.namespace.team-a.kubernetes.operator.job.restart.failed",
            "yes",
        )]))
        .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("team-a.kubernetes.operator.job.restart.failed"),
            "{refused}"
        );
        let warnings = check(&config(&[
            ("kubernetes.operator.job.restart.failed", "TRUE"),
            ("kubernetes.operator.retry.max.attempts", "5"),
            ("parallelism.default", "2"),
        ]))
        .unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("kubernetes.operator.retry.max.attempts: has no effect"));
    }
}
