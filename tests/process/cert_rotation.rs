//! Certificate files replaced on disk under load, as the kubelet updates a mounted Secret
//! that cert-manager renewed: the files given with `--tls-cert-file`/`--tls-key-file` are
//! symlinks through `..data`, which is re-pointed at a new directory in one rename. New
//! connections must get the new certificate, without a restart and without one failed
//! request.
//!
//! The two certificates come from two CAs here (`certs generate` makes a CA each time) and
//! the client trusts both, as a caBundle does while a CA is rolled over; with cert-manager's
//! CA issuers the CA stays the same and a single one is trusted. What is under test is the
//! server side: the reload under load.

use std::{
    os::unix::fs::symlink,
    path::Path,
    time::{Duration, Instant},
};

use rustls::pki_types::{CertificateDer, pem::PemObject};

use crate::admission_load::{self, Endpoint, Load, Trust};
use crate::harness::{Operator, TempDir, generate_certs};

/// Writes `from`'s files into a new timestamped directory under `mount` and points `..data`
/// at it atomically, as the kubelet's atomic writer does.
fn publish(mount: &Path, from: &Path, version: &str) {
    let dir = mount.join(format!("..{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["ca.crt", "tls.crt", "tls.key"] {
        std::fs::copy(from.join(file), dir.join(file)).unwrap();
    }
    let tmp = mount.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(format!("..{version}"), &tmp).unwrap();
    std::fs::rename(&tmp, mount.join("..data")).unwrap();
    for file in ["ca.crt", "tls.crt", "tls.key"] {
        let link = mount.join(file);
        if std::fs::symlink_metadata(&link).is_err() {
            symlink(format!("..data/{file}"), &link).unwrap();
        }
    }
}

fn leaf(cert_file: &Path) -> Vec<u8> {
    CertificateDer::from_pem_file(cert_file)
        .unwrap()
        .as_ref()
        .to_vec()
}

fn example() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let doc = serde_yaml::Deserializer::from_str(&text).next().unwrap();
    let mut value: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
    value["metadata"]["namespace"] = serde_json::json!("default");
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_files_replaced_under_load_are_served_to_new_connections_without_a_failed_request() {
    let work = TempDir::new("rotation");
    let (old, new, mount) = (work.0.join("old"), work.0.join("new"), work.0.join("mount"));
    generate_certs(&old);
    generate_certs(&new);
    publish(&mount, &old, "2026_01_01_00_00_00.1");
    let mut operator = Operator::start_webhook_with(
        &mount.join("tls.crt"),
        &mount.join("tls.key"),
        &work.0,
        &["--cert-reload-interval-secs", "1"],
    );
    operator.wait_ready().await;
    let pid = operator.pid();

    let mut bundle = std::fs::read(old.join("ca.crt")).unwrap();
    bundle.extend(std::fs::read(new.join("ca.crt")).unwrap());
    let trust = Trust::new(&bundle);
    let body = admission_load::review(&example(), "default");
    let load = admission_load::start(Load {
        address: ([127, 0, 0, 1], operator.webhook_port).into(),
        server_name: "localhost".into(),
        endpoints: vec![
            Endpoint {
                path: "/validate",
                body: body.clone(),
                trust: trust.clone(),
            },
            Endpoint {
                path: "/mutate",
                body,
                trust,
            },
        ],
        connections: 16,
        requests_per_connection: 50,
        max_rate: Some(2000.0),
    });

    tokio::time::sleep(Duration::from_secs(3)).await;
    publish(&mount, &new, "2026_01_02_00_00_00.2");
    let swapped = Instant::now();
    let new_leaf = leaf(&new.join("tls.crt"));
    while !load.served().contains(&new_leaf) && swapped.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let picked_up = swapped.elapsed();
    // Long enough for every connection opened before the swap to be replaced.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let report = load.stop().await;
    eprintln!(
        "file rotation under load: {} requests, {} failed, {} handshakes, {:.0} requests/s over {:.1} s; new certificate served {:.1} s after the swap",
        report.sent,
        report.failed,
        report.handshakes,
        report.rate(),
        report.elapsed.as_secs_f64(),
        picked_up.as_secs_f64()
    );

    assert_eq!(operator.pid(), pid);
    assert_eq!(
        report.served,
        vec![leaf(&old.join("tls.crt")), new_leaf.clone()],
        "{}",
        operator.logs()
    );
    assert_eq!(report.failed, 0, "{:#?}\n{}", report.failures, operator.logs());
    assert!(report.sent > 1000, "only {} requests", report.sent);
    // A connection opened now gets the new certificate.
    let last = admission_load::start(Load {
        address: ([127, 0, 0, 1], operator.webhook_port).into(),
        server_name: "localhost".into(),
        endpoints: vec![Endpoint {
            path: "/validate",
            body: admission_load::review(&example(), "default"),
            trust: Trust::new(&std::fs::read(new.join("ca.crt")).unwrap()),
        }],
        connections: 1,
        requests_per_connection: 1,
        max_rate: None,
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let last = last.stop().await;
    assert_eq!(last.served, vec![new_leaf]);
    assert_eq!(last.failed, 0, "{:?}", last.failures);
    let status = operator.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status}");
}
