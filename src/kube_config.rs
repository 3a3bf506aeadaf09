//! The Kubernetes client configuration of the operator and of its command-line tools.

use kube::config::KubeConfigOptions;

/// The client configuration: from `kubeconfig` when given, else inferred as kubectl does
/// (`$KUBECONFIG` or `~/.kube/config`, else in-cluster); `context` names one of the
/// kubeconfig's contexts instead of its current one.
pub async fn kube_config(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<kube::Config, String> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let described = |e: &dyn std::fmt::Display| match (kubeconfig, context) {
        (Some(path), _) => format!("kubeconfig {}: {e}", path.display()),
        (None, Some(context)) => format!("context {context}: {e}"),
        (None, None) => e.to_string(),
    };
    match (kubeconfig, context) {
        (Some(path), _) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| described(&e))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| described(&e))
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| described(&e)),
        (None, None) => kube::Config::infer().await.map_err(|e| described(&e)),
    }
}
