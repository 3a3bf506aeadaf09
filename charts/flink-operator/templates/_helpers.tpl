{{/*
Names, labels and the derived settings shared by the templates.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "flink-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Base name of the release's resources: fullnameOverride, else the release name when it
already contains the chart name, else "<release>-<chart>". Cut to leave room for suffixes.
*/}}
{{- define "flink-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of the cluster-scoped objects (webhook configurations, ClusterRoles and their
bindings): the base name plus the release namespace, so that the same release name in
two namespaces (one operator per team, with watchNamespaces) does not collide.
*/}}
{{- define "flink-operator.clusterName" -}}
{{- printf "%s-%s" (include "flink-operator.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "flink-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "flink-operator.labels" -}}
helm.sh/chart: {{ include "flink-operator.chart" . }}
{{ include "flink-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: flink-operator
{{- end }}

{{/* Labels that select the operator pods (never change them: selectors are immutable). */}}
{{- define "flink-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flink-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The operator's ServiceAccount. */}}
{{- define "flink-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "flink-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Service in front of the webhook; the serving certificate is issued for its DNS names. */}}
{{- define "flink-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "flink-operator.fullname" .) }}
{{- end }}

{{/* Secret with the webhook's ca.crt, tls.crt and tls.key (both certificate modes). */}}
{{- define "flink-operator.webhookSecretName" -}}
{{- default (printf "%s-webhook-certs" (include "flink-operator.fullname" .)) .Values.webhook.certificates.secretName }}
{{- end }}

{{/*
Sets the keys of a configuration map into "into" as flat keys ("a: {b: 1}" as "a.b: 1"),
as the operator reads them; called with (dict "into" $flat "prefix" "" "values" $map).
*/}}
{{- define "flink-operator.flattenInto" -}}
{{- range $key, $value := .values }}
{{- $flat := ternary $key (printf "%s.%s" $.prefix $key) (eq $.prefix "") }}
{{- if kindIs "map" $value }}
{{- include "flink-operator.flattenInto" (dict "into" $.into "prefix" $flat "values" $value) }}
{{- else }}
{{- $_ := set $.into $flat $value }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The operator configuration: the operator's defaults (conf/operator-defaults.yaml), then
operatorConfiguration over them. Both are flattened first, so that a value set nested
replaces a default set flat.
*/}}
{{- define "flink-operator.operatorConfiguration" -}}
{{- $config := dict }}
{{- include "flink-operator.flattenInto" (dict "into" $config "prefix" "" "values" (.Files.Get "conf/operator-defaults.yaml" | fromYaml)) }}
{{- include "flink-operator.flattenInto" (dict "into" $config "prefix" "" "values" (.Values.operatorConfiguration | default dict)) }}
{{- if and .Values.leaderElection.enabled (not (hasKey $config "kubernetes.operator.leader-election.enabled")) }}
{{- $_ := set $config "kubernetes.operator.leader-election.enabled" true }}
{{- end }}
{{- if and (eq (toString (get $config "kubernetes.operator.leader-election.enabled")) "true") (not (hasKey $config "kubernetes.operator.leader-election.lease-name")) }}
{{- $_ := set $config "kubernetes.operator.leader-election.lease-name" (default (printf "%s-leader" (include "flink-operator.fullname" .)) .Values.leaderElection.leaseName) }}
{{- end }}
{{- if and .Values.operatorNamespace.allowFlinkResources (not (hasKey $config "kubernetes.operator.operator-namespace.flink-resources.enabled")) }}
{{- $_ := set $config "kubernetes.operator.operator-namespace.flink-resources.enabled" true }}
{{- end }}
{{- if and .Values.watchNamespaces (not (hasKey $config "kubernetes.operator.watched.namespaces")) }}
{{- $_ := set $config "kubernetes.operator.watched.namespaces" (join "," (uniq .Values.watchNamespaces)) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* ConfigMap of the operator configuration. */}}
{{- define "flink-operator.configMapName" -}}
{{- printf "%s-config" (include "flink-operator.fullname" .) }}
{{- end }}

{{/* cert-manager Certificate and the self-signed Issuer. */}}
{{- define "flink-operator.certificateName" -}}
{{- printf "%s-webhook" (include "flink-operator.fullname" .) }}
{{- end }}
{{- define "flink-operator.issuerName" -}}
{{- printf "%s-selfsigned" (include "flink-operator.fullname" .) }}
{{- end }}

{{/*
The certificate mode, checked: "operator" or "cert-manager"; "" when the webhook is off.
*/}}
{{- define "flink-operator.certMode" -}}
{{- if .Values.webhook.create }}
{{- $mode := .Values.webhook.certificates.mode }}
{{- if not (has $mode (list "operator" "cert-manager")) }}
{{- fail (printf "webhook.certificates.mode must be \"operator\" or \"cert-manager\", not %q" $mode) }}
{{- end }}
{{- $mode }}
{{- end }}
{{- end }}

{{/* --components: the value, else all (webhook on) or controllers (webhook off). */}}
{{- define "flink-operator.components" -}}
{{- $c := .Values.components | default (ternary "all" "controllers" (.Values.webhook.create | default false)) }}
{{- if not (has $c (list "all" "webhook" "controllers")) }}
{{- fail (printf "components must be all, webhook or controllers, not %q" $c) }}
{{- end }}
{{- if and (ne $c "controllers") (not .Values.webhook.create) }}
{{- fail (printf "components %q serves the webhook, which needs webhook.create: true" $c) }}
{{- end }}
{{- $c }}
{{- end }}

{{/*
Whether Flink resources are allowed in the release namespace, the operator's own: by
operatorNamespace.allowFlinkResources, or by the key set in operatorConfiguration.
*/}}
{{- define "flink-operator.operatorNamespaceAllowed" -}}
{{- $key := "kubernetes.operator.operator-namespace.flink-resources.enabled" }}
{{- $config := include "flink-operator.operatorConfiguration" . | fromYaml }}
{{- if eq (lower (toString (get $config $key))) "true" }}true{{ end }}
{{- end }}

{{/*
Namespaces that get the job service account and its Role: jobServiceAccount.namespaces,
else the watched namespaces; never the release namespace (the operator's own, which holds
its credentials) unless Flink resources are allowed there. With all namespaces watched and
no list, none: the chart cannot know the tenants' namespaces.
*/}}
{{- define "flink-operator.jobNamespaces" -}}
{{- $wanted := .Values.jobServiceAccount.namespaces | default .Values.watchNamespaces | default list | uniq }}
{{- if include "flink-operator.operatorNamespaceAllowed" . }}
{{- toJson $wanted }}
{{- else }}
{{- if has .Release.Namespace .Values.jobServiceAccount.namespaces }}
{{- fail (printf "jobServiceAccount.namespaces lists the release namespace %q, the operator's own: its job service account could take over the operator. Use a namespace of your own, or set operatorNamespace.allowFlinkResources: true" .Release.Namespace) }}
{{- end }}
{{- toJson (without $wanted .Release.Namespace) }}
{{- end }}
{{- end }}

{{/* The container image reference. */}}
{{- define "flink-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/*
The flink.apache.org rules the webhooks match: the four kinds, CREATE and UPDATE.
*/}}
{{- define "flink-operator.webhookRules" -}}
- apiGroups: ["flink.apache.org"]
  apiVersions: ["v1beta1"]
  operations: ["CREATE", "UPDATE"]
  resources:
    - flinkdeployments
    - flinksessionjobs
    - flinkstatesnapshots
    - flinkbluegreendeployments
  scope: Namespaced
{{- end }}

{{/*
The selectors and settings both webhooks share.
*/}}
{{- define "flink-operator.webhookCommon" -}}
admissionReviewVersions: ["v1"]
sideEffects: None
failurePolicy: {{ .Values.webhook.failurePolicy }}
matchPolicy: Equivalent
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
{{- if .Values.webhook.namespaceSelector }}
namespaceSelector:
  {{- toYaml .Values.webhook.namespaceSelector | nindent 2 }}
{{- else if .Values.watchNamespaces }}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: In
      values:
        {{- toYaml (uniq .Values.watchNamespaces) | nindent 8 }}
{{- else }}
namespaceSelector: {}
{{- end }}
objectSelector:
  {{- if .Values.webhook.objectSelector }}
  {{- toYaml .Values.webhook.objectSelector | nindent 2 }}
  {{- else }} {}
  {{- end }}
{{- end }}

{{/* Annotations of both webhook configurations: cert-manager's CA injection. */}}
{{- define "flink-operator.webhookAnnotations" -}}
{{- if eq (include "flink-operator.certMode" .) "cert-manager" -}}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "flink-operator.certificateName" .) }}
{{- end }}
{{- end }}

{{/*
The clientConfig of one webhook; $path is "/validate" or "/mutate". No caBundle: the
operator (mode operator) or cert-manager's CA injector (mode cert-manager) writes it.
*/}}
{{- define "flink-operator.webhookClientConfig" -}}
{{- $ := index . 0 }}
{{- $path := index . 1 -}}
clientConfig:
  service:
    name: {{ include "flink-operator.webhookServiceName" $ }}
    namespace: {{ $.Release.Namespace }}
    path: {{ $path }}
    port: {{ $.Values.service.webhookPort }}
{{- end }}
