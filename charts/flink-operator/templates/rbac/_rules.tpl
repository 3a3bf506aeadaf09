{{/*
What the operator may do to the Flink resources and the Kubernetes objects it builds for
them: granted cluster-wide, or in each of the watchNamespaces.
*/}}
{{- define "flink-operator.operatorRules" -}}
# The four kinds: reconciled, and created by the operator (snapshot resources, the
# children of a blue/green deployment). The webhook's lookups read them too.
- apiGroups: ["flink.apache.org"]
  resources:
    - flinkdeployments
    - flinksessionjobs
    - flinkstatesnapshots
    - flinkbluegreendeployments
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["flink.apache.org"]
  resources:
    - flinkdeployments/status
    - flinksessionjobs/status
    - flinkstatesnapshots/status
    - flinkbluegreendeployments/status
  verbs: ["get", "update", "patch"]
# Owner references with blockOwnerDeletion on the objects it creates for a resource.
- apiGroups: ["flink.apache.org"]
  resources:
    - flinkdeployments/finalizers
    - flinksessionjobs/finalizers
    - flinkstatesnapshots/finalizers
    - flinkbluegreendeployments/finalizers
  verbs: ["update"]
# JobManager/TaskManager pods are observed, and deleted when a cluster is torn down.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "delete"]
# A crash-looping JobManager's last log lines, for the cause it reports in status.
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# The services (REST, internal) and ConfigMaps (Flink configuration, logging, HA) of a cluster,
# and the coordination ConfigMap of an ADVANCED blue/green hand-over.
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments/scale"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["replicasets"]
  verbs: ["get", "list", "watch"]
# A job's revisions: each spec applied, kept for a rollback and pruned to the history limit.
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Events that explain what happened (both Event APIs).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- end }}

{{/*
What Flink's JobManager needs in native Kubernetes mode, as the job service account: it
creates, watches and deletes its TaskManager pods (owned by the JobManager Deployment),
keeps the high-availability and leader ConfigMaps (and deletes them by label when a job
ends), and reads its own Deployment and Services.
*/}}
{{- define "flink-operator.jobRules" -}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments/finalizers"]
  verbs: ["update"]
{{- end }}
