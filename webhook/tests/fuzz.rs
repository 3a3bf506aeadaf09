//! Bad input: mutated AdmissionReviews against both admission endpoints.
//!
//! Every example manifest of the four kinds is wrapped into a review (CREATE, UPDATE with a
//! stored object that differs, UPDATE that changes nothing, DELETE) and mutated: a value
//! replaced by one of another type, a huge number or string, thousands of levels of
//! nesting; a field removed or an unknown one added at any level; another kind or version;
//! the JSON text cut at any byte, or garbage bytes written into it. Each case goes through
//! the real router (`/validate` and `/mutate`), so the body limits, the decoder, the rules
//! of every kind and the lookups all see it. Whatever comes in, the webhook must answer
//! quickly with a 4xx and a reason, or with an AdmissionReview whose denial says why and
//! whose patch is a JSON Patch that applies to the object it was made for.
//!
//! What admission lets through must also be safe for the loops: every object both endpoints
//! allow is patched as the API server would store it and handed to the cluster builders
//! (the Flink configuration, its config file and every Kubernetes object of the cluster;
//! for a blue/green deployment, of its child) and to the pure decide functions of its kind
//! under a few observations. None may panic, and the builders must accept it: an object
//! admission allows but the builders cannot make is an admission gap.
//!
//! `FUZZ_CASES` sets the number of cases (default [`DEFAULT_CASES`], about ten seconds in a
//! debug build); `FUZZ_SEED` replays a run (each run prints its seed). The long run:
//!
//! ```text
//! FUZZ_CASES=1000000 cargo test --release -p flink-operator-webhook --test fuzz -- --nocapture
//! ```

#![allow(clippy::unwrap_used)]

use std::{
    collections::BTreeMap,
    convert::Infallible,
    fmt,
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::body::Body;
use base64::Engine;
use bytes::Bytes;
use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkJobState, FlinkSessionJob, FlinkStateSnapshot,
    validation::ValidationContext,
};
use flink_operator_controller::{
    bluegreen, deployment, flink::job::JobObservation, session_job, state_snapshot,
};
use flink_operator_webhook::{
    Admission,
    lookup::{ApiDirectory, CachedDirectory, JobDirectory, UnavailableDirectory},
    metrics::AdmissionMetrics,
    review::MAX_BODY_BYTES,
};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use proptest::{
    prelude::*,
    sample::Index,
    test_runner::{Config, RngSeed, TestCaseError, TestRunner},
};
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Cases in a plain `cargo test` run: about ten seconds in a debug build.
const DEFAULT_CASES: u32 = 1_500;

/// The most one case (both endpoints) may take in a release build, as the operator is
/// built: the API server gives the whole webhook call `timeoutSeconds` (5 s in our chart).
/// A debug build reads JSON many times slower; a body of a few MiB took up to 1.9 s in
/// one on a loaded 2-core machine, so it gets more room, enough to catch a hang but not
/// to fail on a busy CI runner.
const CASE_LIMIT: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(10)
} else {
    Duration::from_secs(2)
};

/// A case still running after this long is a hang: the process is stopped, naming it
/// (a loop in a rule cannot be interrupted from inside the test).
const HANG_LIMIT: Duration = Duration::from_secs(60);

const KINDS: [&str; 4] = [
    "FlinkDeployment",
    "FlinkSessionJob",
    "FlinkStateSnapshot",
    "FlinkBlueGreenDeployment",
];

const NAMESPACE: &str = "fuzz";

// === Seeds ===

/// Every document of every example manifest, by kind (in the order of [`KINDS`]).
fn seeds() -> Vec<Vec<Value>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut by_kind = vec![Vec::new(); KINDS.len()];
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = Value::deserialize(document).unwrap();
            if value.is_null() {
                continue;
            }
            let kind = value["kind"].as_str().unwrap_or_default();
            let slot = KINDS
                .iter()
                .position(|k| *k == kind)
                .unwrap_or_else(|| panic!("{}: unexpected kind {kind:?}", file.display()));
            by_kind[slot].push(value);
        }
    }
    for (kind, seeds) in KINDS.iter().zip(&by_kind) {
        assert!(!seeds.is_empty(), "no example of {kind} under {}", dir.display());
    }
    by_kind
}

/// The stored version of `object` for an UPDATE that changes its spec, so that the rules
/// (and their comparisons of old and new) run instead of the unchanged-spec shortcut.
fn stored_version(kind: &str, object: &Value) -> Value {
    let mut old = object.clone();
    let spec = &mut old["spec"];
    match kind {
        "FlinkDeployment" | "FlinkSessionJob" => spec["restartNonce"] = json!(41),
        "FlinkStateSnapshot" => spec["backoffLimit"] = json!(41),
        _ => spec["configuration"]["fuzz.stored"] = json!("1"),
    }
    old
}

fn review(kind: &str, operation: &str, object: &Value, old: Option<Value>) -> Value {
    let mut object = object.clone();
    object["metadata"]["namespace"] = json!(NAMESPACE);
    let old = old.map(|mut old| {
        old["metadata"]["namespace"] = json!(NAMESPACE);
        old
    });
    let (object, old) = if operation == "DELETE" {
        (Value::Null, Some(object))
    } else {
        (object, old)
    };
    let mut request = json!({
        "uid": "3f0c5a52-8c1e-4d4e-9a57-0d6b7c1f2a11",
        "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": kind},
        "resource": {"group": "flink.apache.org", "version": "v1beta1",
                     "resource": format!("{}s", kind.to_lowercase())},
        "requestKind": {"group": "flink.apache.org", "version": "v1beta1", "kind": kind},
        "name": object["metadata"]["name"].clone(),
        "namespace": NAMESPACE,
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:fuzz:deployer", "groups": ["system:authenticated"]},
        "object": object,
        "dryRun": false,
    });
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

// === Mutations ===

#[derive(Clone, Copy, Debug)]
enum Operation {
    Create,
    /// The stored object's spec differs.
    Update,
    /// The stored object is the same.
    UpdateUnchanged,
    Delete,
}

/// Where in the review a mutation lands: anywhere, or inside one of the objects (where
/// the rules look, so they get most of the mutations).
#[derive(Clone, Copy, Debug)]
enum Part {
    Review,
    Request,
    Object,
    OldObject,
}

impl Part {
    fn pointer(self) -> &'static str {
        match self {
            Self::Review => "",
            Self::Request => "/request",
            Self::Object => "/request/object",
            Self::OldObject => "/request/oldObject",
        }
    }
}

/// A value of whatever type, chosen to break assumptions.
#[derive(Clone)]
enum Weird {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    U64Max,
    I64Min,
    Huge,
    HugeNegative,
    NegativeZero,
    Text(String),
    /// A string of `len` copies of `fill` (up to several MiB, past the body limit).
    HugeText {
        len: usize,
        fill: char,
    },
    EmptyObject,
    EmptyArray,
    Array(Vec<Weird>),
    Object(Vec<(String, Weird)>),
    /// `levels` of nested arrays or objects, spliced in as text (a `Value` that deep would
    /// overflow the stack of whoever builds or drops it, here rather than in the webhook).
    Deep {
        levels: usize,
        objects: bool,
    },
}

impl fmt::Debug for Weird {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(s) if s.len() > 64 => write!(f, "Text({} bytes)", s.len()),
            Self::HugeText { len, fill } => write!(f, "HugeText({len} x {fill:?})"),
            Self::Deep { levels, objects } => write!(f, "Deep({levels}, objects: {objects})"),
            Self::Null => write!(f, "Null"),
            Self::Bool(b) => write!(f, "Bool({b})"),
            Self::Int(i) => write!(f, "Int({i})"),
            Self::Float(x) => write!(f, "Float({x:e})"),
            Self::U64Max => write!(f, "U64Max"),
            Self::I64Min => write!(f, "I64Min"),
            Self::Huge => write!(f, "1e308"),
            Self::HugeNegative => write!(f, "-1e308"),
            Self::NegativeZero => write!(f, "-0.0"),
            Self::Text(s) => write!(f, "Text({s:?})"),
            Self::EmptyObject => write!(f, "{{}}"),
            Self::EmptyArray => write!(f, "[]"),
            Self::Array(items) => f.debug_list().entries(items).finish(),
            Self::Object(members) => f
                .debug_map()
                .entries(members.iter().map(|(k, v)| (k, v)))
                .finish(),
        }
    }
}

/// Text spliced in for a placeholder string after the review is serialised.
struct Splices(Vec<String>);

impl Splices {
    fn placeholder(&mut self, text: String) -> Value {
        self.0.push(text);
        Value::String(format!("\u{1}splice{}\u{1}", self.0.len() - 1))
    }

    fn apply(&self, mut json: String) -> String {
        for (i, text) in self.0.iter().enumerate() {
            json = json.replacen(&format!("\"\\u0001splice{i}\\u0001\""), text, 1);
        }
        json
    }
}

impl Weird {
    fn value(&self, splices: &mut Splices) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => json!(b),
            Self::Int(i) => json!(i),
            // NaN and infinities have no JSON form (serde_json writes null).
            Self::Float(x) => json!(x),
            Self::U64Max => json!(u64::MAX),
            Self::I64Min => json!(i64::MIN),
            Self::Huge => json!(1e308),
            Self::HugeNegative => json!(-1e308),
            Self::NegativeZero => json!(-0.0),
            Self::Text(s) => json!(s),
            Self::HugeText { len, fill } => Value::String(std::iter::repeat_n(*fill, *len).collect()),
            Self::EmptyObject => json!({}),
            Self::EmptyArray => json!([]),
            Self::Array(items) => Value::Array(items.iter().map(|w| w.value(splices)).collect()),
            Self::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, w)| (k.clone(), w.value(splices)))
                    .collect(),
            ),
            Self::Deep { levels, objects } => {
                let (open, close) = if *objects { ("{\"a\":", "}") } else { ("[", "]") };
                splices.placeholder(format!("{}1{}", open.repeat(*levels), close.repeat(*levels)))
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    /// The value at the `at`-th node of `part` becomes `with`.
    Replace { part: Part, at: Index, with: Weird },
    /// The `at`-th node of `part` (not its root) is removed from its object or array.
    Remove { part: Part, at: Index },
    /// The `at`-th object of `part` gains a member.
    Add {
        part: Part,
        at: Index,
        name: String,
        value: Weird,
    },
    /// A field that routes the request gets another (string) value.
    Retarget { field: &'static str, to: String },
    /// A configuration key gets a value: where durations, sizes and numbers are parsed.
    Configure {
        map: &'static str,
        key: String,
        value: String,
    },
    /// An annotation the rules read (a rollback request) gets a value.
    Annotate {
        object: &'static str,
        key: String,
        value: String,
    },
}

#[derive(Clone, Debug)]
enum TextMutation {
    /// Cut the JSON text at this byte.
    Truncate(Index),
    /// Write these bytes over the text from this byte on.
    Overwrite(Index, Vec<u8>),
    /// Insert these bytes at this byte.
    Insert(Index, Vec<u8>),
    /// Send these bytes instead.
    Garbage(Vec<u8>),
}

#[derive(Clone, Debug)]
struct Case {
    kind: usize,
    seed: Index,
    operation: Operation,
    /// Lookups answered from in-memory caches, misses confirmed with an API server (404 or
    /// 500), as the operator runs; or no API at all, as a webhook without a kubeconfig.
    cached_directory: bool,
    mutations: Vec<Mutation>,
    text: Option<TextMutation>,
}

fn weird() -> impl Strategy<Value = Weird> {
    let leaf = prop_oneof![
        4 => Just(Weird::Null),
        2 => any::<bool>().prop_map(Weird::Bool),
        4 => any::<i64>().prop_map(Weird::Int),
        2 => prop_oneof![Just(-1i64), Just(0), Just(1), Just(i64::from(i32::MAX) + 1)].prop_map(Weird::Int),
        2 => any::<f64>().prop_map(Weird::Float),
        2 => Just(Weird::U64Max),
        2 => Just(Weird::I64Min),
        2 => Just(Weird::Huge),
        2 => Just(Weird::HugeNegative),
        2 => Just(Weird::NegativeZero),
        6 => any::<String>().prop_map(Weird::Text),
        3 => prop_oneof![
            Just(""), Just("null"), Just("true"), Just("1"), Just("-1"), Just("1e308"), Just("NaN"),
            Just("v1_20"), Just("savepoint"), Just("last-state"), Just("FlinkDeployment"),
            Just("1g"), Just("0.5"), Just("1 min"), Just("s3://"), Just("local:///x.jar"),
            Just("../../etc/passwd"), Just("a\u{0}b"), Just("\u{202e}"), Just("{{name}}"),
            Just("flink"), Just("deployer"),
            // Jar URIs the operator must not fetch or read.
            Just("file:///var/run/secrets/kubernetes.io/serviceaccount/token"), Just("/etc/passwd"),
            Just("https://100.64.0.1/a.jar"), Just("https://198.18.0.1/a.jar"), Just("https://192.0.0.8/a.jar"),
            Just("https://[64:ff9b::a00:1]/a.jar"), Just("https://[2002:7f00:1::1]/a.jar"),
            Just("https://169.254.169.254/a.jar"), Just("https://0x7f.1/a.jar"),
        ]
        .prop_map(|s| Weird::Text(s.to_owned())),
        // Rare: each costs milliseconds, and a few hundred in a run cover the limits.
        1 => (prop_oneof![1024 * 1024..MAX_BODY_BYTES, MAX_BODY_BYTES..MAX_BODY_BYTES + 65_536],
              prop_oneof![Just('x'), Just('é'), Just('"'), Just('\u{1F600}')])
            .prop_map(|(len, fill)| Weird::HugeText { len, fill }),
        2 => (1usize..50_000).prop_map(|len| Weird::HugeText { len, fill: 'a' }),
        2 => Just(Weird::EmptyObject),
        2 => Just(Weird::EmptyArray),
        2 => (100usize..5_000, any::<bool>()).prop_map(|(levels, objects)| Weird::Deep { levels, objects }),
        1 => (120usize..140, any::<bool>()).prop_map(|(levels, objects)| Weird::Deep { levels, objects }),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Weird::Array),
            prop::collection::vec((field_name(), inner), 0..4).prop_map(Weird::Object),
        ]
    })
}

fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z][a-zA-Z0-9]{0,12}",
        // Names the types know, landing where they do not belong or twice.
        3 => prop_oneof![
            Just("spec"), Just("metadata"), Just("kind"), Just("apiVersion"), Just("job"),
            Just("upgradeMode"), Just("flinkVersion"), Just("jobReference"), Just("savepoint"),
            Just("template"), Just("name"), Just("namespace"), Just("deletionTimestamp"),
            Just("annotations"), Just("status"), Just("parallelism"), Just("podTemplate"),
            Just("serviceAccountName"), Just("serviceAccount"), Just("securityContext"),
        ]
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        1 => Just(Part::Review),
        2 => Just(Part::Request),
        6 => Just(Part::Object),
        2 => Just(Part::OldObject),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let retarget_field = prop_oneof![
        Just("/apiVersion"),
        Just("/kind"),
        Just("/request/kind/group"),
        Just("/request/kind/version"),
        Just("/request/kind/kind"),
        Just("/request/operation"),
        Just("/request/namespace"),
        Just("/request/name"),
        Just("/request/object/kind"),
        Just("/request/object/apiVersion"),
        Just("/request/object/metadata/name"),
        Just("/request/object/metadata/namespace"),
    ];
    let target = prop_oneof![
        4 => prop::sample::select(KINDS.to_vec()).prop_map(str::to_owned),
        2 => prop_oneof![
            Just("admission.k8s.io/v1beta1"), Just("flink.apache.org"), Just("apps"), Just(""),
            Just("CREATE"), Just("UPDATE"), Just("DELETE"), Just("CONNECT"), Just("create"),
            Just("Pod"), Just("AdmissionReview"), Just("flink.apache.org/v1"), Just("v1beta1"),
        ]
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    prop_oneof![
        6 => (part(), any::<Index>(), weird()).prop_map(|(part, at, with)| Mutation::Replace { part, at, with }),
        3 => (part(), any::<Index>()).prop_map(|(part, at)| Mutation::Remove { part, at }),
        3 => (part(), any::<Index>(), field_name(), weird())
            .prop_map(|(part, at, name, value)| Mutation::Add { part, at, name, value }),
        2 => (retarget_field, target).prop_map(|(field, to)| Mutation::Retarget { field, to }),
        3 => (
            prop::sample::select(vec![
                "/request/object/spec/flinkConfiguration",
                "/request/object/spec/configuration",
                "/request/object/spec/template/spec/flinkConfiguration",
                "/request/oldObject/spec/flinkConfiguration",
            ]),
            prop_oneof![
                4 => prop::sample::select(CONFIG_KEYS.to_vec()).prop_map(str::to_owned),
                1 => any::<String>(),
            ],
            config_value(),
        )
            .prop_map(|(map, key, value)| Mutation::Configure { map, key, value }),
        // A session job's jar: where the operator would read files or call addresses for it.
        1 => jar_uri().prop_map(|value| Mutation::Configure {
            map: "/request/object/spec/job",
            key: "jarURI".to_owned(),
            value,
        }),
        1 => (
            prop::sample::select(vec!["/request/object", "/request/oldObject"]),
            prop_oneof![
                Just("flink.apache.org/rollback-to-revision".to_owned()),
                Just("flink.apache.org/rollback-restore".to_owned()),
                Just("flink.apache.org/revision".to_owned()),
                any::<String>(),
            ],
            prop_oneof![
                config_value(),
                prop_oneof![Just("revision"), Just("savepoint"), Just("latest"), Just("none")]
                    .prop_map(str::to_owned),
            ],
        )
            .prop_map(|(object, key, value)| Mutation::Annotate { object, key, value }),
    ]
}

/// Jar URIs the operator must not fetch or read under its default artifact policy, and
/// neighbours it may.
fn jar_uri() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        Just("100.64.0.1"),
        Just("198.18.0.1"),
        Just("192.0.0.8"),
        Just("169.254.169.254"),
        Just("127.0.0.1"),
        Just("0x7f.1"),
        Just("2130706433"),
        Just("10.1"),
        Just("[::1]"),
        Just("[64:ff9b::a00:1]"),
        Just("[64:ff9b::808:808]"),
        Just("[2002:7f00:1::1]"),
        Just("[::ffff:10.0.0.1]"),
        Just("[fd00::1]"),
        Just("93.184.216.34"),
        Just("repo.example.com"),
    ];
    prop_oneof![
        3 => (prop_oneof![Just("https"), Just("HTTPS"), Just("http")], host, prop_oneof![Just(""), Just(":8443"), Just("user@")])
            .prop_map(|(scheme, host, extra)| match extra {
                "user@" => format!("{scheme}://user@{host}/job.jar"),
                port => format!("{scheme}://{host}{port}/job.jar"),
            }),
        1 => prop_oneof![
            Just("file:///var/run/secrets/kubernetes.io/serviceaccount/token"),
            Just("file://localhost/opt/flink/artifacts/../../../etc/passwd"),
            Just("file:/etc/passwd"),
            Just("/etc/passwd"),
        ]
        .prop_map(str::to_owned),
    ]
}

/// Configuration keys that the rules parse, and any other.
const CONFIG_KEYS: &[&str] = &[
    "kubernetes.operator.periodic.savepoint.interval",
    "kubernetes.operator.periodic.checkpoint.interval",
    "kubernetes.operator.savepoint.history.max.age",
    "kubernetes.operator.savepoint.history.max.count",
    "kubernetes.operator.job.restore.max-state-age",
    "kubernetes.operator.job.upgrade.savepoint.max-age",
    "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age",
    "kubernetes.operator.job.revision-history.limit",
    "kubernetes.operator.deployment.readiness.timeout",
    "kubernetes.operator.reconcile.interval",
    "kubernetes.operator.observer.progress-check.interval",
    "kubernetes.operator.cluster.health-check.restarts.threshold",
    "kubernetes.operator.cluster.health-check.restarts.window",
    "kubernetes.operator.bluegreen.abort.grace-period",
    "kubernetes.operator.bluegreen.deployment-deletion.delay",
    "kubernetes.operator.bluegreen.gate.timeout",
    "kubernetes.operator.savepoint.format.type",
    "kubernetes.operator.checkpoint.type",
    "kubernetes.operator.job.restart.failed",
    "kubernetes.operator.deployment.rollback.enabled",
    "kubernetes.operator.user.artifacts.allowed-schemes",
    // The platform's limits, which no spec may set, and what they bound.
    "kubernetes.operator.savepoint.history.max.count.threshold",
    "kubernetes.operator.savepoint.history.max.age.threshold",
    "kubernetes.operator.reconcile.interval.min",
    "kubernetes.operator.periodic.checkpoint.interval.min",
    "kubernetes.operator.snapshot.resource.max.count",
    "kubernetes.operator.job.parallelism.max",
    "kubernetes.operator.taskmanager.replicas.max",
    "kubernetes.operator.jobmanager.replicas.max",
    "kubernetes.operator.reconciler.reschedule.interval",
    "execution.checkpointing.num-retained",
    "job.autoscaler.vertex.max-parallelism",
    "pipeline.jobvertex-parallelism-overrides",
    "taskmanager.numberOfTaskSlots",
    "taskmanager.memory.process.size",
    "jobmanager.memory.process.size",
    "parallelism.default",
    "high-availability.type",
    "high-availability.storageDir",
    "state.savepoints.dir",
    "state.checkpoints.dir",
    "execution.checkpointing.interval",
    "kubernetes.jobmanager.replicas",
    "rest.port",
    "jobmanager.rpc.port",
    "blob.server.port",
    "kubernetes.operator.",
    "",
    // Keys that are sections of others, which Flink 2.x's nested config.yaml cannot hold.
    "a",
    "a.b",
    "a-x",
    "high-availability",
    "blob.server.port.range",
    "kubernetes.container.image",
    "env.java.opts",
    "env.java.opts.all",
];

/// Values that parsers of numbers, durations, sizes and enums meet badly.
fn config_value() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just(""),
        Just(" "),
        Just("ms"),
        Just(" s"),
        Just("s"),
        Just(" min"),
        Just("m"),
        Just(" h"),
        Just("d"),
        Just(" days"),
        Just("b"),
        Just("k"),
        Just("kb"),
        Just("m"),
        Just("mb"),
        Just("g"),
        Just("gb"),
        Just("t"),
        Just("tb"),
        Just(" parsecs"),
        Just("%"),
    ];
    let number = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        prop_oneof![
            Just("18446744073709551615"),
            Just("18446744073709551616"),
            Just("9223372036854775808"),
            Just("-9223372036854775809"),
            Just("99999999999999999999999999"),
            Just("0"),
            Just("-0"),
            Just("1e308"),
            Just("1e309"),
            Just("-1"),
            Just("0.000001"),
            Just("NaN"),
            Just("inf"),
            Just(""),
            Just("."),
            Just("-"),
            Just("+1"),
            Just("0x10"),
            Just("1_000"),
        ]
        .prop_map(str::to_owned),
    ];
    prop_oneof![
        4 => (number, unit).prop_map(|(n, u)| format!("{n}{u}")),
        1 => prop_oneof![
            Just("true"), Just("TRUE"), Just("yes"), Just("savepoint"), Just("SAVEPOINT"), Just("native"),
            Just("CANONICAL"), Just("FULL"), Just("kubernetes"), Just("zookeeper"), Just("s3://"),
            Just("file:"), Just("http,https"), Just(" , "), Just("1 min 2 s"), Just("PT10S"),
            // Schedules and durations about the platform's floors and caps.
            Just("1 ns"), Just("999 ms"), Just("9 s"), Just("59 s"), Just("1 min"), Just("* * * * * ?"),
            Just("0/30 * * * * ?"), Just("0 0 * * * ?"), Just("0 0,1 * * * ?"), Just("1000000"),
            Just("1001"), Just("a:2,b:1001"),
        ]
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn text_mutation() -> impl Strategy<Value = TextMutation> {
    prop_oneof![
        3 => any::<Index>().prop_map(TextMutation::Truncate),
        2 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| TextMutation::Overwrite(at, bytes)),
        2 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| TextMutation::Insert(at, bytes)),
        1 => prop::collection::vec(any::<u8>(), 0..256).prop_map(TextMutation::Garbage),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..KINDS.len(),
        any::<Index>(),
        prop_oneof![
            Just(Operation::Create),
            Just(Operation::Update),
            Just(Operation::UpdateUnchanged),
            Just(Operation::Delete),
        ],
        any::<bool>(),
        prop::collection::vec(mutation(), 0..4),
        prop::option::weighted(0.2, text_mutation()),
    )
        .prop_map(
            |(kind, seed, operation, cached_directory, mutations, text)| Case {
                kind,
                seed,
                operation,
                cached_directory,
                mutations,
                text,
            },
        )
}

/// JSON pointers of every node under `root` (`root` itself first).
fn pointers(value: &Value, root: String, out: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            out.push(root.clone());
            for (key, member) in members {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                pointers(member, format!("{root}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            out.push(root.clone());
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{root}/{i}"), out);
            }
        }
        _ => out.push(root),
    }
}

fn nodes_of(review: &Value, part: Part) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(value) = review.pointer(part.pointer()) {
        pointers(value, part.pointer().to_owned(), &mut out);
    }
    out
}

fn split_last(pointer: &str) -> Option<(&str, String)> {
    let (parent, last) = pointer.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

impl Mutation {
    fn apply(&self, review: &mut Value, splices: &mut Splices) {
        match self {
            Self::Replace { part, at, with } => {
                let nodes = nodes_of(review, *part);
                if nodes.is_empty() {
                    return;
                }
                let pointer = &nodes[at.index(nodes.len())];
                let with = with.value(splices);
                if let Some(slot) = review.pointer_mut(pointer) {
                    *slot = with;
                }
            }
            Self::Remove { part, at } => {
                let nodes = nodes_of(review, *part);
                if nodes.len() < 2 {
                    return;
                }
                let pointer = &nodes[1 + at.index(nodes.len() - 1)];
                let Some((parent, last)) = split_last(pointer) else {
                    return;
                };
                match review.pointer_mut(parent) {
                    Some(Value::Object(members)) => {
                        members.remove(&last);
                    }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = last.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            }
            Self::Add {
                part,
                at,
                name,
                value,
            } => {
                let objects: Vec<String> = nodes_of(review, *part)
                    .into_iter()
                    .filter(|p| review.pointer(p).is_some_and(Value::is_object))
                    .collect();
                if objects.is_empty() {
                    return;
                }
                let pointer = &objects[at.index(objects.len())];
                let value = value.value(splices);
                if let Some(Value::Object(members)) = review.pointer_mut(pointer) {
                    members.insert(name.clone(), value);
                }
            }
            Self::Retarget { field, to } => {
                if let Some(slot) = review.pointer_mut(field) {
                    *slot = json!(to);
                }
            }
            Self::Configure { map, key, value } => {
                if let Some(Value::Object(members)) = object_at(review, map) {
                    members.insert(key.clone(), json!(value));
                }
            }
            Self::Annotate { object, key, value } => {
                let annotations = format!("{object}/metadata/annotations");
                if let Some(Value::Object(members)) = object_at(review, &annotations) {
                    members.insert(key.clone(), json!(value));
                }
            }
        }
    }
}

/// The value at `pointer`, with the objects on the way created where they are missing
/// (under objects only: a value of another type stays as the mutations left it).
fn object_at<'v>(review: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    let mut at = review;
    for token in pointer.split('/').skip(1) {
        let Value::Object(members) = at else {
            return None;
        };
        at = members.entry(token.to_owned()).or_insert_with(|| json!({}));
    }
    Some(at)
}

impl TextMutation {
    fn apply(&self, mut text: Vec<u8>) -> Vec<u8> {
        match self {
            Self::Truncate(at) => {
                text.truncate(at.index(text.len().max(1)));
                text
            }
            Self::Overwrite(at, bytes) => {
                let start = at.index(text.len().max(1));
                for (i, byte) in bytes.iter().enumerate() {
                    match text.get_mut(start + i) {
                        Some(slot) => *slot = *byte,
                        None => text.push(*byte),
                    }
                }
                text
            }
            Self::Insert(at, bytes) => {
                let at = at.index(text.len() + 1);
                text.splice(at..at, bytes.iter().copied());
                text
            }
            Self::Garbage(bytes) => bytes.clone(),
        }
    }
}

/// The body of a case, and the object the request carries as sent (to apply a patch to).
fn build(case: &Case, seeds: &[Vec<Value>]) -> (Vec<u8>, Option<Value>) {
    let kind = KINDS[case.kind];
    let candidates = &seeds[case.kind];
    let object = &candidates[case.seed.index(candidates.len())];
    let (operation, old) = match case.operation {
        Operation::Create => ("CREATE", None),
        Operation::Update => ("UPDATE", Some(stored_version(kind, object))),
        Operation::UpdateUnchanged => ("UPDATE", Some(object.clone())),
        Operation::Delete => ("DELETE", None),
    };
    let mut review = review(kind, operation, object, old);
    let mut splices = Splices(Vec::new());
    for mutation in &case.mutations {
        mutation.apply(&mut review, &mut splices);
    }
    let text = splices.apply(serde_json::to_string(&review).unwrap());
    let object = match (&case.text, splices.0.is_empty()) {
        (None, true) => review.pointer("/request/object").cloned(),
        _ => None,
    };
    let body = match &case.text {
        Some(mutation) => mutation.apply(text.into_bytes()),
        None => text.into_bytes(),
    };
    (body, object)
}

// === The webhook under test ===

/// The operator's own directory over in-memory caches holding every example
/// FlinkDeployment and FlinkSessionJob; a miss goes to an API server that has nothing
/// (404), or fails (500) for some names.
fn cached_directory(seeds: &[Vec<Value>]) -> CachedDirectory {
    fn cache<K: serde::de::DeserializeOwned>(objects: &[Value]) -> BTreeMap<(String, String), Arc<K>> {
        objects
            .iter()
            .map(|object| {
                let name = object["metadata"]["name"].as_str().unwrap().to_owned();
                let typed: K = serde_json::from_value(object.clone()).unwrap();
                ((NAMESPACE.to_owned(), name), Arc::new(typed))
            })
            .collect()
    }
    let deployments = cache::<FlinkDeployment>(&seeds[0]);
    let session_jobs = cache::<FlinkSessionJob>(&seeds[1]);
    let api = tower::service_fn(|request: Request<kube::client::Body>| async move {
        let (code, reason) = if request.uri().path().len().is_multiple_of(3) {
            (500, "InternalError")
        } else {
            (404, "NotFound")
        };
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("fuzz API server: {}", request.uri().path()), "reason": reason, "code": code,
        });
        Ok::<_, Infallible>(
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(serde_json::to_vec(&status).unwrap())))
                .unwrap(),
        )
    });
    let client = kube::Client::new(api, NAMESPACE);
    CachedDirectory::new(
        Arc::new(move |ns: &str, name: &str| deployments.get(&(ns.to_owned(), name.to_owned())).cloned()),
        Arc::new(move |ns: &str, name: &str| session_jobs.get(&(ns.to_owned(), name.to_owned())).cloned()),
        ApiDirectory::new(client),
    )
}

fn router(directory: Arc<dyn JobDirectory>) -> axum::Router {
    flink_operator_webhook::router(Arc::new(Admission::new(
        ValidationContext::default(),
        directory,
        AdmissionMetrics::default(),
    )))
}

#[derive(Default)]
struct Tally {
    refused: AtomicU64,
    allowed: [AtomicU64; KINDS.len()],
    denied: [AtomicU64; KINDS.len()],
    patched: AtomicU64,
    /// Admitted objects the builders and decide functions took.
    built: AtomicU64,
    /// Admitted objects that break the schema or have no name, or reviews of another kind
    /// than their object's: no API server stores or sends them.
    unstorable: AtomicU64,
}

async fn post(router: &axum::Router, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
    let request = Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    (status, response.into_body().collect().await.unwrap().to_bytes())
}

/// Checks one answer; `object` is the object the request carried, when it is known.
fn check(
    path: &str,
    status: StatusCode,
    body: &[u8],
    object: Option<&Value>,
    kind: usize,
    tally: &Tally,
) -> Result<Option<Value>, TestCaseError> {
    let text = String::from_utf8_lossy(body);
    if status.is_client_error() {
        prop_assert!(
            !text.trim().is_empty() && text.trim_end().lines().count() == 1,
            "{path}: {status} without a one-line reason: {text:?}"
        );
        tally.refused.fetch_add(1, Ordering::Relaxed);
        return Ok(None);
    }
    prop_assert_eq!(
        status,
        StatusCode::OK,
        "{}: unexpected status, body {:?}",
        path,
        text
    );
    let review: Value = serde_json::from_slice(body).map_err(|e| {
        TestCaseError::fail(format!("{path}: 200 with a body that is not JSON ({e}): {text}"))
    })?;
    prop_assert_eq!(&review["apiVersion"], "admission.k8s.io/v1");
    prop_assert_eq!(&review["kind"], "AdmissionReview");
    let response = &review["response"];
    prop_assert!(response["uid"].is_string(), "{}: no uid in {}", path, review);
    let Some(allowed) = response["allowed"].as_bool() else {
        return Err(TestCaseError::fail(format!("{path}: no verdict in {review}")));
    };
    if !allowed {
        let message = response["status"]["message"].as_str().unwrap_or_default();
        prop_assert!(
            !message.trim().is_empty(),
            "{}: a denial without reason: {}",
            path,
            review
        );
        tally.denied[kind].fetch_add(1, Ordering::Relaxed);
        return Ok(None);
    }
    tally.allowed[kind].fetch_add(1, Ordering::Relaxed);
    let mut stored = object.cloned();
    if let Some(encoded) = response.get("patch") {
        prop_assert_eq!(&response["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_default())
            .map_err(|e| TestCaseError::fail(format!("{path}: patch is not base64: {e}")))?;
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).map_err(|e| {
            TestCaseError::fail(format!(
                "{path}: patch is not a JSON Patch ({e}): {}",
                String::from_utf8_lossy(&bytes)
            ))
        })?;
        // The API server applies the patch to the object it sent; one that does not apply
        // fails the user's request with an internal error.
        if let Some(patched) = stored.as_mut() {
            json_patch::patch(patched, &patch).map_err(|e| {
                TestCaseError::fail(format!(
                    "{path}: patch {patch:?} does not apply to the object: {e}"
                ))
            })?;
        }
        tally.patched.fetch_add(1, Ordering::Relaxed);
    }
    Ok(stored)
}

// === What the loops make of an admitted object ===

/// Hands an admitted object, as stored, to the builders and decide functions of its kind;
/// a panic or a builder error fails the case.
fn loops_take(kind: usize, object: &Value, tally: &Tally) -> Result<(), TestCaseError> {
    // The API server stores only named objects, and adds the namespace of the request, a
    // uid and a generation.
    let mut object = object.clone();
    let named = object["metadata"]["name"].as_str().is_some_and(|n| !n.is_empty());
    if !named {
        tally.unstorable.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("namespace").or_insert_with(|| json!(NAMESPACE));
        meta.entry("uid")
            .or_insert_with(|| json!("3d5bf9a8-0000-4000-8000-000000000001"));
        meta.entry("generation").or_insert_with(|| json!(1));
    }
    let object = &object;
    // An object that does not decode into its kind's types breaks the CRD's schema (which is
    // generated from them) or ObjectMeta's: the API server would not store it, so no loop
    // would see it.
    let decodes = match KINDS[kind] {
        "FlinkDeployment" => typed::<FlinkDeployment>(object).is_ok(),
        "FlinkSessionJob" => typed::<FlinkSessionJob>(object).is_ok(),
        "FlinkStateSnapshot" => typed::<FlinkStateSnapshot>(object).is_ok(),
        _ => typed::<FlinkBlueGreenDeployment>(object).is_ok(),
    };
    if !decodes {
        tally.unstorable.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    let outcome = std::panic::catch_unwind(|| match KINDS[kind] {
        "FlinkDeployment" => deployment_loop_takes(&typed::<FlinkDeployment>(object)?),
        "FlinkSessionJob" => {
            let job = typed::<FlinkSessionJob>(object)?;
            for observation in session_job_observations() {
                drop(session_job::decide::decide(&job, &observation));
            }
            Ok(())
        }
        "FlinkStateSnapshot" => {
            let snapshot = typed::<FlinkStateSnapshot>(object)?;
            drop(state_snapshot::decide::decide(&snapshot, &Default::default()));
            Ok(())
        }
        _ => {
            let resource = typed::<FlinkBlueGreenDeployment>(object)?;
            drop(bluegreen::decide(&resource, &blue_green_observation(&resource)));
            match resource.spec.template.as_ref().and_then(|t| t.spec.as_ref()) {
                Some(spec) => {
                    let child = bluegreen::act::child(&resource, bluegreen::Colour::Blue, spec)
                        .map_err(|e| format!("the blue child: {e}"))?;
                    deployment_loop_takes(&child)
                }
                None => Ok(()),
            }
        }
    });
    match outcome {
        Ok(Ok(())) => {
            tally.built.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Ok(Err(reason)) => Err(TestCaseError::fail(format!(
            "admitted, but the loop cannot take it: {reason}: {object}"
        ))),
        Err(panic) => Err(TestCaseError::fail(format!(
            "admitted, and the loop panicked ({}): {object}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message")
        ))),
    }
}

/// What both endpoints allow is within the platform's limits (the router's operator
/// configuration is empty: their defaults): no key a spec may not set in a configuration, no
/// interval below its floor, no parallelism or replicas above their caps. Judged here from the
/// options table, the schedule parser and the limits' values, not by the rules' own code.
fn within_platform_limits(kind: usize, object: &Value) -> Result<(), TestCaseError> {
    use flink_operator_api::{
        FlinkDeploymentSpec,
        options::{option, parse_millis, schedule::Schedule},
        validation::limits::PlatformLimits,
    };
    let limits = PlatformLimits::default();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let config_within = |path: &str, config: &BTreeMap<String, String>| -> Result<(), String> {
        for (key, value) in config {
            if option(key).is_some_and(|o| o.set_in.refused_in_spec().is_some()) {
                return Err(format!("{path}.{key} is not the spec's to set"));
            }
            if let Some((floor, _)) = limits.floor_of(key) {
                let shortest = if key.contains(".periodic.") {
                    Schedule::parse(value)
                        .ok()
                        .flatten()
                        .and_then(|s| s.shortest_gap(now_ms))
                } else {
                    parse_millis(value).ok()
                };
                if shortest.is_some_and(|gap| gap < floor) {
                    return Err(format!("{path}.{key}: {value:?} is below its floor"));
                }
            }
        }
        let parallelism_keys = ["parallelism.default", "job.autoscaler.vertex.max-parallelism"];
        for key in parallelism_keys {
            if let Some(n) = config.get(key).and_then(|v| v.trim().parse::<i64>().ok())
                && limits.parallelism_max.is_some_and(|cap| n > cap)
            {
                return Err(format!("{path}.{key}: {n} is above its cap"));
            }
        }
        Ok(())
    };
    let size_within = |parallelism: Option<i32>, tm: Option<i32>, jm: Option<i32>| -> Result<(), String> {
        let above = |n: Option<i32>, cap: Option<i64>| n.zip(cap).is_some_and(|(n, cap)| i64::from(n) > cap);
        if above(parallelism, limits.parallelism_max)
            || above(tm, limits.taskmanager_replicas_max)
            || above(jm, limits.jobmanager_replicas_max)
        {
            return Err(format!(
                "parallelism {parallelism:?} or replicas {tm:?}/{jm:?} above their caps"
            ));
        }
        Ok(())
    };
    let deployment = |path: &str, spec: &FlinkDeploymentSpec| -> Result<(), String> {
        let config = spec
            .flink_configuration
            .as_ref()
            .map(|c| c.flattened())
            .unwrap_or_default();
        config_within(&format!("{path}.flinkConfiguration"), &config)?;
        size_within(
            spec.job.as_ref().and_then(|j| j.parallelism),
            spec.task_manager.as_ref().and_then(|t| t.replicas),
            spec.job_manager.as_ref().and_then(|j| j.replicas),
        )
    };
    let judged = match KINDS[kind] {
        "FlinkDeployment" => match typed::<FlinkDeployment>(object) {
            Ok(fd) => deployment("spec", &fd.spec),
            Err(_) => Ok(()),
        },
        "FlinkSessionJob" => match typed::<FlinkSessionJob>(object) {
            Ok(sj) => {
                let config = sj
                    .spec
                    .flink_configuration
                    .as_ref()
                    .map(|c| c.flattened())
                    .unwrap_or_default();
                config_within("spec.flinkConfiguration", &config)
                    .and_then(|()| size_within(sj.spec.job.as_ref().and_then(|j| j.parallelism), None, None))
                    .and_then(|()| jar_within(sj.spec.job.as_ref().and_then(|j| j.jar_uri.as_deref())))
            }
            Err(_) => Ok(()),
        },
        "FlinkBlueGreenDeployment" => match typed::<FlinkBlueGreenDeployment>(object) {
            Ok(bg) => {
                let own = bg.spec.configuration.clone().unwrap_or_default();
                config_within("spec.configuration", &own).and_then(|()| {
                    match bg.spec.template.as_ref().and_then(|t| t.spec.as_ref()) {
                        Some(spec) => deployment("spec.template.spec", spec),
                        None => Ok(()),
                    }
                })
            }
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    };
    judged
        .map_err(|why| TestCaseError::fail(format!("admitted beyond the platform's limits: {why}: {object}")))
}

/// An admitted jar URI under the default artifact policy: https only (no `file` jar, which
/// no listed directory would allow anyway), and no literal special-purpose address in any
/// form the URL parser reads as one (`0x7f.1` is 127.0.0.1).
fn jar_within(uri: Option<&str>) -> Result<(), String> {
    let Some(uri) = uri else { return Ok(()) };
    if flink_operator_api::validation::session_job::file_jar_path(uri).is_some() {
        return Err(format!("file jar {uri:?} admitted with no directory allowed"));
    }
    let authority = uri.split_once("://").map_or("", |(_, rest)| rest);
    let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.find(']') {
        Some(end) => &host_port[..=end],
        None => host_port.split(':').next().unwrap_or_default(),
    };
    let addresses = flink_operator_api::validation::addresses::literal;
    match addresses(&host.to_ascii_lowercase())
        .and_then(flink_operator_api::validation::addresses::restricted)
    {
        Some(range) => Err(format!("jar {uri:?} on a restricted address ({range}) admitted")),
        None => Ok(()),
    }
}

fn typed<T: serde::de::DeserializeOwned>(object: &Value) -> Result<T, String> {
    serde_json::from_value(object.clone()).map_err(|e| format!("it does not decode: {e}"))
}

/// The builders as a deploy calls them, then the decisions under a missing, a starting and
/// a running cluster.
fn deployment_loop_takes(fd: &FlinkDeployment) -> Result<(), String> {
    use flink_operator_controller::resources::{cluster, flink_config};
    let effective = ValidationContext::default().effective_config(
        fd.metadata.namespace.as_deref().unwrap_or(NAMESPACE),
        fd.spec.flink_version,
        fd.spec.flink_configuration.as_ref(),
    );
    let deploy = flink_config::DeployParameters {
        restore_path: Some("file:///flink-data/savepoints/savepoint-1".to_owned()),
        job_id: Some("00000000000000000000000000000001".to_owned()),
        owner_uid: Some("uid-1".to_owned()),
    };
    let config = flink_config::build(fd, &effective, &deploy).map_err(|e| e.to_string())?;
    let options = cluster::BuildOptions::from_effective(&effective);
    cluster::build(fd, &config, &options, None).map_err(|e| e.to_string())?;
    let objects = cluster::build(fd, &config, &options, Some("jm-uid")).map_err(|e| e.to_string())?;
    runs_as_its_service_account(fd, &objects)?;
    for observation in deployment_observations() {
        drop(deployment::decide::decide(fd, &observation));
    }
    Ok(())
}

/// An admitted FlinkDeployment's pods run as its `spec.serviceAccount`: no pod template nor
/// Flink key names another ServiceAccount (the router's configuration does not allow it), and
/// the Deployments the operator builds name that one.
fn runs_as_its_service_account(
    fd: &FlinkDeployment,
    objects: &flink_operator_controller::resources::cluster::ClusterObjects,
) -> Result<(), String> {
    let account = fd.spec.service_account.as_deref().unwrap_or_default();
    let spec = serde_json::to_value(&fd.spec).map_err(|e| e.to_string())?;
    for template in [
        "/podTemplate",
        "/jobManager/podTemplate",
        "/taskManager/podTemplate",
    ] {
        for key in ["serviceAccountName", "serviceAccount"] {
            if let Some(named) = spec
                .pointer(&format!("{template}/spec/{key}"))
                .and_then(Value::as_str)
                && named != account
            {
                return Err(format!(
                    "admitted{template}/spec/{key} {named:?} beside serviceAccount {account:?}"
                ));
            }
        }
    }
    for key in [
        "kubernetes.jobmanager.service-account",
        "kubernetes.taskmanager.service-account",
    ] {
        if let Some(named) = spec
            .pointer("/flinkConfiguration")
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            && named != account
        {
            return Err(format!(
                "admitted {key} {named:?} beside serviceAccount {account:?}"
            ));
        }
    }
    let built = std::iter::once(&objects.job_manager).chain(objects.task_manager.as_ref());
    for deployment in built {
        let pod = serde_json::to_value(deployment).map_err(|e| e.to_string())?;
        let runs_as = pod
            .pointer("/spec/template/spec/serviceAccountName")
            .and_then(Value::as_str);
        if runs_as != Some(account) {
            return Err(format!("a built Deployment runs as {runs_as:?}, not {account:?}"));
        }
    }
    Ok(())
}

fn deployment_observations() -> Vec<deployment::decide::Observation> {
    use deployment::decide::{JobManagerObservation, Observation};
    let present = |ready, rest_ready| JobManagerObservation::Present {
        ready,
        replicas: 1,
        problem: None,
        rest_ready,
    };
    vec![
        Observation::default(),
        Observation {
            job_manager: present(0, false),
            cluster_exists: true,
            ..Observation::default()
        },
        Observation {
            job_manager: present(1, true),
            cluster_exists: true,
            job: Some(JobObservation::found(FlinkJobState::Running, Some(1))),
            // The Ingress builder meets every admitted spec.ingress too.
            ingress: managed_ingress(),
            rest_port: 8081,
            ..Observation::default()
        },
    ]
}

fn managed_ingress() -> flink_operator_controller::resources::ingress::Observed {
    flink_operator_controller::resources::ingress::Observed {
        managed: true,
        ..Default::default()
    }
}

fn session_job_observations() -> Vec<session_job::decide::Observation> {
    vec![session_job::decide::Observation::default()]
}

fn blue_green_observation(resource: &FlinkBlueGreenDeployment) -> bluegreen::Observation {
    bluegreen::Observation {
        blue: None,
        green: None,
        savepoint: None,
        policy: bluegreen::BlueGreenPolicy::from_configuration(resource.spec.configuration.as_ref()),
        now_ms: 1_700_000_000_000,
        fresh_id: "a1b2c3".to_owned(),
        foreign: Vec::new(),
        gate: None,
        hand_over: bluegreen::gate::HandOver::NotAsked,
        ingress: bluegreen::ingress::IngressObservation {
            cached: managed_ingress(),
            blue_port: 8081,
            green_port: 8081,
        },
        refused: None,
    }
}

fn cases() -> u32 {
    match std::env::var("FUZZ_CASES") {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("FUZZ_CASES={value:?} is not a number")),
        Err(_) => DEFAULT_CASES,
    }
}

fn seed() -> u64 {
    match std::env::var("FUZZ_SEED") {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("FUZZ_SEED={value:?} is not a number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

#[test]
fn mutated_reviews_get_a_4xx_or_a_verdict_with_a_reason() {
    let seeds = seeds();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cached, unavailable) = runtime.block_on(async {
        (
            router(Arc::new(cached_directory(&seeds))),
            router(Arc::new(UnavailableDirectory::new("no kubeconfig (fuzz test)"))),
        )
    });

    // A case that never returns cannot fail an assertion: a watchdog names it instead.
    let running: Arc<Mutex<Option<(Instant, Case)>>> = Arc::default();
    let finished = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let running = running.clone();
        let finished = finished.clone();
        std::thread::spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if let Some((started, case)) = running.lock().unwrap().as_ref()
                    && started.elapsed() > HANG_LIMIT
                {
                    eprintln!("a case has run for {:?}, a hang: {case:?}", started.elapsed());
                    std::process::abort();
                }
            }
        })
    };

    let cases = cases();
    let seed = seed();
    let tally = Tally::default();
    let run = AtomicU64::new(0);
    let slowest = Mutex::new((Duration::ZERO, None::<Case>));
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let result = runner.run(&case(), |case| {
        let (body, object) = build(&case, &seeds);
        // The object of a CREATE or UPDATE is what the API server stores, and it names the
        // object's own kind in the review; a review retargeted to another kind or operation
        // was judged by other rules (DELETE by none), and no API server sends one.
        let judged_as_stored = serde_json::from_slice::<Value>(&body).is_ok_and(|review| {
            let kind = KINDS[case.kind];
            let request = &review["request"];
            request["kind"]["kind"] == kind
                && request["object"]["kind"] == kind
                && matches!(request["operation"].as_str(), Some("CREATE" | "UPDATE"))
        });
        let router = if case.cached_directory {
            &cached
        } else {
            &unavailable
        };
        *running.lock().unwrap() = Some((Instant::now(), case.clone()));
        let took = Instant::now();
        let answers = runtime.block_on(async {
            let validated = post(router, "/validate", body.clone()).await;
            let mutated = post(router, "/mutate", body).await;
            (validated, mutated)
        });
        let took = took.elapsed();
        *running.lock().unwrap() = None;
        run.fetch_add(1, Ordering::Relaxed);
        {
            let mut slowest = slowest.lock().unwrap();
            if took > slowest.0 {
                *slowest = (took, Some(case.clone()));
            }
        }
        prop_assert!(took < CASE_LIMIT, "the case took {:?}", took);
        let ((status, answer), (patch_status, patch_answer)) = answers;
        let validated = check("/validate", status, &answer, object.as_ref(), case.kind, &tally)?;
        let stored = check(
            "/mutate",
            patch_status,
            &patch_answer,
            object.as_ref(),
            case.kind,
            &tally,
        )?;
        match (validated, stored) {
            (Some(_), Some(stored)) if judged_as_stored => {
                within_platform_limits(case.kind, &stored)?;
                loops_take(case.kind, &stored, &tally)?
            }
            (Some(_), Some(_)) => {
                tally.unstorable.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        Ok(())
    });
    let elapsed = started.elapsed();
    finished.store(true, Ordering::Relaxed);
    watchdog.join().unwrap();

    let run = run.into_inner();
    let (slowest, slowest_case) = slowest.into_inner().unwrap();
    println!(
        "fuzz: {run} cases ({} requests) in {elapsed:.1?}, {:.0} cases/s, slowest case {slowest:?}, seed {seed} (FUZZ_SEED={seed} replays it)",
        2 * run,
        run as f64 / elapsed.as_secs_f64(),
    );
    if let Some(case) = slowest_case {
        println!("fuzz: the slowest case: {case:?}");
    }
    println!(
        "fuzz: {} answers were a 4xx, {} patches, {} admitted objects built and decided ({} more no API server would store or send)",
        tally.refused.load(Ordering::Relaxed),
        tally.patched.load(Ordering::Relaxed),
        tally.built.load(Ordering::Relaxed),
        tally.unstorable.load(Ordering::Relaxed)
    );
    for (i, kind) in KINDS.iter().enumerate() {
        println!(
            "fuzz: {kind}: {} allowed, {} denied",
            tally.allowed[i].load(Ordering::Relaxed),
            tally.denied[i].load(Ordering::Relaxed)
        );
    }
    if let Err(error) = result {
        panic!("fuzz: a case failed (FUZZ_SEED={seed} replays the run): {error}");
    }
    // The mutations must leave enough intact for the rules to be reached, both ways.
    if cases >= 1_000 {
        for (i, kind) in KINDS.iter().enumerate() {
            assert!(
                tally.allowed[i].load(Ordering::Relaxed) > 0 && tally.denied[i].load(Ordering::Relaxed) > 0,
                "no {kind} was both allowed and denied: the mutations hide the rules"
            );
        }
    }
}
