//! Starting and stopping the operator binary, and talking HTTPS to it.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio::net::TcpStream;

pub const BIN: &str = env!("CARGO_BIN_EXE_flink-operator");

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("flink-operator-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `flink-operator certs generate` into `dir`.
pub fn generate_certs(dir: &Path) {
    let status = Command::new(BIN)
        .args(["certs", "generate", "--out"])
        .arg(dir)
        .args(["--dns", "localhost", "--ip", "127.0.0.1"])
        .status()
        .unwrap();
    assert!(status.success(), "certs generate failed: {status}");
    for file in ["ca.crt", "tls.crt", "tls.key"] {
        assert!(dir.join(file).is_file(), "{file} was not written");
    }
}

/// The operator process; killed on drop if a test ends without stopping it.
pub struct Operator {
    child: Option<Child>,
    pub webhook_port: u16,
    pub probe_port: u16,
    pub log: PathBuf,
}

impl Operator {
    /// Starts `flink-operator run --components webhook` with the certificates in `certs`,
    /// without any Kubernetes API.
    pub fn start_webhook(certs: &Path, work: &Path) -> Self {
        Self::start_webhook_with(&certs.join("tls.crt"), &certs.join("tls.key"), work, &[])
    }

    /// Starts `flink-operator run --components webhook` serving `cert` and `key`, with
    /// `extra` arguments, without any Kubernetes API.
    pub fn start_webhook_with(cert: &Path, key: &Path, work: &Path, extra: &[&str]) -> Self {
        let webhook_port = free_port();
        let probe_port = free_port();
        let log = work.join("operator.log");
        let child = Command::new(BIN)
            .args(["run", "--components", "webhook", "--bind-address", "127.0.0.1"])
            .arg("--tls-cert-file")
            .arg(cert)
            .arg("--tls-key-file")
            .arg(key)
            .args(extra)
            .args([
                "--webhook-port",
                &webhook_port.to_string(),
                "--probe-port",
                &probe_port.to_string(),
            ])
            // No cluster: the kubeconfig does not exist and the in-cluster variables are unset.
            .env("KUBECONFIG", work.join("no-such-kubeconfig"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .env("HOME", work)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Self {
            child: Some(child),
            webhook_port,
            probe_port,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("operator exited early with {status}:\n{}", self.logs());
            }
            if let Ok((StatusCode::OK, _)) = http_get(self.probe_port, "/readyz").await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "operator not ready after 30 s:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(&mut self, within: Duration) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "operator did not exit within {within:?} of SIGTERM:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TLS client trusting only the CA in `ca_file`.
pub fn tls_client(ca_file: &Path) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// POSTs `body` to `path` over HTTPS (verified for `server_name`) and returns status and body.
pub async fn https_post(
    connector: &tokio_rustls::TlsConnector,
    port: u16,
    server_name: &str,
    path: &str,
    body: Vec<u8>,
) -> std::io::Result<(StatusCode, Vec<u8>)> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    let tls = connector.connect(name, tcp).await?;
    let request = Request::post(path)
        .header("host", server_name)
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .unwrap();
    exchange(tls, request).await
}

/// GETs `path` from the plain-HTTP probe port.
pub async fn http_get(port: u16, path: &str) -> std::io::Result<(StatusCode, String)> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let request = Request::get(path)
        .header("host", "localhost")
        .body(Full::new(bytes::Bytes::new()))
        .unwrap();
    let (status, body) = exchange(tcp, request).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Sends one HTTP/1.1 request over `io` and reads the whole answer.
async fn exchange<IO>(io: IO, request: Request<Full<bytes::Bytes>>) -> std::io::Result<(StatusCode, Vec<u8>)>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(conn);
    let response = sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes()
        .to_vec();
    Ok((status, body))
}
