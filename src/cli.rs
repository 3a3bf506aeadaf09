//! Command line of the `flink-operator` binary.

use std::{net::IpAddr, path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A Kubernetes operator for Apache Flink: admission webhook and reconcile loops in one process.
#[derive(Debug, Parser)]
#[command(name = "flink-operator", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the operator: the HTTPS admission webhook, probes and metrics, and the controllers.
    Run(Box<RunArgs>),
    /// Print the CustomResourceDefinitions of the four kinds as YAML.
    Crd(CrdArgs),
    /// Certificate utilities.
    #[command(subcommand)]
    Certs(CertsCommand),
    /// List the revisions of a FlinkDeployment or FlinkSessionJob (each spec the operator
    /// applied), oldest first, with what changed and which are current and stable.
    History(HistoryArgs),
    /// Roll a FlinkDeployment or FlinkSessionJob back to a kept revision and follow the
    /// rollback until the operator has carried it out (exit 0) or refused or failed it.
    Rollback(RollbackArgs),
    /// Write the reference pages generated from the code (configuration keys, admission
    /// rules, metrics) into a directory.
    #[command(hide = true)]
    Docs(DocsArgs),
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable lines.
    Text,
    /// Text on a terminal, else JSON.
    Auto,
}

/// Which parts of the operator this process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Components {
    /// The webhook and the controllers.
    All,
    /// Only the admission webhook (and probes).
    Webhook,
    /// Only the controllers (and probes).
    Controllers,
}

impl Components {
    /// Whether the admission webhook is served.
    pub fn webhook(self) -> bool {
        matches!(self, Self::All | Self::Webhook)
    }

    /// Whether the controllers run.
    pub fn controllers(self) -> bool {
        matches!(self, Self::All | Self::Controllers)
    }
}

/// Arguments of `flink-operator run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// PEM certificate chain of the webhook's HTTPS server (reloaded when it changes).
    #[arg(
        long,
        env = "FLINK_OPERATOR_TLS_CERT_FILE",
        requires = "tls_key_file",
        conflicts_with = "self_signed_certs"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of the webhook's HTTPS server (reloaded when it changes).
    #[arg(long, env = "FLINK_OPERATOR_TLS_KEY_FILE", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Directory with ca.crt, tls.crt and tls.key; a self-signed set is generated there on
    /// first start (for development and tests).
    #[arg(long, env = "FLINK_OPERATOR_SELF_SIGNED_CERTS")]
    pub self_signed_certs: Option<PathBuf>,
    /// Keep the webhook's CA and serving certificate in a Secret (created on first start),
    /// and write the CA as caBundle into the webhook configurations (no cert-manager needed).
    #[arg(long, env = "FLINK_OPERATOR_MANAGE_WEBHOOK_CERTS", conflicts_with_all = ["tls_cert_file", "self_signed_certs"])]
    pub manage_webhook_certs: bool,
    /// Namespace the operator runs in (of the webhook Secret and Service, and the leader
    /// election Lease). Unset: the namespace of its in-cluster ServiceAccount, else `default`.
    /// Flink resources are refused in it (given, or found in the cluster) unless
    /// `kubernetes.operator.operator-namespace.flink-resources.enabled` is true.
    #[arg(long, env = "POD_NAMESPACE")]
    pub operator_namespace: Option<String>,
    /// Service in front of the webhook; the managed certificate is issued for its DNS names.
    #[arg(long, default_value = "flink-operator-webhook")]
    pub webhook_service_name: String,
    /// Before reconciling, wait (at most 60 s) until the webhook's Service
    /// (--webhook-service-name in --operator-namespace) has a ready endpoint: the API server
    /// sends the operator's own writes to Flink resources through the webhook. For an
    /// operator in the cluster behind that Service (the chart sets it).
    #[arg(long)]
    pub await_webhook_endpoints: bool,
    /// Secret holding the managed certificate (ca.crt, tls.crt, tls.key).
    #[arg(long, default_value = "flink-operator-webhook-certs")]
    pub webhook_secret_name: String,
    /// Name of the ValidatingWebhookConfiguration and the MutatingWebhookConfiguration
    /// whose caBundle the operator keeps.
    #[arg(long, default_value = "flink-operator")]
    pub webhook_configuration_name: String,
    /// With --manage-webhook-certs: register the webhook configurations at this base URL
    /// (e.g. https://127.0.0.1:9443) instead of expecting them from the Helm chart, for an
    /// operator running outside the cluster.
    #[arg(long, requires = "manage_webhook_certs")]
    pub webhook_url: Option<String>,
    /// Additional names of the managed serving certificate, DNS names or IP addresses
    /// (repeatable), e.g. when the API server reaches the webhook by URL rather than Service.
    #[arg(long = "webhook-cert-extra-san")]
    pub webhook_cert_extra_sans: Vec<String>,
    /// With --manage-webhook-certs: how long each serving certificate is valid, as a
    /// duration (e.g. 365d, 90d, 2 min; at least 30 s). Short lives are for trying renewal out.
    #[arg(long, default_value = "365d", value_parser = parse_validity)]
    pub webhook_cert_validity: Duration,
    /// With --manage-webhook-certs: the fraction of a serving certificate's validity after
    /// which the running operator renews it (a new CA joins the caBundle first, the new
    /// certificate is served once both webhook configurations trust it), between 0 and 1.
    #[arg(long, default_value_t = 0.667, value_parser = parse_fraction)]
    pub webhook_cert_renew_fraction: f64,
    /// Directory the managed certificate files are written to (must be writable).
    #[arg(long, default_value = "/tmp/flink-operator/webhook-certs")]
    pub webhook_cert_dir: PathBuf,
    /// DNS names of a generated serving certificate (with --self-signed-certs).
    #[arg(long = "self-signed-dns", default_values_t = vec!["localhost".to_owned()])]
    pub self_signed_dns: Vec<String>,
    /// IP addresses of a generated serving certificate (with --self-signed-certs).
    #[arg(long = "self-signed-ip", default_values_t = vec![IpAddr::from([127, 0, 0, 1])])]
    pub self_signed_ip: Vec<IpAddr>,
    /// Address the HTTPS webhook server binds to.
    #[arg(long, env = "FLINK_OPERATOR_BIND_ADDRESS", default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Port of the HTTPS admission webhook (POST /validate, POST /mutate).
    #[arg(long, env = "FLINK_OPERATOR_WEBHOOK_PORT", default_value_t = 9443)]
    pub webhook_port: u16,
    /// Most connections the webhook keeps open; when full, the oldest that has not sent a
    /// request yet is closed for a new one (a full server of busy ones refuses it).
    #[arg(long, env = "FLINK_OPERATOR_WEBHOOK_MAX_CONNECTIONS", default_value_t = crate::https::MAX_CONNECTIONS, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_connections: u32,
    /// Port of the plain-HTTP probes and metrics (/healthz, /readyz, /metrics).
    #[arg(long, env = "FLINK_OPERATOR_PROBE_PORT", default_value_t = 8080)]
    pub probe_port: u16,
    /// Log format on stderr: `json` (one object per line), `text`, or `auto` (text on a
    /// terminal, else JSON). The filter is `RUST_LOG`.
    #[arg(long, value_enum, env = "FLINK_OPERATOR_LOG_FORMAT", default_value = "auto")]
    pub log_format: LogFormat,
    /// Kubeconfig file; else the usual kubeconfig ($KUBECONFIG, ~/.kube/config), else the
    /// in-cluster service account.
    #[arg(long, env = "FLINK_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Where JobManager REST APIs are reached: `service` (the REST Service's in-cluster
    /// name, for an operator inside the cluster) or `endpoint-slice` (a ready address of the
    /// Service's EndpointSlices, for an operator outside it).
    #[arg(long, env = "FLINK_OPERATOR_FLINK_REST_ENDPOINT", default_value = "service")]
    pub flink_rest_endpoint: flink_operator_controller::flink::RestEndpointMode,
    /// Which parts to run.
    #[arg(long, value_enum, env = "FLINK_OPERATOR_COMPONENTS", default_value = "all")]
    pub components: Components,
    /// Operator configuration file: YAML with Apache-operator-style keys
    /// (`kubernetes.operator.*`, default Flink configuration), flat or nested. Repeatable:
    /// the files are layered in order, a key of a later file winning over the same key of
    /// an earlier one.
    #[arg(long, env = "FLINK_OPERATOR_CONFIG")]
    pub config: Vec<PathBuf>,
    /// Flink log configuration file of the clusters whose resource sets no
    /// `spec.logConfiguration`, named as Flink reads it: `log4j-console.properties` or
    /// `logback-console.xml`. Repeatable (one file of each name). Without it, a built-in
    /// `log4j-console.properties` (console and rolling file). Read at start.
    #[arg(long = "flink-log-config", value_name = "FILE")]
    pub flink_log_config: Vec<PathBuf>,
    /// How often the certificate files are checked for changes, in seconds.
    #[arg(long, default_value_t = 10)]
    pub cert_reload_interval_secs: u64,
    /// How long in-flight requests may take to finish after SIGTERM, in seconds.
    #[arg(long, default_value_t = 20)]
    pub shutdown_grace_secs: u64,
}

fn parse_validity(text: &str) -> Result<Duration, String> {
    let validity = flink_operator_api::options::parse_duration(text)?;
    let min = crate::managed_certs::MIN_VALIDITY;
    if validity < min {
        return Err(format!("{text:?} is too short: at least {} s", min.as_secs()));
    }
    Ok(validity)
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err(format!("{text:?} is not a fraction between 0 and 1 (e.g. 0.667)")),
    }
}

/// Arguments of `flink-operator crd`.
#[derive(Debug, Args)]
pub struct CrdArgs {
    /// Write one file per CRD into this directory instead of printing one YAML stream.
    #[arg(long, conflicts_with = "apply")]
    pub split: Option<PathBuf>,
    /// Install (server-side apply) the CRDs into the cluster and wait until they are established.
    #[arg(long)]
    pub apply: bool,
    /// Kubeconfig for --apply; else the usual kubeconfig, else the in-cluster service account.
    #[arg(long, env = "FLINK_OPERATOR_KUBECONFIG", requires = "apply")]
    pub kubeconfig: Option<PathBuf>,
}

/// Arguments of `flink-operator docs`.
#[derive(Debug, Args)]
pub struct DocsArgs {
    /// Directory to write the pages into (created if missing), e.g. `docs/reference`.
    #[arg(long)]
    pub out: PathBuf,
}

/// Where a job is: the cluster and namespace, as kubectl finds them.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Namespace of the job; else the kubeconfig context's.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Kubeconfig file; else $KUBECONFIG, ~/.kube/config or the in-cluster service account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context; else the current one.
    #[arg(long)]
    pub context: Option<String>,
}

/// Arguments of `flink-operator history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The job: KIND/NAME, KIND being flinkdeployment (flinkdeployments, flinkdep) or
    /// flinksessionjob (flinksessionjobs, sessionjob), in any case.
    #[arg(value_name = "KIND/NAME", value_parser = crate::job_ref::parse_job_ref)]
    pub job: crate::job_ref::JobRef,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Arguments of `flink-operator rollback`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The job: KIND/NAME, KIND being flinkdeployment (flinkdeployments, flinkdep) or
    /// flinksessionjob (flinksessionjobs, sessionjob), in any case.
    #[arg(value_name = "KIND/NAME", value_parser = crate::job_ref::parse_job_ref)]
    pub job: crate::job_ref::JobRef,
    /// The revision to roll back to; else the highest kept one below the current one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub to_revision: Option<i64>,
    /// Restore the state (savepoint or checkpoint) the revision was started from, rather
    /// than the state taken when the running job stops.
    #[arg(long)]
    pub restore_revision_state: bool,
    /// How long to follow the rollback, as a Flink duration (e.g. 90s, 15 min, 1h); it goes
    /// on in the operator after that.
    #[arg(long, default_value = "15 min", value_parser = flink_operator_api::options::parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `flink-operator certs ...`
#[derive(Debug, Subcommand)]
pub enum CertsCommand {
    /// Generate a self-signed CA and a serving certificate signed by it
    /// (writes ca.crt, tls.crt, tls.key).
    Generate(GenerateArgs),
}

/// Arguments of `flink-operator certs generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory to write ca.crt, tls.crt and tls.key into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// A DNS name of the serving certificate (repeatable).
    #[arg(long = "dns")]
    pub dns: Vec<String>,
    /// An IP address of the serving certificate (repeatable).
    #[arg(long = "ip")]
    pub ip: Vec<IpAddr>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_defaults_match_the_documented_ports_and_components() {
        let cli = Cli::try_parse_from(["flink-operator", "run"]).unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.webhook_port, 9443);
        assert_eq!(args.probe_port, 8080);
        assert_eq!(args.components, Components::All);
    }

    #[test]
    fn a_key_file_without_a_certificate_is_refused() {
        let err = Cli::try_parse_from(["flink-operator", "run", "--tls-key-file", "k"]).unwrap_err();
        assert!(err.to_string().contains("--tls-cert-file"), "{err}");
    }

    #[test]
    fn history_and_rollback_take_a_job_and_a_namespace() {
        let cli = Cli::try_parse_from(["flink-operator", "history", "flinkdep/basic", "-n", "jobs"]).unwrap();
        let Command::History(args) = cli.command else {
            panic!("not history")
        };
        assert_eq!(args.job.name, "basic");
        assert_eq!(args.cluster.namespace.as_deref(), Some("jobs"));

        let cli = Cli::try_parse_from(["flink-operator", "rollback", "sessionjob/j", "--to-revision", "2"])
            .unwrap();
        let Command::Rollback(args) = cli.command else {
            panic!("not rollback")
        };
        assert_eq!(args.to_revision, Some(2));
        assert!(!args.restore_revision_state);
        assert_eq!(args.timeout, Duration::from_secs(15 * 60));
        assert_eq!(args.cluster.namespace, None);
    }

    #[test]
    fn rollback_refuses_a_revision_below_one_and_an_unknown_kind() {
        for argv in [
            &["flink-operator", "rollback", "flinkdep/a", "--to-revision", "0"][..],
            &["flink-operator", "rollback", "deployment/a"][..],
            &["flink-operator", "history", "a"][..],
        ] {
            assert!(Cli::try_parse_from(argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn the_managed_certificate_lives_a_year_and_is_renewed_at_two_thirds_unless_told() {
        let cli = Cli::try_parse_from(["flink-operator", "run"]).unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.webhook_cert_validity, Duration::from_secs(365 * 24 * 3600));
        assert!((args.webhook_cert_renew_fraction - 2.0 / 3.0).abs() < 0.001);

        let cli = Cli::try_parse_from([
            "flink-operator",
            "run",
            "--webhook-cert-validity",
            "2 min",
            "--webhook-cert-renew-fraction",
            "0.5",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.webhook_cert_validity, Duration::from_secs(120));
        assert_eq!(args.webhook_cert_renew_fraction, 0.5);

        for (flag, value) in [
            ("--webhook-cert-validity", "10s"),
            ("--webhook-cert-renew-fraction", "1"),
            ("--webhook-cert-renew-fraction", "0"),
        ] {
            assert!(
                Cli::try_parse_from(["flink-operator", "run", flag, value]).is_err(),
                "{flag} {value}"
            );
        }
    }

    #[test]
    fn self_signed_certs_conflict_with_given_files() {
        let parsed = Cli::try_parse_from([
            "flink-operator",
            "run",
            "--tls-cert-file",
            "c",
            "--tls-key-file",
            "k",
            "--self-signed-certs",
            "d",
        ]);
        assert!(parsed.is_err());
    }
}
