#!/usr/bin/env bash
# Narrative memory and context, measured through the provider simulator on a
# release build (docs/benchmarks.md):
#   1. a synthetic 100,000-word novel (bench/make_novel.py) translated with
#      analysis (quality normal, analysis_mode parallel): wall time against the
#      fastest any client could be (calls x latency / capacity), provider calls
#      per 1,000 words, prompt tokens / source tokens for translation prompts
#      (context included) and for all prompts (analysis included);
#   2. the same book sent again to another series: provider calls it cost;
#   3. with ../shared/corpus present, a real public-domain novel (News from
#      Nowhere, TXT split at its headings) the same way, for the same ratios.
# Usage: bash bench/memory.sh [LATENCY_MS] [CAPACITY]   (needs python3, curl)
set -euo pipefail
cd "$(dirname "$0")/.."
latency="${1:-1000}"
capacity="${2:-8}"
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
python3 bench/make_novel.py "$work/novel.json" "Novel" 100000 40
export DRAGOMAN_DATA_DIR="$work/data" DRAGOMAN_LISTEN=127.0.0.1:18580 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18581
"$bin" simulate-provider --listen 127.0.0.1:18590 --latency-ms "$latency" >"$work/sim.log" 2>&1 &
"$bin" serve >"$work/serve.log" 2>&1 &
for _ in $(seq 100); do curl -sf http://127.0.0.1:18580/health >/dev/null && break; sleep 0.2; done
printf '%s\n' 'a long password here' >"$work/pw"
"$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
"$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18590/v1 \
  --api-key-env HOME --capacity "$capacity" --default >/dev/null
curl -sf -c "$work/jar" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"a long password here"}' http://127.0.0.1:18580/api/auth/login >/dev/null
token=$(curl -sf -b "$work/jar" -H 'content-type: application/json' \
  -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
  http://127.0.0.1:18580/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
corpus=""
[ -f ../shared/corpus/txt-en-gutenberg-news-from-nowhere-ascii-crlf.txt ] &&
  corpus=../shared/corpus/txt-en-gutenberg-news-from-nowhere-ascii-crlf.txt
python3 bench/memory_run.py http://127.0.0.1:18580 http://127.0.0.1:18590 "$token" \
  "$work/novel.json" "$latency" "$capacity" "$corpus"
