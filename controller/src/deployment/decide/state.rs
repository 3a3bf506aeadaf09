//! Which state a job restores from, and the guard on its age: the shared rules of
//! [`crate::lifecycle::restore`], as the deployment's steps use them.

pub(super) use crate::lifecycle::restore::{RestorableState, record};
