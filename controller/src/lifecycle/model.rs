//! A model-based test of the job lifecycle: random sequences of what users do and what goes
//! wrong drive the real `decide` of a FlinkSessionJob, or of an application FlinkDeployment,
//! against a simulated Flink, its storage, the application cluster with its Kubernetes HA
//! metadata and the Kubernetes objects ([`world`], [`cluster`]), and after every step the
//! promises about the job's state are checked against what the simulated Flink ran and what
//! is on storage ([`invariants`]):
//!
//! - no savepoint or checkpoint the job may still need is disposed of, nor the state a kept
//!   revision was started from (a rollback with `rollback-restore: revision` restores it);
//! - no job is submitted to restore a path that is not on storage (a rollback, a resume or
//!   an upgrade that ended the running job for state disposed of since), unless the user
//!   wrote that path into the spec (`initialSavepointPath`) or gave that state up (a
//!   checkpoint deleted, as their configuration says, when their stateless job was
//!   cancelled);
//! - a job never starts from state older than the newest it had (or from none), unless the
//!   user named that state or runs it stateless;
//! - the newest state stays on storage, and is named in status before its job is cancelled
//!   or its cluster deleted (or, with HA, in the HA metadata the deletion keeps), in a
//!   FlinkStateSnapshot before the resource goes, and somewhere else before the HA metadata
//!   that points at it goes;
//! - the stored status never goes back to an older savepoint (a stale read's write is
//!   refused, as the API server refuses it);
//! - no two JobManagers of one cluster run at once, and none runs a job nobody asked for.
//!
//! Each step is one event (an edit, a nonce, a deletion, a snapshot record created or
//! deleted, a FlinkDeployment's rollback to a kept revision, time passing, more than a day
//! passing at once, a fault) and one reconcile pass, which may itself go wrong (the
//! JobManager does not answer, the operator crashes after any action, the pass reads a
//! stale cache). A failing sequence is shrunk by proptest to a short one.
//!
//! The savepoint history's trim and the snapshot resources' retention run as the operator
//! runs them, with who in the namespace needs a path looked up as observe does (the
//! resource and its kept revisions): a case keeps a history of two savepoints
//! (`kubernetes.operator.savepoint.history.max.count: "2"`) in about one case of three, so
//! that the trim disposes of savepoints within a few upgrades, and a day passing at once
//! ([`Event::Age`]) takes savepoints beyond the history's default age.
//!
//! The default size runs in the unit tests; the long run is
//! `LIFECYCLE_MODEL_CASES=20000 cargo test --release -p flink-operator-controller --lib lifecycle::model -- --nocapture`
//! (up to 100 steps a case, about a million in all; the count is printed).
//!
//! Known failure, not generated: a job that restored its checkpoint from the HA metadata (a
//! last-state start, a JobManager failover) and FAILED before it completed one of its own
//! leaves that checkpoint named nowhere: Flink's cleanup of the failed job takes it out of
//! the HA metadata, and its statistics show it as restored, not completed, which the
//! operator does not read (`latest.restored` has no completion time to rank it by).
//!
//! Known failure, not generated: a FlinkDeployment change committed because the previous
//! cluster never ran its job (its JobManager had not come up) presumes it does not run. When
//! the operator stops before sending that cluster's deletion and the JobManager comes up
//! meanwhile, the next pass deletes it without a look at what its job did since (its
//! checkpoints, in the HA metadata the new start deletes), and the new job starts from the
//! state the commit recorded. The model keeps such a JobManager from coming up.
//!
//! Assumed, not checked (the simulated Flink completes no checkpoint of a job whose completed
//! savepoint the operator has not polled yet): a pending savepoint is polled before the
//! job's next checkpoint completes. The operator records a savepoint it triggered with the time it saw it
//! complete (Flink's status of a trigger has none), so a checkpoint completing in between
//! ranks below it, and a restore of the job's newest state would pick the slightly older
//! savepoint. An exiting JobManager (its cluster deleted) suspends its job rather than fail
//! it, and without HA completes no checkpoint any more (nothing could name it: see
//! [`cluster::Application::before_tick`]); without HA, a JobManager that dies loses what only
//! it knew of its job, by Flink's design. Not modelled yet: ZooKeeper HA, the health check,
//! the JobManager Deployment deleted by hand (and its recovery), the shutdown of an ended
//! job's JobManager, a session job's revisions and rollbacks, periodic snapshots. Blue/green is
//! modelled in [`bluegreen`] (BASIC transitions).

mod application;
mod bluegreen;
mod cluster;
mod flink;
mod invariants;
mod session;
mod snapshot_actions;
mod world;

use flink_operator_api::{FlinkDeployment, FlinkSessionJob, common::UpgradeMode};
use kube::ResourceExt;
use proptest::prelude::*;
use serde_json::{Value, json};

use invariants::{Lineage, Violation};
use world::{Kind, PassFault, World};

/// What happens before a pass.
#[derive(Debug, Clone)]
enum Event {
    /// Time passes: running jobs checkpoint, pending savepoints complete, a JobManager
    /// comes up or exits.
    Tick(u8),
    /// More than a day passes at once (one tick: a checkpoint), beyond the savepoint
    /// history's default `max.age`, so that its trim disposes of what it holds.
    Age,
    Parallelism(u8),
    Mode(UpgradeMode),
    Suspend,
    Resume,
    SavepointNonce,
    CheckpointNonce,
    RestartNonce,
    Delete,
    /// A new resource of the same name, from the newest deletion record if `from_record`.
    Recreate {
        from_record: bool,
        deleting_retention: bool,
        snapshot_resources: bool,
    },
    /// The user records one of the savepoints on storage (the `n`-th) as a FlinkStateSnapshot.
    RecordSavepoint(u8),
    /// The user deletes one of the job's FlinkStateSnapshots (the `n`-th).
    DeleteSnapshot(u8),
    JobFails,
    SavepointFails,
    /// The JobManager forgets its trigger results.
    ForgetTriggers,
    /// Ended jobs leave the JobManager's archive.
    ForgetEndedJobs,
    /// An application cluster's JobManager pod dies (and is started again).
    JobManagerLost,
    /// The user asks a FlinkDeployment to roll back to one of its kept revisions (the `n`-th,
    /// or one not kept), restoring the state it was started from if `restore`.
    RollBack {
        n: u8,
        restore: bool,
    },
}

fn mode() -> impl Strategy<Value = UpgradeMode> {
    prop_oneof![
        Just(UpgradeMode::Stateless),
        Just(UpgradeMode::Savepoint),
        Just(UpgradeMode::LastState),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        8 => (1u8..30).prop_map(Event::Tick),
        1 => Just(Event::Age),
        2 => (1u8..4).prop_map(Event::Parallelism),
        2 => mode().prop_map(Event::Mode),
        1 => Just(Event::Suspend),
        1 => Just(Event::Resume),
        1 => Just(Event::SavepointNonce),
        1 => Just(Event::CheckpointNonce),
        1 => Just(Event::RestartNonce),
        1 => Just(Event::Delete),
        1 => (any::<bool>(), prop::bool::weighted(0.2), prop::bool::weighted(0.8)).prop_map(
            |(from_record, deleting_retention, snapshot_resources)| Event::Recreate { from_record, deleting_retention, snapshot_resources }
        ),
        1 => any::<u8>().prop_map(Event::RecordSavepoint),
        1 => any::<u8>().prop_map(Event::DeleteSnapshot),
        1 => Just(Event::JobFails),
        1 => Just(Event::SavepointFails),
        1 => Just(Event::ForgetTriggers),
        1 => Just(Event::ForgetEndedJobs),
        1 => Just(Event::JobManagerLost),
        2 => (any::<u8>(), any::<bool>()).prop_map(|(n, restore)| Event::RollBack { n, restore }),
    ]
}

fn fault() -> impl Strategy<Value = PassFault> {
    prop_oneof![
        12 => Just(PassFault::None),
        1 => Just(PassFault::Unreachable),
        1 => (0usize..4).prop_map(PassFault::Crash),
        1 => Just(PassFault::Stale),
    ]
}

/// The job resource a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resource {
    SessionJob,
    /// An application FlinkDeployment, with Kubernetes HA or without.
    Application {
        ha: bool,
    },
}

/// How a case starts: the resource, its first upgrade mode and whether its configuration
/// deletes checkpoints on cancellation, keeps snapshots as resources and keeps a short
/// savepoint history (every resource of the case keeps it).
#[derive(Debug, Clone)]
struct Start {
    resource: Resource,
    mode: UpgradeMode,
    deleting_retention: bool,
    snapshot_resources: bool,
    short_history: bool,
}

fn start() -> impl Strategy<Value = Start> {
    let resource = prop_oneof![
        Just(Resource::SessionJob),
        prop::bool::weighted(0.8).prop_map(|ha| Resource::Application { ha }),
    ];
    (
        resource,
        mode(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(resource, mode, deleting_retention, snapshot_resources, short_history)| Start {
                resource,
                mode,
                deleting_retention,
                snapshot_resources,
                short_history,
            },
        )
}

/// A job's configuration: snapshots as FlinkStateSnapshot resources (the default) or in
/// status only, checkpoints deleted on cancellation if the user says so, a savepoint history
/// of two (`short_history`: its trim then disposes of savepoints within a few steps), and for
/// an application the checkpoint directory and Kubernetes HA if `ha`.
fn config(
    resource: Resource,
    deleting_retention: bool,
    snapshot_resources: bool,
    short_history: bool,
) -> Value {
    let mut config = json!({
        "kubernetes.operator.snapshot.resource.enabled": snapshot_resources.to_string(),
        "state.savepoints.dir": world::SAVEPOINT_DIR,
    });
    if short_history {
        config[flink_operator_api::keys::operator::SAVEPOINT_HISTORY_MAX_COUNT] = json!("2");
    }
    if deleting_retention {
        config["execution.checkpointing.externalized-checkpoint-retention"] = json!("DELETE_ON_CANCELLATION");
    }
    if let Resource::Application { ha } = resource {
        config["state.checkpoints.dir"] = json!(world::CHECKPOINT_DIR);
        if ha {
            config["high-availability.type"] = json!("kubernetes");
            config["high-availability.storageDir"] = json!("file:/ha");
        }
    }
    config
}

fn job(resource: Resource, mode: UpgradeMode, initial: Option<&str>) -> Value {
    let jar = match resource {
        Resource::SessionJob => "file:///jars/job.jar",
        Resource::Application { .. } => "local:///opt/flink/job.jar",
    };
    let mut job = json!({"jarURI": jar, "parallelism": 1, "upgradeMode": mode.as_str()});
    if let Some(path) = initial {
        job["initialSavepointPath"] = json!(path);
    }
    job
}

fn bump(job: &mut Value, field: &str) {
    job[field] = json!(job[field].as_i64().unwrap_or(0) + 1);
}

/// Runs one case; the first broken promise, with the step it broke at.
fn run(start: &Start, steps: &[(Event, PassFault)]) -> Result<(), Violation> {
    match start.resource {
        Resource::SessionJob => run_kind::<FlinkSessionJob>(start, steps),
        Resource::Application { .. } => run_kind::<FlinkDeployment>(start, steps),
    }
}

fn run_kind<K: Kind>(start: &Start, steps: &[(Event, PassFault)]) -> Result<(), Violation> {
    let mut world = World::<K>::new(crate::fixtures::NOW);
    let mut lineage = Lineage::default();
    // Last-state needs HA for an application (the rules refuse it without).
    let mode = match (start.resource, start.mode) {
        (Resource::Application { ha: false }, UpgradeMode::LastState) => UpgradeMode::Savepoint,
        (_, mode) => mode,
    };
    world.create(
        job(start.resource, mode, None),
        config(
            start.resource,
            start.deleting_retention,
            start.snapshot_resources,
            start.short_history,
        ),
    );
    let first = world.reconcile(PassFault::None);
    lineage.stateless = mode == UpgradeMode::Stateless;
    lineage
        .check(&world, &first, lineage.stateless)
        .map_err(|v| format!("at the start: {v}"))?;
    for (index, (event, fault)) in steps.iter().enumerate() {
        STEPS_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut effects = happen(&mut world, &mut lineage, start, event);
        world.settle();
        effects.extend(world.reconcile(*fault));
        effects.extend(world.reconcile_snapshots());
        let stateless_now = world.stateless().unwrap_or(lineage.stateless);
        lineage.stateless = stateless_now;
        if trace() {
            eprintln!(
                "{index}: {event:?} / {fault:?} -> {effects:?}\n   {}\n   floor {:?}, rollbacks asked {:?}",
                world.summary(),
                lineage.floor,
                lineage.rollbacks_asked
            );
        }
        lineage
            .check(&world, &effects, stateless_now)
            .map_err(|v| format!("at step {index} ({event:?}, then a pass with {fault:?}): {v}"))?;
    }
    Ok(())
}

fn happen<K: Kind>(
    world: &mut World<K>,
    lineage: &mut Lineage,
    start: &Start,
    event: &Event,
) -> Vec<world::Effect> {
    match event {
        Event::Tick(seconds) => return world.tick(i64::from(*seconds) * 10_000),
        Event::Age => return world.tick(25 * 3_600_000),
        Event::Parallelism(p) => world.edit(|s| s["job"]["parallelism"] = json!(p)),
        Event::Mode(mode) => world.edit(|s| s["job"]["upgradeMode"] = json!(mode.as_str())),
        Event::Suspend => world.edit(|s| s["job"]["state"] = json!("suspended")),
        Event::Resume => world.edit(|s| s["job"]["state"] = json!("running")),
        Event::SavepointNonce => world.edit(|s| bump(&mut s["job"], "savepointTriggerNonce")),
        Event::CheckpointNonce => world.edit(|s| bump(&mut s["job"], "checkpointTriggerNonce")),
        Event::RestartNonce => world.edit(|s| bump(s, "restartNonce")),
        Event::Delete => world.delete(),
        Event::Recreate {
            from_record,
            deleting_retention,
            snapshot_resources,
        } => {
            if world.resource.is_some() {
                return vec![];
            }
            // The newest deletion record: an UPGRADE snapshot, else a StateRecorded Event.
            let upgrade = flink_operator_api::common::SnapshotTriggerType::Upgrade.as_str();
            let record = (world.snapshots.values())
                .filter(|s| {
                    s.labels()
                        .get(flink_operator_api::keys::labels::SNAPSHOT_TRIGGER_TYPE)
                        .map(String::as_str)
                        == Some(upgrade)
                })
                .max_by_key(|s| s.metadata.creation_timestamp.clone())
                .and_then(|s| s.spec.savepoint.as_ref().and_then(|sp| sp.path.clone()))
                .or_else(|| lineage.event_records.last().cloned())
                .filter(|_| *from_record);
            let mode = match (record.is_some(), start.resource) {
                (true, _) | (false, Resource::Application { ha: false }) => UpgradeMode::Savepoint,
                (false, _) => UpgradeMode::LastState,
            };
            let named_id = record
                .as_ref()
                .and_then(|p| world.flink.files.get(p))
                .map(|f| f.id);
            lineage.recreated(record.clone(), named_id);
            world.create(
                job(start.resource, mode, record.as_deref()),
                config(
                    start.resource,
                    *deleting_retention,
                    *snapshot_resources,
                    start.short_history,
                ),
            );
        }
        Event::RecordSavepoint(n) => {
            let savepoints: Vec<String> = (world.flink.files.iter())
                .filter(|(_, f)| f.savepoint)
                .map(|(p, _)| p.clone())
                .collect();
            if !savepoints.is_empty() {
                let path = savepoints[usize::from(*n) % savepoints.len()].clone();
                world.record(&path);
            }
        }
        Event::DeleteSnapshot(n) => {
            let names: Vec<String> = world.snapshots.keys().cloned().collect();
            if !names.is_empty() {
                let name = names[usize::from(*n) % names.len()].clone();
                world.delete_snapshot(&name);
            }
        }
        Event::JobFails => {
            // A JobManager that exits (its cluster deleted) suspends its job as it shuts
            // down; it does not fail it. A run that restored its checkpoint from the HA
            // metadata fails only once it completed one of its own (a known failure, see the
            // module doc).
            let restored_only = |id: &String| {
                (world.flink.jobs.get(id))
                    .is_some_and(|j| j.restored_checkpoint.is_some() && j.latest_checkpoint.is_none())
            };
            if let Some(id) = current_job(world).filter(|id| !world.app.exiting(id) && !restored_only(id)) {
                world.flink.fail(&id);
            }
        }
        Event::SavepointFails => world.flink.fail_savepoints(),
        Event::ForgetTriggers => world.flink.forget_triggers(),
        Event::ForgetEndedJobs => {
            let seen_ended = (world.job_status())
                .and_then(|j| j.state.as_ref())
                .is_some_and(flink_operator_api::FlinkJobState::is_globally_terminal);
            let unseen = current_job(world).filter(|_| !seen_ended);
            world.flink.forget_ended_jobs(unseen.as_deref());
        }
        Event::JobManagerLost => return world.app.lose_job_manager(&mut world.flink),
        Event::RollBack { n, restore } => {
            // A revision's state restored at the user's request is the state they name.
            if K::KIND == flink_operator_api::JobKind::FlinkDeployment
                && let Some((to, state)) = world.request_rollback(*n, *restore)
            {
                // A request again for a revision whose rollback is asked for already is that
                // rollback still: when it was first asked for stays.
                (lineage.rollbacks_asked.entry(to)).or_insert((state, world.flink.now_ms));
            }
        }
    }
    vec![]
}

fn current_job<K: Kind>(world: &World<K>) -> Option<String> {
    world.job_status().and_then(|j| j.job_id.clone())
}

/// Whether each step is printed (`LIFECYCLE_MODEL_TRACE`), to follow a failing sequence.
fn trace() -> bool {
    std::env::var_os("LIFECYCLE_MODEL_TRACE").is_some()
}

/// Cases of this run: `LIFECYCLE_MODEL_CASES`, else a size for every test run.
/// A model test's run: `LIFECYCLE_MODEL_CASES` cases (else `default_cases`). The default run
/// is the same every time (a commit passes or fails it for good); a run that sets its size
/// explores afresh, or replays `LIFECYCLE_MODEL_SEED`.
fn proptest_config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("LIFECYCLE_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let seed = std::env::var("LIFECYCLE_MODEL_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    let rng_seed = match (seed, cases) {
        (Some(seed), _) => proptest::test_runner::RngSeed::Fixed(seed),
        (None, None) => proptest::test_runner::RngSeed::Fixed(DEFAULT_SEED),
        (None, Some(_)) => proptest::test_runner::RngSeed::Random,
    };
    ProptestConfig {
        cases: cases.unwrap_or(default_cases),
        failure_persistence: None,
        rng_seed,
        ..ProptestConfig::default()
    }
}

const STEPS: usize = 100;

/// The seed of the default run.
const DEFAULT_SEED: u64 = 44;

/// Steps run by this process (shrinking's included), for the report.
static STEPS_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[test]
fn no_sequence_of_user_actions_and_faults_loses_or_rolls_back_a_jobs_state() {
    let started = std::time::Instant::now();
    let config = proptest_config(300);
    let cases = config.cases;
    proptest!(config, |(start in start(), steps in prop::collection::vec((event(), fault()), 1..=STEPS))| {
        if let Err(violation) = run(&start, &steps) {
            prop_assert!(false, "{violation}\nstart: {start:?}\nsteps: {steps:?}");
        }
    });
    eprintln!(
        "lifecycle model: {cases} cases, {} steps, in {:.1} s",
        STEPS_RUN.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}

/// Sequences the long run found failing once, shrunk, each fixed since: replayed in every
/// test run so that they stay fixed (with `LIFECYCLE_MODEL_TRACE` they print their steps).
#[test]
fn sequences_found_failing_once_pass() {
    use Event::*;
    use PassFault::{None as Ok, *};
    let last_state_ha = Start {
        resource: Resource::Application { ha: true },
        mode: UpgradeMode::LastState,
        deleting_retention: false,
        snapshot_resources: false,
        short_history: false,
    };
    let stateless_ha = Start {
        mode: UpgradeMode::Stateless,
        ..last_state_ha.clone()
    };
    let recreate = Recreate {
        from_record: false,
        deleting_retention: false,
        snapshot_resources: false,
    };
    let cases: Vec<(Start, Vec<(Event, PassFault)>)> = vec![
        (
            stateless_ha.clone(),
            vec![
                (Mode(UpgradeMode::Savepoint), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (JobFails, Ok),
                (Suspend, Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (RollBack { n: 66, restore: true }, Ok),
                (Resume, Ok),
                (Delete, Ok),
            ],
        ),
        (
            last_state_ha.clone(),
            vec![
                (Tick(1), Ok),
                (Tick(1), Ok),
                (JobFails, Stale),
                (Delete, Unreachable),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            last_state_ha.clone(),
            vec![
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(2), Crash(0)),
                (JobFails, Unreachable),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Stateless,
                ..last_state_ha.clone()
            },
            vec![
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (RestartNonce, Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Resume, Ok),
                (Parallelism(1), Ok),
                (Mode(UpgradeMode::LastState), Ok),
                (Tick(1), Ok),
                (RestartNonce, Ok),
                (SavepointFails, Ok),
                (Tick(1), Ok),
                (Tick(1), Stale),
                (Tick(1), Ok),
                (RollBack { n: 21, restore: true }, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                resource: Resource::Application { ha: false },
                mode: UpgradeMode::Stateless,
                ..last_state_ha.clone()
            },
            vec![
                (Delete, Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Crash(2),
                ),
                (Mode(UpgradeMode::LastState), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
            ],
        ),
        (
            last_state_ha.clone(),
            vec![
                (Tick(1), Ok),
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (CheckpointNonce, Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (Tick(1), Unreachable),
                (JobFails, Ok),
                (Tick(1), Ok),
                (ForgetEndedJobs, Ok),
                (Delete, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                resource: Resource::SessionJob,
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Suspend, Ok),
                (Tick(1), Ok),
                (Resume, Ok),
                (CheckpointNonce, Ok),
                (Tick(1), Unreachable),
                (JobFails, Ok),
                (ForgetEndedJobs, Ok),
                (Delete, Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (Tick(1), Ok),
                (Parallelism(3), Ok),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
                (
                    RollBack {
                        n: 153,
                        restore: true,
                    },
                    Ok,
                ),
                (JobFails, Ok),
                (Suspend, Ok),
                (Tick(1), Ok),
                (Tick(1), Unreachable),
                (Tick(1), Crash(0)),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Stateless,
                ..last_state_ha.clone()
            },
            vec![
                (Delete, Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Suspend, Ok),
                (Tick(1), Ok),
                (
                    RollBack {
                        n: 54,
                        restore: false,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (RollBack { n: 3, restore: true }, Ok),
                (Resume, Ok),
                (CheckpointNonce, Ok),
                (Tick(1), Crash(2)),
                (Tick(1), Ok),
                (JobFails, Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (Tick(1), Ok),
                (Suspend, Ok),
                (Mode(UpgradeMode::LastState), Ok),
                (RollBack { n: 6, restore: false }, Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (RollBack { n: 0, restore: false }, Ok),
                (Parallelism(2), Ok),
                (
                    RollBack {
                        n: 145,
                        restore: true,
                    },
                    Ok,
                ),
                (Parallelism(1), Ok),
                (Resume, Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: false,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        // Not the operator's: the model took a second rollback request, waiting for the one
        // under way, for the one whose state the resume restored.
        (
            Start {
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (RestartNonce, Ok),
                (Parallelism(1), Ok),
                (Tick(1), Ok),
                (Parallelism(3), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::LastState), Ok),
                (JobFails, Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Suspend, Ok),
                (RollBack { n: 4, restore: true }, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (
                    RollBack {
                        n: 180,
                        restore: true,
                    },
                    Ok,
                ),
                (Resume, Ok),
                (Tick(1), Ok),
            ],
        ),
        // A rollback superseded by a request for another revision (waiting for it to end)
        // was taken up again when the spec came back to its revision, restoring its state
        // over newer checkpoints.
        (
            Start {
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (Tick(1), Ok),
                (Parallelism(3), Ok),
                (Tick(1), Ok),
                (Parallelism(1), Ok),
                (Suspend, Ok),
                (RollBack { n: 58, restore: true }, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (RollBack { n: 1, restore: false }, Ok),
                (Resume, Ok),
                (Parallelism(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(3), Ok),
                (JobFails, Ok),
                (Suspend, Ok),
                (Tick(1), Ok),
            ],
        ),
        // A rollback's restored checkpoint had no time, so an older savepoint outranked it
        // when the resource was deleted before the rolled-back job started.
        (
            stateless_ha.clone(),
            vec![
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (JobFails, Ok),
                (Mode(UpgradeMode::LastState), Ok),
                (RestartNonce, Crash(0)),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
                (Parallelism(1), Ok),
                (recreate.clone(), Ok),
                (Parallelism(2), Ok),
                (
                    RollBack {
                        n: 129,
                        restore: true,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Mode(UpgradeMode::Savepoint), Stale),
                (Tick(1), Ok),
                (JobFails, Ok),
                (recreate.clone(), Ok),
                (Delete, Ok),
                (Tick(1), Ok),
            ],
        ),
        // A stop-with-savepoint completed while the job's passes read a stale status or found
        // the JobManager silent, so nothing named its savepoint yet; the user recorded that
        // savepoint (disposeOnDelete) and deleted the record, which disposed of the job's
        // newest state.
        (
            Start {
                resource: Resource::SessionJob,
                mode: UpgradeMode::Stateless,
                deleting_retention: false,
                snapshot_resources: false,
                short_history: false,
            },
            vec![
                (Tick(1), Ok),
                (JobFails, Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
                (Suspend, Ok),
                (Resume, Ok),
                (Tick(1), Ok),
                (RestartNonce, Ok),
                (Tick(1), Stale),
                (RecordSavepoint(0), Unreachable),
                (DeleteSnapshot(0), Stale),
            ],
        ),
        // Not the operator's: a JobManager that came up with the step's time started the
        // job resumed from its checkpoint, and the pass deleted that cluster for a rollback
        // restoring its revision's state; the model judged the deletion by the checkpoint
        // the job had started from, not by the state the rollback commits.
        (
            stateless_ha.clone(),
            vec![
                (Mode(UpgradeMode::LastState), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Delete, Ok),
                (Tick(1), Ok),
                (
                    Recreate {
                        from_record: true,
                        deleting_retention: false,
                        snapshot_resources: true,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (SavepointFails, Ok),
                (Tick(1), Ok),
                (Parallelism(3), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::Stateless), Ok),
                (Tick(1), Ok),
                (recreate.clone(), Ok),
                (Resume, Ok),
                (Resume, Ok),
                (Tick(1), Ok),
                (SavepointFails, Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::Savepoint), Ok),
                (Tick(1), Ok),
                (recreate.clone(), Ok),
                (JobFails, Ok),
                (Suspend, Ok),
                (
                    RollBack {
                        n: 109,
                        restore: true,
                    },
                    Ok,
                ),
                (Resume, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(1), Ok),
                (recreate.clone(), Ok),
                (Tick(1), Unreachable),
            ],
        ),
        // Not the operator's: the user ran the job stateless with checkpoints deleted on
        // cancellation and asked for last-state while its upgrade had cancelled it; the
        // restore of the checkpoint the cancellation deleted fails, and the state was theirs
        // to give up.
        (
            Start {
                resource: Resource::SessionJob,
                mode: UpgradeMode::Stateless,
                deleting_retention: true,
                snapshot_resources: false,
                short_history: false,
            },
            vec![
                (Parallelism(2), Ok),
                (recreate.clone(), Ok),
                (Tick(1), Ok),
                (Parallelism(1), Ok),
                (Mode(UpgradeMode::LastState), Ok),
            ],
        ),
        // Not the operator's: the history's trim disposed of the savepoint the running job
        // was started from, once no status field named it (an upgrade the operator stopped
        // in recorded the checkpoint it was to restore), which the job no longer read: it
        // had completed checkpoints since (NO_CLAIM).
        (
            Start {
                resource: Resource::SessionJob,
                mode: UpgradeMode::Stateless,
                deleting_retention: false,
                snapshot_resources: false,
                short_history: false,
            },
            vec![
                (Delete, Ok),
                (Tick(1), Crash(1)),
                (recreate.clone(), Ok),
                (RestartNonce, Ok),
                (Tick(1), Ok),
                (Age, Ok),
                (Parallelism(2), Crash(0)),
                (Parallelism(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        // A rollback that restored its revision's state over the HA metadata started its
        // job, which was suspended (last-state: its checkpoints kept in the HA metadata)
        // before it was seen stable; the resume restored the revision's state again and
        // deleted the HA metadata, the only pointer to what the rolled-back job did since.
        (
            last_state_ha.clone(),
            vec![
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (JobFails, Ok),
                (RestartNonce, Ok),
                (Tick(1), Ok),
                (
                    RollBack {
                        n: 189,
                        restore: false,
                    },
                    Ok,
                ),
                (Resume, Ok),
                (recreate.clone(), Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (RestartNonce, Ok),
                (
                    RollBack {
                        n: 189,
                        restore: true,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (RollBack { n: 0, restore: false }, Ok),
                (Suspend, Ok),
                (Tick(1), Crash(0)),
                (SavepointNonce, Ok),
                (Tick(1), Stale),
                (Tick(1), Ok),
                (Resume, Ok),
                (Tick(1), Ok),
                (recreate.clone(), Ok),
                (recreate.clone(), Ok),
            ],
        ),
        // Not the operator's: a failed savepoint-mode job was suspended to resume from the
        // manual savepoint it took after it started; the model still held the savepoint it
        // started from as its newest state, so the disposal of that older savepoint (the
        // user recorded it and deleted the record) looked like a loss.
        (
            Start {
                resource: Resource::SessionJob,
                mode: UpgradeMode::Savepoint,
                ..last_state_ha.clone()
            },
            vec![
                (RestartNonce, Ok),
                (Tick(1), Ok),
                (recreate.clone(), Ok),
                (Parallelism(1), Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (JobFails, Ok),
                (Suspend, Ok),
                (RecordSavepoint(7), Ok),
                (DeleteSnapshot(0), Ok),
            ],
        ),
        // Not the operator's: a last-state upgrade restores the latest checkpoint from the HA
        // metadata, not the manual savepoints taken since (Flink does not recover from
        // savepoints); the model must not hold those as the job's newest state.
        (
            Start {
                mode: UpgradeMode::Stateless,
                ..last_state_ha.clone()
            },
            vec![
                (RestartNonce, Ok),
                (Delete, Ok),
                (
                    Recreate {
                        from_record: false,
                        deleting_retention: false,
                        snapshot_resources: true,
                    },
                    Ok,
                ),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Parallelism(2), Ok),
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (SavepointNonce, Ok),
                (Tick(1), Ok),
                (DeleteSnapshot(0), Ok),
                (Tick(1), Ok),
                (Parallelism(1), Ok),
            ],
        ),
    ];
    for (start, steps) in cases {
        if let Err(violation) = run(&start, &steps) {
            panic!("{violation}\nstart: {start:?}\nsteps: {steps:?}");
        }
    }
}
