//! Command line of the `flink-operator` binary.

use std::{net::IpAddr, path::PathBuf};

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
    /// Write the reference pages generated from the code (configuration keys, admission
    /// rules, metrics) into a directory.
    #[command(hide = true)]
    Docs(DocsArgs),
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
    /// Namespace the operator runs in (of the webhook Secret and Service).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub operator_namespace: String,
    /// Service in front of the webhook; the managed certificate is issued for its DNS names.
    #[arg(long, default_value = "flink-operator-webhook")]
    pub webhook_service_name: String,
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
    /// Port of the plain-HTTP probes and metrics (/healthz, /readyz, /metrics).
    #[arg(long, env = "FLINK_OPERATOR_PROBE_PORT", default_value_t = 8080)]
    pub probe_port: u16,
    /// Kubeconfig file; else the in-cluster service account, else the usual kubeconfig
    /// ($KUBECONFIG, ~/.kube/config).
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
    /// How often the certificate files are checked for changes, in seconds.
    #[arg(long, default_value_t = 10)]
    pub cert_reload_interval_secs: u64,
    /// How long in-flight requests may take to finish after SIGTERM, in seconds.
    #[arg(long, default_value_t = 20)]
    pub shutdown_grace_secs: u64,
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
    /// Kubeconfig for --apply; else in-cluster or the usual kubeconfig.
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
