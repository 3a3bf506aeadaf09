//! The checkpoint a cluster's Kubernetes HA metadata points at last, as a path: what a
//! deletion records before that metadata goes (see [`crate::lifecycle::deletion`]).
//!
//! Flink files each job's completed checkpoints in the ConfigMap
//! `<cluster-id>-<job id>-config-map` as `checkpointID-<n>` entries (their values point at
//! a file in `high-availability.storageDir` that holds the checkpoint's metadata), and its
//! file-system checkpoint storage writes checkpoint `n` of a job to
//! `<checkpoint dir>/<job id>/chk-<n>`, which Flink restores from as from a savepoint path.
//! So the path is the checkpoint directory of the configuration, the job id and the
//! highest id filed. ZooKeeper HA keeps the same entries as nodes: not read here yet.

/// The path of the highest checkpoint filed in `config_maps` (`(name, data keys)` of the
/// cluster's HA ConfigMaps) under `checkpoint_dir`; the job id from the ConfigMap's name,
/// else `job_id` (the one recorded in status). None without a checkpoint directory, an
/// entry, or a job id.
pub fn path<'a, K>(
    cluster: &str,
    config_maps: impl IntoIterator<Item = (&'a str, K)>,
    job_id: Option<&str>,
    checkpoint_dir: Option<&str>,
) -> Option<String>
where
    K: IntoIterator<Item = &'a str>,
{
    let dir = checkpoint_dir.map(str::trim).filter(|d| !d.is_empty())?;
    let (id, job) = config_maps
        .into_iter()
        .flat_map(|(name, keys)| {
            let job = job_of(cluster, name).or(job_id).map(str::to_owned);
            keys.into_iter()
                .filter_map(|key| key.strip_prefix("checkpointID-")?.parse::<u64>().ok())
                .map(move |id| (id, job.clone()))
        })
        .max_by_key(|(id, _)| *id)?;
    Some(format!("{}/{}/chk-{id}", dir.trim_end_matches('/'), job?))
}

/// The job id in `<cluster>-<job id>-config-map` (32 hexadecimal digits).
fn job_of<'a>(cluster: &str, name: &'a str) -> Option<&'a str> {
    let id = name
        .strip_prefix(cluster)?
        .strip_prefix('-')?
        .strip_suffix("-config-map")?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

    #[test]
    fn the_highest_checkpoint_filed_under_the_checkpoint_directory_of_its_job() {
        let job_map = format!("fd-{JOB}-config-map");
        let maps = vec![
            ("fd-cluster-config-map", vec!["leader", "jobGraph-x"]),
            (
                job_map.as_str(),
                vec![
                    "counter",
                    "checkpointID-0000000000000000041",
                    "checkpointID-0000000000000000042",
                ],
            ),
        ];
        assert_eq!(
            path(
                "fd",
                maps.clone(),
                Some("ffffffffffffffffffffffffffffffff"),
                Some("s3://cp/")
            ),
            Some(format!("s3://cp/{JOB}/chk-42"))
        );
        // Without a job id in the ConfigMap's name: the recorded one.
        let old = vec![("fd-dispatcher-leader", vec!["checkpointID-0000000000000000009"])];
        assert_eq!(
            path("fd", old.clone(), Some(JOB), Some("file:///cp")),
            Some(format!("file:///cp/{JOB}/chk-9"))
        );
        assert_eq!(path("fd", old, None, Some("file:///cp")), None);
        // No directory, or no checkpoint: nothing.
        assert_eq!(path("fd", maps, Some(JOB), None), None);
        let none = vec![(job_map.as_str(), vec!["counter"])];
        assert_eq!(path("fd", none, Some(JOB), Some("s3://cp")), None);
        // Another cluster's name prefix is no job id.
        assert_eq!(job_of("fd", &format!("fd2-{JOB}-config-map")), None);
    }
}
