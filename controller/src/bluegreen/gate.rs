//! The ADVANCED hand-over's shared state: the ConfigMap `<name>-configmap` through which the
//! operator and the record gates of both jobs coordinate, and what the operator injects into
//! each child so that its gate knows who it is. Pure: reading and writing the map's data,
//! building and stripping the injected keys.
//!
//! The protocol (the gate library's README describes the gates' side):
//!
//! | key | written by | meaning |
//! |---|---|---|
//! | `transition-id` | operator | the current transition; a gate's write naming another is refused |
//! | `stage` | operator | `INITIALIZING` (a new child starts), `TRANSITIONING` (the hand-over runs), `RUNNING` (only the active child writes) |
//! | `active-deployment-type`, `active-transition-id` | operator | the child that writes after the hand-over: its colour and the transition that created it |
//! | `standby-deployment-type`, `standby-transition-id` | operator | during a transition only: the old child |
//! | `deployment-deletion-delay-ms` | operator | added to the standby's watermark to form the toggle |
//! | `watermark-stage` | gates | `WAITING_FOR_WATERMARK` (the active gate waits for the cutover), `WATERMARK_SET` (the standby set the toggle) |
//! | `watermark-toggle-value` | standby gate | the cutover point in event time, written once (first write wins) |
//!
//! A gate whose (colour, transition id) is neither the active nor the standby pair drops
//! every record: an aborted or replaced job never writes, even briefly. Every operator write
//! is a compare-and-set on the map's resourceVersion.

use std::collections::BTreeMap;

use flink_operator_api::FlinkDeploymentSpec;

use super::Colour;

/// Flink configuration keys injected into each child.
pub mod injected {
    /// The child's own colour (the name is the Apache operator's).
    pub const COLOUR: &str = "bluegreen.active-deployment-type";
    /// The name of the coordination ConfigMap.
    pub const CONFIGMAP: &str = "bluegreen.configmap.name";
    /// The transition that created the child.
    pub const TRANSITION_ID: &str = "bluegreen.transition-id";
    /// Every injected key.
    pub const ALL: [&str; 3] = [COLOUR, CONFIGMAP, TRANSITION_ID];
}

/// Keys of the ConfigMap's data.
pub mod data {
    pub const TRANSITION_ID: &str = "transition-id";
    pub const STAGE: &str = "stage";
    pub const ACTIVE_TYPE: &str = "active-deployment-type";
    pub const ACTIVE_TRANSITION_ID: &str = "active-transition-id";
    pub const STANDBY_TYPE: &str = "standby-deployment-type";
    pub const STANDBY_TRANSITION_ID: &str = "standby-transition-id";
    pub const DELETION_DELAY_MS: &str = "deployment-deletion-delay-ms";
    pub const WATERMARK_STAGE: &str = "watermark-stage";
    pub const TOGGLE: &str = "watermark-toggle-value";
}

/// The name of the coordination ConfigMap of the resource `name`.
pub fn configmap_name(name: &str) -> String {
    format!("{name}-configmap")
}

/// Where the hand-over is, as the map says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateStage {
    /// A new child is starting: its gate drops everything, the standby's passes everything.
    Initializing,
    /// The hand-over runs: the gates agree on a toggle and hand over at it.
    Transitioning,
    /// No transition: only the active child writes.
    Running,
}

impl GateStage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initializing => "INITIALIZING",
            Self::Transitioning => "TRANSITIONING",
            Self::Running => "RUNNING",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Self::Initializing, Self::Transitioning, Self::Running]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A child, as the map names it: its colour and the transition that created it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub colour: Colour,
    pub transition_id: String,
}

/// What the operator writes to the map (the gates' keys are dropped with each write of a
/// new transition, kept otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateMap {
    pub transition_id: String,
    pub stage: GateStage,
    pub active: Named,
    pub standby: Option<Named>,
    pub deletion_delay_ms: i64,
}

/// The map as observed: the operator's part and what the gates wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedMap {
    /// The operator's part, if it reads (a map edited by hand may not).
    pub map: Option<GateMap>,
    /// `watermark-toggle-value`: the cutover point the standby set.
    pub toggle: Option<i64>,
    /// The resourceVersion the next write is conditional on.
    pub resource_version: String,
}

impl GateMap {
    /// The map's data for this state. The gates' keys (`watermark-stage`, the toggle) are
    /// not in it: a write of a new transition removes them (see [`GateMap::patch`]).
    pub fn data(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            out.insert(k.to_owned(), v);
        };
        put(data::TRANSITION_ID, self.transition_id.clone());
        put(data::STAGE, self.stage.as_str().to_owned());
        put(data::ACTIVE_TYPE, self.active.colour.as_str().to_owned());
        put(data::ACTIVE_TRANSITION_ID, self.active.transition_id.clone());
        if let Some(standby) = &self.standby {
            put(data::STANDBY_TYPE, standby.colour.as_str().to_owned());
            put(data::STANDBY_TRANSITION_ID, standby.transition_id.clone());
        }
        put(data::DELETION_DELAY_MS, self.deletion_delay_ms.to_string());
        out
    }

    /// The data of a merge patch from `before` (`None`: no map yet) to this state: every
    /// operator key set; the standby's keys removed when there is no standby; the gates'
    /// keys removed when the transition changed (a toggle of an earlier transition is never
    /// taken for this one) or `drop_gate_keys` says so (an abort: the survivor writes
    /// everything again), kept otherwise. A spec change during the hand-over keeps the
    /// toggle, and so does the end of the transition: the new job, whose watermark may trail
    /// the old one's, leaves what lies before the toggle to the old job until it passes it.
    pub fn patch(&self, before: Option<&GateMap>, drop_gate_keys: bool) -> BTreeMap<String, Option<String>> {
        let mut out: BTreeMap<String, Option<String>> =
            self.data().into_iter().map(|(k, v)| (k, Some(v))).collect();
        if self.standby.is_none() {
            out.insert(data::STANDBY_TYPE.to_owned(), None);
            out.insert(data::STANDBY_TRANSITION_ID.to_owned(), None);
        }
        let same_transition = before.is_some_and(|b| b.transition_id == self.transition_id);
        if !same_transition || drop_gate_keys {
            out.insert(data::WATERMARK_STAGE.to_owned(), None);
            out.insert(data::TOGGLE.to_owned(), None);
        }
        out
    }

    /// Reads the operator's part of `data`; `None` if any of it is missing or unreadable.
    pub fn read(data: &BTreeMap<String, String>) -> Option<Self> {
        let get = |k: &str| data.get(k).map(String::as_str);
        let named = |colour: &str, id: &str| -> Option<Named> {
            Some(Named {
                colour: get(colour)?.parse().ok()?,
                transition_id: get(id)?.to_owned(),
            })
        };
        Some(Self {
            transition_id: get(data::TRANSITION_ID)?.to_owned(),
            stage: GateStage::parse(get(data::STAGE)?)?,
            active: named(data::ACTIVE_TYPE, data::ACTIVE_TRANSITION_ID)?,
            standby: named(data::STANDBY_TYPE, data::STANDBY_TRANSITION_ID),
            deletion_delay_ms: get(data::DELETION_DELAY_MS)?.parse().ok()?,
        })
    }
}

impl ObservedMap {
    /// The map as read from a ConfigMap's data and resourceVersion.
    pub fn of(data: &BTreeMap<String, String>, resource_version: String) -> Self {
        Self {
            map: GateMap::read(data),
            toggle: data.get(data::TOGGLE).and_then(|v| v.parse().ok()),
            resource_version,
        }
    }
}

/// `template` as the child of `colour` created by transition `transition_id` runs it: with
/// the keys its gate reads.
pub fn inject(
    template: &FlinkDeploymentSpec,
    name: &str,
    colour: Colour,
    transition_id: &str,
) -> FlinkDeploymentSpec {
    let mut spec = template.clone();
    let config = spec.flink_configuration.get_or_insert_with(Default::default);
    config.insert(injected::COLOUR.to_owned(), colour.as_str().to_owned());
    config.insert(injected::CONFIGMAP.to_owned(), configmap_name(name));
    config.insert(injected::TRANSITION_ID.to_owned(), transition_id.to_owned());
    spec
}

/// `spec` without the injected keys: what the user wrote, for comparisons with the template.
pub fn strip(spec: &FlinkDeploymentSpec) -> FlinkDeploymentSpec {
    let mut spec = spec.clone();
    if let Some(config) = spec.flink_configuration.as_mut() {
        for key in injected::ALL {
            config.0.remove(key);
        }
        if config.is_empty() {
            spec.flink_configuration = None;
        }
    }
    spec
}

/// The transition that created a child, from its injected key.
pub fn transition_of(spec: &FlinkDeploymentSpec) -> Option<String> {
    spec.flink_configuration.as_ref()?.get(injected::TRANSITION_ID)
}

/// What the old job's gates report: each gate vertex's minimum of the hand-over gauge over
/// its subtasks.
#[derive(Debug, Clone, PartialEq)]
pub enum HandOver {
    /// Not asked (no gate phase under way).
    NotAsked,
    /// Every gate subtask handed over.
    Done,
    /// Some subtask has not: the minimum per gate vertex.
    Pending(Vec<f64>),
    /// The job shows no gate: its output cannot be handed over record by record.
    NoGate,
    /// The job could not be asked (the note says why); asked again on the next look.
    Unknown(String),
}

impl HandOver {
    /// Reads the minima of each gate vertex.
    pub fn of_minima(minima: Vec<f64>) -> Self {
        if minima.is_empty() {
            Self::NoGate
        } else if minima.iter().all(|m| *m >= 1.0) {
            Self::Done
        } else {
            Self::Pending(minima)
        }
    }
}

/// The name of the gauge each gate subtask registers.
pub const HAND_OVER_GAUGE: &str = "bluegreenGateHandOverDone";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(transition: &str, stage: GateStage, standby: bool) -> GateMap {
        GateMap {
            transition_id: transition.to_owned(),
            stage,
            active: Named {
                colour: Colour::Green,
                transition_id: transition.to_owned(),
            },
            standby: standby.then(|| Named {
                colour: Colour::Blue,
                transition_id: "1".to_owned(),
            }),
            deletion_delay_ms: 10_000,
        }
    }

    #[test]
    fn the_operators_part_reads_back_as_written() {
        for m in [
            map("2", GateStage::Initializing, true),
            map("2", GateStage::Transitioning, true),
            map("2", GateStage::Running, false),
        ] {
            assert_eq!(GateMap::read(&m.data()), Some(m.clone()));
        }
        let mut data = map("2", GateStage::Running, false).data();
        data.insert(data::STAGE.to_owned(), "CLEAR_TO_TEARDOWN".to_owned());
        assert_eq!(GateMap::read(&data), None, "an unknown stage does not read");
    }

    #[test]
    fn a_new_transition_drops_the_gates_keys_and_the_same_one_keeps_them() {
        let old = map("1", GateStage::Running, false);
        let starting = map("2", GateStage::Initializing, true);
        let patch = starting.patch(Some(&old), false);
        assert_eq!(patch[data::TOGGLE], None);
        assert_eq!(patch[data::WATERMARK_STAGE], None);
        assert_eq!(patch[data::STAGE].as_deref(), Some("INITIALIZING"));
        // The same transition moving on (or a change of the incoming child) keeps the toggle.
        let transitioning = map("2", GateStage::Transitioning, true);
        let patch = transitioning.patch(Some(&starting), false);
        assert!(!patch.contains_key(data::TOGGLE), "{patch:?}");
        // The end of the transition drops the standby and keeps the toggle for the new job.
        let done = map("2", GateStage::Running, false);
        let patch = done.patch(Some(&transitioning), false);
        assert_eq!(patch[data::STANDBY_TYPE], None);
        assert!(!patch.contains_key(data::TOGGLE), "{patch:?}");
        // An abort drops it: the survivor writes everything again.
        assert_eq!(done.patch(Some(&transitioning), true)[data::TOGGLE], None);
        // No map yet: everything is set, nothing of a gate survives.
        assert_eq!(
            map("1", GateStage::Running, false).patch(None, false)[data::TOGGLE],
            None
        );
    }

    #[test]
    fn the_observed_toggle_is_read_with_the_map() {
        let mut data = map("2", GateStage::Transitioning, true).data();
        data.insert(data::TOGGLE.to_owned(), "1733140000000".to_owned());
        let observed = ObservedMap::of(&data, "42".to_owned());
        assert_eq!(observed.toggle, Some(1_733_140_000_000));
        assert_eq!(observed.resource_version, "42");
        assert!(observed.map.is_some());
    }

    #[test]
    fn injection_is_stripped_back_to_the_template() {
        let template: FlinkDeploymentSpec = serde_json::from_value(json!({
            "image": "flink:2.3",
            "job": {"jarURI": "local:///job.jar", "upgradeMode": "savepoint"}
        }))
        .expect("spec");
        let child = inject(&template, "orders", Colour::Green, "7");
        let config = child.flink_configuration.clone().expect("configuration");
        assert_eq!(config.get(injected::COLOUR).as_deref(), Some("GREEN"));
        assert_eq!(
            config.get(injected::CONFIGMAP).as_deref(),
            Some("orders-configmap")
        );
        assert_eq!(transition_of(&child).as_deref(), Some("7"));
        assert_eq!(strip(&child), template);
    }

    #[test]
    fn the_hand_over_is_done_when_every_gate_vertex_reports_one() {
        assert_eq!(HandOver::of_minima(vec![]), HandOver::NoGate);
        assert_eq!(HandOver::of_minima(vec![1.0, 1.0]), HandOver::Done);
        assert_eq!(
            HandOver::of_minima(vec![1.0, 0.0]),
            HandOver::Pending(vec![1.0, 0.0])
        );
    }
}
