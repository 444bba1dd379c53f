#!/usr/bin/env bash
# Reading a status document under load (docs/benchmarks.md): wrk against
# `GET /api/v1/translation-requests/{id}` of a finished request, on SQLite and
# on PostgreSQL, and in the same run against a bare axum server answering the
# same path with the same body (examples/bare_axum.rs): the service's rate as
# a share of bare axum's, and its 99th percentile.
# Usage: bash bench/status_wrk.sh [SECONDS] [CONNECTIONS]
#   (needs wrk, python3, curl, createdb/dropdb on 127.0.0.1:5432 as postgres)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
connections="${2:-32}"
cargo build --release -q -p dragoman --bin dragoman --example bare_axum
target="${CARGO_TARGET_DIR:-$PWD/target}/release"
bin="$target/dragoman"
work="$(mktemp -d)"
db="dragoman_bench_status_$$"
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  dropdb -h 127.0.0.1 -U postgres --if-exists "$db" || true
  rm -rf "$work"
}
trap cleanup EXIT
export RUST_LOG=warn API_RATE_LIMIT_PER_MINUTE=1000000000
"$bin" simulate-provider --listen 127.0.0.1:18790 >"$work/sim.log" 2>&1 &

# Prints "requests/s p99_ms" of one wrk run against URL (with TOKEN if given).
measure() {
  local url="$1" token="${2:-}"
  local out
  if [ -n "$token" ]; then
    out=$(wrk -t2 -c"$connections" -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$url")
  else
    out=$(wrk -t2 -c"$connections" -d"${seconds}s" --latency "$url")
  fi
  echo "$out" >>"$work/wrk.log"
  if echo "$out" | grep -q 'Non-2xx'; then
    echo "wrk saw non-2xx answers:" >&2
    echo "$out" >&2
    exit 1
  fi
  python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
p99 = float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
print(f"{rate:.0f} {p99:.2f}")
PY
}

# Starts the service on DATABASE_URL (empty: the embedded SQLite), finishes one request, writes its id,
# token and status document under $work, then leaves the server running.
prepare() {
  local name="$1" database_url="$2"
  export DRAGOMAN_DATA_DIR="$work/data-$name" DRAGOMAN_LISTEN=127.0.0.1:18780 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18781
  if [ -n "$database_url" ]; then
    export DRAGOMAN_DATABASE_URL="$database_url"
  else
    unset DRAGOMAN_DATABASE_URL
  fi
  "$bin" serve >"$work/serve-$name.log" 2>&1 &
  echo $! >"$work/server.pid"
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18780/health >/dev/null && break; sleep 0.2; done
  printf '%s\n' 'a long password here' >"$work/pw"
  "$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
  "$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18790/v1 \
    --api-key-env HOME --default >/dev/null
  curl -sf -c "$work/jar" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"a long password here"}' http://127.0.0.1:18780/api/auth/login >/dev/null
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
    http://127.0.0.1:18780/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$work/token"
  local token
  token=$(cat "$work/token")
  curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'Idempotency-Key: bench-1' \
    -d '{"series":{"name":"Bench","create_if_missing":true},"volume":{"number":1},
         "source_language":"en","target_language":"fr",
         "chapters":[{"number":1,"title":"One","content":"First paragraph.\n\nSecond paragraph."},
                     {"number":2,"title":"Two","content":"Third paragraph.\n\nFourth paragraph."}]}' \
    http://127.0.0.1:18780/api/v1/translation-requests |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["request_id"])' >"$work/id"
  curl -sf -H "Authorization: Bearer $token" \
    "http://127.0.0.1:18780/api/v1/translation-requests/$(cat "$work/id")?wait=120" >"$work/status.json"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["status"]; sys.exit(s not in ("completed","completed_with_residuals"))' \
    "$work/status.json" || { echo "the request did not finish: $(cat "$work/status.json")" >&2; exit 1; }
}

stop_server() {
  kill "$(cat "$work/server.pid")" && wait "$(cat "$work/server.pid")" 2>/dev/null || true
}

echo "wrk -t2 -c$connections -d${seconds}s; status document of a finished 2-chapter request"
echo "| backend | service req/s | service p99 | bare axum req/s | bare axum p99 | service / bare |"
echo "|---|---|---|---|---|---|"
createdb -h 127.0.0.1 -U postgres "$db"
for backend in sqlite postgres; do
  if [ "$backend" = sqlite ]; then
    prepare sqlite ""  # the embedded default: SQLite under the data folder
  else
    prepare postgres "postgres://postgres@127.0.0.1:5432/$db"
  fi
  token=$(cat "$work/token")
  url="http://127.0.0.1:18780/api/v1/translation-requests/$(cat "$work/id")"
  # A short warm-up so neither side is measured cold.
  wrk -t1 -c4 -d2s -H "Authorization: Bearer $token" "$url" >/dev/null
  read -r service_rate service_p99 < <(measure "$url" "$token")
  stop_server
  "$target/examples/bare_axum" 127.0.0.1:18795 "$work/status.json" >/dev/null 2>&1 &
  bare_pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:18795/api/v1/translation-requests/x" >/dev/null && break; sleep 0.1; done
  wrk -t1 -c4 -d2s "http://127.0.0.1:18795/api/v1/translation-requests/x" >/dev/null
  read -r bare_rate bare_p99 < <(measure "http://127.0.0.1:18795/api/v1/translation-requests/$(cat "$work/id")")
  kill "$bare_pid"; wait "$bare_pid" 2>/dev/null || true
  share=$(python3 -c "print(f'{100*$service_rate/$bare_rate:.1f} %')")
  echo "| $backend | $service_rate | $service_p99 ms | $bare_rate | $bare_p99 ms | $share |"
done
