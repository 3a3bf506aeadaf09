//! Replacing a file so that readers see either the old or the new contents, never a mix.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{CertsError, Result};

/// Who may read a written file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visibility {
    /// Subject to the process umask, like any other file (certificates are public).
    Public,
    /// Owner only (0600 on unix), for private keys.
    OwnerOnly,
}

/// Writes `contents` to `path` through a temporary file in the same directory and a
/// rename.
///
/// The rename is what makes this safe for a server that reloads `path` at any moment:
/// on POSIX it atomically swaps the directory entry, and it can only do so within one
/// file system, hence the temporary file lives next to the target rather than in /tmp.
pub(crate) fn write_atomically(path: &Path, contents: &[u8], visibility: Visibility) -> Result<()> {
    let tmp = temp_path_for(path);
    let write_err = |source| CertsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let result = write_new_file(&tmp, contents, visibility).and_then(|()| fs::rename(&tmp, path));
    if let Err(source) = result {
        // Best effort: a stray temp file is harmless but would confuse whoever looks.
        let _ = fs::remove_file(&tmp);
        return Err(write_err(source));
    }
    Ok(())
}

fn write_new_file(path: &Path, contents: &[u8], visibility: Visibility) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if visibility == Visibility::OwnerOnly {
        // Set at creation rather than with a later chmod, so the key is never readable
        // by others, not even for a moment.
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    #[cfg(not(unix))]
    let _ = visibility;
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    // Without this the rename can reach the disk before the data does, and a crash
    // would leave an empty file under the final name.
    file.sync_all()
}

/// A name that is unique per process and call, so concurrent writers never share one.
fn temp_path_for(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Leading dot: hidden from `ls` and from globs like `*.crt`.
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::TempDir;

    #[test]
    fn writing_replaces_existing_contents_and_leaves_no_temp_file() {
        let dir = TempDir::new();
        let path = dir.path().join("file.txt");
        write_atomically(&path, b"old", Visibility::Public).expect("first write");
        write_atomically(&path, b"new", Visibility::Public).expect("second write");

        assert_eq!(fs::read(&path).expect("read back"), b"new");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list dir")
            .map(|e| e.expect("dir entry").file_name())
            .collect();
        assert_eq!(names, ["file.txt"]);
    }

    #[test]
    fn writing_into_a_missing_directory_fails_naming_the_file() {
        let dir = TempDir::new();
        let path = dir.path().join("missing").join("file.txt");
        let err = write_atomically(&path, b"x", Visibility::Public).expect_err("must fail");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn owner_only_files_get_mode_0600_even_when_replacing_a_public_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new();
        let path = dir.path().join("tls.key");
        write_atomically(&path, b"public", Visibility::Public).expect("public write");
        write_atomically(&path, b"secret", Visibility::OwnerOnly).expect("private write");

        let mode = fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
