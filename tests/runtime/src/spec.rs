//! What a container runs: its command line and environment, resolved from the pod spec the
//! way the kubelet resolves them (pure functions; the ConfigMaps and Secrets they read are
//! fetched beforehand).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, ResourceRequirements};

/// The official image's entrypoint and default command.
pub const IMAGE_ENTRYPOINT: &str = "/docker-entrypoint.sh";
const IMAGE_CMD: &str = "help";
pub const FLINK_HOME: &str = "/opt/flink";

/// ConfigMap and Secret data a pod refers to, by name; a missing object is absent.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    pub config_maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    pub secrets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

/// What the pod's addresses are once it has a network.
#[derive(Debug, Clone)]
pub struct PodAddresses {
    pub pod_ip: String,
    pub host_ip: String,
    pub node_name: String,
}

/// Names of the ConfigMaps and Secrets the pod's env, envFrom and volumes read.
pub fn referenced_sources(pod: &Pod) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut config_maps = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    let Some(spec) = &pod.spec else {
        return (config_maps, secrets);
    };
    let containers = spec.init_containers.iter().flatten().chain(&spec.containers);
    for container in containers {
        for var in container.env.iter().flatten() {
            if let Some(from) = &var.value_from {
                if let Some(r) = &from.config_map_key_ref {
                    config_maps.insert(r.name.clone());
                }
                if let Some(r) = &from.secret_key_ref {
                    secrets.insert(r.name.clone());
                }
            }
        }
        for from in container.env_from.iter().flatten() {
            if let Some(r) = &from.config_map_ref {
                config_maps.insert(r.name.clone());
            }
            if let Some(r) = &from.secret_ref {
                secrets.insert(r.name.clone());
            }
        }
    }
    for volume in spec.volumes.iter().flatten() {
        if let Some(cm) = &volume.config_map {
            config_maps.insert(cm.name.clone());
        }
        if let Some(s) = &volume.secret
            && let Some(name) = &s.secret_name
        {
            secrets.insert(name.clone());
        }
        if let Some(projected) = &volume.projected {
            for source in projected.sources.iter().flatten() {
                if let Some(cm) = &source.config_map {
                    config_maps.insert(cm.name.clone());
                }
                if let Some(s) = &source.secret {
                    secrets.insert(s.name.clone());
                }
            }
        }
    }
    (config_maps, secrets)
}

/// The value of a downward-API field path, as env vars and downwardAPI volumes see it.
pub fn field_value(pod: &Pod, addresses: &PodAddresses, path: &str) -> Result<String, String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let from_map = |map: &Option<BTreeMap<String, String>>, key: &str| {
        map.as_ref().and_then(|m| m.get(key)).cloned().unwrap_or_default()
    };
    let map_key = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix("['"))
            .and_then(|rest| rest.strip_suffix("']"))
            .map(str::to_owned)
    };
    let render_map = |map: &Option<BTreeMap<String, String>>| {
        map.iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.labels" => render_map(&meta.labels),
        "metadata.annotations" => render_map(&meta.annotations),
        "spec.nodeName" => addresses.node_name.clone(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" | "status.hostIPs" => addresses.host_ip.clone(),
        "status.podIP" | "status.podIPs" => addresses.pod_ip.clone(),
        _ => {
            if let Some(key) = map_key("metadata.labels") {
                from_map(&meta.labels, &key)
            } else if let Some(key) = map_key("metadata.annotations") {
                from_map(&meta.annotations, &key)
            } else {
                return Err(format!("field path {path:?} is not supported"));
            }
        }
    })
}

/// `limits.memory`, `requests.cpu`, ... of a container, divided as asked (default 1).
pub fn resource_value(
    resources: Option<&ResourceRequirements>,
    resource: &str,
    divisor: Option<&str>,
) -> Result<String, String> {
    let (kind, name) = resource
        .split_once('.')
        .ok_or_else(|| format!("resource {resource:?} is not like limits.memory"))?;
    let pick = |r: &ResourceRequirements| match kind {
        "limits" => r.limits.as_ref().and_then(|m| m.get(name)).cloned(),
        "requests" => r.requests.as_ref().and_then(|m| m.get(name)).cloned(),
        _ => None,
    };
    let quantity =
        resources.and_then(|r| pick(r).or_else(|| r.requests.as_ref().and_then(|m| m.get(name)).cloned()));
    let Some(quantity) = quantity else {
        return Err(format!(
            "container sets no {resource} (the local runtime has no node capacity to fall back to)"
        ));
    };
    let value = parse_quantity(&quantity.0)
        .ok_or_else(|| format!("quantity {:?} of {resource} is not understood", quantity.0))?;
    let divisor = match divisor {
        Some(d) => parse_quantity(d).ok_or_else(|| format!("divisor {d:?} is not understood"))?,
        None => 1.0,
    };
    Ok(format!("{}", (value / divisor).ceil() as i64))
}

/// A Kubernetes quantity (`1.5`, `500m`, `2Gi`, `1G`) as a number.
fn parse_quantity(q: &str) -> Option<f64> {
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    for (suffix, factor) in suffixes {
        if let Some(number) = q.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    q.parse().ok()
}

/// The container's environment, in the kubelet's order: envFrom, then env (later wins), with
/// `$(VAR)` references expanded against what came before.
pub fn environment(
    pod: &Pod,
    container: &Container,
    sources: &Sources,
    addresses: &PodAddresses,
) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| {
        env.retain(|(n, _)| *n != name);
        env.push((name, value));
    };
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let (data, optional, what) = if let Some(r) = &from.config_map_ref {
            (
                sources.config_maps.get(&r.name),
                r.optional == Some(true),
                format!("ConfigMap {:?}", r.name),
            )
        } else if let Some(r) = &from.secret_ref {
            (
                sources.secrets.get(&r.name),
                r.optional == Some(true),
                format!("Secret {:?}", r.name),
            )
        } else {
            continue;
        };
        match data {
            Some(data) => {
                for (key, value) in data {
                    set(
                        &mut env,
                        format!("{prefix}{key}"),
                        String::from_utf8_lossy(value).into_owned(),
                    );
                }
            }
            None if optional => {}
            None => return Err(format!("{what} of envFrom not found")),
        }
    }
    for var in container.env.iter().flatten() {
        if let Some(value) = env_value(pod, container, var, sources, addresses, &env)? {
            set(&mut env, var.name.clone(), value);
        }
    }
    Ok(env)
}

fn env_value(
    pod: &Pod,
    container: &Container,
    var: &EnvVar,
    sources: &Sources,
    addresses: &PodAddresses,
    earlier: &[(String, String)],
) -> Result<Option<String>, String> {
    let Some(from) = &var.value_from else {
        return Ok(Some(expand(var.value.as_deref().unwrap_or_default(), earlier)));
    };
    let keyed = |data: Option<&BTreeMap<String, Vec<u8>>>,
                 key: &str,
                 optional: Option<bool>,
                 what: String| {
        match data.and_then(|d| d.get(key)) {
            Some(value) => Ok(Some(String::from_utf8_lossy(value).into_owned())),
            None if optional == Some(true) => Ok(None),
            None => Err(format!("env {:?}: key {key:?} of {what} not found", var.name)),
        }
    };
    if let Some(r) = &from.config_map_key_ref {
        return keyed(
            sources.config_maps.get(&r.name),
            &r.key,
            r.optional,
            format!("ConfigMap {:?}", r.name),
        );
    }
    if let Some(r) = &from.secret_key_ref {
        return keyed(
            sources.secrets.get(&r.name),
            &r.key,
            r.optional,
            format!("Secret {:?}", r.name),
        );
    }
    if let Some(r) = &from.field_ref {
        return field_value(pod, addresses, &r.field_path)
            .map(Some)
            .map_err(|e| format!("env {:?}: {e}", var.name));
    }
    if let Some(r) = &from.resource_field_ref {
        let target = match &r.container_name {
            Some(name) => pod
                .spec
                .as_ref()
                .and_then(|s| s.containers.iter().find(|c| &c.name == name))
                .unwrap_or(container),
            None => container,
        };
        return resource_value(
            target.resources.as_ref(),
            &r.resource,
            r.divisor.as_ref().map(|q| q.0.as_str()),
        )
        .map(Some)
        .map_err(|e| format!("env {:?}: {e}", var.name));
    }
    Err(format!(
        "env {:?}: valueFrom has no source this runtime knows",
        var.name
    ))
}

/// Kubernetes' `$(VAR)` expansion: known names are replaced, `$$` escapes, unknown stay.
pub fn expand(input: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(n, _)| n == name) {
                Some((_, value)) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The command line: the container's command and args over the image's entrypoint and
/// command, as the container runtime combines them.
pub fn command_line(container: &Container, env: &[(String, String)]) -> Vec<String> {
    let command = container.command.clone().unwrap_or_default();
    let args = container.args.clone().unwrap_or_default();
    let argv = match (command.is_empty(), args.is_empty()) {
        (true, true) => vec![IMAGE_ENTRYPOINT.to_owned(), IMAGE_CMD.to_owned()],
        (true, false) => std::iter::once(IMAGE_ENTRYPOINT.to_owned()).chain(args).collect(),
        (false, _) => command.into_iter().chain(args).collect(),
    };
    argv.iter().map(|a| expand(a, env)).collect()
}

/// The command line of an image that is not Flink's: its entrypoint run by the program's
/// binary, with the container's args, else the image's `CMD`. A command naming the image's
/// entrypoint runs the binary too; any other command runs as given.
pub fn program_command_line(
    container: &Container,
    env: &[(String, String)],
    program: &crate::images::Program,
) -> Vec<String> {
    let binary = program.binary.display().to_string();
    let command = container.command.clone().unwrap_or_default();
    let args = container.args.clone().unwrap_or_default();
    let argv: Vec<String> = match command.split_first() {
        None if args.is_empty() => std::iter::once(binary).chain(program.cmd.clone()).collect(),
        None => std::iter::once(binary).chain(args).collect(),
        Some((first, rest)) if *first == program.entrypoint => std::iter::once(binary)
            .chain(rest.iter().cloned())
            .chain(args)
            .collect(),
        Some(_) => command.into_iter().chain(args).collect(),
    };
    argv.iter().map(|a| expand(a, env)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_operators_image_runs_its_binary_with_the_containers_args_or_its_cmd() {
        let program = crate::images::Program {
            entrypoint: "/flink-operator".into(),
            cmd: vec!["run".into()],
            binary: "/build/flink-operator".into(),
        };
        let cases = [
            (json!({"name": "c"}), vec!["/build/flink-operator", "run"]),
            (
                json!({"name": "c", "args": ["run", "--probe-port=$(PORT)"]}),
                vec!["/build/flink-operator", "run", "--probe-port=8080"],
            ),
            (
                json!({"name": "c", "command": ["/flink-operator", "crd"]}),
                vec!["/build/flink-operator", "crd"],
            ),
            (
                json!({"name": "c", "command": ["sleep", "1"]}),
                vec!["sleep", "1"],
            ),
        ];
        let env = vec![("PORT".to_owned(), "8080".to_owned())];
        for (container, argv) in cases {
            let container: Container = serde_json::from_value(container).unwrap();
            assert_eq!(program_command_line(&container, &env, &program), argv);
        }
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "jm-0", "namespace": "team-a", "uid": "u-1", "labels": {"app": "basic"}},
            "spec": {
                "serviceAccountName": "flink",
                "containers": [{
                    "name": "flink-main-container",
                    "image": "flink:2.3",
                    "resources": {"requests": {"memory": "1Gi", "cpu": "500m"}, "limits": {"memory": "2Gi"}},
                    "envFrom": [{"configMapRef": {"name": "extra"}, "prefix": "X_"}],
                    "env": [
                        {"name": "_POD_IP_ADDRESS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
                        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                        {"name": "MAYBE", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": true}}},
                        {"name": "ADDR", "value": "$(_POD_IP_ADDRESS):8081 $(UNKNOWN) $$(ESCAPED)"},
                        {"name": "X_A", "value": "override"}
                    ]
                }],
                "volumes": [
                    {"name": "conf", "configMap": {"name": "flink-config-basic"}},
                    {"name": "s", "secret": {"secretName": "tls"}},
                    {"name": "token", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}}
                ]
            }
        }))
        .unwrap()
    }

    fn sources() -> Sources {
        let mut sources = Sources::default();
        sources.config_maps.insert(
            "extra".into(),
            [("A".to_owned(), b"1".to_vec()), ("B".to_owned(), b"2".to_vec())].into(),
        );
        sources.secrets.insert(
            "creds".into(),
            [("password".to_owned(), b"s3cret".to_vec())].into(),
        );
        sources
    }

    fn addresses() -> PodAddresses {
        PodAddresses {
            pod_ip: "10.244.0.5".into(),
            host_ip: "10.244.0.1".into(),
            node_name: "local-flink".into(),
        }
    }

    #[test]
    fn environment_follows_the_kubelet() {
        let pod = pod();
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let env = environment(&pod, container, &sources(), &addresses()).unwrap();
        let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("_POD_IP_ADDRESS"), Some("10.244.0.5"));
        assert_eq!(get("NODE"), Some("local-flink"));
        assert_eq!(get("APP"), Some("basic"));
        assert_eq!(get("MEM"), Some("2048"));
        assert_eq!(get("CPU"), Some("500"));
        assert_eq!(get("PW"), Some("s3cret"));
        assert_eq!(get("MAYBE"), None);
        assert_eq!(get("ADDR"), Some("10.244.0.5:8081 $(UNKNOWN) $(ESCAPED)"));
        assert_eq!(get("X_A"), Some("override"));
        assert_eq!(get("X_B"), Some("2"));
    }

    #[test]
    fn missing_sources_are_named() {
        let pod = pod();
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let mut sources = sources();
        sources.secrets.clear();
        let error = environment(&pod, container, &sources, &addresses()).unwrap_err();
        assert!(
            error.contains("\"PW\"") && error.contains("Secret \"creds\""),
            "{error}"
        );
        sources.config_maps.clear();
        let error = environment(&pod, container, &sources, &addresses()).unwrap_err();
        assert!(error.contains("ConfigMap \"extra\""), "{error}");
    }

    #[test]
    fn references_are_collected() {
        let (config_maps, secrets) = referenced_sources(&pod());
        assert_eq!(
            config_maps.into_iter().collect::<Vec<_>>(),
            ["extra", "flink-config-basic", "kube-root-ca.crt"]
        );
        assert_eq!(secrets.into_iter().collect::<Vec<_>>(), ["creds", "tls"]);
    }

    #[test]
    fn command_lines_combine_image_and_container() {
        let container = |v: serde_json::Value| -> Container { serde_json::from_value(v).unwrap() };
        let env = vec![("JOB".to_owned(), "KeyedCounterJob".to_owned())];
        let cases = [
            (json!({"name": "c"}), vec!["/docker-entrypoint.sh", "help"]),
            (
                json!({"name": "c", "args": ["jobmanager"]}),
                vec!["/docker-entrypoint.sh", "jobmanager"],
            ),
            (
                json!({"name": "c", "command": ["/docker-entrypoint.sh"], "args": ["bash", "-c", "kubernetes-jobmanager.sh kubernetes-session "]}),
                vec![
                    "/docker-entrypoint.sh",
                    "bash",
                    "-c",
                    "kubernetes-jobmanager.sh kubernetes-session ",
                ],
            ),
            (
                json!({"name": "c", "args": ["standalone-job", "--job-classname", "$(JOB)"]}),
                vec![
                    "/docker-entrypoint.sh",
                    "standalone-job",
                    "--job-classname",
                    "KeyedCounterJob",
                ],
            ),
            (
                json!({"name": "c", "command": ["sleep", "5"]}),
                vec!["sleep", "5"],
            ),
        ];
        for (c, expected) in cases {
            assert_eq!(command_line(&container(c.clone()), &env), expected, "{c}");
        }
    }

    #[test]
    fn field_paths() {
        let pod = pod();
        let a = addresses();
        assert_eq!(field_value(&pod, &a, "metadata.namespace").unwrap(), "team-a");
        assert_eq!(field_value(&pod, &a, "spec.serviceAccountName").unwrap(), "flink");
        assert_eq!(field_value(&pod, &a, "metadata.labels").unwrap(), "app=\"basic\"");
        assert_eq!(field_value(&pod, &a, "metadata.annotations['none']").unwrap(), "");
        assert!(
            field_value(&pod, &a, "status.phase")
                .unwrap_err()
                .contains("status.phase")
        );
    }
}
