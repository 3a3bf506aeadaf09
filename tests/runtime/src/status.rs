//! A pod's status from what its containers are doing (pure; the kubelet's rules for phase,
//! conditions and container states).

use k8s_openapi::{
    api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        ContainerStatus, HostIP, PodCondition, PodIP, PodStatus,
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started_at: Timestamp,
    },
    Terminated {
        exit_code: i32,
        reason: String,
        message: Option<String>,
        started_at: Option<Timestamp>,
        finished_at: Timestamp,
    },
}

impl State {
    pub fn waiting(reason: &str, message: Option<String>) -> Self {
        State::Waiting {
            reason: reason.to_owned(),
            message,
        }
    }

    fn to_api(&self) -> ContainerState {
        match self.clone() {
            State::Waiting { reason, message } => ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason),
                    message,
                }),
                ..Default::default()
            },
            State::Running { started_at } => ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(started_at)),
                }),
                ..Default::default()
            },
            State::Terminated {
                exit_code,
                reason,
                message,
                started_at,
                finished_at,
            } => ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code,
                    reason: Some(reason),
                    message,
                    started_at: started_at.map(Time),
                    finished_at: Some(Time(finished_at)),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }
}

/// One container as the runtime tracks it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerView {
    pub name: String,
    pub image: String,
    pub state: State,
    pub last_terminated: Option<State>,
    pub restart_count: i32,
    pub ready: bool,
    pub started: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("Never") => RestartPolicy::Never,
            Some("OnFailure") => RestartPolicy::OnFailure,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container that exited with `code` is started again.
    pub fn restarts(self, code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct PodView<'a> {
    pub init_containers: &'a [ContainerView],
    pub containers: &'a [ContainerView],
    pub restart_policy: RestartPolicy,
    pub pod_ip: Option<String>,
    pub host_ip: String,
    pub start_time: Option<Timestamp>,
    pub sandbox_ready: bool,
    /// A reason that keeps the whole pod from starting (shown on PodReadyToStartContainers).
    pub sandbox_message: Option<String>,
}

fn succeeded(state: &State) -> bool {
    matches!(state, State::Terminated { exit_code: 0, .. })
}

/// The kubelet's phase rules.
pub fn phase(view: &PodView<'_>) -> &'static str {
    let init_pending = view.init_containers.iter().any(|c| !succeeded(&c.state));
    let init_failed = view
        .init_containers
        .iter()
        .any(|c| matches!(c.state, State::Terminated { exit_code, .. } if exit_code != 0));
    if init_failed && view.restart_policy == RestartPolicy::Never {
        return "Failed";
    }
    if init_pending {
        return "Pending";
    }
    let (mut running, mut waiting, mut stopped, mut ok) = (0, 0, 0, 0);
    for container in view.containers {
        match &container.state {
            State::Running { .. } => running += 1,
            State::Waiting { .. } if container.last_terminated.is_some() => stopped += 1,
            State::Waiting { .. } => waiting += 1,
            State::Terminated { exit_code, .. } => {
                stopped += 1;
                if *exit_code == 0 {
                    ok += 1;
                }
            }
        }
    }
    if waiting > 0 {
        "Pending"
    } else if running > 0 {
        "Running"
    } else if stopped > 0 {
        match view.restart_policy {
            RestartPolicy::Always => "Running",
            _ if ok == stopped => "Succeeded",
            RestartPolicy::OnFailure => "Running",
            RestartPolicy::Never => "Failed",
        }
    } else {
        "Pending"
    }
}

fn condition(
    type_: &str,
    ok: bool,
    reason: Option<&str>,
    message: Option<String>,
    previous: &[PodCondition],
    now: Timestamp,
) -> PodCondition {
    let status = if ok { "True" } else { "False" };
    let kept = previous
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .and_then(|c| c.last_transition_time.clone());
    PodCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: if ok { None } else { reason.map(str::to_owned) },
        message: if ok { None } else { message },
        last_transition_time: Some(kept.unwrap_or(Time(now))),
        ..Default::default()
    }
}

fn statuses(containers: &[ContainerView]) -> Vec<ContainerStatus> {
    containers
        .iter()
        .map(|c| ContainerStatus {
            name: c.name.clone(),
            image: c.image.clone(),
            image_id: String::new(),
            ready: c.ready,
            started: Some(c.started),
            restart_count: c.restart_count,
            state: Some(c.state.to_api()),
            last_state: c.last_terminated.as_ref().map(State::to_api),
            ..Default::default()
        })
        .collect()
}

/// The status to publish. Conditions keep their transition time while unchanged.
pub fn pod_status(view: &PodView<'_>, previous: &[PodCondition], now: Timestamp) -> PodStatus {
    let initialized = view.init_containers.iter().all(|c| succeeded(&c.state));
    let unready: Vec<&str> = view
        .containers
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    let uninitialized: Vec<&str> = view
        .init_containers
        .iter()
        .filter(|c| !succeeded(&c.state))
        .map(|c| c.name.as_str())
        .collect();
    let containers_ready = unready.is_empty() && initialized;
    let unready_message = Some(format!("containers with unready status: [{}]", unready.join(" ")));
    let conditions = vec![
        condition(
            "PodReadyToStartContainers",
            view.sandbox_ready,
            Some("SandboxNotReady"),
            view.sandbox_message.clone(),
            previous,
            now,
        ),
        condition(
            "Initialized",
            initialized,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                uninitialized.join(" ")
            )),
            previous,
            now,
        ),
        condition(
            "Ready",
            containers_ready,
            Some("ContainersNotReady"),
            unready_message.clone(),
            previous,
            now,
        ),
        condition(
            "ContainersReady",
            containers_ready,
            Some("ContainersNotReady"),
            unready_message,
            previous,
            now,
        ),
        condition("PodScheduled", true, None, None, previous, now),
    ];
    PodStatus {
        phase: Some(phase(view).to_owned()),
        conditions: Some(conditions),
        host_ip: Some(view.host_ip.clone()),
        host_ips: Some(vec![HostIP {
            ip: view.host_ip.clone(),
        }]),
        pod_ip: view.pod_ip.clone(),
        pod_ips: view.pod_ip.clone().map(|ip| vec![PodIP { ip }]),
        start_time: view.start_time.map(Time),
        container_statuses: Some(statuses(view.containers)),
        init_container_statuses: (!view.init_containers.is_empty()).then(|| statuses(view.init_containers)),
        qos_class: None,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn container(state: State, last: Option<State>, ready: bool) -> ContainerView {
        ContainerView {
            name: "c".into(),
            image: "flink:2.3".into(),
            state,
            restart_count: i32::from(last.is_some()),
            last_terminated: last,
            ready,
            started: ready,
        }
    }

    fn running() -> State {
        State::Running { started_at: at(0) }
    }

    fn exited(code: i32) -> State {
        State::Terminated {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            message: None,
            started_at: Some(at(0)),
            finished_at: at(5),
        }
    }

    fn view<'a>(
        init: &'a [ContainerView],
        containers: &'a [ContainerView],
        policy: RestartPolicy,
    ) -> PodView<'a> {
        PodView {
            init_containers: init,
            containers,
            restart_policy: policy,
            pod_ip: Some("10.244.0.2".into()),
            host_ip: "10.244.0.1".into(),
            start_time: Some(at(0)),
            sandbox_ready: true,
            sandbox_message: None,
        }
    }

    #[test]
    fn phases_follow_the_kubelet() {
        use RestartPolicy::*;
        let creating = State::waiting("ContainerCreating", None);
        let backoff = State::waiting("CrashLoopBackOff", None);
        let cases: Vec<(Vec<ContainerView>, Vec<ContainerView>, RestartPolicy, &str)> = vec![
            (
                vec![],
                vec![container(creating.clone(), None, false)],
                Always,
                "Pending",
            ),
            (vec![], vec![container(running(), None, true)], Always, "Running"),
            (
                vec![],
                vec![container(backoff.clone(), Some(exited(137)), false)],
                Always,
                "Running",
            ),
            (
                vec![],
                vec![container(exited(0), None, false)],
                Never,
                "Succeeded",
            ),
            (vec![], vec![container(exited(1), None, false)], Never, "Failed"),
            (
                vec![],
                vec![container(exited(1), None, false)],
                OnFailure,
                "Running",
            ),
            (
                vec![],
                vec![container(exited(0), None, false)],
                OnFailure,
                "Succeeded",
            ),
            (
                vec![],
                vec![
                    container(running(), None, true),
                    container(creating.clone(), None, false),
                ],
                Always,
                "Pending",
            ),
            (
                vec![container(running(), None, false)],
                vec![container(creating.clone(), None, false)],
                Always,
                "Pending",
            ),
            (
                vec![container(exited(1), None, false)],
                vec![container(creating, None, false)],
                Never,
                "Failed",
            ),
            (
                vec![container(exited(0), None, false)],
                vec![container(running(), None, true)],
                Never,
                "Running",
            ),
        ];
        for (i, (init, containers, policy, expected)) in cases.iter().enumerate() {
            assert_eq!(phase(&view(init, containers, *policy)), *expected, "case {i}");
        }
    }

    #[test]
    fn restart_policies() {
        assert!(RestartPolicy::parse(None).restarts(0));
        assert!(RestartPolicy::parse(Some("OnFailure")).restarts(137));
        assert!(!RestartPolicy::parse(Some("OnFailure")).restarts(0));
        assert!(!RestartPolicy::parse(Some("Never")).restarts(1));
    }

    #[test]
    fn conditions_say_what_is_not_ready_and_keep_transition_times() {
        let containers = [container(running(), None, false)];
        let status = pod_status(&view(&[], &containers, RestartPolicy::Always), &[], at(10));
        let conditions = status.conditions.unwrap();
        let ready = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(
            ready.message.as_deref(),
            Some("containers with unready status: [c]")
        );
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.2"));

        let containers = [container(running(), None, true)];
        let later = pod_status(
            &view(&[], &containers, RestartPolicy::Always),
            &conditions,
            at(20),
        );
        let later = later.conditions.unwrap();
        let ready = later.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.last_transition_time.clone()),
            ("True", Some(Time(at(20))))
        );
        let scheduled = later.iter().find(|c| c.type_ == "PodScheduled").unwrap();
        assert_eq!(scheduled.last_transition_time, Some(Time(at(10))));
    }

    #[test]
    fn a_restarted_container_shows_its_last_termination() {
        let containers = [container(running(), Some(exited(137)), true)];
        let status = pod_status(&view(&[], &containers, RestartPolicy::Always), &[], at(30));
        let c = &status.container_statuses.unwrap()[0];
        assert_eq!(c.restart_count, 1);
        assert_eq!(
            c.last_state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code,
            137
        );
        assert!(c.state.as_ref().unwrap().running.is_some());
    }
}
