//! Polling the certificate files and reloading them when they change.
//!
//! Polling is deliberate. Kubernetes updates a mounted Secret by writing a new
//! timestamped directory and atomically re-pointing the `..data` symlink; the files
//! we were given are symlinks through it and are never written themselves, so
//! inotify-style watchers on them (or on their directory) often miss the update.
//! `stat` follows the symlinks and sees the new files whatever the mechanism.

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tracing::Instrument;

use crate::reload::ReloadingCertResolver;

/// What `stat` says about a file; any difference triggers a reload, which then
/// compares the actual contents.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// A rename-into-place (as done by this crate and by the kubelet) always gives a
    /// new inode, even when length and a coarse mtime happen to stay the same.
    #[cfg(unix)]
    inode: u64,
}

impl FileStamp {
    /// `None` when the file is missing or unreadable; its reappearance then counts as
    /// a change.
    fn of(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(&metadata),
        })
    }
}

type Stamps = (Option<FileStamp>, Option<FileStamp>);

impl ReloadingCertResolver {
    /// Checks the certificate and key files every `interval` and calls
    /// [`reload`](Self::reload) when either looks changed.
    ///
    /// Logs an `info` event with the new serial and expiry after each reload and a
    /// `warn` event when reloading fails (the old certificate keeps being served).
    /// The task holds only a weak reference: it ends by itself once the resolver and
    /// every server config using it are dropped, or when the returned handle is
    /// aborted.
    ///
    /// # Panics
    ///
    /// If called outside a tokio runtime, or if `interval` is zero.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> JoinHandle<()> {
        let resolver = Arc::downgrade(self);
        let span = tracing::info_span!(
            "cert_watcher",
            cert = %self.cert_path.display(),
            key = %self.key_path.display(),
        );
        // Taken now rather than in the task, so a change made right after this call
        // is not mistaken for the starting state.
        let stamps = self.stamps();
        tokio::spawn(watch(resolver, interval, stamps).instrument(span))
    }

    fn stamps(&self) -> Stamps {
        (FileStamp::of(&self.cert_path), FileStamp::of(&self.key_path))
    }
}

async fn watch(weak: Weak<ReloadingCertResolver>, interval: Duration, mut last: Stamps) {
    let mut ticker = tokio::time::interval(interval);
    // After a stall, one check is enough; a burst of catch-up checks would find
    // nothing new.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick completes immediately and the state was just captured.
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(resolver) = weak.upgrade() else {
            tracing::debug!("resolver dropped, stopping");
            return;
        };
        // Two stats and, rarely, two small reads from a local volume: cheaper than a
        // hop to the blocking thread pool.
        let stamps = resolver.stamps();
        if stamps == last {
            continue;
        }
        // Remember the state from before the read: if the files change again while
        // being read, the next tick sees a difference and reloads once more.
        last = stamps;
        match resolver.reload() {
            Ok(true) => match resolver.current_summary() {
                Some(summary) => tracing::info!(
                    serial = %summary.serial,
                    not_after = %summary.not_after,
                    "reloaded TLS certificate"
                ),
                None => tracing::info!("reloaded TLS certificate"),
            },
            Ok(false) => tracing::debug!("certificate files touched but unchanged"),
            Err(error) => tracing::warn!(
                error = &error as &(dyn std::error::Error + 'static),
                "reloading TLS certificate failed, still serving the previous one"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::CertificateDer;

    use super::*;
    use crate::CertPaths;
    use crate::test_support::{
        TempDir, assert_echoes, client_trusting, connect, first_cert, localhost_certs, peer_leaf,
        start_echo_server,
    };

    const POLL: Duration = Duration::from_millis(20);

    fn served_leaf(resolver: &ReloadingCertResolver) -> Option<CertificateDer<'static>> {
        resolver.current().cert.first().cloned()
    }

    /// Waits up to a few seconds, far more than the handful of poll intervals a
    /// reload should take, for the resolver to serve `expected`.
    async fn wait_until_served(resolver: &ReloadingCertResolver, expected: &CertificateDer<'_>) {
        for _ in 0..250 {
            if served_leaf(resolver).as_ref() == Some(expected) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
        panic!("watcher did not pick up the new certificate");
    }

    #[tokio::test]
    async fn watcher_serves_rewritten_files_to_new_handshakes_and_keeps_open_connections() {
        let dir = TempDir::new();
        let old = localhost_certs();
        old.write_to_dir(dir.path()).expect("write old");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load");
        let server = start_echo_server(resolver.server_config().expect("config")).await;
        let watcher = resolver.spawn_watcher(POLL);

        let mut established = connect(&client_trusting(&old.ca_pem), server.addr, "localhost")
            .await
            .expect("handshake with the old certificate");

        let new = localhost_certs();
        new.write_to_dir(dir.path()).expect("write new");
        wait_until_served(&resolver, &first_cert(&new.cert_pem)).await;

        let fresh = connect(&client_trusting(&new.ca_pem), server.addr, "localhost")
            .await
            .expect("handshake with the new certificate");
        assert_eq!(peer_leaf(&fresh), first_cert(&new.cert_pem));
        assert_echoes(&mut established, b"still here").await;
        watcher.abort();
    }

    #[tokio::test]
    async fn watcher_keeps_the_old_certificate_while_the_files_are_broken_and_recovers() {
        let dir = TempDir::new();
        let old = localhost_certs();
        old.write_to_dir(dir.path()).expect("write old");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load");
        let watcher = resolver.spawn_watcher(POLL);

        std::fs::write(&paths.key, b"not a key").expect("break key");
        tokio::time::sleep(POLL * 5).await;
        assert_eq!(served_leaf(&resolver), Some(first_cert(&old.cert_pem)));

        let new = localhost_certs();
        new.write_to_dir(dir.path()).expect("repair");
        wait_until_served(&resolver, &first_cert(&new.cert_pem)).await;
        watcher.abort();
    }

    /// Mimics the kubelet: files live in a timestamped directory, reached through a
    /// `..data` symlink that is swapped atomically, and the visible names are
    /// symlinks through `..data` whose own metadata never changes.
    #[cfg(unix)]
    #[tokio::test]
    async fn watcher_notices_a_kubernetes_style_symlink_swap() {
        use std::os::unix::fs::symlink;

        let dir = TempDir::new();
        let root = dir.path();
        let old = localhost_certs();
        old.write_to_dir(&root.join("..2026_01_01")).expect("write old");
        symlink("..2026_01_01", root.join("..data")).expect("link ..data");
        for name in [crate::CERT_FILE, crate::KEY_FILE] {
            symlink(Path::new("..data").join(name), root.join(name)).expect("link file");
        }
        let paths = CertPaths::in_dir(root);
        let resolver = ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load");
        let watcher = resolver.spawn_watcher(POLL);

        let new = localhost_certs();
        new.write_to_dir(&root.join("..2026_02_01")).expect("write new");
        symlink("..2026_02_01", root.join("..data_tmp")).expect("link tmp");
        std::fs::rename(root.join("..data_tmp"), root.join("..data")).expect("swap ..data");

        wait_until_served(&resolver, &first_cert(&new.cert_pem)).await;
        watcher.abort();
    }

    #[tokio::test]
    async fn watcher_stops_by_itself_once_the_resolver_is_dropped() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load");
        let config = resolver.server_config().expect("config");
        let watcher = resolver.spawn_watcher(POLL);

        // The server config holds the resolver too; both must go.
        drop(config);
        drop(resolver);
        tokio::time::timeout(Duration::from_secs(5), watcher)
            .await
            .expect("watcher ended")
            .expect("watcher did not panic");
    }
}
