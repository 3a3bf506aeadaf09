//! The kubectl the end-to-end tests run: `KUBECTL`, or the one of the control plane's
//! release that `tests/tools/build-kubectl.sh` builds (cached).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

/// Its path, found (and built, if needed) once per test process.
pub fn kubectl_binary() -> &'static Path {
    static KUBECTL: OnceLock<PathBuf> = OnceLock::new();
    KUBECTL.get_or_init(|| {
        if let Ok(path) = std::env::var("KUBECTL") {
            return PathBuf::from(path);
        }
        let script = Path::new(crate::ROOT).join("tests/tools/build-kubectl.sh");
        let output = Command::new(script)
            .stderr(Stdio::inherit())
            .output()
            .expect("running tests/tools/build-kubectl.sh");
        assert!(output.status.success(), "tests/tools/build-kubectl.sh failed");
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}
