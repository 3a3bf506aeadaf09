//! The lifecycle model of a FlinkBlueGreenDeployment (BASIC): random sequences of what users
//! do and what goes wrong drive the real `bluegreen::decide` (and the real
//! FlinkStateSnapshot loop that takes its transition savepoints) against the simulated Flink
//! and storage of [`super::flink`] and two simulated children ([`children`]), and after every
//! step the promises about the job's state are checked against what Flink ran and what is on
//! storage ([`invariants`]):
//!
//! - a transition savepoint's path (and whatever newer state a child started from it left)
//!   is never lost, while the resource is there, from the resource's status or a child's
//!   spec or status, until a child's job has started from it and gone past it;
//! - no child starts from state older than the newest the job had, unless the user named
//!   that state or runs the job stateless;
//! - a child starts beside another child's running job only from a savepoint of that job
//!   (BASIC: the new child starts after the old one's savepoint), or stateless, or from the
//!   state a redeploy names;
//! - no savepoint the resource or a child names is disposed of;
//! - a resource that is deleted leaves its newest state recorded by its children's deletions.
//!
//! Each step is one event (an edit of the template that ends the job, so a transition; an
//! edit of the upgrade mode alone; suspend and resume; an edit naming a savepoint on
//! storage, with or without a redeploy nonce; the next child never becoming ready; a child's
//! job failing; a child deleted by hand; savepoints failing; the JobManagers forgetting their
//! trigger results; the resource deleted and created again, from its children's deletion
//! records or not; the user recording a savepoint as a FlinkStateSnapshot, or deleting one;
//! time passing), then a pass of the children's and the snapshots' loops, one reconcile pass
//! of the resource (which may crash after any action, decide from a stale version of the
//! resource, or see the children as they were before the step), and the other loops again.
//!
//! The children are simulated, not run through the FlinkDeployment loop (see
//! [`children`] for what of that loop they keep): a child starts its job from
//! `spec.job.initialSavepointPath` and later runs from what its status records. Not
//! modelled: ADVANCED transitions (the gates), the Ingress, a change of `transitionMode`,
//! the children's own faults beyond a JobManager that never comes up and a job that fails.
//!
//! It runs in the unit tests with the lifecycle model's size and seed
//! (`LIFECYCLE_MODEL_CASES`, `LIFECYCLE_MODEL_SEED`, `LIFECYCLE_MODEL_TRACE`; see
//! [`super`]).

mod children;
mod invariants;
mod world;

use flink_operator_api::{common::UpgradeMode, keys};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::bluegreen::Colour;
use invariants::{Lineage, Violation};
use world::{Fault, World};

/// What happens before a pass.
#[derive(Debug, Clone)]
enum Event {
    /// Time passes: running jobs checkpoint, pending savepoints complete.
    Tick(u8),
    /// An edit of the template that ends the job (its parallelism): a transition.
    Transition,
    /// An edit of the upgrade mode alone (made in place; stateless makes the next
    /// transition stateless).
    Mode(UpgradeMode),
    Suspend,
    Resume,
    /// An edit that ends the job and names the `n`-th savepoint on storage as
    /// `initialSavepointPath`.
    NameState(u8),
    /// A new `savepointRedeployNonce` with the `n`-th savepoint on storage as
    /// `initialSavepointPath`.
    SavepointRedeploy(u8),
    /// The next child created never becomes ready (its JobManager crash-loops).
    BreakNextChild,
    /// The job of a child (blue for even `n`) fails.
    JobFails(u8),
    /// The user deletes a child (blue for even `n`) by hand.
    DeleteChild(u8),
    SavepointFails,
    /// The JobManagers forget their trigger results.
    ForgetTriggers,
    Delete,
    /// A new resource of the same name, from the newest deletion record if `from_record`.
    Recreate {
        from_record: bool,
    },
    /// The user records one of the savepoints on storage (the `n`-th) as a FlinkStateSnapshot.
    RecordSavepoint(u8),
    /// The user deletes one of the FlinkStateSnapshots (the `n`-th).
    DeleteSnapshot(u8),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        8 => (1u8..30).prop_map(Event::Tick),
        4 => Just(Event::Transition),
        1 => prop_oneof![
            Just(UpgradeMode::Stateless),
            Just(UpgradeMode::Savepoint),
            Just(UpgradeMode::LastState),
        ]
        .prop_map(Event::Mode),
        1 => Just(Event::Suspend),
        1 => Just(Event::Resume),
        1 => any::<u8>().prop_map(Event::NameState),
        1 => any::<u8>().prop_map(Event::SavepointRedeploy),
        2 => Just(Event::BreakNextChild),
        1 => any::<u8>().prop_map(Event::JobFails),
        1 => any::<u8>().prop_map(Event::DeleteChild),
        2 => Just(Event::SavepointFails),
        1 => Just(Event::ForgetTriggers),
        1 => Just(Event::Delete),
        1 => any::<bool>().prop_map(|from_record| Event::Recreate { from_record }),
        1 => any::<u8>().prop_map(Event::RecordSavepoint),
        1 => any::<u8>().prop_map(Event::DeleteSnapshot),
    ]
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        12 => Just(Fault::None),
        1 => (0usize..4).prop_map(Fault::Crash),
        1 => Just(Fault::Stale),
        1 => Just(Fault::StaleChildren),
    ]
}

/// How a case starts: the template's upgrade mode and the blue/green options.
#[derive(Debug, Clone)]
struct Start {
    mode: UpgradeMode,
    /// `abort.grace-period` in seconds.
    grace_s: u16,
    /// `deployment-deletion.delay` in seconds.
    delay_s: u16,
}

fn start() -> impl Strategy<Value = Start> {
    let mode = prop_oneof![
        3 => Just(UpgradeMode::Savepoint),
        2 => Just(UpgradeMode::LastState),
        1 => Just(UpgradeMode::Stateless),
    ];
    (
        mode,
        prop_oneof![Just(60u16), Just(600)],
        prop_oneof![Just(0u16), Just(30)],
    )
        .prop_map(|(mode, grace_s, delay_s)| Start {
            mode,
            grace_s,
            delay_s,
        })
}

fn configuration(start: &Start) -> Value {
    json!({
        keys::bluegreen::ABORT_GRACE_PERIOD: format!("{} s", start.grace_s),
        keys::bluegreen::DEPLOYMENT_DELETION_DELAY: format!("{} s", start.delay_s),
    })
}

/// Runs one case; the first broken promise, with the step it broke at.
fn run(start: &Start, steps: &[(Event, Fault)]) -> Result<(), Violation> {
    let mut world = World::new(crate::fixtures::NOW);
    let mut lineage = Lineage::default();
    world.create(world::template(start.mode.as_str(), 1), configuration(start));
    let mut effects = world.loops();
    world.reconcile(Fault::None);
    effects.extend(world.loops());
    lineage
        .check(&world, &effects, true)
        .map_err(|v| format!("at the start: {v}"))?;
    for (index, (event, fault)) in steps.iter().enumerate() {
        STEPS_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        world.cached = world.children.clone();
        happen(&mut world, &mut lineage, start, event);
        let mut effects = world.loops();
        world.reconcile(*fault);
        effects.extend(world.loops());
        if super::trace() {
            eprintln!(
                "{index}: {event:?} / {fault:?} -> {effects:?}\n   {}\n   floor {:?}, line {:?}, named {:?}",
                world.summary(),
                lineage.floor,
                lineage.line,
                lineage.named
            );
        }
        lineage
            .check(&world, &effects, *fault == Fault::None)
            .map_err(|v| format!("at step {index} ({event:?}, then a pass with {fault:?}): {v}"))?;
    }
    Ok(())
}

/// The `n`-th savepoint on storage.
fn savepoint(world: &World, n: u8) -> Option<String> {
    let savepoints: Vec<&String> = (world.flink.files.iter())
        .filter(|(_, f)| f.savepoint)
        .map(|(p, _)| p)
        .collect();
    (!savepoints.is_empty()).then(|| savepoints[usize::from(n) % savepoints.len()].clone())
}

fn colour(n: u8) -> Colour {
    match n % 2 {
        0 => Colour::Blue,
        _ => Colour::Green,
    }
}

fn bump(job: &mut Value, field: &str) {
    job[field] = json!(job[field].as_i64().unwrap_or(0) + 1);
}

/// Another parallelism (1 to 4): a change that ends the job.
fn next_parallelism(job: &mut Value) {
    job["parallelism"] = json!(job["parallelism"].as_i64().unwrap_or(1) % 4 + 1);
}

fn happen(world: &mut World, lineage: &mut Lineage, start: &Start, event: &Event) {
    match event {
        Event::Tick(seconds) => world.tick(i64::from(*seconds) * 10_000),
        Event::Transition => world.edit(|s| next_parallelism(&mut s["job"])),
        Event::Mode(mode) => world.edit(|s| s["job"]["upgradeMode"] = json!(mode.as_str())),
        Event::Suspend => world.edit(|s| s["job"]["state"] = json!("suspended")),
        Event::Resume => world.edit(|s| s["job"]["state"] = json!("running")),
        Event::NameState(n) | Event::SavepointRedeploy(n) => {
            let (Some(path), Some(_)) = (savepoint(world, *n), world.object()) else {
                return;
            };
            let redeploy = matches!(event, Event::SavepointRedeploy(_));
            world.edit(|s| {
                s["job"]["initialSavepointPath"] = json!(path);
                match redeploy {
                    true => bump(&mut s["job"], "savepointRedeployNonce"),
                    false => next_parallelism(&mut s["job"]),
                }
            });
            lineage.named.insert(path);
        }
        Event::BreakNextChild => world.next_broken = true,
        Event::JobFails(n) => {
            if let Some(job_id) = (world.child(colour(*n)))
                .filter(|c| c.running(&world.flink))
                .and_then(|c| c.run.as_ref())
                .map(|r| r.job_id.clone())
            {
                world.flink.fail(&job_id);
            }
        }
        Event::DeleteChild(n) => world.delete_child(colour(*n), true),
        Event::SavepointFails => world.flink.fail_savepoints(),
        Event::ForgetTriggers => world.flink.forget_triggers(),
        Event::Delete => world.delete(),
        Event::Recreate { from_record } => {
            if world.resource.is_some() || world.children.iter().any(Option::is_some) {
                return;
            }
            let record = world.records.last().cloned().filter(|_| *from_record);
            let mut template = world::template(start.mode.as_str(), 1);
            if let Some(path) = &record {
                template["job"]["initialSavepointPath"] = json!(path);
                if start.mode == UpgradeMode::Stateless {
                    template["job"]["upgradeMode"] = json!("savepoint");
                }
            }
            lineage.recreated(record, world);
            world.create(template, configuration(start));
        }
        Event::RecordSavepoint(n) => {
            if let Some(path) = savepoint(world, *n) {
                world.record(&path, colour(*n));
            }
        }
        Event::DeleteSnapshot(n) => {
            let names: Vec<String> = world.snapshots.keys().cloned().collect();
            if !names.is_empty() {
                let name = names[usize::from(*n) % names.len()].clone();
                if world.resource.is_none() {
                    lineage.dropped.extend(
                        world.snapshots[&name]
                            .status
                            .as_ref()
                            .and_then(|s| s.path.clone()),
                    );
                }
                world.delete_snapshot(&name);
            }
        }
    }
}

/// Steps run by this test (shrinking's included), for the report.
static STEPS_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Cases of the default run (each up to [`super::STEPS`] steps).
const DEFAULT_CASES: u32 = 64;

#[test]
fn no_sequence_of_blue_green_edits_aborts_and_faults_loses_or_rolls_back_the_jobs_state() {
    let started = std::time::Instant::now();
    let config = super::proptest_config(DEFAULT_CASES);
    let cases = config.cases;
    proptest!(config, |(start in start(), steps in prop::collection::vec((event(), fault()), 1..=super::STEPS))| {
        if let Err(violation) = run(&start, &steps) {
            prop_assert!(false, "{violation}\nstart: {start:?}\nsteps: {steps:?}");
        }
    });
    eprintln!(
        "blue/green lifecycle model: {cases} cases, {} steps, in {:.1} s",
        STEPS_RUN.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}

/// Sequences the model found failing once, run in every test run so that they stay fixed
/// (with `LIFECYCLE_MODEL_TRACE` they print their steps).
#[test]
fn sequences_found_failing_once_pass() {
    use Event::*;
    use Fault::{None as Ok, *};
    let cases: Vec<(Start, Vec<(Event, Fault)>)> = vec![
        (
            Start {
                mode: UpgradeMode::Savepoint,
                grace_s: 600,
                delay_s: 0,
            },
            vec![
                (Tick(2), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
                (Mode(UpgradeMode::LastState), Ok),
                (Suspend, Ok),
                (DeleteChild(14), Ok),
                (Tick(2), Ok),
                (NameState(0), Ok),
                (Resume, Ok),
                (Resume, Ok),
                (SavepointRedeploy(29), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::LastState,
                grace_s: 60,
                delay_s: 0,
            },
            vec![
                (JobFails(0), Ok),
                (Recreate { from_record: false }, Ok),
                (DeleteChild(224), Ok),
                (JobFails(0), Ok),
                (Transition, Crash(1)),
                (Transition, Crash(0)),
                (Tick(1), Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Savepoint,
                grace_s: 60,
                delay_s: 0,
            },
            vec![
                (Tick(2), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
                (Tick(1), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
                (SavepointRedeploy(151), Ok),
                (DeleteChild(128), Ok),
                (DeleteChild(187), Ok),
                (Tick(1), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::LastState,
                grace_s: 600,
                delay_s: 30,
            },
            vec![
                (Tick(1), Ok),
                (Delete, Ok),
                (Tick(1), Ok),
                (Recreate { from_record: false }, Ok),
                (Tick(2), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
                (SavepointRedeploy(20), Ok),
                (Transition, Ok),
                (Tick(1), Ok),
                (BreakNextChild, Ok),
                (DeleteSnapshot(6), Ok),
                (Transition, StaleChildren),
                (Tick(1), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Savepoint,
                grace_s: 60,
                delay_s: 0,
            },
            vec![
                (Tick(2), Ok),
                (Transition, Ok),
                (Tick(1), Crash(0)),
                (Delete, Ok),
                (RecordSavepoint(66), Ok),
                (DeleteSnapshot(0), Ok),
                (JobFails(8), Ok),
            ],
        ),
        (
            Start {
                mode: UpgradeMode::Savepoint,
                grace_s: 600,
                delay_s: 0,
            },
            vec![
                (Tick(2), Ok),
                (Transition, Ok),
                (Tick(1), Crash(1)),
                (Tick(1), Crash(0)),
                (Transition, Ok),
                (DeleteSnapshot(0), Ok),
            ],
        ),
    ];
    for (start, steps) in cases {
        if let Err(violation) = run(&start, &steps) {
            panic!("{violation}\nstart: {start:?}\nsteps: {steps:?}");
        }
    }
}
