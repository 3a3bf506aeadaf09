#!/usr/bin/env bash
# Load benchmark of POST /validate over TLS.
#
# Starts the release binary (webhook only, self-generated certificates), loads it with oha
# at 64 concurrent keep-alive connections posting a realistic FlinkDeployment UPDATE review
# (bench/flinkdeployment-update-review.json: two objects with status, ~10 KiB), and reports
# requests/s, p50/p99 latency and the operator process's peak RSS (VmHWM), in two runs:
#   - saturation: each connection sends its next request as soon as the answer arrives, so
#     the rate is the most the machine does, and the latency is mostly queueing
#     (64 connections / rate);
#   - fixed rate: RATE requests/s spread over the same 64 connections (default 5000), the
#     latency a request sees when the webhook is not the bottleneck.
# The load generator runs on the same machine and takes its share of the cores.
#
#   bench/admission-load.sh [seconds] [rate]   (default 20 s each, after a 3 s warm-up)
#
# oha is installed once into the tool cache ($FLINK_OPERATOR_CACHE, default ~/.cache/flink-operator).
set -euo pipefail
cd "$(dirname "$0")/.."

duration="${1:-20}"
rate="${2:-5000}"
connections=64
cache="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
oha_version=1.16.0
oha="$cache/tools/oha-$oha_version/bin/oha"

if [ ! -x "$oha" ]; then
  echo "installing oha $oha_version into $cache/tools (once)" >&2
  cargo install oha --version "$oha_version" --locked --root "$cache/tools/oha-$oha_version" >&2
fi
cargo build --release --quiet
bin=target/release/flink-operator

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
webhook_port="$(free_port)"
probe_port="$(free_port)"

"$bin" certs generate --out "$work/certs" --dns localhost --ip 127.0.0.1 2>/dev/null
KUBECONFIG="$work/none" RUST_LOG=warn "$bin" run --components webhook --bind-address 127.0.0.1 \
  --tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key" \
  --webhook-port "$webhook_port" --probe-port "$probe_port" 2>"$work/operator.log" &
pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$probe_port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$probe_port/readyz" >/dev/null || { cat "$work/operator.log" >&2; exit 1; }

url="https://localhost:$webhook_port/validate"
body=bench/flinkdeployment-update-review.json
common=(-c "$connections" -m POST -T application/json -D "$body" --cacert "$work/certs/ca.crt" --no-tui)
"$oha" "${common[@]}" -z 3s --output-format json "$url" >/dev/null
"$oha" "${common[@]}" -z "${duration}s" --output-format json "$url" >"$work/saturation.json"
"$oha" "${common[@]}" -z "${duration}s" -q "$rate" --output-format json "$url" >"$work/fixed-rate.json"
rss_kib="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"

python3 - "$work" "$rss_kib" "$connections" "$duration" "$rate" <<'PY'
import json, sys
work, rss_kib, connections, duration, rate = sys.argv[1:]
print(f"POST /validate over TLS, {connections} connections, {duration} s per run, 10 KiB UPDATE review")
failed = False
for name, label in [("saturation", "saturation"), ("fixed-rate", f"fixed rate {rate}/s")]:
    result = json.load(open(f"{work}/{name}.json"))
    summary, pct = result["summary"], result["latencyPercentiles"]
    codes = result.get("statusCodeDistribution", {})
    # Requests cut off by the end of the run are not failures of the server.
    errors = {k: v for k, v in result.get("errorDistribution", {}).items() if "deadline" not in k}
    print(f"  {label:<22} {summary['requestsPerSec']:>8.0f} req/s   p50 {pct['p50'] * 1000:7.3f} ms   "
          f"p99 {pct['p99'] * 1000:7.3f} ms   status {codes} errors {errors or 'none'}")
    failed |= set(codes) != {"200"} or bool(errors)
print(f"  peak RSS of the operator: {int(rss_kib) / 1024:.1f} MiB")
if failed:
    sys.exit("some requests failed")
PY
