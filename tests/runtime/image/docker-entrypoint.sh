#!/usr/bin/env bash
# The local runtime's stand-in for the official Flink image's /docker-entrypoint.sh.
#
# It keeps the image's contract: the first argument picks the process (jobmanager,
# standalone-job, taskmanager, history-server, help), anything else is executed as given
# (native mode passes `bash -c "kubernetes-jobmanager.sh ..."` through here). Before that,
# the configuration in $FLINK_HOME/conf gets the image's fixed settings and FLINK_PROPERTIES,
# unless it is read-only (a ConfigMap volume), in which case it is used as it is, as on
# Kubernetes. The image's jemalloc preload is left out: the distribution has no jemalloc.
set -euo pipefail

COMMAND_STANDALONE="standalone-job"
COMMAND_HISTORY_SERVER="history-server"

args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then
    args=(help)
fi

usage() {
    echo "Usage: $(basename "$0") (jobmanager|${COMMAND_STANDALONE}|taskmanager|${COMMAND_HISTORY_SERVER})|help"
}

# ENABLE_BUILT_IN_PLUGINS: `;`-separated jar names under $FLINK_HOME/opt to enable as plugins.
copy_plugins_if_required() {
    if [[ -z "${ENABLE_BUILT_IN_PLUGINS:-}" ]]; then
        return 0
    fi
    echo "Enabling required built-in plugins"
    local plugins
    IFS=';' read -r -a plugins <<<"$ENABLE_BUILT_IN_PLUGINS"
    for jar in "${plugins[@]}"; do
        jar="$(echo "$jar" | tr -d '[:space:]')"
        [[ -z "$jar" ]] && continue
        if [[ ! -e "$FLINK_HOME/opt/$jar" ]]; then
            echo "Plugin $jar does not exist in $FLINK_HOME/opt. Exiting."
            exit 1
        fi
        local dir="$FLINK_HOME/plugins/${jar%.jar}"
        mkdir -p "$dir"
        ln -fs "$FLINK_HOME/opt/$jar" "$dir/"
        echo "Successfully enabled $jar"
    done
}

# Flink 1.18 (flink-conf.yaml, no config-parser-utils.sh): its image's sed edit of one flat
# `key: value` line, or a new line.
set_config_option() {
    local file="$1" option="$2" value="$3"
    local escaped="${option//./\\.}"
    if grep -qE "^${escaped}:" "$file"; then
        sed -i -e "s|^${escaped}:.*|${option}: ${value}|" "$file"
    else
        echo "${option}: ${value}" >>"$file"
    fi
}

prepare_legacy_configuration() {
    local file="$1/flink-conf.yaml"
    set_config_option "$file" jobmanager.rpc.address "${JOB_MANAGER_RPC_ADDRESS:-$(hostname -f)}"
    set_config_option "$file" blob.server.port 6124
    set_config_option "$file" query.server.port 6125
    if [[ -n "${TASK_MANAGER_NUMBER_OF_TASK_SLOTS:-}" ]]; then
        set_config_option "$file" taskmanager.numberOfTaskSlots "${TASK_MANAGER_NUMBER_OF_TASK_SLOTS}"
    fi
    if [[ -n "${FLINK_PROPERTIES:-}" ]]; then
        echo "${FLINK_PROPERTIES}" >>"$file"
    fi
    envsubst <"$file" >"$file.tmp" && mv "$file.tmp" "$file"
}

prepare_configuration() {
    local conf_dir="$FLINK_HOME/conf"
    if [[ ! -w "$conf_dir" ]] || ! touch "$conf_dir/.writable" 2>/dev/null; then
        echo "$conf_dir is read-only; using the mounted configuration as it is"
        return 0
    fi
    rm -f "$conf_dir/.writable"
    if [[ ! -f "$FLINK_HOME/bin/config-parser-utils.sh" ]]; then
        prepare_legacy_configuration "$conf_dir"
        return 0
    fi
    local fixed=(
        "-Djobmanager.rpc.address=${JOB_MANAGER_RPC_ADDRESS:-$(hostname -f)}"
        "-Dblob.server.port=6124"
        "-Dquery.server.port=6125"
    )
    if [[ -n "${TASK_MANAGER_NUMBER_OF_TASK_SLOTS:-}" ]]; then
        fixed+=("-Dtaskmanager.numberOfTaskSlots=${TASK_MANAGER_NUMBER_OF_TASK_SLOTS}")
    fi
    bash "$FLINK_HOME/bin/config-parser-utils.sh" "$conf_dir" "$FLINK_HOME/bin" "$FLINK_HOME/lib" "${fixed[@]}"
    if [[ -n "${FLINK_PROPERTIES:-}" ]]; then
        local props=()
        while IFS= read -r line; do
            line="$(echo "$line" | tr -d '[:space:]')"
            [[ -z "$line" || "$line" != *:* ]] && continue
            props+=("-D${line%%:*}=$(echo "${line#*:}" | envsubst)")
        done <<<"$FLINK_PROPERTIES"
        if [[ ${#props[@]} -gt 0 ]]; then
            bash "$FLINK_HOME/bin/config-parser-utils.sh" "$conf_dir" "$FLINK_HOME/bin" "$FLINK_HOME/lib" "${props[@]}"
        fi
    fi
}

copy_plugins_if_required

case "${args[0]}" in
    help)
        usage
        exit 0
        ;;
    jobmanager)
        prepare_configuration
        echo "Starting Job Manager"
        exec "$FLINK_HOME/bin/jobmanager.sh" start-foreground "${args[@]:1}"
        ;;
    "$COMMAND_STANDALONE")
        prepare_configuration
        echo "Starting Job Manager"
        exec "$FLINK_HOME/bin/standalone-job.sh" start-foreground "${args[@]:1}"
        ;;
    "$COMMAND_HISTORY_SERVER")
        prepare_configuration
        echo "Starting History Server"
        exec "$FLINK_HOME/bin/historyserver.sh" start-foreground "${args[@]:1}"
        ;;
    taskmanager)
        prepare_configuration
        echo "Starting Task Manager"
        exec "$FLINK_HOME/bin/taskmanager.sh" start-foreground "${args[@]:1}"
        ;;
esac

prepare_configuration
exec "${args[@]}"
