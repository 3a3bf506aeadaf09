//! A part of the process that must run as long as it does (a reconcile loop, the webhook, the
//! leader election) ended: the process stops so that it is restarted.

/// A reconcile loop (or another part that must run as long as the process) ended.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the {name} loop ended{}; the operator stops so that it is restarted", .panic.as_ref().map(|p| format!(" (it panicked: {p})")).unwrap_or_default())]
pub struct LoopEnded {
    /// The loop's name.
    pub name: &'static str,
    /// The panic that ended it, if one did.
    pub panic: Option<String>,
}

impl LoopEnded {
    /// What ended, from a join of the controllers' set (a panicked task's name is not known).
    pub fn from_join(joined: Result<&'static str, tokio::task::JoinError>) -> Self {
        match joined {
            Ok(name) => Self { name, panic: None },
            Err(error) => Self::named("a controller", Err(error)),
        }
    }

    /// The part `name` ended, by itself or with a panic.
    pub fn named(name: &'static str, joined: Result<(), tokio::task::JoinError>) -> Self {
        let panic = joined.err().map(|error| {
            error
                .try_into_panic()
                .map(|payload| {
                    payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic without a message".to_owned())
                })
                .unwrap_or_else(|error| error.to_string())
        });
        Self { name, panic }
    }
}
