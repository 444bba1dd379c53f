#!/usr/bin/env bash
# Work-conserving provider capacity, measured through the provider simulator
# on a release build (docs/benchmarks.md):
#   1. one book alone on an idle provider of capacity CAPACITY: wall time from
#      submission to `completed` against the fastest any client could be
#      (calls x latency / capacity), and where the time went;
#   2. two books of two accounts (two users, two tokens) submitted together
#      on the same provider: each book's mean number of calls in flight while
#      both had calls to make, against half the capacity.
# Books are JSON requests of PASSAGES passages (ten a chapter, so a title
# every ten), quality `fast` (no analysis, no review: every call is a
# translation call, plus any autopilot repair, which the figures count) and
# DRAGOMAN_BATCH_TOKENS=1 (one passage a call). The provider's base URL is a
# recording proxy in front of the simulator (bench/capacity_run.py), which
# tells the books' calls apart and times them.
# Usage: bash bench/capacity.sh [LATENCY_MS] [CAPACITY] [PASSAGES]
#   (defaults 300 8 400; needs python3, curl; exits 1 when a target is missed)
set -euo pipefail
cd "$(dirname "$0")/.."
latency="${1:-300}"
capacity="${2:-8}"
passages="${3:-400}"
# DRAGOMAN_BENCH_BIN=/path/to/dragoman measures that binary instead of a
# fresh release build.
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build --release -q
  bin="$PWD/target/release/dragoman"
  [ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/dragoman"
fi
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export DRAGOMAN_DATA_DIR="$work/data" DRAGOMAN_LISTEN=127.0.0.1:18680 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18681
export DRAGOMAN_BATCH_TOKENS=1
"$bin" simulate-provider --listen 127.0.0.1:18690 --latency-ms "$latency" >"$work/sim.log" 2>&1 &
python3 bench/capacity_run.py proxy 18691 18690 >"$work/proxy.log" 2>&1 &
"$bin" serve >"$work/serve.log" 2>&1 &
for _ in $(seq 100); do curl -sf http://127.0.0.1:18680/health >/dev/null && break; sleep 0.2; done
for _ in $(seq 50); do curl -sf http://127.0.0.1:18691/_calls >/dev/null && break; sleep 0.1; done
printf '%s\n' 'a long password here' >"$work/pw"
"$bin" admin create-user --username bench-a --password-file "$work/pw" --admin >/dev/null
"$bin" admin create-user --username bench-b --password-file "$work/pw" >/dev/null
"$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18691/v1 \
  --api-key-env HOME --capacity "$capacity" --default >/dev/null
token_of() {
  curl -sf -c "$work/jar-$1" -H 'content-type: application/json' \
    -d "{\"username\":\"$1\",\"password\":\"a long password here\"}" http://127.0.0.1:18680/api/auth/login >/dev/null
  curl -sf -b "$work/jar-$1" -H 'content-type: application/json' \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
    http://127.0.0.1:18680/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
token_a=$(token_of bench-a)
token_b=$(token_of bench-b)
echo "simulator latency ${latency} ms, provider capacity ${capacity}, ${passages} passages a book"
python3 bench/capacity_run.py run http://127.0.0.1:18680 http://127.0.0.1:18691 http://127.0.0.1:18690 \
  "$token_a" "$token_b" "$latency" "$capacity" "$passages"
