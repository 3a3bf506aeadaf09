//! Which local Flink distribution stands in for a container image.
//!
//! The official images are `flink:<version>[-scala_<s>][-java<j>]` (also as `apache/flink`
//! or with a registry in front). The tag names the Flink version; `1.20` means the newest
//! installed 1.20.x. The operator's own image (`flink-operator:<tag>`, as its `Dockerfile`
//! builds it) runs a locally built operator binary, when one is given. Anything else is
//! refused with a message a test (or a user reading `kubectl describe`) can act on, the way
//! a kubelet reports an image it cannot pull.

use std::{collections::BTreeMap, fmt, path::PathBuf};

/// One installed Flink distribution: the image's `/opt/flink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    pub version: Version,
    pub flink_home: PathBuf,
    /// Mounted at `/opt/flink/usrlib`: the jars a user's image would add there.
    pub usrlib: Option<PathBuf>,
    /// Set for an image that is not Flink's: the program its entrypoint runs.
    pub program: Option<Program>,
}

/// The entrypoint of an image that is not Flink's, run from a binary on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The entrypoint's path in the image (`ENTRYPOINT`).
    pub entrypoint: String,
    /// The image's default arguments (`CMD`).
    pub cmd: Vec<String>,
    /// The binary that stands in for the entrypoint.
    pub binary: PathBuf,
}

/// The repository of the operator's own image, as its `Dockerfile` and Helm chart name it.
pub const OPERATOR_REPOSITORY: &str = "flink-operator";

impl Distribution {
    /// The operator's image: `ENTRYPOINT ["/flink-operator"]`, `CMD ["run"]`, run by
    /// `binary`. Its `/opt/flink` is the empty directory `empty`.
    pub fn operator(binary: PathBuf, empty: PathBuf) -> Self {
        Distribution {
            version: Version {
                major: 0,
                minor: 0,
                patch: 0,
            },
            flink_home: empty,
            usrlib: None,
            program: Some(Program {
                entrypoint: "/flink-operator".to_owned(),
                cmd: vec!["run".to_owned()],
                binary,
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('.').collect();
        let number = |p: &str| {
            p.parse::<u32>()
                .map_err(|_| format!("{s:?} is not a version like 2.3.0"))
        };
        match parts.as_slice() {
            [major, minor, patch] => Ok(Version {
                major: number(major)?,
                minor: number(minor)?,
                patch: number(patch)?,
            }),
            _ => Err(format!("{s:?} is not a version like 2.3.0")),
        }
    }
}

/// Why an image cannot run here. The message names the image and what would work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("image {image:?} is not a Flink image: the local runtime runs only flink:<version> images")]
    NotFlink { image: String },
    #[error("image {image:?} names no Flink version in its tag (use a tag like flink:2.3 or flink:1.20.5)")]
    NoVersion { image: String },
    #[error("no local Flink distribution for image {image:?} (installed: {installed})")]
    NotInstalled { image: String, installed: String },
}

/// The installed distributions, by version.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    distributions: BTreeMap<Version, Distribution>,
    /// The operator's image, when a binary for it was given.
    operator: Option<Distribution>,
}

impl Catalog {
    pub fn new(distributions: impl IntoIterator<Item = Distribution>) -> Self {
        Catalog {
            distributions: distributions.into_iter().map(|d| (d.version, d)).collect(),
            operator: None,
        }
    }

    /// Runs the operator's image (any tag) as `operator`.
    pub fn with_operator(mut self, operator: Distribution) -> Self {
        self.operator = Some(operator);
        self
    }

    pub fn installed(&self) -> String {
        let versions: Vec<String> = self.distributions.keys().map(Version::to_string).collect();
        if versions.is_empty() {
            "none".to_owned()
        } else {
            versions.join(", ")
        }
    }

    /// The distribution that runs `image`.
    pub fn resolve(&self, image: &str) -> Result<&Distribution, ImageError> {
        let (repository, tag) = split_reference(image);
        let name = repository.rsplit('/').next().unwrap_or(repository);
        if name == OPERATOR_REPOSITORY
            && let Some(operator) = &self.operator
        {
            return Ok(operator);
        }
        if name != "flink" {
            return Err(ImageError::NotFlink {
                image: image.to_owned(),
            });
        }
        let Some(wanted) = tag.and_then(tag_version) else {
            return Err(ImageError::NoVersion {
                image: image.to_owned(),
            });
        };
        let found = self
            .distributions
            .values()
            .rev()
            .find(|d| {
                d.version.major == wanted.major
                    && d.version.minor == wanted.minor
                    && wanted.patch.is_none_or(|p| p == d.version.patch)
            })
            .ok_or_else(|| ImageError::NotInstalled {
                image: image.to_owned(),
                installed: self.installed(),
            })?;
        Ok(found)
    }
}

/// Splits `registry:port/repo/name:tag@digest` into the repository and the tag. A digest
/// pins content we do not have, so it counts as no tag.
fn split_reference(image: &str) -> (&str, Option<&str>) {
    if image.contains('@') {
        let repository = image.split('@').next().unwrap_or(image);
        return (repository, None);
    }
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[last_slash..].rfind(':') {
        Some(colon) => (
            &image[..last_slash + colon],
            Some(&image[last_slash + colon + 1..]),
        ),
        None => (image, None),
    }
}

struct WantedVersion {
    major: u32,
    minor: u32,
    patch: Option<u32>,
}

/// `2.3`, `2.3.0`, `1.20.5-scala_2.12-java17`, `2.3-java17`: the leading version of a tag.
fn tag_version(tag: &str) -> Option<WantedVersion> {
    let version = tag.split('-').next()?;
    let parts: Vec<&str> = version.split('.').collect();
    let number = |p: &str| p.parse::<u32>().ok();
    match parts.as_slice() {
        [major, minor] => Some(WantedVersion {
            major: number(major)?,
            minor: number(minor)?,
            patch: None,
        }),
        [major, minor, patch] => Some(WantedVersion {
            major: number(major)?,
            minor: number(minor)?,
            patch: Some(number(patch)?),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let dist = |v: &str| Distribution {
            version: v.parse().unwrap(),
            flink_home: PathBuf::from(format!("/dist/{v}")),
            usrlib: None,
            program: None,
        };
        Catalog::new([dist("1.20.5"), dist("2.3.0"), dist("1.20.4")])
    }

    #[test]
    fn the_operators_image_runs_its_binary_once_one_is_given() {
        let error = catalog().resolve("flink-operator:0.1.0").unwrap_err();
        assert!(error.to_string().contains("is not a Flink image"), "{error}");
        let catalog = catalog().with_operator(Distribution::operator("/bin/op".into(), "/empty".into()));
        for image in [
            "flink-operator:0.1.0",
            "flink-operator",
            "registry.local/team/flink-operator:dev",
        ] {
            let resolved = catalog.resolve(image).unwrap();
            assert_eq!(
                resolved.program.as_ref().unwrap().binary,
                PathBuf::from("/bin/op"),
                "{image}"
            );
        }
        assert!(catalog.resolve("flink:2.3").unwrap().program.is_none());
    }

    #[test]
    fn images_resolve_to_installed_versions() {
        let catalog = catalog();
        let cases = [
            ("flink:2.3", "2.3.0"),
            ("flink:2.3.0", "2.3.0"),
            ("flink:1.20", "1.20.5"),
            ("flink:1.20.4", "1.20.4"),
            ("flink:1.20.5-scala_2.12-java17", "1.20.5"),
            ("flink:2.3-java17", "2.3.0"),
            ("apache/flink:2.3.0", "2.3.0"),
            ("docker.io/library/flink:1.20", "1.20.5"),
            ("registry.local:5000/team/flink:2.3", "2.3.0"),
        ];
        for (image, version) in cases {
            let resolved = catalog.resolve(image).unwrap_or_else(|e| panic!("{image}: {e}"));
            assert_eq!(resolved.version.to_string(), version, "{image}");
        }
    }

    #[test]
    fn other_images_are_refused_with_a_reason() {
        let catalog = catalog();
        let cases = [
            ("busybox:1.36", "is not a Flink image"),
            ("registry.local:5000/flink-sidecar:1.0", "is not a Flink image"),
            ("flink", "names no Flink version"),
            ("flink:latest", "names no Flink version"),
            ("flink@sha256:0123", "names no Flink version"),
            (
                "flink:1.15",
                "no local Flink distribution for image \"flink:1.15\" (installed: 1.20.4, 1.20.5, 2.3.0)",
            ),
            ("flink:2.3.1", "no local Flink distribution"),
        ];
        for (image, reason) in cases {
            let error = catalog.resolve(image).unwrap_err().to_string();
            assert!(error.contains(reason), "{image}: {error}");
        }
    }
}
