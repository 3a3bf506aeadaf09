//! `kubectl flink <TAB>`: kubectl completes a plugin's arguments by running
//! `kubectl_complete-flink __complete <the words so far>` and reading one candidate per line,
//! then `:<directive>` (cobra's protocol). The same binary answers under that name: the
//! plugin's subcommands, its flags, the kinds of `KIND/NAME`, and the output formats.

use clap::CommandFactory;

use crate::kubectl_flink::PluginCli;

/// The name kubectl runs the completion by.
pub const COMPLETION_NAME: &str = "kubectl_complete-flink";

/// Cobra's directive: complete no file names.
const NO_FILES: u32 = 4;

/// The kinds a `KIND/NAME` argument starts with.
const KINDS: [&str; 2] = ["flinkdeployment/", "flinksessionjob/"];

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
    starting(KINDS, typed)
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
    }
}
