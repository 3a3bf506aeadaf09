//! Identifiers Flink hands out or accepts: job ids, trigger ids, jar ids.

use std::fmt;

use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// 16 random bytes as 32 lowercase hex digits, the form of Flink's `JobID` and trigger ids.
fn random_hex_id() -> String {
    let mut bytes = [0u8; 16];
    // The system RNG does not fail on Linux once booted; zeroes would still be a valid id,
    // merely a colliding one, which Flink reports as a duplicate.
    let _ = SystemRandom::new().fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

macro_rules! hex_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// A new random id.
            pub fn random() -> Self {
                Self(random_hex_id())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }
    };
}

hex_id!(
    /// A Flink job id (32 hex digits).
    JobId
);
hex_id!(
    /// The id of an asynchronous operation (savepoint, stop, checkpoint, disposal). Chosen
    /// by the client, it makes a retried trigger land on the same operation.
    TriggerId
);

/// The id of an uploaded jar (the file name Flink gave it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JarId(pub String);

impl fmt::Display for JarId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_32_lowercase_hex_digits_and_differ() {
        let a = JobId::random();
        let b = JobId::random();
        assert_eq!(a.as_str().len(), 32);
        assert!(
            a.as_str()
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
