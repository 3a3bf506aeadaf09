//! The Lease itself: watched, and written only by conditional requests, as [`decide`] says.
//!
//! Every write carries the resourceVersion last seen (a create carries none, and fails if
//! another replica created the lease first), so two replicas can never both win the same
//! version of the lease. The watch keeps the replicas' view current without polling: a
//! released lease is seen, and taken, within the latency of a watch event.

use std::time::{Duration, Instant};

use flink_operator_controller::fence::Fence;
use futures::StreamExt;
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::watch;

use super::{
    LeaderMetrics,
    decide::{Decision, Memory, Record, Timing, decide},
};

/// One replica's part in the election of one Lease.
pub struct Elector {
    /// The Leases of the operator's namespace.
    pub api: Api<Lease>,
    /// The Lease's name.
    pub name: String,
    /// This replica's identity, unique per process.
    pub identity: String,
    /// The durations.
    pub timing: Timing,
    /// Where leadership is shown.
    pub metrics: LeaderMetrics,
    /// What every action of the controllers checks: open until the renew deadline of the
    /// last renewal that succeeded.
    pub fence: Fence,
}

/// What a write did.
enum Written {
    /// The lease as stored after the write.
    Stored(Box<Lease>),
    /// Another write won, or the lease appeared or vanished meanwhile: the watch brings it.
    Lost,
    /// The request failed or took too long.
    Failed(String),
}

impl Elector {
    /// Takes part until `release` turns true, telling through `leading` whether this
    /// replica may act. Then gives the lease up if it holds it, so that another replica
    /// takes over at once instead of after a lease duration: call it only once this
    /// replica has stopped acting.
    pub async fn run(self, leading: watch::Sender<bool>, mut release: watch::Receiver<bool>) {
        let selector = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        let mut events = std::pin::pin!(watcher(self.api.clone(), selector).default_backoff());
        let mut memory = Memory::new();
        // The lease as last seen; `known` once the first list has answered whether it exists.
        let mut current: Option<Lease> = None;
        let mut listing: Option<Lease> = None;
        let mut known = false;
        loop {
            let now = Instant::now();
            let decision = if known {
                decide(
                    &memory,
                    record(current.as_ref()).as_ref(),
                    &self.identity,
                    now,
                    &self.timing,
                )
            } else {
                Decision::Wait {
                    until: now + self.timing.retry_period,
                }
            };
            match decision {
                Decision::Wait { until } => {
                    tokio::select! {
                        biased;
                        () = released(&mut release) => break,
                        event = events.next() => match event {
                            Some(Ok(watcher::Event::Init)) => listing = None,
                            Some(Ok(watcher::Event::InitApply(lease))) => listing = Some(lease),
                            Some(Ok(watcher::Event::InitDone)) => {
                                current = listing.take();
                                known = true;
                            }
                            Some(Ok(watcher::Event::Apply(lease))) => {
                                if !older(&lease, current.as_ref()) {
                                    current = Some(lease);
                                }
                            }
                            Some(Ok(watcher::Event::Delete(_))) => current = None,
                            Some(Err(error)) => {
                                tracing::warn!(lease = %self.name, %error, "watching the leader-election Lease failed; retrying");
                            }
                            None => break,
                        },
                        () = tokio::time::sleep_until(until.into()) => {}
                    }
                    if known {
                        memory.saw(record(current.as_ref()).as_ref(), Instant::now());
                    }
                }
                Decision::Create | Decision::Take | Decision::Renew => {
                    let sent = Instant::now();
                    memory.attempted(sent);
                    // A leader's write may take until its deadline, no longer: past it, it
                    // must stop acting whatever the answer would have been. The deadline
                    // counts from the last renewal that succeeded, not from this attempt.
                    let limit = match (decision, self.fence.remaining()) {
                        (Decision::Renew, Some(left)) => left.min(self.timing.renew_deadline),
                        _ => self.timing.renew_deadline,
                    }
                    .max(Duration::from_millis(1));
                    let written = match decision {
                        Decision::Create => self.create(limit).await,
                        Decision::Take => self.take(current.as_ref(), limit).await,
                        _ => self.renew(current.as_ref(), limit).await,
                    };
                    match written {
                        Written::Stored(lease) => {
                            current = Some(*lease);
                            memory.saw(record(current.as_ref()).as_ref(), Instant::now());
                            memory.renewed(sent);
                            self.fence.hold_until(sent + self.timing.renew_deadline);
                            if !*leading.borrow() {
                                tracing::info!(lease = %self.name, identity = %self.identity, "this replica leads now");
                                self.metrics.leading(true);
                                let _ = leading.send(true);
                            }
                        }
                        Written::Lost => {
                            tracing::debug!(lease = %self.name, ?decision, "another write to the Lease came first");
                        }
                        Written::Failed(error) => {
                            tracing::warn!(lease = %self.name, ?decision, %error, "writing the leader-election Lease failed");
                        }
                    }
                }
                Decision::StepDown => {
                    self.fence.close();
                    memory.stepped_down();
                    let holder = record(current.as_ref()).and_then(|r| r.holder().map(str::to_owned));
                    tracing::warn!(
                        lease = %self.name,
                        holder = holder.as_deref().unwrap_or("nobody"),
                        "this replica can no longer prove it holds the Lease: it stops acting"
                    );
                    self.metrics.leading(false);
                    let _ = leading.send(false);
                }
            }
        }
        self.fence.close();
        if memory.leading() {
            self.metrics.leading(false);
            let _ = leading.send(false);
            match self.release(current.as_ref()).await {
                Written::Stored(_) => tracing::info!(lease = %self.name, "released the Lease"),
                Written::Lost | Written::Failed(_) => tracing::warn!(
                    lease = %self.name,
                    "could not release the Lease: another replica takes over once it expires"
                ),
            }
        }
    }

    async fn create(&self, limit: Duration) -> Written {
        let now = MicroTime(Timestamp::now());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(whole_seconds(self.timing.lease_duration)),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        self.write(limit, self.api.create(&PostParams::default(), &lease))
            .await
    }

    async fn take(&self, current: Option<&Lease>, limit: Duration) -> Written {
        let Some(mut lease) = current.cloned() else {
            return Written::Lost;
        };
        let now = MicroTime(Timestamp::now());
        let spec = lease.spec.get_or_insert_with(Default::default);
        let holder_changes = spec.holder_identity.as_deref() != Some(&self.identity);
        if holder_changes {
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.lease_duration_seconds = Some(whole_seconds(self.timing.lease_duration));
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        self.replace(lease, limit).await
    }

    async fn renew(&self, current: Option<&Lease>, limit: Duration) -> Written {
        let Some(mut lease) = current.cloned() else {
            return Written::Lost;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_duration_seconds = Some(whole_seconds(self.timing.lease_duration));
        self.replace(lease, limit).await
    }

    /// Gives the lease up: no holder, so that the next replica need not wait.
    async fn release(&self, current: Option<&Lease>) -> Written {
        let Some(mut lease) = current.cloned() else {
            return Written::Lost;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(&self.identity) {
            return Written::Lost;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        self.replace(lease, self.timing.retry_period).await
    }

    /// A replace carries the resourceVersion of `lease`: it fails if anyone wrote since.
    async fn replace(&self, lease: Lease, limit: Duration) -> Written {
        self.write(
            limit,
            self.api.replace(&self.name, &PostParams::default(), &lease),
        )
        .await
    }

    async fn write(
        &self,
        limit: Duration,
        request: impl Future<Output = Result<Lease, kube::Error>>,
    ) -> Written {
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(lease)) => Written::Stored(Box::new(lease)),
            Ok(Err(kube::Error::Api(status))) if status.code == 409 => Written::Lost,
            Ok(Err(kube::Error::Api(status))) if status.code == 404 => Written::Lost,
            Ok(Err(error)) => Written::Failed(error.to_string()),
            Err(_) => Written::Failed(format!("no answer within {limit:?}")),
        }
    }
}

/// Resolves once the lease is to be given up (the guard is not kept across awaits).
async fn released(release: &mut watch::Receiver<bool>) {
    let _ = release.wait_for(|release| *release).await;
}

/// The parts of `lease` that the decision reads.
fn record(lease: Option<&Lease>) -> Option<Record> {
    let lease = lease?;
    let spec = lease.spec.clone().unwrap_or_default();
    Some(Record {
        holder: spec.holder_identity,
        lease_duration: spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs),
        renew_time: spec.renew_time.map(|t| t.0.to_string()),
        acquire_time: spec.acquire_time.map(|t| t.0.to_string()),
        transitions: spec.lease_transitions.unwrap_or(0),
    })
}

/// Whether a watched `lease` is older than the one already known (the answer to our own
/// write can arrive before the watch event of an earlier one).
fn older(lease: &Lease, known: Option<&Lease>) -> bool {
    let version = |l: &Lease| l.metadata.resource_version.as_deref()?.parse::<u64>().ok();
    match (version(lease), known.and_then(version)) {
        (Some(seen), Some(known)) => seen < known,
        _ => false,
    }
}

/// A duration in whole seconds, rounded up (the Lease counts in seconds).
fn whole_seconds(duration: Duration) -> i32 {
    let secs = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn lease(version: &str, holder: Option<&str>) -> Lease {
        Lease {
            metadata: ObjectMeta {
                resource_version: Some(version.to_owned()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                lease_duration_seconds: Some(15),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn an_event_older_than_the_known_lease_is_ignored() {
        assert!(older(&lease("7", None), Some(&lease("9", None))));
        assert!(!older(&lease("9", None), Some(&lease("9", None))));
        assert!(!older(&lease("10", None), Some(&lease("9", None))));
        assert!(!older(&lease("x", None), Some(&lease("9", None))));
        assert!(!older(&lease("7", None), None));
    }

    #[test]
    fn the_record_reads_holder_and_promised_duration() {
        let record = record(Some(&lease("1", Some("a")))).unwrap();
        assert_eq!(record.holder(), Some("a"));
        assert_eq!(record.lease_duration, Some(Duration::from_secs(15)));
        assert!(super::record(None).is_none());
    }

    #[test]
    fn durations_are_rounded_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
    }
}
