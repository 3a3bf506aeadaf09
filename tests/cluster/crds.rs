use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

use crate::harness::{client, install_crds};

#[tokio::test]
async fn the_api_server_accepts_every_crd_schema_of_the_chart() {
    let client = client().await;
    install_crds(&client).await;
    let api: Api<CustomResourceDefinition> = Api::all(client);
    for (name, short) in [
        ("flinkdeployments.flink.apache.org", "flinkdep"),
        ("flinksessionjobs.flink.apache.org", "sessionjob"),
        ("flinkstatesnapshots.flink.apache.org", "flinksnp"),
        ("flinkbluegreendeployments.flink.apache.org", "flinkbgdep"),
    ] {
        let crd = api.get(name).await.unwrap();
        let status = crd.status.unwrap();
        let conditions = status.conditions.unwrap();
        for condition in ["NamesAccepted", "Established"] {
            assert!(
                conditions
                    .iter()
                    .any(|c| c.type_ == condition && c.status == "True"),
                "{name}: {condition} is not True: {conditions:?}"
            );
        }
        let accepted = status.accepted_names.unwrap();
        assert_eq!(
            accepted.categories.clone().unwrap_or_default(),
            ["flink"],
            "{name}: `kubectl get flink` lists it"
        );
        assert!(
            accepted
                .short_names
                .unwrap_or_default()
                .contains(&short.to_owned()),
            "{name}: short name {short}"
        );
        // A structural schema problem shows up as NonStructuralSchema.
        assert!(
            !conditions
                .iter()
                .any(|c| c.type_ == "NonStructuralSchema" && c.status == "True"),
            "{name}: {conditions:?}"
        );
    }
}
