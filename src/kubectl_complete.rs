//! `kubectl flink <TAB>`: kubectl completes a plugin's arguments by running
//! `kubectl_complete-flink __complete <the words so far>` and reading one candidate per line,
//! then `:<directive>` (cobra's protocol). The same binary answers under that name: the
//! plugin's subcommands, its flags, the kinds of `KIND/NAME`, the names of the resources of a
//! kind (asked of the cluster the words name with `-n`, `--context` and `--kubeconfig`, else
//! the kubeconfig's), and the output formats.

use clap::CommandFactory;

use crate::kubectl_flink::PluginCli;

/// The name kubectl runs the completion by.
pub const COMPLETION_NAME: &str = "kubectl_complete-flink";

/// Cobra's directive: complete no file names.
const NO_FILES: u32 = 4;

/// The kinds a `KIND/NAME` argument starts with.
const KINDS: [&str; 2] = ["flinkdeployment/", "flinksessionjob/"];

/// How long a completion waits for the cluster's list of names: a shell waits on it.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Prints the candidates for the process's arguments (`__complete` and the words).
pub fn main() -> std::process::ExitCode {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .skip_while(|w| w == "__complete")
        .collect();
    for candidate in candidates(&words) {
        println!("{candidate}");
    }
    println!(":{NO_FILES}");
    std::process::ExitCode::SUCCESS
}

/// What may follow `words`, the last of which is being typed (empty: a new word).
pub fn candidates(words: &[String]) -> Vec<String> {
    let command = PluginCli::command();
    let (typed, before) = match words.split_last() {
        Some((last, before)) => (last.as_str(), before),
        None => ("", &[][..]),
    };
    let previous = before.last().map(String::as_str);
    if matches!(previous, Some("-o" | "--output")) {
        return starting(["text", "json", "yaml"], typed);
    }
    let subcommand = before
        .iter()
        .find_map(|w| command.get_subcommands().find(|s| s.get_name() == w));
    let Some(subcommand) = subcommand else {
        return starting(command.get_subcommands().map(|s| s.get_name()), typed);
    };
    if typed.starts_with('-') {
        let flags = subcommand
            .get_arguments()
            .chain(command.get_arguments())
            .filter_map(|a| a.get_long())
            .map(|long| format!("--{long}"))
            .collect::<Vec<_>>();
        return starting(flags.iter().map(String::as_str), typed);
    }
    if subcommand.get_name() == "completion" {
        return starting(["bash", "zsh", "fish", "elvish", "powershell"], typed);
    }
    if typed.contains('/') {
        return names(before, typed);
    }
    starting(KINDS, typed)
}

/// The value of the flag `long` (or `short`) among `words`: `--long V`, `--long=V`, `-s V`.
fn flag(words: &[String], long: &str, short: Option<&str>) -> Option<String> {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if let Some(value) = word.strip_prefix(&format!("--{long}=")) {
            return Some(value.to_owned());
        }
        if *word == format!("--{long}") || short.is_some_and(|s| word == s) {
            return words.next().cloned();
        }
    }
    None
}

/// `KIND/NAME` candidates for `typed` (`KIND/` and the start of a name): the resources of that
/// kind in the namespace, listed from the cluster; none when it does not answer in time.
fn names(before: &[String], typed: &str) -> Vec<String> {
    let Some((kind_typed, _)) = typed.split_once('/') else {
        return Vec::new();
    };
    let Ok(job) = crate::job_ref::parse_job_ref(&format!("{kind_typed}/x")) else {
        return Vec::new();
    };
    let cluster = crate::cli::ClusterArgs {
        namespace: flag(before, "namespace", Some("-n")),
        kubeconfig: flag(before, "kubeconfig", None).map(Into::into),
        context: flag(before, "context", None),
    };
    let listed = async {
        let (client, namespace) = crate::revision_cli::connect(&cluster).await.ok()?;
        match job.kind {
            flink_operator_api::JobKind::FlinkDeployment => {
                names_of::<flink_operator_api::FlinkDeployment>(client, &namespace).await
            }
            flink_operator_api::JobKind::FlinkSessionJob => {
                names_of::<flink_operator_api::FlinkSessionJob>(client, &namespace).await
            }
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let Ok(Some(found)) = runtime
        .map(|r| r.block_on(async { tokio::time::timeout(LIST_TIMEOUT, listed).await.ok().flatten() }))
    else {
        return Vec::new();
    };
    let candidates: Vec<String> = found
        .into_iter()
        .map(|name| format!("{kind_typed}/{name}"))
        .collect();
    starting(candidates.iter().map(String::as_str), typed)
}

/// The names of the `K` resources in `namespace`.
async fn names_of<K>(client: kube::Client, namespace: &str) -> Option<Vec<String>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let list = kube::Api::<K>::namespaced(client, namespace)
        .list_metadata(&kube::api::ListParams::default())
        .await
        .ok()?;
    Some(list.items.into_iter().filter_map(|o| o.metadata.name).collect())
}

fn starting<'a>(options: impl IntoIterator<Item = &'a str>, typed: &str) -> Vec<String> {
    options
        .into_iter()
        .filter(|o| o.starts_with(typed))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(words: &[&str]) -> Vec<String> {
        candidates(&words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn subcommands_flags_kinds_and_formats_are_offered() {
        use crate::kubectl_flink::invoked_as;
        assert!(invoked_as(
            Some("/usr/local/bin/kubectl_complete-flink"),
            COMPLETION_NAME
        ));
        assert!(!invoked_as(Some("kubectl-flink"), COMPLETION_NAME));
        assert_eq!(complete(&["sta"]), ["status"]);
        assert_eq!(complete(&["s"]), ["status", "suspend", "savepoint"]);
        assert_eq!(complete(&["status", "flinkd"]), ["flinkdeployment/"]);
        assert_eq!(complete(&["status", ""]), KINDS);
        assert_eq!(complete(&["status", "flinkdep/a", "-o", "y"]), ["yaml"]);
        assert!(complete(&["rollback", "flinkdep/a", "--to"]).contains(&"--to-revision".to_owned()));
        assert!(complete(&["status", "--con"]).contains(&"--context".to_owned()));
        assert_eq!(complete(&["completion", "z"]), ["zsh"]);
        // Names are the cluster's: none from a kind that does not exist, or a cluster that
        // cannot be reached.
        assert!(complete(&["status", "flinkjob/a"]).is_empty());
        let nowhere = std::env::temp_dir().join("no-such-kubeconfig");
        let nowhere = nowhere.to_str().unwrap();
        assert!(complete(&["status", "--kubeconfig", nowhere, "flinkdep/a"]).is_empty());
    }

    #[test]
    fn flags_are_read_in_the_forms_kubectl_takes() {
        let words: Vec<String> = ["status", "-n", "jobs", "--context=prod", "--kubeconfig", "/k"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        assert_eq!(flag(&words, "namespace", Some("-n")).as_deref(), Some("jobs"));
        assert_eq!(flag(&words, "context", None).as_deref(), Some("prod"));
        assert_eq!(flag(&words, "kubeconfig", None).as_deref(), Some("/k"));
        assert_eq!(flag(&words, "output", Some("-o")), None);
    }
}
