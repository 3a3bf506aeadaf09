//! The work directories of test processes: `<prefix>-<pid>[-…]` under the temp dir. A run
//! keeps its own after it ends, so a failure can still be read, and each run removes those
//! of test processes that are gone, so a developer's disk does not fill run by run.

use std::path::Path;

/// Removes the work directories named `<prefix>-<pid>[-…]` whose process no longer runs.
pub fn remove_stale(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(prefix))
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
