//! The Flink log configuration the operator gives the clusters whose resource sets no
//! `spec.logConfiguration` (`--flink-log-config`): files named as Flink's scripts read them,
//! read once at start (the chart restarts the operator when they change).

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use flink_operator_controller::resources::cluster::{self, LOG_CONFIGURATION_FILES, LogConfiguration};

/// Why a `--flink-log-config` file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FlinkLoggingError {
    /// The file's name is not one Flink reads.
    #[error(
        "--flink-log-config {path}: the file must be named log4j-console.properties or logback-console.xml \
         (the name Flink reads it under)"
    )]
    UnknownName {
        /// The file given.
        path: PathBuf,
    },
    /// Two files of the same name.
    #[error("--flink-log-config: {name} is given twice ({first} and {second})")]
    Twice {
        /// The file name.
        name: String,
        /// The first file of that name.
        first: PathBuf,
        /// The second one.
        second: PathBuf,
    },
    /// The file cannot be read.
    #[error("--flink-log-config {path}: {source}")]
    Read {
        /// The file given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The files' contents by name; the built-in configuration when none is given.
pub fn load(paths: &[PathBuf]) -> Result<LogConfiguration, FlinkLoggingError> {
    if paths.is_empty() {
        return Ok(cluster::built_in_logging());
    }
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut from: BTreeMap<String, PathBuf> = BTreeMap::new();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| LOG_CONFIGURATION_FILES.contains(n))
            .ok_or_else(|| FlinkLoggingError::UnknownName { path: path.clone() })?;
        if let Some(first) = from.get(name) {
            return Err(FlinkLoggingError::Twice {
                name: name.to_owned(),
                first: first.clone(),
                second: path.clone(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| FlinkLoggingError::Read {
            path: path.clone(),
            source,
        })?;
        files.insert(name.to_owned(), text);
        from.insert(name.to_owned(), path.clone());
    }
    Ok(Arc::new(files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_by_the_name_flink_reads_them_under_and_no_file_keeps_the_built_in_one() {
        let dir = std::env::temp_dir().join(format!("flink-logging-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log4j = dir.join("log4j-console.properties");
        std::fs::write(&log4j, "rootLogger.level = WARN\n").unwrap();
        let logback = dir.join("logback-console.xml");
        std::fs::write(&logback, "<configuration/>\n").unwrap();

        assert_eq!(load(&[]).unwrap(), cluster::built_in_logging());
        let loaded = load(&[log4j.clone(), logback.clone()]).unwrap();
        assert_eq!(loaded["log4j-console.properties"], "rootLogger.level = WARN\n");
        assert_eq!(loaded["logback-console.xml"], "<configuration/>\n");

        let other = dir.join("log4j.properties");
        let error = load(&[other]).unwrap_err().to_string();
        assert!(
            error.contains("log4j.properties") && error.contains("must be named"),
            "{error}"
        );
        let error = load(&[log4j.clone(), log4j.clone()]).unwrap_err().to_string();
        assert!(error.contains("given twice"), "{error}");
        let missing = dir.join("missing").join("log4j-console.properties");
        let error = load(&[missing]).unwrap_err().to_string();
        assert!(error.contains("missing"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
