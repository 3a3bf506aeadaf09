#!/usr/bin/env bash
# Prints the absolute path of a directory holding the Apache ZooKeeper server's jars (the
# server and its runtime dependencies, one flat directory) -- and nothing else on stdout.
#
# The end-to-end tests of ZooKeeper high availability start a single server from it on the
# local runtime's host address:
#   java -cp "<dir>/*" org.apache.zookeeper.server.ZooKeeperServerMain <zoo.cfg>
# (a zoo.cfg with clientPortAddress, clientPort and dataDir: the command line form takes
# a port only and would listen on every address).
#
# Source: org.apache.zookeeper:zookeeper on Maven Central, resolved with Maven
# (dependency:copy-dependencies of a one-dependency project); the server jar's sha256 is pinned
# below. Cached at ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/zookeeper/<key>/
# where <key> is the sha256 of this script. A warm cache returns at once; progress goes to
# stderr.
set -euo pipefail

VERSION=3.9.5
JAR_SHA256=936d025db1a85f085edea25048c3f5b3de5fc29329c371a10925e3b78b0b38a0

log() { printf 'zookeeper: %s\n' "$*" >&2; }

script="${BASH_SOURCE[0]}"
key="$(sha256sum "$script" | cut -d' ' -f1)"
cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/zookeeper"
dir="$parent/$key"

# The directory only ever appears whole (renamed into place from a staging directory).
if [[ -d "$dir" ]]; then
    printf '%s\n' "$dir"
    exit 0
fi

for tool in mvn java; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "$tool is not on PATH (Maven fetches the server, a JDK runs it)"
        exit 1
    fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>flinkoperator.tests</groupId>
  <artifactId>zookeeper-server</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.zookeeper</groupId>
      <artifactId>zookeeper</artifactId>
      <version>$VERSION</version>
      <exclusions>
        <!-- OpenSSL for TLS client ports, which the tests do not open -->
        <exclusion>
          <groupId>io.netty</groupId>
          <artifactId>netty-tcnative-boringssl-static</artifactId>
        </exclusion>
      </exclusions>
    </dependency>
    <!-- "provided" in ZooKeeper's POM, shipped in its binary distribution: the server's
         metrics and its snapshots need them to start -->
    <dependency>
      <groupId>io.dropwizard.metrics</groupId>
      <artifactId>metrics-core</artifactId>
      <version>4.2.40</version>
    </dependency>
    <dependency>
      <groupId>org.xerial.snappy</groupId>
      <artifactId>snappy-java</artifactId>
      <version>1.1.10.5</version>
    </dependency>
    <!-- a logger on stderr, so that a failing test shows what the server said -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>2.0.13</version>
    </dependency>
  </dependencies>
</project>
POM
log "downloading org.apache.zookeeper:zookeeper:$VERSION and its runtime dependencies (Maven Central)"
(cd "$work" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$work/lib") >&2
sum="$(sha256sum "$work/lib/zookeeper-$VERSION.jar" | cut -d' ' -f1)"
if [[ "$sum" != "$JAR_SHA256" ]]; then
    log "unexpected sha256 $sum of zookeeper-$VERSION.jar (pinned $JAR_SHA256)"
    exit 1
fi

mkdir -p "$parent"
stage="$(mktemp -d "$parent/.stage.XXXXXX")"
chmod 0755 "$stage"
trap 'rm -rf "$work" "$stage"' EXIT
install -m 0644 "$work"/lib/*.jar "$stage/"

# Another run may have finished first: keep its directory, drop ours.
if mv -T "$stage" "$dir" 2>/dev/null; then
    log "$(ls "$dir" | wc -l) jars of ZooKeeper $VERSION in $dir"
else
    rm -rf "$stage"
fi
trap 'rm -rf "$work"' EXIT
printf '%s\n' "$dir"
