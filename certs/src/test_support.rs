//! Fixtures shared by the tests: a self-removing temporary directory and a real TLS
//! echo server with matching clients.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedProtocolVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::{GeneratedCerts, generate_self_signed};

/// A fresh directory under the system temp dir, removed again on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "flink-operator-certs-test-{}-{nanos}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Certificates for `localhost` and 127.0.0.1, the names the echo server answers on.
pub(crate) fn localhost_certs() -> GeneratedCerts {
    generate_self_signed(&["localhost".to_owned()], &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .expect("generate certs")
}

/// The first certificate in a PEM string.
pub(crate) fn first_cert(pem: &str) -> CertificateDer<'static> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .expect("valid PEM")
}

/// A TLS server on 127.0.0.1 that echoes every byte back; stops accepting on drop.
pub(crate) struct EchoServer {
    pub(crate) addr: SocketAddr,
    accept_loop: JoinHandle<()>,
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

pub(crate) async fn start_echo_server(config: Arc<ServerConfig>) -> EchoServer {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let acceptor = TlsAcceptor::from(config);
    let accept_loop = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // Several tests expect handshakes to fail; the client side checks that.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = tls.read(&mut buf).await {
                    if tls.write_all(&buf[..n]).await.is_err() || tls.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    EchoServer { addr, accept_loop }
}

/// A client that trusts only the CA in `ca_pem`.
pub(crate) fn client_trusting(ca_pem: &str) -> TlsConnector {
    client_with(
        ca_pem,
        rustls::DEFAULT_VERSIONS,
        vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    )
}

pub(crate) fn client_with(
    ca_pem: &str,
    versions: &[&'static SupportedProtocolVersion],
    alpn: Vec<Vec<u8>>,
) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(first_cert(ca_pem)).expect("add root");
    let mut config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    // A resumed session skips the certificate exchange, which is exactly what these
    // tests look at.
    config.resumption = Resumption::disabled();
    config.alpn_protocols = alpn;
    TlsConnector::from(Arc::new(config))
}

/// Connects and completes the handshake, presenting `name` as SNI / for verification.
pub(crate) async fn connect(
    client: &TlsConnector,
    addr: SocketAddr,
    name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let server_name = ServerName::try_from(name.to_owned()).expect("valid server name");
    within_seconds(async {
        let tcp = TcpStream::connect(addr).await?;
        client.connect(server_name, tcp).await
    })
    .await
}

/// The leaf certificate the server presented.
pub(crate) fn peer_leaf(stream: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .expect("server sent a certificate")
        .clone()
        .into_owned()
}

/// Sends `message` and asserts it comes back unchanged.
pub(crate) async fn assert_echoes(stream: &mut TlsStream<TcpStream>, message: &[u8]) {
    let echoed = within_seconds(async {
        stream.write_all(message).await?;
        stream.flush().await?;
        let mut echoed = vec![0; message.len()];
        stream.read_exact(&mut echoed).await?;
        Ok(echoed)
    })
    .await
    .expect("echo round trip");
    assert_eq!(echoed, message);
}

/// Fails (instead of hanging the test run) if `future` takes more than a few seconds.
async fn within_seconds<T>(future: impl Future<Output = std::io::Result<T>>) -> std::io::Result<T> {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("timed out")
}

/// The certificate error behind a failed client handshake, if that is what it was.
pub(crate) fn certificate_error(error: &std::io::Error) -> Option<&rustls::CertificateError> {
    match error.get_ref()?.downcast_ref::<rustls::Error>()? {
        rustls::Error::InvalidCertificate(cert_error) => Some(cert_error),
        _ => None,
    }
}

/// Whether a failed handshake was rejected because the name is not in the certificate.
pub(crate) fn is_wrong_name(error: &std::io::Error) -> bool {
    matches!(
        certificate_error(error),
        Some(
            rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. }
        )
    )
}

/// Whether a failed handshake was rejected because no trusted CA signed the certificate.
///
/// Every generated CA has the same subject, so a client holding a different one finds
/// a CA with the right name and reports the signature, not the issuer, as wrong.
pub(crate) fn is_untrusted(error: &std::io::Error) -> bool {
    matches!(
        certificate_error(error),
        Some(rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature)
    )
}
