#!/usr/bin/env bash
# Installs (once) the Flink distribution of VERSION from the `apache-flink-libraries`
# package on PyPI and prints the absolute FLINK_HOME on stdout -- and nothing else.
#
#   FLINK_HOME="$(tests/flink/install.sh 2.3.0)"
#
# FLINK_HOME is ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/flink/<VERSION>/ with
# lib/ (flink-dist and the other jars), bin/bash-java-utils.jar, plugins/ and opt/, as the
# package ships them. The package is a wheel (a zip, pyflink/...) for 2.x and an sdist (a
# tar.gz, deps/...) for 1.x; both are fetched with `pip download --no-deps`, no venv.
#
# The launch scripts (bin/*.sh, bin/flink) and the default conf/ come from the `apache-flink`
# wheel of the same version, so that FLINK_HOME is laid out like /opt/flink in the official
# image. As the image's build does, the default configuration is then edited so that the
# processes bind to all addresses (the local runtime gives each pod an address of its own).
#
# A complete install has the marker file .installed, written last, so a warm cache returns
# at once. A cold one unpacks into a temporary directory next to the target and renames it
# into place, so an interrupted or concurrent install never leaves a half-filled FLINK_HOME.
# Progress goes to stderr.
set -euo pipefail

log() { printf 'flink-install: %s\n' "$*" >&2; }

if [[ $# -ne 1 || ! "$1" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    log "usage: $0 VERSION   (for example 2.3.0)"
    exit 2
fi
version="$1"

cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/flink"
home="$parent/$version"
marker="$home/.installed"

# Bump when the layout of an install changes, so that older installs are redone.
layout="layout=2"
installed() { [[ -f "$marker" ]] && grep -qx "$layout" "$marker"; }

if installed; then
    printf '%s/\n' "$home"
    exit 0
fi

mkdir -p "$parent"
# One install per version at a time: a second caller waits and then takes the warm path.
exec 9>"$parent/.lock-$version"
flock 9
if installed; then
    printf '%s/\n' "$home"
    exit 0
fi

work="$(mktemp -d "$parent/.install-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT

pip=(python3 -m pip)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
    log "python3 -m pip is not available"
    exit 1
fi

log "downloading apache-flink-libraries==$version (a few hundred MB)"
start=$SECONDS
"${pip[@]}" download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
    --dest "$work/dl" "apache-flink-libraries==$version" >&2
log "downloaded in $((SECONDS - start)) s"

shopt -s nullglob
files=("$work"/dl/*)
shopt -u nullglob
if [[ ${#files[@]} -ne 1 ]]; then
    log "expected one downloaded file, got: ${files[*]:-none}"
    exit 1
fi
archive="${files[0]}"

log "unpacking $(basename "$archive")"
mkdir -p "$work/x"
case "$archive" in
    *.whl | *.zip)
        python3 -m zipfile -e "$archive" "$work/x" >&2
        src="$work/x/pyflink"
        ;;
    *.tar.gz)
        tar -xzf "$archive" -C "$work/x"
        src="$(find "$work/x" -mindepth 2 -maxdepth 2 -type d -name deps | head -n1)"
        ;;
    *)
        log "unknown archive type: $archive"
        exit 1
        ;;
esac
if [[ -z "$src" || ! -d "$src/lib" ]]; then
    log "no lib/ directory in $(basename "$archive")"
    exit 1
fi

stage="$work/home"
mkdir -p "$stage/bin"
for d in lib opt plugins; do
    if [[ -d "$src/$d" ]]; then
        mv "$src/$d" "$stage/$d"
    else
        mkdir -p "$stage/$d"
    fi
done
if [[ ! -f "$src/bin/bash-java-utils.jar" ]]; then
    log "bin/bash-java-utils.jar is missing from $(basename "$archive")"
    exit 1
fi
mv "$src/bin/bash-java-utils.jar" "$stage/bin/"
# Only jars are needed from lib/, opt/ and plugins/; drop Python leftovers of the sdist.
find "$stage" -name '__init__.py' -delete
find "$stage" -name '__pycache__' -type d -prune -exec rm -rf {} +

if ! compgen -G "$stage/lib/flink-dist*.jar" >/dev/null; then
    log "lib/flink-dist*.jar is missing from $(basename "$archive")"
    exit 1
fi

log "downloading apache-flink==$version for its launch scripts and default configuration"
# The wheel is built per Python version, but the scripts and configuration in it are the same
# in each. Older releases have no wheel for this interpreter (1.18 stops at CPython 3.10): then
# the Linux wheel of an older CPython is fetched instead; nothing of it is run.
fetched=""
for py in "" 3.10 3.9 3.8; do
    target=()
    if [[ -n "$py" ]]; then
        target=(--python-version "$py" --implementation cp
            --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
        log "no apache-flink==$version wheel for this Python; trying the one for CPython $py"
    fi
    if "${pip[@]}" download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
        --only-binary=:all: "${target[@]}" --dest "$work/scripts-dl" "apache-flink==$version" \
        >&2 2>"$work/pip-scripts.err"; then
        fetched=yes
        break
    fi
done
if [[ -z "$fetched" ]]; then
    cat "$work/pip-scripts.err" >&2
    log "no apache-flink==$version wheel found"
    exit 1
fi
wheels=("$work"/scripts-dl/*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    log "expected one apache-flink wheel, got: ${wheels[*]:-none}"
    exit 1
fi
python3 -m zipfile -e "${wheels[0]}" "$work/scripts" >&2
for f in "$work"/scripts/pyflink/bin/*.sh "$work"/scripts/pyflink/bin/flink; do
    install -m 0755 "$f" "$stage/bin/"
done
mkdir -p "$stage/conf" "$stage/log" "$stage/usrlib"
cp "$work"/scripts/pyflink/conf/* "$stage/conf/"
# Flink 1.19+ ships conf/config.yaml and bin/config-parser-utils.sh to edit it; 1.18 ships
# conf/flink-conf.yaml (flat `key: value` lines), which its image edits with sed.
required=(kubernetes-jobmanager.sh kubernetes-taskmanager.sh jobmanager.sh taskmanager.sh
    standalone-job.sh config.sh flink-console.sh)
if [[ -f "$stage/conf/config.yaml" ]]; then
    required+=(config-parser-utils.sh)
elif [[ ! -f "$stage/conf/flink-conf.yaml" ]]; then
    log "the apache-flink $version wheel has neither conf/config.yaml nor conf/flink-conf.yaml"
    exit 1
fi
for f in "${required[@]}"; do
    if [[ ! -x "$stage/bin/$f" ]]; then
        log "bin/$f is missing from the apache-flink $version wheel"
        exit 1
    fi
done
# The official image's build step: listen on every address, and let the TaskManager find its
# own address instead of advertising localhost.
if [[ -f "$stage/conf/config.yaml" ]]; then
    bash "$stage/bin/config-parser-utils.sh" "$stage/conf" "$stage/bin" "$stage/lib" \
        -repKV rest.address,localhost,0.0.0.0 \
        -repKV rest.bind-address,localhost,0.0.0.0 \
        -repKV jobmanager.bind-host,localhost,0.0.0.0 \
        -repKV taskmanager.bind-host,localhost,0.0.0.0 \
        -rmKV taskmanager.host=localhost >&2
else
    sed -i \
        -e 's/^rest\.address: localhost$/rest.address: 0.0.0.0/' \
        -e 's/^rest\.bind-address: localhost$/rest.bind-address: 0.0.0.0/' \
        -e 's/^jobmanager\.bind-host: localhost$/jobmanager.bind-host: 0.0.0.0/' \
        -e 's/^taskmanager\.bind-host: localhost$/taskmanager.bind-host: 0.0.0.0/' \
        -e '/^taskmanager\.host: localhost$/d' \
        "$stage/conf/flink-conf.yaml"
fi
printf '%s\n%s\n' "$version" "$layout" >"$stage/.installed"

# A leftover without the marker cannot come from this script (the rename is atomic), but
# clear it anyway; mv -T refuses to replace a non-empty directory, so of two concurrent
# installs the first rename wins and the second keeps it.
if [[ -d "$home" ]] && ! installed; then
    rm -rf "$home"
fi
if ! mv -T "$stage" "$home" 2>/dev/null; then
    if ! installed; then
        log "could not move the install into $home"
        exit 1
    fi
    log "$home was installed concurrently; keeping it"
fi
log "installed Flink $version in $((SECONDS - start)) s"
printf '%s/\n' "$home"
