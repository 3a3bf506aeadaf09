//! JobManager hosts that stopped answering: their calls fail at once for a while.
//!
//! A JobManager that accepts connections and never answers costs every call to it a whole
//! timeout (10 s by default), and a reconcile waiting on it holds one of the kind's workers
//! all that time. Many resources against one such host (sixty session jobs of one frozen
//! session cluster) would hold many workers. So once a call to a host has timed out, the
//! calls to that host fail at once with [`FlinkError::HeldBack`](super::FlinkError) for a
//! hold-back window: the client's timeout at first, doubled at each timeout in a row, at most
//! [`MAX_HOLD_BACK`] (or the timeout, if longer). After the window one call goes through (the
//! others are still held back while it is under way): an answer of any kind ends the hold-back,
//! another timeout starts a longer window.
//!
//! A held-back call is reported as the JobManager not answering, as a timeout would be. The
//! callers that count unanswered looks in a row do not count a look whose calls were all held
//! back after the host's first timeout (see [`super::FlinkRestClient::only_held_back`]), so
//! holding back never decides more than the timeout it stands for. Once the host has timed out
//! twice in a row (the call let through after a window timed out too), a held-back call stands
//! for a host that did not answer across a whole window, and counts as unanswered: otherwise,
//! with many resources on one host, the call let through after each window would nearly always
//! be another resource's, and the cluster itself would never be found not answering.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// The longest hold-back window (unless the client's timeout is longer).
pub const MAX_HOLD_BACK: Duration = Duration::from_secs(60);

/// The hold-back window after `timeouts` timeouts in a row of calls with `timeout`.
/// How long after its window ended a host's record is kept when no call comes: far longer
/// than any look's interval, so a host still looked at keeps its count of timeouts in a row.
pub const FORGOTTEN_AFTER: Duration = Duration::from_secs(30 * 60);

pub fn window(timeouts: u32, timeout: Duration) -> Duration {
    let cap = MAX_HOLD_BACK.max(timeout);
    let doublings = timeouts.saturating_sub(1).min(16);
    timeout.checked_mul(1 << doublings).map_or(cap, |w| w.min(cap))
}

/// What a host's record says of a call about to be sent.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Send it (`probe`: the first call after a hold-back window, the only one let through
    /// until it ends).
    Send { probe: bool },
    /// Fail it at once: the host did not answer within `timeout` lately; calls are let through
    /// again in `retry_in`. `again`: it timed out twice in a row or more (the call let through
    /// after a window timed out too), so the call counts as one that got no answer.
    HeldBack {
        timeout: Duration,
        retry_in: Duration,
        again: bool,
    },
}

#[derive(Debug, Clone, Copy)]
struct Record {
    /// Timeouts in a row.
    timeouts: u32,
    /// The timeout the last one had.
    timeout: Duration,
    /// Until when calls are held back.
    until: Instant,
    /// Whether a call let through after the window is under way.
    probing: bool,
}

/// The hosts that did not answer lately, by `host:port`. Only hosts whose last call timed out
/// have a record: one that answers again is forgotten.
#[derive(Debug, Default)]
pub struct Hosts {
    records: Mutex<HashMap<String, Record>>,
}

impl Hosts {
    /// Whether a call to `host` is sent at `now`.
    pub fn admit(&self, host: &str, now: Instant) -> Admission {
        let mut records = self.lock();
        let Some(record) = records.get_mut(host) else {
            return Admission::Send { probe: false };
        };
        let again = record.timeouts >= 2;
        if now < record.until {
            return Admission::HeldBack {
                timeout: record.timeout,
                retry_in: record.until - now,
                again,
            };
        }
        if record.probing {
            // Held back while the call let through is under way: at most its timeout.
            return Admission::HeldBack {
                timeout: record.timeout,
                retry_in: record.timeout,
                again,
            };
        }
        record.probing = true;
        Admission::Send { probe: true }
    }

    /// A call to `host` got an answer, or failed otherwise than by timing out (the host does
    /// not hang): calls to it are sent again.
    pub fn answered(&self, host: &str) {
        let mut records = self.lock();
        if !records.is_empty() {
            records.remove(host);
        }
    }

    /// A call to `host` with `timeout` timed out at `now`: calls to it are held back. Calls
    /// that were under way together time out together: only one outside a window counts.
    pub fn timed_out(&self, host: &str, timeout: Duration, now: Instant) {
        let mut records = self.lock();
        // A host that is not called again (its cluster deleted while it hung) is forgotten
        // once its window is long over, so the records do not grow with every host that
        // ever hung.
        records.retain(|_, r| now.saturating_duration_since(r.until) < FORGOTTEN_AFTER);
        let record = records.entry(host.to_owned()).or_insert(Record {
            timeouts: 0,
            timeout,
            until: now,
            probing: false,
        });
        if now >= record.until {
            record.timeouts = record.timeouts.saturating_add(1);
            record.timeout = timeout;
            record.until = now + window(record.timeouts, timeout);
        }
        record.probing = false;
    }

    /// The call let through after a window to `host` ended without an outcome (it was
    /// dropped): the next call is let through instead.
    pub fn probe_dropped(&self, host: &str) {
        if let Some(record) = self.lock().get_mut(host) {
            record.probing = false;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Record>> {
        // Each update is a few field writes: a panic cannot leave a record half-written.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The call let through after a hold-back window: if it is dropped before its outcome is
/// recorded (its reconcile was cancelled), the host does not stay held back for good.
pub struct Probe<'a> {
    hosts: &'a Hosts,
    host: &'a str,
    armed: bool,
}

impl<'a> Probe<'a> {
    pub fn new(hosts: &'a Hosts, host: &'a str, probe: bool) -> Self {
        Self {
            hosts,
            host,
            armed: probe,
        }
    }

    /// The call's outcome was recorded.
    pub fn settled(mut self) {
        self.armed = false;
    }
}

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.hosts.probe_dropped(self.host);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_window_starts_at_the_timeout_and_doubles_up_to_a_minute() {
        for (timeouts, timeout, expected) in [
            (1, 10 * S, 10 * S),
            (2, 10 * S, 20 * S),
            (3, 10 * S, 40 * S),
            (4, 10 * S, 60 * S),
            (40, 10 * S, 60 * S),
            (1, Duration::from_millis(500), Duration::from_millis(500)),
            (3, Duration::from_millis(500), 2 * S),
            // A timeout longer than the cap is the window.
            (1, 120 * S, 120 * S),
            (5, 120 * S, 120 * S),
        ] {
            assert_eq!(
                window(timeouts, timeout),
                expected,
                "{timeouts} timeouts of {timeout:?}"
            );
        }
    }

    #[test]
    fn a_host_that_timed_out_is_held_back_then_probed_by_one_call() {
        let hosts = Hosts::default();
        let t0 = Instant::now();
        assert_eq!(hosts.admit("jm:8081", t0), Admission::Send { probe: false });
        hosts.timed_out("jm:8081", 10 * S, t0);
        // Another host is not affected.
        assert_eq!(hosts.admit("other:8081", t0), Admission::Send { probe: false });
        assert_eq!(
            hosts.admit("jm:8081", t0 + 4 * S),
            Admission::HeldBack {
                timeout: 10 * S,
                retry_in: 6 * S,
                again: false
            }
        );
        // Calls under way together time out together: one timeout in a row.
        hosts.timed_out("jm:8081", 10 * S, t0 + 5 * S);
        assert_eq!(
            hosts.admit("jm:8081", t0 + 5 * S),
            Admission::HeldBack {
                timeout: 10 * S,
                retry_in: 5 * S,
                again: false
            }
        );
        // After the window: one call goes through, the others wait for it.
        let t1 = t0 + 10 * S;
        assert_eq!(hosts.admit("jm:8081", t1), Admission::Send { probe: true });
        assert!(matches!(hosts.admit("jm:8081", t1), Admission::HeldBack { .. }));
        // It times out too: a window twice as long, whose calls count as unanswered.
        hosts.timed_out("jm:8081", 10 * S, t1 + 10 * S);
        assert_eq!(
            hosts.admit("jm:8081", t1 + 10 * S),
            Admission::HeldBack {
                timeout: 10 * S,
                retry_in: 20 * S,
                again: true
            }
        );
        // The next probe is answered: the host is forgotten.
        let t2 = t1 + 30 * S;
        assert_eq!(hosts.admit("jm:8081", t2), Admission::Send { probe: true });
        hosts.answered("jm:8081");
        assert_eq!(hosts.admit("jm:8081", t2), Admission::Send { probe: false });
        assert!(hosts.lock().is_empty());
    }

    #[test]
    fn a_dropped_probe_lets_the_next_call_through() {
        let hosts = Hosts::default();
        let t0 = Instant::now();
        hosts.timed_out("jm:8081", S, t0);
        let Admission::Send { probe } = hosts.admit("jm:8081", t0 + S) else {
            panic!("the window is over")
        };
        drop(Probe::new(&hosts, "jm:8081", probe));
        assert_eq!(hosts.admit("jm:8081", t0 + S), Admission::Send { probe: true });
        // A settled one leaves the record as its outcome wrote it.
        Probe::new(&hosts, "jm:8081", true).settled();
        assert!(matches!(
            hosts.admit("jm:8081", t0 + S),
            Admission::HeldBack { .. }
        ));
    }

    #[test]
    fn a_host_not_called_again_is_forgotten_long_after_its_window() {
        let hosts = Hosts::default();
        let t0 = Instant::now();
        let timeout = Duration::from_secs(10);
        hosts.timed_out("gone:8081", timeout, t0);
        let later = t0 + window(1, timeout) + FORGOTTEN_AFTER;
        hosts.timed_out("other:8081", timeout, later);
        let records = hosts.lock();
        assert!(!records.contains_key("gone:8081"));
        assert!(records.contains_key("other:8081"));
    }
}
