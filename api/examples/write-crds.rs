//! Writes one file per CRD into a directory (default `charts/flink-operator/crds`).
//!
//! `cargo run -p flink-operator-api --example write-crds -- charts/flink-operator/crds`
//! (the operator binary offers the same as `flink-operator crd --split <dir>`).

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "charts/flink-operator/crds".into()),
    );
    std::fs::create_dir_all(&dir)?;
    for (name, contents) in flink_operator_api::crd::crd_files() {
        let path = dir.join(name);
        std::fs::write(&path, contents)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
