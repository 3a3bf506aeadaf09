//! `flink-operator history` and `flink-operator rollback`: a job's revisions (the
//! ControllerRevisions the operator records for each spec it applies) as a table, and a
//! manual rollback asked for through the resource's annotations and followed until the
//! operator has carried it out or given up.
//!
//! Both only read the revisions and the resource's status and write the two rollback
//! annotations: what a rollback does is the operator's decision, so that the command and a
//! `kubectl annotate` by hand behave the same.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use flink_operator_api::{
    Condition, FlinkDeployment, FlinkSessionJob, JobKind, ReconciliationStatus, RevisionStatus,
    RollbackPhase, RollbackStatus, keys::annotations,
};
use flink_operator_controller::{
    conditions::{condition_type, rfc3339},
    lifecycle::revisions::{self, Revision},
};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams},
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    cli::{HistoryArgs, RollbackArgs},
    job_ref::JobRef,
};

/// The longest value a change summary shows of one field.
const VALUE_MAX: usize = 40;
/// The longest change summary, so that a table row stays one terminal line or two.
const CHANGE_MAX: usize = 120;
/// Between two columns of the table.
const COLUMN_GAP: &str = "   ";

/// Why `history` or `rollback` failed.
#[derive(Debug, thiserror::Error)]
pub enum RevisionCliError {
    /// No Kubernetes client could be configured.
    #[error("kubeconfig: {0}")]
    Client(String),
    /// The tokio runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A call to the API server failed.
    #[error("{what}: {source}")]
    Api {
        /// What was asked, e.g. "reading FlinkDeployment ns/name".
        what: String,
        #[source]
        source: kube::Error,
    },
    /// The resource has no job (a session cluster).
    #[error("{0} has no spec.job: it is a session cluster, whose jobs are FlinkSessionJobs")]
    NoJob(String),
    /// The resource does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// No `--to-revision` and no kept revision below the current one.
    #[error("{job} has no kept revision before its current one{current}; the kept revisions are {kept}")]
    NoPrevious {
        job: String,
        current: String,
        kept: String,
    },
    /// The revision asked for is not kept.
    #[error("revision {to} of {job} is not kept; the kept revisions are {kept}")]
    NotKept { to: i64, job: String, kept: String },
    /// The operator refused the rollback, or carrying it out failed.
    #[error("the rollback of {job} to revision {to} ended {phase}: {message}")]
    Ended {
        job: String,
        to: i64,
        phase: RollbackPhase,
        message: String,
    },
    /// The resource went away while the rollback was followed.
    #[error("{0} was deleted while its rollback was followed")]
    Deleted(String),
    /// The rollback did not end within `--timeout`.
    #[error(
        "the rollback of {job} to revision {to} did not end within {timeout}; it may still be \
         going on: see {look}"
    )]
    Timeout {
        job: String,
        to: i64,
        timeout: String,
        /// The commands that show where the rollback is.
        look: String,
    },
}

/// `text` made safe for a terminal, for every piece of text a tenant or a JobManager controls
/// (names, messages, errors, specs): control characters (C0, DEL, C1), which include the
/// ESC of ANSI escape sequences, and the Unicode bidirectional overrides are written as
/// escapes (`\n`, `\r`, `\t`, `\x1b`, `\u{9b}`), so that a status message cannot move the
/// cursor, rewrite what was printed before it, recolour the terminal or fake a line of its
/// own. JSON output needs it only for DEL and C1, which serde_json writes raw (see
/// [`printable_json`]); YAML's emitter escapes every one of them.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && unsafe_char(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON text with DEL and the C1 controls, which serde_json leaves raw inside strings, written
/// as `\u00XX` escapes: the same JSON value, safe for a terminal (C0 is escaped already).
pub fn printable_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_control() && c != '\n' {
            // Outside strings serde_json writes only newlines and spaces.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `flink-operator history`: prints the job's revisions, oldest first.
pub fn history(args: HistoryArgs) -> Result<(), RevisionCliError> {
    block_on(async move {
        let (client, namespace) = connect(&args.cluster).await?;
        let job = args.job;
        let object = read_job(&client, &namespace, &job).await?;
        let view = JobView::of(&object);
        let kept = kept_revisions(&client, &namespace, &job, &object).await?;
        if kept.is_empty() {
            println!("No revisions of {} are recorded yet.", describe(&job, &namespace));
            return Ok(());
        }
        let stable = view
            .stable_spec
            .as_ref()
            .and_then(|spec| revisions::matching(&kept, spec))
            .map(|r| r.number);
        print!("{}", render_table(&history_rows(&kept, view.current, stable)));
        if let Some(line) = view.running_spec.as_ref().and_then(parallelism_line) {
            println!("{}", printable(&line));
        }
        for line in scaling_history(&client, &namespace, &job).await {
            println!("{}", printable(&line));
        }
        Ok(())
    })
}

/// The autoscaler's decisions for the job (none when it never rescaled it), as lines to print;
/// a history that cannot be read is said, and the revisions are shown all the same.
async fn scaling_history(client: &Client, namespace: &str, job: &JobRef) -> Vec<String> {
    use flink_operator_controller::autoscaler::history;
    let name = history::config_map_name(job.kind, &job.name);
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config_map = match api.get_opt(&name).await {
        Ok(config_map) => config_map,
        Err(error) => {
            return vec![format!(
                "The autoscaler's decisions (ConfigMap {name}) cannot be read: {error}"
            )];
        }
    };
    let entries = history::read(config_map.as_ref());
    if entries.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["Autoscaler decisions (newest last):".to_owned()];
    lines.extend(entries.iter().map(|e| format!("  {}", e.line())));
    lines
}

/// `flink-operator rollback`: asks the operator to roll the job back and follows it.
pub fn rollback(args: RollbackArgs) -> Result<(), RevisionCliError> {
    block_on(async move {
        let (client, namespace) = connect(&args.cluster).await?;
        let job = args.job;
        let described = describe(&job, &namespace);
        let object = read_job(&client, &namespace, &job).await?;
        let view = JobView::of(&object);
        let kept: Vec<i64> = kept_revisions(&client, &namespace, &job, &object)
            .await?
            .iter()
            .map(|r| r.number)
            .collect();
        let current = view.current.or_else(|| kept.iter().copied().max());
        let to = match args.to_revision {
            Some(to) => to,
            None => previous_revision(&kept, current).ok_or_else(|| RevisionCliError::NoPrevious {
                job: described.clone(),
                current: current.map(|c| format!(" ({c})")).unwrap_or_default(),
                kept: listed(&kept),
            })?,
        };
        if !kept.contains(&to) {
            return Err(RevisionCliError::NotKept {
                to,
                job: described,
                kept: listed(&kept),
            });
        }
        // A rollback this command did not ask for (an earlier one) has another timestamp:
        // only a newer decision about revision `to` answers this request.
        let before = view.rollback.as_ref().and_then(|r| r.timestamp);
        let api = job_api(&client, &namespace, job.kind);
        api.patch(
            &job.name,
            &PatchParams::default(),
            &Patch::Merge(rollback_patch(to, args.restore_revision_state)),
        )
        .await
        .map_err(|source| RevisionCliError::Api {
            what: format!("annotating {described}"),
            source,
        })?;
        let from = current.map(|c| format!(" from revision {c}")).unwrap_or_default();
        println!("Asked to roll {described} back{from} to revision {to}.");
        let started = Instant::now();
        let followed = tokio::time::timeout(
            args.timeout,
            follow(api, &job, &described, Follower::new(before, to), started),
        )
        .await;
        followed.unwrap_or_else(|_| {
            Err(RevisionCliError::Timeout {
                job: described.clone(),
                to,
                timeout: shown_duration(args.timeout),
                look: look_commands(&job, &namespace),
            })
        })
    })
}

/// Runs `future` on a current-thread runtime: the commands make a few sequential calls.
pub(crate) fn block_on<F>(future: F) -> Result<(), RevisionCliError>
where
    F: std::future::Future<Output = Result<(), RevisionCliError>>,
{
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RevisionCliError::Runtime)?
        .block_on(future)
}

/// The client, and the namespace: the one given, else the kubeconfig context's (as kubectl).
/// A context names one of the kubeconfig's (the file given, else the usual one).
pub(crate) async fn connect(cluster: &crate::cli::ClusterArgs) -> Result<(Client, String), RevisionCliError> {
    let client = crate::kube_config::kube_config(cluster.kubeconfig.as_deref(), cluster.context.as_deref())
        .await
        .and_then(|config| Client::try_from(config).map_err(|e| e.to_string()))
        .map_err(RevisionCliError::Client)?;
    let namespace = cluster
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    Ok((client, namespace))
}

/// Both kinds through one untyped API: the commands read only the status fields they share.
pub(crate) fn job_api(client: &Client, namespace: &str, kind: JobKind) -> Api<DynamicObject> {
    let resource = match kind {
        JobKind::FlinkDeployment => ApiResource::erase::<FlinkDeployment>(&()),
        JobKind::FlinkSessionJob => ApiResource::erase::<FlinkSessionJob>(&()),
    };
    Api::namespaced_with(client.clone(), namespace, &resource)
}

pub(crate) async fn read_job(
    client: &Client,
    namespace: &str,
    job: &JobRef,
) -> Result<DynamicObject, RevisionCliError> {
    let described = describe(job, namespace);
    job_api(client, namespace, job.kind)
        .get_opt(&job.name)
        .await
        .map_err(|source| RevisionCliError::Api {
            what: format!("reading {described}"),
            source,
        })?
        .ok_or(RevisionCliError::NotFound(described))
}

/// The job's kept revisions, oldest first: those labelled with its kind and name and owned
/// by it, not by an earlier resource of the name whose revisions are not collected yet.
async fn kept_revisions(
    client: &Client,
    namespace: &str,
    job: &JobRef,
    object: &DynamicObject,
) -> Result<Vec<Revision>, RevisionCliError> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&revisions::selector(job.kind, &job.name));
    let listed = api.list(&params).await.map_err(|source| RevisionCliError::Api {
        what: format!("listing the revisions of {}", describe(job, namespace)),
        source,
    })?;
    let uid = object.metadata.uid.as_deref();
    let mut kept: Vec<Revision> = listed
        .items
        .iter()
        .filter(|r| revisions::owned_by(r, uid))
        .filter_map(revisions::from_controller_revision)
        .collect();
    kept.sort_by_key(|r| r.number);
    Ok(kept)
}

/// Follows the job until the operator's answer to the rollback to `follower.to` ends,
/// printing each change of what it shows.
async fn follow(
    api: Api<DynamicObject>,
    job: &JobRef,
    described: &str,
    mut follower: Follower,
    started: Instant,
) -> Result<(), RevisionCliError> {
    let to = follower.to;
    let mut changes = std::pin::pin!(kube::runtime::watcher::watch_object(api, &job.name));
    while let Some(change) = changes.next().await {
        let object = match change {
            Ok(Some(object)) => object,
            Ok(None) => return Err(RevisionCliError::Deleted(described.to_owned())),
            Err(error) => {
                // The watch starts again on the next poll; a pause keeps a refused watch
                // (the API server away, say) from spinning until the timeout.
                eprintln!(
                    "warning: watching {described}: {}; watching again",
                    printable(&error.to_string())
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let view = JobView::of(&object);
        let progress = follower.observe(&view.observed(), started.elapsed());
        if let Some(line) = progress.line {
            println!("{}", printable(&line));
        }
        match progress.outcome {
            None => {}
            Some(Outcome::RolledBack) => return Ok(()),
            Some(Outcome::Ended { phase, message }) => {
                return Err(RevisionCliError::Ended {
                    job: described.to_owned(),
                    to,
                    phase,
                    message,
                });
            }
        }
    }
    // The watcher restarts itself after errors, so its stream ends only when dropped.
    Err(RevisionCliError::Deleted(described.to_owned()))
}

/// The commands that show a rollback's progress after the command stopped following it.
fn look_commands(job: &JobRef, namespace: &str) -> String {
    let kind = job.kind.as_str().to_lowercase();
    let name = &job.name;
    format!(
        "`kubectl get {kind} {name} -n {namespace} -o jsonpath='{{.status.revision}}'` or \
         `flink-operator history {kind}/{name} -n {namespace}`"
    )
}

/// A duration as `--timeout` takes it, e.g. `15 min`.
fn shown_duration(duration: Duration) -> String {
    flink_operator_api::options::duration_text(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
}

/// `FlinkDeployment ns/name`, as messages name the job.
fn describe(job: &JobRef, namespace: &str) -> String {
    format!("{} {namespace}/{}", job.kind.as_str(), job.name)
}

fn listed(numbers: &[i64]) -> String {
    if numbers.is_empty() {
        return "none".to_owned();
    }
    numbers.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// The merge patch that asks for the rollback; without `restore_revision_state` it removes
/// a restore request left over from an earlier attempt, which would otherwise apply to this
/// one.
fn rollback_patch(to: i64, restore_revision_state: bool) -> Value {
    let restore = if restore_revision_state {
        Value::String(annotations::ROLLBACK_RESTORE_REVISION.to_owned())
    } else {
        Value::Null
    };
    json!({
        "metadata": {
            "annotations": {
                annotations::ROLLBACK_TO_REVISION: to.to_string(),
                annotations::ROLLBACK_RESTORE: restore,
            }
        }
    })
}

/// The status fields both kinds share that the commands read.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SharedStatus {
    revision: Option<RevisionStatus>,
    reconciliation_status: Option<ReconciliationStatus>,
    conditions: Option<Vec<Condition>>,
}

/// What the commands need to know of the job resource.
#[derive(Debug, Default)]
struct JobView {
    current: Option<i64>,
    /// The spec last reconciled: what runs, rescaled in place or not.
    running_spec: Option<Value>,
    stable_spec: Option<Value>,
    rollback: Option<RollbackStatus>,
    condition: Option<Condition>,
}

impl JobView {
    fn of(object: &DynamicObject) -> Self {
        // A status the operator has not written yet (or one of another shape) reads as
        // empty: the commands then show what the revisions alone say.
        let status: SharedStatus = object
            .data
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .unwrap_or_default();
        let annotated = object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::REVISION))
            .and_then(|n| n.trim().parse().ok());
        let revision = status.revision.unwrap_or_default();
        let running_spec = status
            .reconciliation_status
            .as_ref()
            .and_then(|rs| rs.last_reconciled_spec::<Value>().ok().flatten());
        let stable_spec = status
            .reconciliation_status
            .and_then(|rs| rs.last_stable_spec)
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .and_then(|v| v.get("spec").cloned());
        // Ready, Progressing and Degraded carry the same reason (the phase); Ready is there
        // in every phase.
        let conditions = status.conditions.unwrap_or_default();
        let condition = conditions
            .iter()
            .find(|c| c.type_.as_deref() == Some(condition_type::READY))
            .or(conditions.first())
            .cloned();
        JobView {
            current: revision.current.or(annotated),
            running_spec,
            stable_spec,
            rollback: revision.rollback,
            condition,
        }
    }

    fn observed(&self) -> Observed {
        Observed {
            rollback: self.rollback.clone(),
            reason: self.condition.as_ref().and_then(|c| c.reason.clone()),
            message: self.condition.as_ref().and_then(|c| c.message.clone()),
        }
    }
}

/// The number a rollback without `--to-revision` goes back to: the highest kept below the
/// current one (the newest kept when the current is unknown).
pub fn previous_revision(kept: &[i64], current: Option<i64>) -> Option<i64> {
    let current = current.or_else(|| kept.iter().copied().max())?;
    kept.iter().copied().filter(|&n| n < current).max()
}

/// The parallelism the job runs with, as its last reconciled spec says (a change of
/// parallelism applied in place moves it without a new job).
pub fn parallelism_line(spec: &Value) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = spec.pointer("/job/parallelism").and_then(Value::as_i64) {
        parts.push(format!("parallelism {p}"));
    }
    if let Some(r) = spec.pointer("/taskManager/replicas").and_then(Value::as_i64) {
        parts.push(format!("taskManager.replicas {r}"));
    }
    if let Some(o) = spec
        .pointer("/flinkConfiguration")
        .and_then(|c| c.get("pipeline.jobvertex-parallelism-overrides"))
        .and_then(Value::as_str)
    {
        parts.push(format!("vertex overrides {o}"));
    }
    if let Some(o) = spec
        .pointer("/flinkConfiguration")
        .and_then(|c| c.get(flink_operator_api::keys::operator::AUTOSCALER_PARALLELISM_OVERRIDES))
        .and_then(Value::as_str)
    {
        parts.push(format!("the autoscaler's vertex overrides {o}"));
    }
    (!parts.is_empty()).then(|| format!("Running with {}.", parts.join(", ")))
}

/// One line of the history table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    pub revision: i64,
    pub applied: String,
    pub started_from: String,
    pub mark: String,
    pub change: String,
}

/// The table's rows for `kept` (oldest first), `current` and `stable` being revision
/// numbers.
pub fn history_rows(kept: &[Revision], current: Option<i64>, stable: Option<i64>) -> Vec<HistoryRow> {
    // The operator keeps specs normalised; an older or hand-made revision may not be, and
    // then would show fields no part of a version as changes.
    let specs: Vec<Value> = kept.iter().map(|r| revisions::normalised(&r.spec)).collect();
    let mut previous: Option<&Value> = None;
    kept.iter()
        .zip(&specs)
        .map(|(revision, spec)| {
            let mark = [
                (current == Some(revision.number)).then_some("current"),
                (stable == Some(revision.number)).then_some("stable"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(",");
            let row = HistoryRow {
                revision: revision.number,
                applied: if revision.applied_ms > 0 {
                    rfc3339(revision.applied_ms)
                } else {
                    "-".to_owned()
                },
                started_from: revision.started_from.clone().unwrap_or_else(|| "-".to_owned()),
                mark: if mark.is_empty() { "-".to_owned() } else { mark },
                change: change_summary(previous, spec),
            };
            previous = Some(spec);
            row
        })
        .collect()
}

/// The table, columns aligned and the variable-length CHANGE last; one line per row.
pub fn render_table(rows: &[HistoryRow]) -> String {
    let header = ["REVISION", "APPLIED", "STARTED FROM", "MARK", "CHANGE"].map(str::to_owned);
    let lines: Vec<[String; 5]> = std::iter::once(header)
        .chain(rows.iter().map(|r| {
            // Each cell escaped before it is measured: the spec's values are the tenant's.
            [
                r.revision.to_string(),
                printable(&r.applied).into_owned(),
                printable(&r.started_from).into_owned(),
                printable(&r.mark).into_owned(),
                printable(&r.change).into_owned(),
            ]
        }))
        .collect();
    let mut widths = [0; 5];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i > 0 {
                text.push_str(COLUMN_GAP);
            }
            text.push_str(cell);
            let pad = width.saturating_sub(cell.chars().count());
            text.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// What changed from `previous` to `current` (normalised specs), one line: each changed
/// field's JSON path with its old and new value, `initial` without a previous revision.
pub fn change_summary(previous: Option<&Value>, current: &Value) -> String {
    let Some(previous) = previous else {
        return "initial".to_owned();
    };
    let mut changes = Vec::new();
    changed_paths("", Some(previous), Some(current), &mut changes);
    if changes.is_empty() {
        return "no change".to_owned();
    }
    let parts: Vec<String> = changes
        .iter()
        .map(|(path, old, new)| format!("{path}: {} -> {}", shown(old.as_ref()), shown(new.as_ref())))
        .collect();
    let mut summary = String::new();
    for (i, part) in parts.iter().enumerate() {
        let separator = if i == 0 { "" } else { "; " };
        let left = parts.len() - i - 1;
        // Room is kept for the count of the changes left out, so the line says there are more.
        let tail = if left == 0 {
            0
        } else {
            format!("; +{left} more").len()
        };
        let length = summary.chars().count() + separator.len() + part.chars().count();
        if length + tail > CHANGE_MAX && i > 0 {
            summary.push_str(&format!("; +{} more", parts.len() - i));
            return summary;
        }
        summary.push_str(separator);
        summary.push_str(part);
    }
    shortened(&summary, CHANGE_MAX)
}

/// The paths (dot-separated) under `path` where `old` and `new` differ; objects are compared
/// member by member (an absent one as empty, so an added section shows its fields), arrays
/// by the elements between their common beginning and end (so an argument added at the end
/// shows as itself, not as the whole list cut short), anything else as a whole.
fn changed_paths(
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    out: &mut Vec<(String, Option<Value>, Option<Value>)>,
) {
    if old == new {
        return;
    }
    let members = |v: Option<&Value>| match v {
        Some(Value::Object(map)) => Some(Some(map.clone())),
        None => Some(None),
        Some(_) => None,
    };
    if let (Some(old), Some(new)) = (members(old), members(new)) {
        let keys: BTreeSet<&String> = old.iter().chain(new.iter()).flat_map(|m| m.keys()).collect();
        for key in keys {
            let inner = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            changed_paths(
                &inner,
                old.as_ref().and_then(|m| m.get(key)),
                new.as_ref().and_then(|m| m.get(key)),
                out,
            );
        }
        return;
    }
    let path = if path.is_empty() { "spec" } else { path };
    if let (Some(Value::Array(old)), Some(Value::Array(new))) = (old, new) {
        let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let room = old.len().min(new.len()) - prefix;
        let suffix = old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take(room)
            .take_while(|(a, b)| a == b)
            .count();
        let (removed, added) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
        if removed.len() == added.len() {
            for (i, (a, b)) in removed.iter().zip(added).enumerate() {
                changed_paths(&format!("{path}[{}]", prefix + i), Some(a), Some(b), out);
            }
        } else {
            let end = prefix + removed.len().max(added.len());
            out.push((
                format!("{path}[{prefix}..{end}]"),
                Some(Value::Array(removed.to_vec())),
                Some(Value::Array(added.to_vec())),
            ));
        }
        return;
    }
    out.push((path.to_owned(), old.cloned(), new.cloned()));
}

/// A value as the change summary shows it: strings bare, anything else as compact JSON,
/// `(none)` when absent, at most [`VALUE_MAX`] characters.
fn shown(value: Option<&Value>) -> String {
    let text = match value {
        None => "(none)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    shortened(&text, VALUE_MAX)
}

/// `text` cut to at most `max` characters, a cut one ending with `...`.
fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(3)).collect();
    cut.push_str("...");
    cut
}

/// What following a rollback sees of the job each time it changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// `status.revision.rollback`.
    pub rollback: Option<RollbackStatus>,
    /// The conditions' reason (the phase, e.g. `RollingBack`) and message.
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// How a followed rollback ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    RolledBack,
    /// Refused or Failed, with the operator's reason.
    Ended {
        phase: RollbackPhase,
        message: String,
    },
}

/// What one observation gives: a line to print (when what is shown changed) and the
/// outcome once the rollback asked for has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub line: Option<String>,
    pub outcome: Option<Outcome>,
}

/// The state of following a rollback to revision `to`, asked for when the last rollback's
/// timestamp was `before`.
#[derive(Debug, Clone)]
pub struct Follower {
    before: Option<i64>,
    to: i64,
    shown: Option<(Option<RollbackPhase>, Option<String>, Option<String>)>,
}

impl Follower {
    pub fn new(before: Option<i64>, to: i64) -> Self {
        Follower {
            before,
            to,
            shown: None,
        }
    }

    /// The rollback status when it is the operator's answer to this request: decided after
    /// it (another timestamp than before) and for revision `to`.
    fn answer<'a>(&self, rollback: Option<&'a RollbackStatus>) -> Option<&'a RollbackStatus> {
        rollback.filter(|r| r.timestamp.is_some() && r.timestamp != self.before && r.to == Some(self.to))
    }

    /// Takes in what the job shows `elapsed` after the request.
    pub fn observe(&mut self, seen: &Observed, elapsed: Duration) -> Progress {
        let answer = self.answer(seen.rollback.as_ref());
        let phase = answer.and_then(|r| r.phase);
        let key = (phase, seen.reason.clone(), seen.message.clone());
        let line = (self.shown.as_ref() != Some(&key)).then(|| {
            let label = phase.map_or("Requested", RollbackPhase::as_str);
            let label = match seen.reason.as_deref() {
                Some(reason) if reason != label => format!("{label} ({reason})"),
                _ => label.to_owned(),
            };
            // A refusal or failure is explained in the rollback's message; the conditions
            // may still describe the job as it runs.
            let rollback_message = answer.and_then(|r| r.message.clone());
            let message = match phase {
                Some(RollbackPhase::Refused | RollbackPhase::Failed) => {
                    rollback_message.or_else(|| seen.message.clone())
                }
                _ => seen.message.clone().or(rollback_message),
            };
            let offset = format!("+{}s", elapsed.as_secs());
            match message.filter(|m| !m.is_empty()) {
                Some(message) => format!("{offset:>6} {label}: {message}"),
                None => format!("{offset:>6} {label}"),
            }
        });
        self.shown = Some(key);
        let outcome = match phase {
            Some(RollbackPhase::RolledBack) => Some(Outcome::RolledBack),
            Some(phase @ (RollbackPhase::Refused | RollbackPhase::Failed)) => Some(Outcome::Ended {
                phase,
                message: answer
                    .and_then(|r| r.message.clone())
                    .unwrap_or_else(|| "no reason given".to_owned()),
            }),
            Some(RollbackPhase::RollingBack) | None => None,
        };
        Progress { line, outcome }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_says_the_parallelism_the_job_runs_with() {
        use serde_json::json;
        for (spec, line) in [
            (
                json!({"job": {"parallelism": 3}}),
                Some("Running with parallelism 3."),
            ),
            (
                json!({"job": {"parallelism": 2}, "taskManager": {"replicas": 2},
                       "flinkConfiguration": {"pipeline.jobvertex-parallelism-overrides": "a:4"}}),
                Some("Running with parallelism 2, taskManager.replicas 2, vertex overrides a:4."),
            ),
            (
                json!({"job": {"parallelism": 2},
                       "flinkConfiguration": {"kubernetes.operator.autoscaler.parallelism-overrides": "b:4"}}),
                Some("Running with parallelism 2, the autoscaler's vertex overrides b:4."),
            ),
            (json!({"job": {}}), None),
        ] {
            assert_eq!(parallelism_line(&spec).as_deref(), line, "{spec}");
        }
    }

    #[test]
    fn the_timeout_reads_as_flink_durations_do_and_is_shown_in_the_same_form() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("15m", Some(Duration::from_secs(900))),
            ("15 min", Some(Duration::from_secs(900))),
            ("90s", Some(Duration::from_secs(90))),
            ("500ms", Some(Duration::from_millis(500))),
            ("", None),
            ("m", None),
            ("5x", None),
        ];
        for (text, expected) in cases {
            let parsed = flink_operator_api::options::parse_duration(text).ok();
            assert_eq!(&parsed, expected, "{text}");
            if let Some(parsed) = parsed {
                let shown = shown_duration(parsed);
                assert_eq!(
                    flink_operator_api::options::parse_duration(&shown).ok(),
                    Some(parsed),
                    "{text} shown as {shown}"
                );
            }
        }
    }

    #[test]
    fn the_default_target_is_the_highest_kept_below_the_current() {
        let cases: &[(&[i64], Option<i64>, Option<i64>)] = &[
            (&[1, 2, 3], Some(3), Some(2)),
            (&[1, 2, 3], None, Some(2)),
            (&[2, 5, 7], Some(7), Some(5)),
            // A pruned history keeps gaps; the current one need not be the newest.
            (&[1, 4, 6], Some(4), Some(1)),
            (&[3], Some(3), None),
            (&[], None, None),
            (&[], Some(2), None),
        ];
        for (kept, current, expected) in cases {
            assert_eq!(
                previous_revision(kept, *current),
                *expected,
                "{kept:?} {current:?}"
            );
        }
    }

    #[test]
    fn changes_are_summarised_by_path() {
        let cases: &[(Option<Value>, Value, &str)] = &[
            (None, json!({"image": "flink:1.20"}), "initial"),
            (
                Some(json!({"image": "flink:1.20", "job": {"args": ["--a"], "parallelism": 2}})),
                json!({"image": "flink:2.0", "job": {"args": ["--b"], "parallelism": 2}}),
                "image: flink:1.20 -> flink:2.0; job.args[0]: --a -> --b",
            ),
            (
                Some(json!({"job": {"parallelism": 2}})),
                json!({"job": {"parallelism": 4, "entryClass": "Main"}}),
                "job.entryClass: (none) -> Main; job.parallelism: 2 -> 4",
            ),
            (
                Some(json!({"flinkConfiguration": {"a": "1"}})),
                json!({}),
                "flinkConfiguration.a: 1 -> (none)",
            ),
            (
                Some(json!({"job": {"args": ["--a"]}})),
                json!({"job": {"args": {"x": 1}}}),
                r#"job.args: ["--a"] -> {"x":1}"#,
            ),
            // Arguments added at the end, or removed from the middle, show as themselves.
            (
                Some(json!({"job": {"args": ["--rate", "20", "--out", "/opt/flink/state/counts"]}})),
                json!({"job": {"args": ["--rate", "20", "--out", "/opt/flink/state/counts", "--fail-at", "9"]}}),
                r#"job.args[4..6]: [] -> ["--fail-at","9"]"#,
            ),
            (
                Some(json!({"job": {"args": ["--rate", "20", "--keys", "4", "--out", "o"]}})),
                json!({"job": {"args": ["--rate", "20", "--out", "o"]}}),
                r#"job.args[2..4]: ["--keys","4"] -> []"#,
            ),
            (Some(json!({"image": "x"})), json!({"image": "x"}), "no change"),
            (
                Some(json!({"image": "short"})),
                json!({"image": "a-very-long-image-name-from-a-registry/with/a/path:and-a-tag"}),
                "image: short -> a-very-long-image-name-from-a-registr...",
            ),
        ];
        for (previous, current, expected) in cases {
            assert_eq!(change_summary(previous.as_ref(), current), *expected);
        }
    }

    #[test]
    fn a_long_summary_says_how_many_changes_it_leaves_out() {
        let old = json!({"a": "0", "b": "0", "c": "0", "d": "0", "e": "0", "f": "0"});
        let long = "x".repeat(60);
        let new = json!({"a": long, "b": long, "c": long, "d": long, "e": long, "f": long});
        let summary = change_summary(Some(&old), &new);
        assert!(summary.chars().count() <= CHANGE_MAX, "{summary}");
        assert!(summary.starts_with("a: 0 -> xxx"), "{summary}");
        assert!(summary.ends_with(" more"), "{summary}");
    }

    fn revision(number: i64, spec: Value, started_from: Option<&str>) -> Revision {
        Revision {
            number,
            name: format!("job-{number}"),
            spec,
            started_from: started_from.map(str::to_owned),
            started_from_ms: None,
            applied_ms: 1_700_000_000_000 + number * 1_000,
        }
    }

    #[test]
    fn rows_mark_the_current_and_the_stable_revision() {
        let kept = [
            revision(2, json!({"image": "flink:1.19"}), None),
            revision(3, json!({"image": "flink:1.20"}), Some("s3://sp/savepoint-1")),
            revision(4, json!({"image": "flink:2.0"}), Some("s3://sp/savepoint-2")),
        ];
        let cases: &[(Option<i64>, Option<i64>, [&str; 3])] = &[
            (Some(4), Some(3), ["-", "stable", "current"]),
            (Some(4), Some(4), ["-", "-", "current,stable"]),
            (None, None, ["-", "-", "-"]),
        ];
        for (current, stable, marks) in cases {
            let rows = history_rows(&kept, *current, *stable);
            let shown: Vec<&str> = rows.iter().map(|r| r.mark.as_str()).collect();
            assert_eq!(shown, marks, "{current:?} {stable:?}");
        }
        let rows = history_rows(&kept, Some(4), Some(3));
        assert_eq!(rows[0].applied, "2023-11-14T22:13:22Z");
        assert_eq!(rows[0].started_from, "-");
        assert_eq!(rows[0].change, "initial");
        assert_eq!(rows[2].started_from, "s3://sp/savepoint-2");
        assert_eq!(rows[2].change, "image: flink:1.20 -> flink:2.0");
    }

    #[test]
    fn the_table_aligns_its_columns() {
        let rows = [
            HistoryRow {
                revision: 9,
                applied: "2023-11-14T22:13:29Z".to_owned(),
                started_from: "-".to_owned(),
                mark: "stable".to_owned(),
                change: "initial".to_owned(),
            },
            HistoryRow {
                revision: 10,
                applied: "2023-11-14T22:13:30Z".to_owned(),
                started_from: "s3://sp/1".to_owned(),
                mark: "current".to_owned(),
                change: "image: a -> b".to_owned(),
            },
        ];
        let expected = "\
REVISION   APPLIED                STARTED FROM   MARK      CHANGE
9          2023-11-14T22:13:29Z   -              stable    initial
10         2023-11-14T22:13:30Z   s3://sp/1      current   image: a -> b
";
        assert_eq!(render_table(&rows), expected);
    }

    #[test]
    fn the_patch_asks_for_the_revision_and_clears_a_stale_restore() {
        assert_eq!(
            rollback_patch(2, false),
            json!({"metadata": {"annotations": {
                "flink.apache.org/rollback-to-revision": "2",
                "flink.apache.org/rollback-restore": null,
            }}})
        );
        assert_eq!(
            rollback_patch(5, true)["metadata"]["annotations"]["flink.apache.org/rollback-restore"],
            json!("revision")
        );
    }

    fn rollback(timestamp: i64, to: i64, phase: RollbackPhase, message: &str) -> RollbackStatus {
        RollbackStatus {
            from: Some(3),
            to: Some(to),
            phase: Some(phase),
            message: Some(message.to_owned()),
            timestamp: Some(timestamp),
            ..RollbackStatus::default()
        }
    }

    fn seen(rollback: Option<RollbackStatus>, reason: &str, message: &str) -> Observed {
        Observed {
            rollback,
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
        }
    }

    #[test]
    fn following_prints_each_change_and_stops_at_the_end() {
        use RollbackPhase::*;
        let old = rollback(100, 2, Failed, "an earlier attempt");
        // (what is seen, seconds since the request, line printed, outcome)
        let steps: Vec<(Observed, u64, Option<&str>, Option<Outcome>)> = vec![
            (
                seen(Some(old.clone()), "Running", "the job is running"),
                0,
                Some("   +0s Requested (Running): the job is running"),
                None,
            ),
            // The same again: nothing new to print.
            (
                seen(Some(old.clone()), "Running", "the job is running"),
                1,
                None,
                None,
            ),
            (
                seen(
                    Some(rollback(200, 2, RollingBack, "rolling back")),
                    "RollingBack",
                    "rolling back from revision 3 to revision 2, taking a savepoint",
                ),
                3,
                Some("   +3s RollingBack: rolling back from revision 3 to revision 2, taking a savepoint"),
                None,
            ),
            (
                seen(
                    Some(rollback(200, 2, RolledBack, "rolled back")),
                    "Running",
                    "the job is running",
                ),
                75,
                Some("  +75s RolledBack (Running): the job is running"),
                Some(Outcome::RolledBack),
            ),
        ];
        let mut follower = Follower::new(Some(100), 2);
        for (i, (observed, secs, line, outcome)) in steps.into_iter().enumerate() {
            let progress = follower.observe(&observed, Duration::from_secs(secs));
            assert_eq!(progress.line.as_deref(), line, "step {i}");
            assert_eq!(progress.outcome, outcome, "step {i}");
        }
    }

    #[test]
    fn only_an_answer_to_this_request_ends_the_following() {
        use RollbackPhase::*;
        let cases: &[(Option<i64>, Option<RollbackStatus>, Option<Outcome>)] = &[
            // The earlier rollback, still shown: not an answer.
            (Some(100), Some(rollback(100, 2, RolledBack, "")), None),
            // A newer rollback to another revision (someone else's request): not ours.
            (Some(100), Some(rollback(200, 4, RolledBack, "")), None),
            (None, None, None),
            (None, Some(rollback(200, 2, RollingBack, "")), None),
            (
                None,
                Some(rollback(200, 2, RolledBack, "")),
                Some(Outcome::RolledBack),
            ),
            (
                Some(100),
                Some(rollback(200, 2, Refused, "Revision 2 is the current revision")),
                Some(Outcome::Ended {
                    phase: Refused,
                    message: "Revision 2 is the current revision".to_owned(),
                }),
            ),
            (
                None,
                Some(rollback(200, 2, Failed, "the upgrade failed")),
                Some(Outcome::Ended {
                    phase: Failed,
                    message: "the upgrade failed".to_owned(),
                }),
            ),
        ];
        for (before, status, expected) in cases {
            let mut follower = Follower::new(*before, 2);
            let progress = follower.observe(&seen(status.clone(), "Running", "m"), Duration::ZERO);
            assert_eq!(&progress.outcome, expected, "{before:?} {status:?}");
        }
    }

    #[test]
    fn a_refusal_shows_the_operators_reason() {
        let mut follower = Follower::new(None, 2);
        let status = rollback(200, 2, RollbackPhase::Refused, "revision 2 is no longer kept");
        let progress = follower.observe(
            &seen(Some(status), "Running", "the job is running"),
            Duration::from_secs(1),
        );
        assert_eq!(
            progress.line.as_deref(),
            Some("   +1s Refused (Running): revision 2 is no longer kept")
        );
    }

    #[test]
    fn the_job_view_reads_the_shared_status() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkSessionJob",
            "metadata": {"name": "j", "annotations": {"flink.apache.org/revision": "7"}},
            "status": {
                "reconciliationStatus": {
                    "lastStableSpec": "{\"spec\":{\"job\":{\"jarURI\":\"a.jar\"}},\"resource_metadata\":{}}"
                },
                "conditions": [
                    {"type": "Progressing", "reason": "Running", "message": "p"},
                    {"type": "Ready", "reason": "Running", "message": "r"}
                ]
            }
        }))
        .expect("an object");
        let view = JobView::of(&object);
        assert_eq!(view.current, Some(7));
        assert_eq!(view.stable_spec, Some(json!({"job": {"jarURI": "a.jar"}})));
        let observed = view.observed();
        assert_eq!(observed.message.as_deref(), Some("r"));
        assert_eq!(observed.rollback, None);
    }
}
