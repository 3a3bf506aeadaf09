#!/usr/bin/env bash
# Prints the absolute path of a directory that holds cert-manager's
# CustomResourceDefinitions (certificates, issuers, clusterissuers,
# certificaterequests, and the acme orders/challenges), one YAML file each --
# and nothing else on stdout.
#
#   kubectl apply -f "$(tests/tools/cert-manager-crds.sh)"
#
# The tests install them into their API server so that the chart's
# cert-manager mode (Issuer, Certificate) can be applied with a server-side
# dry run. cert-manager itself is not run.
#
# Source: the Go module github.com/cert-manager/cert-manager at the version
# pinned below. Its zip carries deploy/crds/*.yaml, the controller-gen output
# from which cert-manager's own Helm chart templates its CRDs (same spec; the
# chart adds only labels and a keep annotation). See module-crds.sh.
set -euo pipefail
NAME=cert-manager-crds \
MODULE=github.com/cert-manager/cert-manager \
VERSION=v1.21.2 \
SUM='h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68=' \
SUBDIR=deploy/crds \
CALLER="${BASH_SOURCE[0]}" \
    exec "$(dirname "${BASH_SOURCE[0]}")/module-crds.sh"
