//! A proxy between an operator and the API server that holds chosen requests back: a slow
//! list, a Lease renewal that never gets through. Every request is forwarded as the test's
//! client (its credentials, its TLS) and recorded with the time it arrived.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Body, extract::State, http::Request, response::Response};
use kube::Client;

/// What the proxy does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Pass,
    /// Forwarded after this long.
    Delay(Duration),
    /// Never answered (the client gives up).
    Stall,
}

/// One request that reached the proxy.
#[derive(Clone, Debug)]
pub struct Seen {
    pub at: Instant,
    pub method: String,
    /// Path and query.
    pub path: String,
}

impl Seen {
    pub fn is_watch(&self) -> bool {
        self.path.contains("watch=true") || self.path.contains("watch=1")
    }

    pub fn is_write(&self) -> bool {
        !matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS")
    }

    /// The path without the query.
    pub fn resource_path(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }
}

type Rule = dyn Fn(&str, &str) -> Hold + Send + Sync;
/// What every forwarded request shares: the upstream client, the record, the rule.
type Shared = (Client, Arc<Mutex<Vec<Seen>>>, Arc<Mutex<Arc<Rule>>>);

pub struct ApiProxy {
    pub address: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    rule: Arc<Mutex<Arc<Rule>>>,
}

impl ApiProxy {
    /// Starts a proxy to `client`'s API server that applies `rule` (method, path and query)
    /// to every request.
    pub async fn start(client: Client, rule: impl Fn(&str, &str) -> Hold + Send + Sync + 'static) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let address = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let rule: Arc<Mutex<Arc<Rule>>> = Arc::new(Mutex::new(Arc::new(rule)));
        let router = axum::Router::new()
            .fallback(forward)
            .with_state((client, seen.clone(), rule.clone()));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { address, seen, rule }
    }

    /// Replaces the rule for the requests that come from now on.
    pub fn set_rule(&self, rule: impl Fn(&str, &str) -> Hold + Send + Sync + 'static) {
        *self.rule.lock().unwrap() = Arc::new(rule);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A kubeconfig in `dir` that reaches the API server through this proxy.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("kubeconfig");
        let address = self.address;
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: http://{address}\n\
                 users:\n- name: proxy\n  user: {{}}\ncontexts:\n- name: proxy\n  context:\n    cluster: proxy\n    \
                 user: proxy\ncurrent-context: proxy\n"
            ),
        )
        .unwrap();
        path
    }
}

async fn forward(State((client, seen, rule)): State<Shared>, request: Request<Body>) -> Response {
    let method = request.method().to_string();
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        at: Instant::now(),
        method: method.clone(),
        path: path.clone(),
    });
    let hold = {
        let rule = rule.lock().unwrap().clone();
        rule(&method, &path)
    };
    match hold {
        Hold::Pass => {}
        Hold::Delay(delay) => tokio::time::sleep(delay).await,
        Hold::Stall => std::future::pending::<()>().await,
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let mut upstream = http::Request::builder().method(parts.method).uri(path);
    for (name, value) in &parts.headers {
        if name != http::header::HOST && name != http::header::AUTHORIZATION {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = upstream.body(kube::client::Body::from(bytes.to_vec())).unwrap();
    match client.send(upstream).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(body))
        }
        Err(error) => Response::builder()
            .status(502)
            .body(Body::from(error.to_string()))
            .unwrap(),
    }
}
