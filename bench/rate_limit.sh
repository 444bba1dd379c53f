#!/usr/bin/env bash
# The per-token rate limit shared by two gateway processes through Redis
# (docs/benchmarks.md): one installation on PostgreSQL and Redis, a services
# process and two gateway-only processes; one token's calls offered to both
# gateways at RATE a second for SECONDS; the calls admitted compared with what
# a GCRA of LIMIT a minute admits over that time (limit x time / 60 + burst).
# Usage: bash bench/rate_limit.sh [LIMIT_PER_MINUTE] [SECONDS] [RATE]
#   (needs python3, curl, createdb/dropdb on 127.0.0.1:5432 as postgres,
#   Redis on 127.0.0.1:6379)
# RATE_BENCH_TOOL=wrk offers the calls with wrk instead (Debian package wrk):
# as fast as the gateways answer, 32 connections to each, RATE unused; the
# rate offered is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${1:-6000}"
seconds="${2:-20}"
rate="${3:-5000}"
# DRAGOMAN_BENCH_BIN=/path/to/dragoman measures that binary instead of a
# fresh release build.
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build --release -q -p dragoman
  bin="$PWD/target/release/dragoman"
  [ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/dragoman"
fi
work="$(mktemp -d)"
db="dragoman_bench_rate_$$"
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  dropdb -h 127.0.0.1 -U postgres --if-exists "$db" || true
  rm -rf "$work"
}
trap cleanup EXIT
createdb -h 127.0.0.1 -U postgres "$db"
export DRAGOMAN_DATA_DIR="$work/data"
export DRAGOMAN_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
export DRAGOMAN_REDIS_URL="redis://127.0.0.1:6379"
# A namespace of its own, so the run neither sees nor leaves other keys.
export DRAGOMAN_REDIS_NAMESPACE="dragoman-bench-$$:"
DRAGOMAN_SECRET_KEY="$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')"
export DRAGOMAN_SECRET_KEY
export API_RATE_LIMIT_PER_MINUTE="$limit" RUST_LOG=warn

"$bin" serve --roles scheduler,pipeline,delivery,memory --grpc-listen 127.0.0.1:18681 \
  >"$work/services.log" 2>&1 &
for _ in $(seq 100); do grep -q 'grpc listening' "$work/services.log" && break; sleep 0.2; done
for port in 18680 18682; do
  DRAGOMAN_SERVICES_URL=http://127.0.0.1:18681 "$bin" serve --roles gateway \
    --listen "127.0.0.1:$port" --grpc-listen off >"$work/gateway-$port.log" 2>&1 &
done
for port in 18680 18682; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
done
printf '%s\n' 'a long password here' >"$work/pw"
"$bin" admin create-user --username bench --password-file "$work/pw" >/dev/null
curl -sf -c "$work/jar" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"a long password here"}' http://127.0.0.1:18680/api/auth/login >/dev/null
token=$(curl -sf -b "$work/jar" -H 'content-type: application/json' \
  -d '{"name":"bench","scopes":["content:write"]}' \
  http://127.0.0.1:18680/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
if [ "${RATE_BENCH_TOOL:-python}" = wrk ]; then
  echo "limit $limit/min, $seconds s, wrk as fast as answered, over two gateways sharing Redis"
  loads=()
  for port in 18680 18682; do
    wrk -t1 -c32 -d"${seconds}s" -s bench/rate_limit.lua -H "Authorization: Bearer $token" \
      "http://127.0.0.1:$port/api/v1/providers" >"$work/wrk-$port.txt" &
    loads+=("$!")
  done
  wait "${loads[@]}"
  python3 bench/rate_limit_run.py --wrk-results "$limit" "$work/wrk-18680.txt" "$work/wrk-18682.txt"
else
  echo "limit $limit/min, $seconds s at $rate calls/s offered, split over two gateways sharing Redis"
  python3 bench/rate_limit_run.py "$token" "$limit" "$seconds" "$rate" \
    http://127.0.0.1:18680 http://127.0.0.1:18682
fi
