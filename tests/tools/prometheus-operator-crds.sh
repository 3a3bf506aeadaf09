#!/usr/bin/env bash
# Prints the absolute path of a directory that holds the Prometheus Operator's
# CustomResourceDefinitions (ServiceMonitor, PodMonitor, PrometheusRule and the
# rest of monitoring.coreos.com), one YAML file each -- and nothing else on stdout.
#
# The tests install them into their API server so that the chart's monitoring
# objects can be applied with a server-side dry run. The Prometheus Operator
# itself is not run.
#
# Source: the Go module github.com/prometheus-operator/prometheus-operator at
# the version pinned below; its zip carries example/prometheus-operator-crd/,
# the CRDs its releases ship. See module-crds.sh.
set -euo pipefail
NAME=prometheus-operator-crds \
MODULE=github.com/prometheus-operator/prometheus-operator \
VERSION=v0.88.0 \
SUM='h1:3T/dCQdk7CUVRqVfwRHoC5g66fC/ML6XQQLtQVL6Q5o=' \
SUBDIR=example/prometheus-operator-crd \
CALLER="${BASH_SOURCE[0]}" \
    exec "$(dirname "${BASH_SOURCE[0]}")/module-crds.sh"
