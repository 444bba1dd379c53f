#!/usr/bin/env bash
# Watching a request over gRPC (docs/benchmarks.md): 1,000 concurrent
# `WatchTranslation` streams on one running request, the server's resident
# memory before and with them, and how long after a pause, then a resume, is
# stored (its call answered) each watcher receives the new state
# (examples/watch_bench.rs). The request stays running because the provider
# simulator answers after 300 s (each run lasts well under the 120 s provider
# timeout).
# Runs 10 connections x 100 streams (the target: exits 1 when missed), then
# 1 connection x 1,000 streams (for information: the server allows a number
# of concurrent streams per HTTP/2 connection).
# Usage: bash bench/watch_grpc.sh [CONTROL]   (CONTROL: grpc (default) or rest;
#   needs python3 and curl; DRAGOMAN_BENCH_BIN=/path/to/dragoman measures that
#   binary instead of a fresh release build)
set -euo pipefail
cd "$(dirname "$0")/.."
control="${1:-grpc}"
target="${CARGO_TARGET_DIR:-$PWD/target}/release"
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  cargo build --release -q -p dragoman --example watch_bench
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build --release -q -p dragoman --bin dragoman --example watch_bench
  bin="$target/dragoman"
fi
watcher="$target/examples/watch_bench"
work="$(mktemp -d)"
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export RUST_LOG=warn API_RATE_LIMIT_PER_MINUTE=1000000000
http=http://127.0.0.1:18880
"$bin" simulate-provider --listen 127.0.0.1:18890 --latency-ms 300000 >"$work/sim.log" 2>&1 &

# Starts the service (embedded SQLite, fresh data folder), makes a token and
# submits a request, waits until it runs; leaves the server running with its
# pid in $work/server.pid, the token in $work/token and the id in $work/id.
prepare() {
  local name="$1"
  export DRAGOMAN_DATA_DIR="$work/data-$name" DRAGOMAN_LISTEN=127.0.0.1:18880 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18881
  "$bin" serve >"$work/serve-$name.log" 2>&1 &
  echo $! >"$work/server.pid"
  for _ in $(seq 100); do curl -sf "$http/health" >/dev/null && break; sleep 0.2; done
  printf '%s\n' 'a long password here' >"$work/pw"
  "$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
  "$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18890/v1 \
    --api-key-env HOME --default >/dev/null
  curl -sf -c "$work/jar" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"a long password here"}' "$http/api/auth/login" >/dev/null
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","jobs:control"]}' \
    "$http/api/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$work/token"
  local token
  token=$(cat "$work/token")
  curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"series":{"name":"Watched","create_if_missing":true},"volume":{"number":1},
         "source_language":"en","target_language":"fr",
         "chapters":[{"number":1,"title":"One","content":"First paragraph.\n\nSecond paragraph."},
                     {"number":2,"title":"Two","content":"Third paragraph.\n\nFourth paragraph."}]}' \
    "$http/api/v1/translation-requests" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["request_id"])' >"$work/id"
  local status=""
  for _ in $(seq 150); do
    status=$(curl -sf -H "Authorization: Bearer $token" "$http/api/v1/translation-requests/$(cat "$work/id")" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
    [ "$status" = running ] && break
    sleep 0.2
  done
  [ "$status" = running ] || { echo "the request did not start: $status" >&2; exit 1; }
}

stop_server() {
  kill "$(cat "$work/server.pid")" && wait "$(cat "$work/server.pid")" 2>/dev/null || true
}

# Runs the watchers: CHANNELS STREAMS [--check].
run() {
  local channels="$1" streams="$2"
  shift 2
  prepare "c$channels"
  WATCH_BENCH_TOKEN=$(cat "$work/token") "$watcher" --server "$http" --request-id "$(cat "$work/id")" \
    --pid "$(cat "$work/server.pid")" --channels "$channels" --streams "$streams" --control "$control" "$@"
  local outcome=$?
  stop_server
  return "$outcome"
}

echo "== 10 connections x 100 streams (target) =="
met=0
run 10 100 --check || met=$?
echo
echo "== 1 connection x 1,000 streams (information) =="
run 1 1000 --open-timeout 20 || true
exit "$met"
