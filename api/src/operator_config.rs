//! The operator configuration as the running process sees it: read at start, replaced as a
//! whole when its file changes (`kubernetes.operator.dynamic.config.enabled`), and read by
//! each admission and reconcile as one consistent version, so that no decision mixes keys of
//! two versions of the file.

use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock},
};

/// A handle on the current version of the operator's flattened configuration; clones share
/// it.
#[derive(Clone, Debug, Default)]
pub struct OperatorConfig(Arc<RwLock<Arc<BTreeMap<String, String>>>>);

impl OperatorConfig {
    pub fn new(config: BTreeMap<String, String>) -> Self {
        Self::from_shared(Arc::new(config))
    }

    /// A handle whose first version is `config`.
    pub fn from_shared(config: Arc<BTreeMap<String, String>>) -> Self {
        Self(Arc::new(RwLock::new(config)))
    }

    /// The current version: a reader keeps it as it is for as long as it holds it.
    pub fn current(&self) -> Arc<BTreeMap<String, String>> {
        // A writer that panicked left a whole version behind: the lock's data is never
        // half-written.
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Makes `config` the current version for every later reader.
    pub fn replace(&self, config: BTreeMap<String, String>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }
}

impl From<BTreeMap<String, String>> for OperatorConfig {
    fn from(config: BTreeMap<String, String>) -> Self {
        Self::new(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_keeps_its_version_and_later_readers_see_the_new_one() {
        let config = OperatorConfig::new(BTreeMap::from([("a".to_owned(), "1".to_owned())]));
        let other = config.clone();
        let held = config.current();
        other.replace(BTreeMap::from([("a".to_owned(), "2".to_owned())]));
        assert_eq!(held["a"], "1");
        assert_eq!(config.current()["a"], "2");
    }
}
