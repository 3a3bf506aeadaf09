//! `kubectl flink ...`: the kubectl plugin. The same binary answers as the plugin when it is
//! run under the name `kubectl-flink` (a link to it on the `PATH`, where kubectl finds its
//! plugins): `status` with the last Events, `history` and `rollback` (as `flink-operator
//! history` and `rollback`), `suspend`, `resume`, `savepoint`, and `completion` scripts.
//!
//! The cluster and namespace are found as kubectl finds them (`--kubeconfig`, `--context`,
//! `-n`). Exit codes: 0 done, 1 a call failed, 2 the command line is wrong, 3 the resource is
//! not there, 4 the operator refused or failed what was asked (a rollback).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use flink_operator_api::JobKind;
use k8s_openapi::api::core::v1::Event;
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
    core::DynamicObject,
};
use serde_json::{Value, json};

use crate::{
    job_ref::{self, JobRef},
    revision_cli::{self, RevisionCliError},
};

/// The name kubectl runs the plugin by.
pub const PLUGIN_NAME: &str = "kubectl-flink";

/// Exit codes of the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Done = 0,
    CallFailed = 1,
    Usage = 2,
    NotFound = 3,
    Refused = 4,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// Manage Flink jobs (FlinkDeployments and FlinkSessionJobs) run by the Flink operator.
#[derive(Debug, Parser)]
#[command(name = "kubectl-flink", bin_name = "kubectl flink", version)]
pub struct PluginCli {
    #[command(subcommand)]
    pub command: PluginCommand,
    #[command(flatten)]
    pub global: Global,
}

/// Where, and how to print.
#[derive(Debug, Args)]
pub struct Global {
    /// Namespace of the job; else the kubeconfig context's.
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Kubeconfig context; else the current one.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Kubeconfig file; else $KUBECONFIG, ~/.kube/config or the in-cluster service account.
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Output format of `status`.
    #[arg(short = 'o', long, global = true, value_enum, default_value = "text")]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Where the job stands: lifecycle, job state and id, the reason of its conditions, the
    /// revision, any error, and its last Events.
    Status {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
        /// How many of its latest Events to show.
        #[arg(long, default_value_t = 10)]
        events: usize,
    },
    /// The job's revisions, oldest first, and the autoscaler's decisions.
    History {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
    },
    /// Roll the job back to a kept revision and follow it (exit 4 if refused or failed).
    Rollback {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
        /// The revision; else the highest kept one below the current one.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
        to_revision: Option<i64>,
        /// Restore the state the revision was started from.
        #[arg(long)]
        restore_revision_state: bool,
        /// How long to follow it (a Flink duration).
        #[arg(long, default_value = "15 min", value_parser = flink_operator_api::options::parse_duration)]
        timeout: Duration,
    },
    /// Suspend the job (`spec.job.state: suspended`), as its upgrade mode says.
    Suspend {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
    },
    /// Run a suspended job again (`spec.job.state: running`).
    Resume {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
    },
    /// Take a savepoint of the running job (a new `spec.job.savepointTriggerNonce`).
    Savepoint {
        #[arg(value_name = "KIND/NAME", value_parser = job_ref::parse_job_ref)]
        job: JobRef,
    },
    /// Print a completion script for `kubectl-flink` (bash, zsh, fish, elvish, powershell).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Whether the process was started under the name `name` (`argv0`: its first argument), as
/// kubectl starts the plugin ([`PLUGIN_NAME`]) and its completion.
pub fn invoked_as(argv0: Option<&str>, name: &str) -> bool {
    argv0
        .and_then(|arg| Path::new(arg).file_name())
        .is_some_and(|file| file == name)
}

/// Runs the plugin with the process's arguments.
pub fn main() -> ExitCode {
    let cli = match PluginCli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let usage = error.use_stderr();
            let _ = error.print();
            return if usage { Exit::Usage } else { Exit::Done }.into();
        }
    };
    let exit = run(cli);
    exit.into()
}

fn run(cli: PluginCli) -> Exit {
    let global = cli.global;
    let cluster = crate::cli::ClusterArgs {
        namespace: global.namespace.clone(),
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
    };
    let result = match cli.command {
        PluginCommand::Completion { shell } => {
            // For the plugin's own name: kubectl completes a plugin's arguments only through
            // a `kubectl_complete-flink` executable, which this is not.
            let mut command = PluginCli::command().bin_name(PLUGIN_NAME);
            clap_complete::generate(shell, &mut command, PLUGIN_NAME, &mut std::io::stdout());
            Ok(())
        }
        PluginCommand::History { job } => revision_cli::history(crate::cli::HistoryArgs { job, cluster }),
        PluginCommand::Rollback {
            job,
            to_revision,
            restore_revision_state,
            timeout,
        } => revision_cli::rollback(crate::cli::RollbackArgs {
            job,
            to_revision,
            restore_revision_state,
            timeout,
            cluster,
        }),
        PluginCommand::Status { job, events } => {
            revision_cli::block_on(async move { status(&cluster, &job, events, global.output).await })
        }
        PluginCommand::Suspend { job } => {
            revision_cli::block_on(async move { set_state(&cluster, &job, "suspended").await })
        }
        PluginCommand::Resume { job } => {
            revision_cli::block_on(async move { set_state(&cluster, &job, "running").await })
        }
        PluginCommand::Savepoint { job } => {
            revision_cli::block_on(async move { savepoint(&cluster, &job).await })
        }
    };
    match result {
        Ok(()) => Exit::Done,
        Err(error) => {
            eprintln!("error: {}", revision_cli::printable(&crate::chain(&error)));
            exit_of(&error)
        }
    }
}

/// The exit code of `error`.
pub fn exit_of(error: &RevisionCliError) -> Exit {
    match error {
        RevisionCliError::NotFound(_) => Exit::NotFound,
        RevisionCliError::Ended { .. }
        | RevisionCliError::NoPrevious { .. }
        | RevisionCliError::NotKept { .. } => Exit::Refused,
        _ => Exit::CallFailed,
    }
}

/// Reads the job, or says it is not there.
async fn job_of(
    cluster: &crate::cli::ClusterArgs,
    job: &JobRef,
) -> Result<(Client, String, DynamicObject), RevisionCliError> {
    let (client, namespace) = revision_cli::connect(cluster).await?;
    let object = revision_cli::read_job(&client, &namespace, job).await?;
    Ok((client, namespace, object))
}

async fn status(
    cluster: &crate::cli::ClusterArgs,
    job: &JobRef,
    last: usize,
    output: Output,
) -> Result<(), RevisionCliError> {
    let (client, namespace, object) = job_of(cluster, job).await?;
    let events = last_events(&client, &namespace, job, &object, last).await?;
    let status = object.data.get("status").cloned().unwrap_or(Value::Null);
    let shown = json!({
        "kind": job.kind.as_str(),
        "namespace": namespace,
        "name": job.name,
        "status": status,
        "events": events.iter().map(|e| json!({
            "type": e.type_, "reason": e.reason, "message": e.message,
            "count": e.count, "lastTimestamp": e.last_timestamp,
        })).collect::<Vec<_>>(),
    });
    let text = match output {
        Output::Json => {
            revision_cli::printable_json(&serde_json::to_string_pretty(&shown).unwrap_or_default()) + "\n"
        }
        Output::Yaml => serde_yaml::to_string(&shown).unwrap_or_default(),
        Output::Text => status_text(&shown),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}

/// The status as lines: what `kubectl flink status` prints.
pub fn status_text(shown: &Value) -> String {
    let s = &shown["status"];
    // Every piece is the tenant's or the JobManager's text: escaped for the terminal.
    let text = |v: &Value| {
        v.as_str()
            .map(|t| revision_cli::printable(t).into_owned())
            .unwrap_or_else(|| "-".to_owned())
    };
    let ready = s["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut lines = vec![
        format!(
            "{} {}/{}",
            text(&shown["kind"]),
            text(&shown["namespace"]),
            text(&shown["name"])
        ),
        format!("  Lifecycle:  {}", text(&s["lifecycleState"])),
        format!(
            "  Job:        {} ({})",
            text(&s["jobStatus"]["state"]),
            text(&s["jobStatus"]["jobId"])
        ),
        format!(
            "  Ready:      {} {}",
            text(&ready["status"]),
            revision_cli::printable(ready["reason"].as_str().unwrap_or_default())
        ),
    ];
    if let Some(message) = ready["message"].as_str().filter(|m| !m.is_empty()) {
        lines.push(format!("              {}", revision_cli::printable(message)));
    }
    if let Some(current) = s["revision"]["current"].as_i64() {
        lines.push(format!("  Revision:   {current}"));
    }
    if let Some(error) = s["error"].as_str().filter(|e| !e.is_empty()) {
        lines.push(format!("  Error:      {}", revision_cli::printable(error)));
    }
    let events = shown["events"].as_array().cloned().unwrap_or_default();
    if events.is_empty() {
        lines.push("  Events:     none".to_owned());
    } else {
        lines.push("  Events (newest last):".to_owned());
        for e in events {
            lines.push(format!(
                "    {} {} {}: {}",
                text(&e["lastTimestamp"]),
                text(&e["type"]),
                text(&e["reason"]),
                text(&e["message"])
            ));
        }
    }
    lines.join("\n") + "\n"
}

/// The `last` newest Events about the job, oldest first.
async fn last_events(
    client: &Client,
    namespace: &str,
    job: &JobRef,
    object: &DynamicObject,
    last: usize,
) -> Result<Vec<Event>, RevisionCliError> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut selector = format!(
        "involvedObject.kind={},involvedObject.name={}",
        job.kind.as_str(),
        job.name
    );
    if let Some(uid) = &object.metadata.uid {
        selector.push_str(&format!(",involvedObject.uid={uid}"));
    }
    let mut events = api
        .list(&ListParams::default().fields(&selector))
        .await
        .map_err(|source| RevisionCliError::Api {
            what: format!(
                "listing the Events of {} {namespace}/{}",
                job.kind.as_str(),
                job.name
            ),
            source,
        })?
        .items;
    let when = |e: &Event| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or_else(|| e.event_time.as_ref().map(|t| t.0))
            .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
    };
    events.sort_by_key(when);
    let skip = events.len().saturating_sub(last);
    Ok(events.into_iter().skip(skip).collect())
}

/// Sets `spec.job.state`.
async fn set_state(
    cluster: &crate::cli::ClusterArgs,
    job: &JobRef,
    state: &str,
) -> Result<(), RevisionCliError> {
    let (client, namespace, object) = job_of(cluster, job).await?;
    let now = object.data["spec"]["job"]["state"].as_str().unwrap_or("running");
    let described = format!("{} {namespace}/{}", job.kind.as_str(), job.name);
    if object.data["spec"]["job"].is_null() {
        return Err(RevisionCliError::NoJob(described));
    }
    if now.eq_ignore_ascii_case(state) {
        println!("{described} is {state} already.");
        return Ok(());
    }
    patch_spec(
        &client,
        &namespace,
        job,
        json!({"spec": {"job": {"state": state}}}),
    )
    .await?;
    println!(
        "{described}: spec.job.state is {state}; `kubectl flink status {}/{} -n {namespace}` follows it.",
        kind_name(job.kind),
        job.name
    );
    Ok(())
}

/// Sets a new `spec.job.savepointTriggerNonce`.
async fn savepoint(cluster: &crate::cli::ClusterArgs, job: &JobRef) -> Result<(), RevisionCliError> {
    let (client, namespace, object) = job_of(cluster, job).await?;
    let described = format!("{} {namespace}/{}", job.kind.as_str(), job.name);
    if object.data["spec"]["job"].is_null() {
        return Err(RevisionCliError::NoJob(described));
    }
    let nonce = object.data["spec"]["job"]["savepointTriggerNonce"]
        .as_i64()
        .unwrap_or(0)
        + 1;
    patch_spec(
        &client,
        &namespace,
        job,
        json!({"spec": {"job": {"savepointTriggerNonce": nonce}}}),
    )
    .await?;
    println!(
        "{described}: savepointTriggerNonce {nonce}; the savepoint's path will be in status.jobStatus.savepointInfo."
    );
    Ok(())
}

async fn patch_spec(
    client: &Client,
    namespace: &str,
    job: &JobRef,
    patch: Value,
) -> Result<(), RevisionCliError> {
    revision_cli::job_api(client, namespace, job.kind)
        .patch(&job.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|source| RevisionCliError::Api {
            what: format!("updating {} {namespace}/{}", job.kind.as_str(), job.name),
            source,
        })
}

fn kind_name(kind: JobKind) -> String {
    kind.as_str().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_known_by_its_name_and_parses_kubectls_flags() {
        assert!(invoked_as(Some("/usr/local/bin/kubectl-flink"), PLUGIN_NAME));
        assert!(invoked_as(Some("kubectl-flink"), PLUGIN_NAME));
        assert!(!invoked_as(Some("/usr/bin/flink-operator"), PLUGIN_NAME));
        assert!(!invoked_as(None, PLUGIN_NAME));
        let cli = PluginCli::try_parse_from([
            "kubectl-flink",
            "status",
            "flinkdep/basic",
            "-n",
            "jobs",
            "--context",
            "prod",
            "-o",
            "yaml",
        ])
        .unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("jobs"));
        assert_eq!(cli.global.context.as_deref(), Some("prod"));
        assert_eq!(cli.global.output, Output::Yaml);
        assert!(PluginCli::try_parse_from(["kubectl-flink", "status", "basic"]).is_err());
        PluginCli::command().debug_assert();
    }

    #[test]
    fn errors_have_exit_codes_of_their_own() {
        assert_eq!(exit_of(&RevisionCliError::NotFound("x".into())), Exit::NotFound);
        assert_eq!(exit_of(&RevisionCliError::NoJob("x".into())), Exit::CallFailed);
        assert_eq!(Exit::Refused as u8, 4);
    }

    #[test]
    fn tenant_and_job_manager_text_is_printed_with_its_control_characters_escaped() {
        // A JobManager's failure message that would recolour the terminal, clear the line
        // and print a fake "Ready" over it.
        let hostile = "boom\u{1b}[2K\u{1b}[32mall good\r  Ready:      True\u{9b}31m\u{7f}\u{202e}";
        let escaped = revision_cli::printable(hostile);
        assert_eq!(
            escaped,
            "boom\\x1b[2K\\x1b[32mall good\\r  Ready:      True\\u{9b}31m\\x7f\\u{202e}"
        );
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
        // Plain text is left as it is, and not copied.
        assert!(matches!(
            revision_cli::printable("the job runs: 100%"),
            std::borrow::Cow::Borrowed("the job runs: 100%")
        ));
        assert_eq!(revision_cli::printable("a\nb\tc"), "a\\nb\\tc");

        let shown = json!({
            "kind": "FlinkDeployment", "namespace": "jobs", "name": "basic",
            "status": {
                "jobStatus": {"state": "FAILED\u{1b}[0m", "jobId": "abc"},
                "conditions": [{"type": "Ready", "status": "False", "reason": "Failed\r", "message": hostile}],
                "error": hostile,
            },
            "events": [{"type": "Warning", "reason": "Failed", "message": hostile, "lastTimestamp": "t"}]
        });
        let text = status_text(&shown);
        assert!(text.chars().all(|c| c == '\n' || !c.is_control()), "{text:?}");
        assert!(text.contains("  Job:        FAILED\\x1b[0m (abc)\n"), "{text}");
        assert!(text.contains("  Error:      boom\\x1b[2K"), "{text}");
        // JSON keeps the value, with DEL and C1 escaped too (serde_json leaves them raw).
        let json = revision_cli::printable_json(&serde_json::to_string_pretty(&shown).unwrap());
        assert!(!json.chars().any(|c| c != '\n' && c.is_control()), "{json}");
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), shown);
        // YAML's emitter escapes every control character itself.
        let yaml = serde_yaml::to_string(&shown).unwrap();
        assert!(!yaml.chars().any(|c| c != '\n' && c.is_control()), "{yaml}");
    }

    #[test]
    fn the_status_reads_as_lines() {
        let shown = json!({
            "kind": "FlinkDeployment", "namespace": "jobs", "name": "basic",
            "status": {
                "lifecycleState": "STABLE",
                "jobStatus": {"state": "RUNNING", "jobId": "abc"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "Running", "message": "the job runs"}],
                "revision": {"current": 3}
            },
            "events": [{"type": "Normal", "reason": "JobStatusChanged", "message": "RUNNING", "lastTimestamp": "2026-12-06T09:00:00Z"}]
        });
        let text = status_text(&shown);
        assert!(text.starts_with("FlinkDeployment jobs/basic\n"), "{text}");
        assert!(text.contains("  Lifecycle:  STABLE\n"), "{text}");
        assert!(text.contains("  Job:        RUNNING (abc)\n"), "{text}");
        assert!(
            text.contains("  Ready:      True Running\n              the job runs\n"),
            "{text}"
        );
        assert!(text.contains("  Revision:   3\n"), "{text}");
        assert!(
            text.contains("    2026-12-06T09:00:00Z Normal JobStatusChanged: RUNNING\n"),
            "{text}"
        );
    }
}
