//! `flink-operator`: a Kubernetes operator for Apache Flink.

mod cli;
mod config;
mod config_reload;
mod docs;
mod fenced_client;
mod flink_logging;
mod https;
mod job_ref;
mod kube_config;
mod kubectl_complete;
mod kubectl_flink;
mod leader;
mod loop_ended;
mod managed_certs;
mod observed_client;
mod probes;
mod process_metrics;
mod revision_cli;
mod run;
mod telemetry;
mod webhook_endpoints;
mod webhook_registration;

use std::{io::Write, process::ExitCode};

use clap::Parser;

use crate::cli::{CertsCommand, Cli, Command, CrdArgs};

// The system allocator, not mimalloc: mimalloc (v3) held about 11 MiB of committed arena
// memory in an idle operator (eagerly committed arenas, delayed purging), three quarters of
// its anonymous memory, and its options can only be set from the environment or through
// unsafe calls. With two worker threads glibc keeps few arenas. mimalloc served the
// webhook's many small allocations faster (+28% admission throughput under load), far
// beyond what the API server asks of it.

fn main() -> ExitCode {
    // kube's client and our server both build rustls configs; with one provider installed
    // up front neither can pick a different one by accident.
    if rustls::crypto::ring::default_provider()
        .install_default()
        .is_err()
    {
        eprintln!("error: a rustls crypto provider was already installed");
        return ExitCode::FAILURE;
    }
    let argv0 = std::env::args().next();
    if kubectl_flink::invoked_as(argv0.as_deref(), kubectl_flink::PLUGIN_NAME) {
        return kubectl_flink::main();
    }
    if kubectl_flink::invoked_as(argv0.as_deref(), kubectl_complete::COMPLETION_NAME) {
        return kubectl_complete::main();
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => {
            telemetry::init(args.log_format);
            run_async(*args)
        }
        Command::Crd(args) => crd(args),
        Command::Docs(args) => docs::write(&args.out),
        // Their errors carry the job's status messages: escaped for the terminal.
        Command::History(args) => {
            revision_cli::history(args).map_err(|e| revision_cli::printable(&chain(&e)).into_owned())
        }
        Command::Rollback(args) => {
            revision_cli::rollback(args).map_err(|e| revision_cli::printable(&chain(&e)).into_owned())
        }
        Command::Certs(CertsCommand::Generate(args)) => {
            flink_operator_certs::generate_self_signed(&args.dns, &args.ip)
                .and_then(|generated| generated.write_to_dir(&args.out))
                .map(|()| eprintln!("wrote ca.crt, tls.crt and tls.key to {}", args.out.display()))
                .map_err(|e| chain(&e))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!(error = %message, "flink-operator failed");
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_async(args: cli::RunArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(run::run(args)).map_err(|e| chain(&e))
}

/// An error with its causes, `outer: inner: innermost`, so a message like "reading
/// tls.crt" also says "No such file or directory".
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn crd(args: CrdArgs) -> Result<(), String> {
    if args.apply {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        return runtime.block_on(apply_crds(args.kubeconfig.as_deref()));
    }
    match args.split {
        None => std::io::stdout()
            .write_all(flink_operator_api::crd::crds_yaml().as_bytes())
            .map_err(|e| e.to_string()),
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for (name, contents) in flink_operator_api::crd::crd_files() {
                let path = dir.join(name);
                std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
            Ok(())
        }
    }
}

/// Server-side applies the four CRDs and waits until the API server serves them.
async fn apply_crds(kubeconfig: Option<&std::path::Path>) -> Result<(), String> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::{
        Api,
        api::{Patch, PatchParams},
        runtime::{conditions, wait::await_condition},
    };

    let client = run::kube_client(kubeconfig, None).await?;
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let params = PatchParams::apply("flink-operator").force();
    for crd in flink_operator_api::crd::all_crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|e| format!("applying CRD {name}: {e}"))?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(std::time::Duration::from_secs(30), established)
            .await
            .map_err(|_| format!("CRD {name} was not established within 30 s"))?
            .map_err(|e| format!("waiting for CRD {name}: {e}"))?;
        eprintln!("applied {name}");
    }
    Ok(())
}
