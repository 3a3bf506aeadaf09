#![allow(clippy::unwrap_used)]

use super::*;

const ME: &str = "operator-a";
const OTHER: &str = "operator-b";

fn timing() -> Timing {
    Timing::new(
        Duration::from_secs(15),
        Duration::from_secs(10),
        Duration::from_secs(2),
    )
    .unwrap()
}

fn held_by(holder: &str, renewed: &str) -> Record {
    Record {
        holder: Some(holder.to_owned()),
        lease_duration: Some(Duration::from_secs(15)),
        renew_time: Some(renewed.to_owned()),
        acquire_time: Some("t0".to_owned()),
        transitions: 1,
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn timing_that_could_let_two_replicas_act_is_refused_naming_both_durations() {
    let error = Timing::new(secs(10), secs(10), secs(2)).unwrap_err();
    assert!(matches!(error, TimingError::DeadlineNotBelowDuration { .. }));
    assert!(error.to_string().contains("renew deadline (10s)"), "{error}");
    let error = Timing::new(secs(15), secs(10), secs(10)).unwrap_err();
    assert!(matches!(error, TimingError::RetryNotBelowDeadline { .. }));
    assert_eq!(
        Timing::new(secs(15), secs(10), Duration::ZERO).unwrap_err(),
        TimingError::ZeroRetry
    );
}

#[test]
fn no_lease_is_created_and_a_free_or_own_lease_is_taken() {
    let now = Instant::now();
    let memory = Memory::new();
    assert_eq!(decide(&memory, None, ME, now, &timing()), Decision::Create);
    let mut free = held_by(ME, "t1");
    free.holder = None;
    assert_eq!(decide(&memory, Some(&free), ME, now, &timing()), Decision::Take);
    free.holder = Some(String::new());
    assert_eq!(decide(&memory, Some(&free), ME, now, &timing()), Decision::Take);
    // A write of ours was applied but its answer lost: the lease is ours to take back.
    assert_eq!(
        decide(&memory, Some(&held_by(ME, "t1")), ME, now, &timing()),
        Decision::Take
    );
}

#[test]
fn a_held_lease_is_taken_only_after_a_whole_lease_duration_without_a_change_seen_here() {
    let start = Instant::now();
    let mut memory = Memory::new();
    let lease = held_by(OTHER, "t1");
    memory.saw(Some(&lease), start);
    assert_eq!(
        decide(&memory, Some(&lease), ME, start + secs(14), &timing()),
        Decision::Wait {
            until: start + secs(15)
        }
    );
    // The holder renews at 10 s: the wait starts again from when we saw it.
    let renewed = held_by(OTHER, "t2");
    memory.saw(Some(&renewed), start + secs(10));
    assert_eq!(
        decide(&memory, Some(&renewed), ME, start + secs(20), &timing()),
        Decision::Wait {
            until: start + secs(25)
        }
    );
    // Seeing the same record again does not restart the wait.
    memory.saw(Some(&renewed), start + secs(22));
    assert_eq!(
        decide(&memory, Some(&renewed), ME, start + secs(25), &timing()),
        Decision::Take
    );
}

#[test]
fn the_wall_clock_times_in_the_lease_play_no_part() {
    // A renewTime far in the past (a holder whose clock is behind) does not make the lease
    // look expired to a replica that just saw it change.
    let now = Instant::now();
    let mut memory = Memory::new();
    let lease = held_by(OTHER, "1970-01-01T00:00:00.000000Z");
    memory.saw(Some(&lease), now);
    assert_eq!(
        decide(&memory, Some(&lease), ME, now + secs(1), &timing()),
        Decision::Wait {
            until: now + secs(15)
        }
    );
}

#[test]
fn a_lease_not_yet_recorded_as_seen_starts_its_wait_now() {
    let now = Instant::now();
    let memory = Memory::new();
    let lease = held_by(OTHER, "t1");
    assert_eq!(
        decide(&memory, Some(&lease), ME, now, &timing()),
        Decision::Wait {
            until: now + secs(15)
        }
    );
}

#[test]
fn the_holders_promised_duration_wins_over_ours() {
    let now = Instant::now();
    let mut memory = Memory::new();
    let mut lease = held_by(OTHER, "t1");
    lease.lease_duration = Some(secs(60));
    memory.saw(Some(&lease), now);
    assert_eq!(
        decide(&memory, Some(&lease), ME, now + secs(30), &timing()),
        Decision::Wait {
            until: now + secs(60)
        }
    );
    lease.lease_duration = None;
    memory.saw(Some(&lease), now);
    assert_eq!(
        decide(&memory, Some(&lease), ME, now + secs(15), &timing()),
        Decision::Take
    );
}

#[test]
fn a_leader_renews_every_retry_period_and_steps_down_at_its_deadline() {
    let start = Instant::now();
    let mut memory = Memory::new();
    let lease = held_by(ME, "t1");
    memory.attempted(start);
    memory.renewed(start);
    memory.saw(Some(&lease), start);
    assert!(memory.leading());
    assert_eq!(
        decide(&memory, Some(&lease), ME, start + secs(1), &timing()),
        Decision::Wait {
            until: start + secs(2)
        }
    );
    assert_eq!(
        decide(&memory, Some(&lease), ME, start + secs(2), &timing()),
        Decision::Renew
    );
    // Renewals fail from here on: one try per retry period, then the deadline.
    memory.attempted(start + secs(2));
    assert_eq!(
        decide(&memory, Some(&lease), ME, start + secs(3), &timing()),
        Decision::Wait {
            until: start + secs(4)
        }
    );
    memory.attempted(start + secs(9));
    assert_eq!(
        decide(
            &memory,
            Some(&lease),
            ME,
            start + secs(9) + Duration::from_millis(500),
            &timing()
        ),
        Decision::Wait {
            until: start + secs(10)
        },
        "a leader wakes up at its deadline even when its next try is later"
    );
    assert_eq!(
        decide(&memory, Some(&lease), ME, start + secs(10), &timing()),
        Decision::StepDown
    );
    memory.stepped_down();
    assert!(!memory.leading());
}

#[test]
fn a_leader_that_sees_another_holder_or_no_lease_steps_down_at_once() {
    let start = Instant::now();
    let mut memory = Memory::new();
    memory.renewed(start);
    assert_eq!(
        decide(
            &memory,
            Some(&held_by(OTHER, "t9")),
            ME,
            start + secs(1),
            &timing()
        ),
        Decision::StepDown
    );
    assert_eq!(
        decide(&memory, None, ME, start + secs(1), &timing()),
        Decision::StepDown
    );
    let mut released = held_by(ME, "t1");
    released.holder = None;
    assert_eq!(
        decide(&memory, Some(&released), ME, start + secs(1), &timing()),
        Decision::StepDown
    );
}

#[test]
fn a_candidate_writes_at_most_once_a_retry_period() {
    let start = Instant::now();
    let mut memory = Memory::new();
    memory.attempted(start);
    let mut free = held_by(OTHER, "t1");
    free.holder = None;
    assert_eq!(
        decide(&memory, Some(&free), ME, start + secs(1), &timing()),
        Decision::Wait {
            until: start + secs(2)
        }
    );
    assert_eq!(
        decide(&memory, Some(&free), ME, start + secs(2), &timing()),
        Decision::Take
    );
}

/// The safety property over many interleavings: whenever the candidate decides to take the
/// lease, the leader (renewing successfully up to some point, then failing) has already
/// decided to step down, given that the candidate saw each renewal no earlier than it was
/// sent.
#[test]
fn a_candidate_never_takes_a_lease_while_its_leader_still_acts() {
    let timing = timing();
    let start = Instant::now();
    for last_success in 0..30u64 {
        for delay_ms in [0u64, 1, 250, 1_999, 4_000] {
            let mut leader = Memory::new();
            let mut candidate = Memory::new();
            // The leader renews every 2 s until `last_success`, each write seen by the
            // candidate `delay_ms` later.
            let mut t = 0;
            while t <= last_success {
                let sent = start + secs(t);
                leader.attempted(sent);
                leader.renewed(sent);
                let record = held_by(ME, &format!("t{t}"));
                candidate.saw(Some(&record), sent + Duration::from_millis(delay_ms));
                t += 2;
            }
            let last = held_by(ME, &format!("t{}", t - 2));
            // Step through time in 100 ms: the leader must have stepped down strictly
            // before the first instant the candidate would take.
            let mut stepped_down_at = None;
            for step in 0..600u64 {
                let now = start + secs(last_success) + Duration::from_millis(step * 100);
                if stepped_down_at.is_none()
                    && decide(&leader, Some(&last), ME, now, &timing) == Decision::StepDown
                {
                    stepped_down_at = Some(now);
                }
                if decide(&candidate, Some(&last), OTHER, now, &timing) == Decision::Take {
                    let down = stepped_down_at.expect("the candidate took the lease of an acting leader");
                    assert!(
                        now.duration_since(down) >= timing.lease_duration - timing.renew_deadline,
                        "margin too small: last success {last_success} s, delay {delay_ms} ms"
                    );
                    break;
                }
            }
        }
    }
}
