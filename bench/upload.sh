#!/usr/bin/env bash
# Books through the API, measured on a release build (docs/benchmarks.md):
#   1. a 50 MB EPUB sent raw, import only: time to 202 and the server's peak
#      resident memory (VmHWM) above its idle level, the server pinned to one core;
#   2. a 5 MB EPUB translated with the provider simulator, then its EPUB built
#      on demand (`scope=volume`, so nothing stored is served): rebuild and
#      epubcheck validation, timed by the client.
# Step 1 runs three times, the server started afresh before each run so that
# every run reads its own peak.
# Usage: bash bench/upload.sh [local|s3]   (needs python3, curl; epubcheck for
# step 2's validation). `local` (the default) keeps blobs in a folder; `s3`
# keeps them in a bucket of a moto server (S3-compatible, in memory, pinned
# to the other core), through DRAGOMAN_BLOB_URL=s3://bench/blobs and the
# AWS_* variables; moto_server is taken from MOTO_SERVER, else
# .venv-s3/bin/moto_server, else PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-local}"
case "$mode" in
  local | s3) ;;
  *) echo "usage: bash bench/upload.sh [local|s3]" >&2; exit 2 ;;
esac
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
python3 bench/make_epub.py "$work/big.epub" 50 60 60
python3 bench/make_epub.py "$work/book.epub" 5 60 60
export DRAGOMAN_DATA_DIR="$work/data" DRAGOMAN_LISTEN=127.0.0.1:18480 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18481
export API_MAX_PAYLOAD_MB=64
if [ "$mode" = s3 ]; then
  moto="${MOTO_SERVER:-}"
  [ -z "$moto" ] && [ -x .venv-s3/bin/moto_server ] && moto="$PWD/.venv-s3/bin/moto_server"
  [ -z "$moto" ] && moto="$(command -v moto_server)"
  taskset -c 1 "$moto" -H 127.0.0.1 -p 18495 >"$work/moto.log" 2>&1 &
  for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18495/ && break; sleep 0.2; done
  curl -sf -X PUT http://127.0.0.1:18495/bench >/dev/null
  export DRAGOMAN_BLOB_URL=s3://bench/blobs AWS_ENDPOINT_URL=http://127.0.0.1:18495 \
    AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
  echo "blobs in s3://bench/blobs on moto at 127.0.0.1:18495"
fi
"$bin" simulate-provider --listen 127.0.0.1:18490 >"$work/sim.log" 2>&1 &
start_server() {
  taskset -c 0 "$bin" serve >>"$work/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18480/health >/dev/null && return; sleep 0.2; done
  echo "the server did not start:" >&2; tail -20 "$work/serve.log" >&2; exit 1
}
start_server
printf '%s\n' 'a long password here' >"$work/pw"
"$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
"$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18490/v1 \
  --api-key-env HOME --capacity 8 --default >/dev/null
curl -sf -c "$work/jar" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"a long password here"}' http://127.0.0.1:18480/api/auth/login >/dev/null
token=$(curl -sf -b "$work/jar" -H 'content-type: application/json' \
  -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
  http://127.0.0.1:18480/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
hwm() { awk '/VmHWM/ {print $2}' "/proc/$server/status"; }
size=$(stat -c %s "$work/big.epub")
for run in 1 2 3; do
  if [ "$run" -gt 1 ]; then
    kill "$server"; wait "$server" 2>/dev/null || true
    start_server
  fi
  # A file of its own in every run's copy, so that no run finds its bytes
  # already stored by the one before.
  cp "$work/big.epub" "$work/run.epub"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "a").writestr(f"OEBPS/run-{sys.argv[2]}.txt", sys.argv[2])' \
    "$work/run.epub" "$run"
  idle=$(hwm)
  t202=$(curl -s -o "$work/big.json" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/epub+zip' --data-binary @"$work/run.epub" \
    "http://127.0.0.1:18480/api/v1/translation-requests?target_language=fr&start=false&filename=big-$run.epub")
  peak=$(hwm)
  echo "50 MB upload ($mode), run $run: $size bytes; answer and seconds to it: $t202"
  echo "  server VmHWM: idle $((idle / 1024)) MiB, after the upload $((peak / 1024)) MiB, above idle $(((peak - idle) / 1024)) MiB ($(python3 -c "print(round(($peak - $idle) * 1024 / $size, 2))") x the upload)"
done

id=$(curl -sf -H "Authorization: Bearer $token" -F file=@"$work/book.epub" -F target_language=fr \
  http://127.0.0.1:18480/api/v1/translation-requests | python3 -c 'import json,sys; print(json.load(sys.stdin)["request_id"])')
status=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:18480/api/v1/translation-requests/$id?wait=600" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], json.dumps(d["report"]["delivery"]["validation"]))')
echo "5 MB book: $status"
for run in 1 2 3; do
  curl -s -o "$work/out.epub" -w "on-demand EPUB (rebuild + validation), run $run: %{http_code} %{time_total} s\n" \
    -H "Authorization: Bearer $token" "http://127.0.0.1:18480/api/v1/translation-requests/$id/result?format=epub&scope=volume"
done
# The same build without a validator (none on PATH): the rebuild alone.
kill "$server"; wait "$server" 2>/dev/null || true
/usr/bin/env PATH=/nonexistent "$(command -v taskset)" -c 0 "$bin" serve >>"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:18480/health >/dev/null && break; sleep 0.2; done
for run in 1 2 3; do
  curl -s -o "$work/out.epub" -w "on-demand EPUB (rebuild only, no validator), run $run: %{http_code} %{time_total} s\n" \
    -H "Authorization: Bearer $token" "http://127.0.0.1:18480/api/v1/translation-requests/$id/result?format=epub&scope=volume"
done
