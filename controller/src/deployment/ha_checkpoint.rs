//! The checkpoint a cluster's high-availability metadata points at last, as a path: what a
//! deletion records before that metadata goes (see [`crate::lifecycle::deletion`]).
//!
//! Flink files each job's completed checkpoints by id in its HA metadata: with Kubernetes HA
//! in the ConfigMap `<cluster-id>-<job id>-config-map` as `checkpointID-<n>` entries, with
//! ZooKeeper HA as the nodes `jobs/<job id>/checkpoints/<n>` (see [`crate::zookeeper`]);
//! either points at a file in `high-availability.storageDir` that holds the checkpoint's
//! metadata. Its file-system checkpoint storage writes checkpoint `n` of a job to
//! `<checkpoint dir>/<job id>/chk-<n>`, which Flink restores from as from a savepoint path.
//! So the path is the checkpoint directory of the configuration, the job id and the
//! highest id filed, whichever metadata filed it ([`path`]).

/// The path of the highest of the checkpoints `filed` (`(job id, if the metadata names it,
/// checkpoint id)`) under `checkpoint_dir`, with `job_id` (the one recorded in status) for
/// one whose job the metadata does not name. None without a checkpoint directory, a
/// checkpoint, or a job id.
pub fn path<'a>(
    filed: impl IntoIterator<Item = (Option<&'a str>, u64)>,
    job_id: Option<&str>,
    checkpoint_dir: Option<&str>,
) -> Option<String> {
    let dir = checkpoint_dir.map(str::trim).filter(|d| !d.is_empty())?;
    let (job, id) = filed.into_iter().max_by_key(|(_, id)| *id)?;
    Some(format!(
        "{}/{}/chk-{id}",
        dir.trim_end_matches('/'),
        job.or(job_id)?
    ))
}

/// The checkpoints filed in `config_maps` (`(name, data keys)` of a cluster's Kubernetes HA
/// ConfigMaps), each with the job id of its ConfigMap's name where it has one.
pub fn in_config_maps<'a, K>(
    cluster: &str,
    config_maps: impl IntoIterator<Item = (&'a str, K)>,
) -> Vec<(Option<&'a str>, u64)>
where
    K: IntoIterator<Item = &'a str>,
{
    config_maps
        .into_iter()
        .flat_map(|(name, keys)| {
            let job = job_of(cluster, name);
            keys.into_iter()
                .filter_map(|key| key.strip_prefix("checkpointID-")?.parse::<u64>().ok())
                .map(move |id| (job, id))
        })
        .collect()
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
    const OTHER: &str = "ffffffffffffffffffffffffffffffff";

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
        let config_maps = |maps| path(in_config_maps("fd", maps), Some(OTHER), Some("s3://cp/"));
        assert_eq!(config_maps(maps.clone()), Some(format!("s3://cp/{JOB}/chk-42")));
        // Without a job id in the ConfigMap's name: the recorded one.
        let old = vec![("fd-dispatcher-leader", vec!["checkpointID-0000000000000000009"])];
        assert_eq!(
            path(in_config_maps("fd", old.clone()), Some(JOB), Some("file:///cp")),
            Some(format!("file:///cp/{JOB}/chk-9"))
        );
        assert_eq!(path(in_config_maps("fd", old), None, Some("file:///cp")), None);
        // No directory, or no checkpoint: nothing.
        assert_eq!(path(in_config_maps("fd", maps), Some(JOB), None), None);
        let none = vec![(job_map.as_str(), vec!["counter"])];
        assert_eq!(config_maps(none), None);
        // Another cluster's name prefix is no job id.
        assert_eq!(job_of("fd", &format!("fd2-{JOB}-config-map")), None);
    }

    #[test]
    fn a_checkpoint_filed_in_zookeeper_is_the_same_path() {
        // ZooKeeper names the job of each: its node `jobs/<job id>/checkpoints/<id>`.
        assert_eq!(
            path([(Some(JOB), 42)], Some(OTHER), Some("s3://cp")),
            Some(format!("s3://cp/{JOB}/chk-42"))
        );
        assert_eq!(path([], Some(JOB), Some("s3://cp")), None);
    }
}
