{{/*
What the operator may do to the Flink resources and the Kubernetes objects it builds for
them: granted cluster-wide, or in each of the watchNamespaces.
*/}}
{{- define "flink-operator.operatorRules" -}}
# Exactly what the operator does (the end-to-end tests compare every request it made with
# these rules: tests/e2e/zz_rbac.rs). Objects are written by merge patch or server-side
# apply, never by update.
# FlinkDeployments: reconciled; created and deleted as the children of a blue/green
# deployment; read by name by the webhook's lookups and a rollback.
- apiGroups: ["flink.apache.org"]
  resources: ["flinkdeployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# FlinkSessionJobs: reconciled; read by name by the webhook's lookups and a rollback.
- apiGroups: ["flink.apache.org"]
  resources: ["flinksessionjobs"]
  verbs: ["get", "list", "watch", "patch"]
# FlinkStateSnapshots: reconciled; created for the operator's own savepoints, deleted when
# the savepoint history is trimmed.
- apiGroups: ["flink.apache.org"]
  resources: ["flinkstatesnapshots"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["flink.apache.org"]
  resources: ["flinkbluegreendeployments"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["flink.apache.org"]
  resources:
    - flinkdeployments/status
    - flinksessionjobs/status
    - flinkstatesnapshots/status
    - flinkbluegreendeployments/status
  verbs: ["patch"]
# Owner references with blockOwnerDeletion on the objects it creates for a resource: no
# request uses it, the API server checks it when the OwnerReferencesPermissionEnforcement
# admission plugin is on.
- apiGroups: ["flink.apache.org"]
  resources:
    - flinkdeployments/finalizers
    - flinksessionjobs/finalizers
    - flinkstatesnapshots/finalizers
    - flinkbluegreendeployments/finalizers
  verbs: ["update"]
# JobManager pods are observed (a cluster's objects go with their owner when it is deleted).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
# A crash-looping JobManager's last log lines, for the cause it reports in status.
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# The services (REST, internal) of a cluster, by server-side apply (create: applying an
# object that does not exist yet is authorized as a create too).
- apiGroups: [""]
  resources: ["services"]
  verbs: ["create", "patch"]
# ConfigMaps: a cluster's (Flink configuration, logging), its HA metadata (read, cleaned up),
# the coordination ConfigMap of an ADVANCED blue/green hand-over, and the job autoscaler's
# scaling history (read by name before a decision is added to it).
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# JobManager and TaskManager Deployments: watched, applied, deleted; read by name when the
# cache lacks one that the status says exists, before any recovery acts on its absence.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments/finalizers"]
  verbs: ["update"]
# A job's revisions: each spec applied, kept for a rollback and pruned to the history limit.
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["list", "watch", "create", "patch", "delete"]
# The Ingresses of spec.ingress (unless kubernetes.operator.ingress.manage is false): watched,
# read by name before a write (one the operator did not create is never taken over), created
# when there is none, applied when the resource owns it, deleted when spec.ingress is removed.
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# Events that explain what happened.
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
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
