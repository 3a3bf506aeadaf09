//! What a request is about before it is judged: which of our kinds, and which endpoint it
//! came to (the webhook's metrics and its mutations are keyed by both).

/// The API group whose objects this webhook judges.
pub const GROUP: &str = "flink.apache.org";

/// The kinds this webhook handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlinkKind {
    /// `FlinkDeployment`
    Deployment,
    /// `FlinkSessionJob`
    SessionJob,
    /// `FlinkStateSnapshot`
    StateSnapshot,
    /// `FlinkBlueGreenDeployment`
    BlueGreenDeployment,
}

impl FlinkKind {
    /// The kind of a request's group and kind, if it is one of ours.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Self> {
        if group != GROUP {
            return None;
        }
        match kind {
            "FlinkDeployment" => Some(Self::Deployment),
            "FlinkSessionJob" => Some(Self::SessionJob),
            "FlinkStateSnapshot" => Some(Self::StateSnapshot),
            "FlinkBlueGreenDeployment" => Some(Self::BlueGreenDeployment),
            _ => None,
        }
    }

    /// The kind's name, as in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "FlinkDeployment",
            Self::SessionJob => "FlinkSessionJob",
            Self::StateSnapshot => "FlinkStateSnapshot",
            Self::BlueGreenDeployment => "FlinkBlueGreenDeployment",
        }
    }
}

/// Which of the two webhook endpoints a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /validate`
    Validate,
    /// `POST /mutate`
    Mutate,
}

impl Endpoint {
    /// The endpoint's name, as used in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validate => "validate",
            Self::Mutate => "mutate",
        }
    }
}
