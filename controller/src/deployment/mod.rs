//! The FlinkDeployment reconcile loop: observe -> decide -> act -> status.

pub mod decide;
