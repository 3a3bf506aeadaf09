{{/*
Values of the Apache operator's chart that this chart does not take, each with what to use
instead: a values file written for the Apache chart is refused with the whole list, rather
than installed with settings silently dropped (the schema lets these keys through to here).
*/}}
{{- define "flink-operator.apacheValues" -}}
{{- $instead := dict
  "operatorPod" "use resources, podAnnotations, podLabels, nodeSelector, tolerations, affinity, topologySpreadConstraints, priorityClassName, extraEnv, envFrom (top level)"
  "operatorServiceAccount" "use serviceAccount (create, name, annotations)"
  "operatorVolumes" "use extraVolumes"
  "operatorVolumeMounts" "use extraVolumeMounts"
  "operatorSecurityContext" "use securityContext"
  "webhookSecurityContext" "use securityContext (one container serves the webhook and the controllers)"
  "defaultConfiguration" "use operatorConfiguration for the flink-conf.yaml keys (flat or nested), flinkLogConfiguration for log4j-console.properties (the clusters' logs), logLevel and logFormat for the operator's own logs (log4j-operator.properties)"
  "jvmArgs" "remove it: the operator is no JVM"
  "operatorHealth" "use startupProbe, livenessProbe, readinessProbe (/healthz and /readyz on containerPorts.probes)"
  "metrics" "use service.metricsPort and monitoring.serviceMonitor or monitoring.podMonitor (/metrics on the probes port)"
  "postStart" "use initContainers or extraContainers"
  "tls" "use extraVolumes, extraVolumeMounts and extraEnv OPERATOR_TRUSTSTORE_PATH with PEM files (docs/operations.md#flink-rest-over-ssl)"
  "operatorServiceAccountName" "use serviceAccount.name"
}}
{{- $found := list }}
{{- range $key := keys $instead | sortAlpha }}
{{- if hasKey $.Values $key }}
{{- $found = append $found (printf "%s: %s" $key (get $instead $key)) }}
{{- end }}
{{- end }}
{{- if $found }}
{{- fail (printf "these values are the Apache Flink operator chart's, which this chart does not take (docs/migrating.md#helm-values):\n  %s" (join "\n  " $found)) }}
{{- end }}
{{- end }}
