//! ADVANCED hand-overs: the gates handing over between the old and the new child, the
//! refusals of a spec that cannot hand over record by record, and what an abort does to the
//! coordination map and the survivor.

use super::*;

/// ADVANCED, the new child `to` started next to the old one (`old`, `new`): once it is
/// stable the gates hand over (stage TRANSITIONING, bounded by the gate timeout); once every
/// gate subtask of the old job handed over, the old job is stopped with a savepoint (so that
/// its sinks commit what it wrote) and then deleted.
pub(super) fn handing_over(
    input: &Input,
    mut status: Status,
    to: Colour,
    (old, new): (Option<&Child>, &Child),
    ready_at: Option<i64>,
) -> BlueGreenPlan {
    let from = to.other();
    let transition = input.transition_of(new);
    let incoming = Named {
        colour: to,
        transition_id: transition.clone(),
    };
    let Some(old) = old else {
        // The first child: alone, it writes everything once it runs.
        if new.is_ready() {
            return finished(input, status, to, new, OldChildDeletion::default());
        }
        return deploying(input, status, from, new);
    };
    let standby = Named {
        colour: from,
        transition_id: input.transition_of(old),
    };
    if ready_at.is_none() {
        if !new.is_ready() {
            return deploying(input, status, from, new);
        }
        status.deployment_ready_timestamp = Some(timestamp(input.now()));
        status.abort_timestamp = Some(timestamp(input.now() + input.policy.gate_timeout_ms()));
        status.job_status = Some(job_state(FlinkJobState::Reconciling));
        let map = input.gate_map(&transition, GateStage::Transitioning, incoming, Some(standby));
        let note = format!(
            "{} is running and stable: the gates of both jobs hand over at a toggle in event time, set by \
             the gate of {}",
            input.child_name(to),
            input.child_name(from)
        );
        return plan(
            status,
            input.gate_write(map).into_iter().collect(),
            vec![EventNote::normal(Reason::BlueGreenHandOverStarted, note)],
            input.poll(),
        );
    }
    if is_suspended(&old.spec) {
        // The old job is being stopped with a savepoint (this loop suspended it once its
        // gates handed over): it is deleted once it stopped.
        let stopped = old.lifecycle == Some(ResourceLifecycleState::Suspended)
            || old
                .job_state()
                .is_some_and(|s| *s == FlinkJobState::Suspended || s.is_globally_terminal());
        if stopped {
            let deletion = OldChildDeletion {
                actions: vec![Action::DeleteChild { colour: from }],
                status_before: None,
            };
            return finished(input, status, to, new, deletion);
        }
        return plan(status, Vec::new(), Vec::new(), input.poll());
    }
    let toggle = input.toggle();
    let waiting = match &input.obs.hand_over {
        HandOver::Done => {
            let mut spec = old.spec.clone();
            if let Some(job) = spec.job.as_mut() {
                job.state = Some(JobState::Suspended);
                job.upgrade_mode = Some(UpgradeMode::Savepoint);
            }
            let at = toggle.map_or_else(String::new, |t| format!(" at toggle {}", timestamp(t)));
            let note = format!(
                "Every gate subtask of {} handed over{at}: stopping it with a savepoint so that its sinks \
                 commit what it wrote",
                input.child_name(from)
            );
            status.error = None;
            return plan(
                status,
                vec![Action::UpdateChild { colour: from, spec }],
                vec![EventNote::normal(Reason::BlueGreenHandedOver, note)],
                input.poll(),
            );
        }
        HandOver::NoGate => Some(format!(
            "the job of {} reports no record gate (gauge {}): add the blue/green gate in front of its sink",
            input.child_name(from),
            gate::HAND_OVER_GAUGE
        )),
        HandOver::Unknown(why) => Some(format!(
            "the gates of {} could not be asked: {why}",
            input.child_name(from)
        )),
        HandOver::Pending(minima) => Some(format!(
            "not every gate subtask of {} handed over (minimum per gate: {minima:?}; toggle {})",
            input.child_name(from),
            toggle.map_or_else(|| "not set yet".to_owned(), timestamp)
        )),
        HandOver::NotAsked => None,
    };
    if input.past_abort_deadline() {
        let why = format!(
            "{} within {} ({})",
            "the hand-over did not complete",
            duration_text(input.policy.gate_timeout_ms()),
            waiting.unwrap_or_else(|| "the old job was not asked".to_owned())
        );
        return aborted(input, from, Some((to, new)), why);
    }
    status.job_status = Some(job_state(FlinkJobState::Reconciling));
    plan(status, Vec::new(), Vec::new(), input.poll())
}

/// Why an ADVANCED resource cannot be deployed, if it cannot.
pub(super) fn advanced_refusal(template: &FlinkDeploymentSpec, policy: &BlueGreenPolicy) -> Option<String> {
    if upgrade_mode(template) == UpgradeMode::Stateless {
        return Some(
            "spec.template.spec.job.upgradeMode: stateless cannot hand over record by record (transitionMode \
             ADVANCED): the new job must start from the old one's savepoint; use savepoint or last-state"
                .to_owned(),
        );
    }
    (policy.gate_timeout_ms() <= policy.deletion_delay_ms).then(|| {
        format!(
            "spec.configuration.{}: {} must be longer than {} ({}): the toggle lies that far after the old \
             job's watermark",
            keys::bluegreen::GATE_TIMEOUT,
            duration_text(policy.gate_timeout_ms()),
            keys::bluegreen::DEPLOYMENT_DELETION_DELAY,
            duration_text(policy.deletion_delay_ms)
        )
    })
}

// === Steps shared by the stages ===

/// ADVANCED: what an abort does besides the new child: the map names the survivor alone
/// (the aborted job's gate, no longer named, drops everything at once), and if the gates had
/// agreed on a toggle (the survivor dropped what came after it, which the aborted job may
/// never have committed), the survivor starts again from the transition savepoint. Returns
/// the actions and, when it redeploys, what the survivor does.
pub(super) fn abort_hand_over(
    input: &Input,
    from: Colour,
    old: &Child,
    new: Option<&Child>,
) -> (Vec<Action>, Option<String>) {
    let current = input
        .obs
        .gate
        .as_ref()
        .and_then(|g| g.map.as_ref())
        .map_or_else(|| input.generation.clone(), |m| m.transition_id.clone());
    let survivor = Named {
        colour: from,
        transition_id: input.transition_of(old),
    };
    let mut actions: Vec<Action> = input
        .gate_write_with(input.gate_map(&current, GateStage::Running, survivor, None), true)
        .into_iter()
        .collect();
    let Some(toggle) = input.toggle() else {
        return (actions, None);
    };
    let savepoint = new.and_then(|n| n.spec.job.as_ref()?.initial_savepoint_path.clone());
    let Some(path) = savepoint else {
        let note = format!(
            "{} keeps running; no transition savepoint is known, so records after the cutover ({}) that the \
             aborted job did not commit are lost",
            input.child_name(from),
            timestamp(toggle)
        );
        return (actions, Some(note));
    };
    let mut spec = old.spec.clone();
    if let Some(job) = spec.job.as_mut() {
        job.initial_savepoint_path = Some(path.clone());
        job.savepoint_redeploy_nonce = Some(job.savepoint_redeploy_nonce.unwrap_or(0) + 1);
    }
    actions.push(Action::UpdateChild { colour: from, spec });
    let note = format!(
        "the gates had handed over at {}, so {} starts again from the transition savepoint {path}: records \
         since that savepoint may be written twice, none is lost",
        timestamp(toggle),
        input.child_name(from)
    );
    (actions, Some(note))
}
