#!/usr/bin/env bash
# Quality score, review and autopilot, measured through the provider
# simulator on a release build (docs/benchmarks.md). A synthetic 20,000-word
# novel (bench/make_novel.py, seed 7) whose four invented terms are locked
# for its series, with the simulator injecting each content fault kind (name
# drift, glossary violation, untranslated, wrong language) in about 5 % of
# the passages (seeded):
#   A. review off and no autopilot round: the score of every passage against
#      the simulator's fault ledger (GET /faults), ROC AUC per fault kind,
#      and how many of report.quality.review_first are faulty;
#   B. the defaults (review at quality normal, autopilot): locked terms in
#      the delivered passages, every passage delivered in source text listed
#      among the residuals, and the calls the review and the autopilot added
#      as a share of the translation calls of A.
# Usage: bash bench/quality.sh [WORDS]   (needs python3, curl)
set -euo pipefail
cd "$(dirname "$0")/.."
words="${1:-20000}"
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build --release -q
  bin="$PWD/target/release/dragoman"
  [ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/dragoman"
fi
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
python3 bench/make_novel.py "$work/novel.json" "Quality" "$words" 10 7
printf '%s\n' 'a long password here' >"$work/pw"

# Stops the previous run's processes, starts a simulator and a server on a
# fresh data folder, and writes a token to $work/token.
start() {
  local name="$1" sim_rate="$2"
  shift 2
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  while curl -sf http://127.0.0.1:18680/health >/dev/null; do sleep 0.2; done
  export DRAGOMAN_DATA_DIR="$work/$name" DRAGOMAN_LISTEN=127.0.0.1:18680 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18681
  "$bin" simulate-provider --listen 127.0.0.1:18690 --seed 11 \
    --rate-name-drift "$sim_rate" --rate-glossary-violation "$sim_rate" \
    --rate-untranslated "$sim_rate" --rate-wrong-language "$sim_rate" >"$work/sim-$name.log" 2>&1 &
  env "$@" "$bin" serve >"$work/serve-$name.log" 2>&1 &
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18680/health >/dev/null && break; sleep 0.2; done
  "$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
  "$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18690/v1 \
    --api-key-env HOME --capacity 8 --default >/dev/null
  curl -sf -c "$work/jar" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"a long password here"}' http://127.0.0.1:18680/api/auth/login >/dev/null
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
    http://127.0.0.1:18680/api/tokens | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$work/token"
}

# Each fault lands in one passage of an answer: a per-answer rate of 5 % times
# the passages of a translation batch gives about 5 % of the passages.
rate="${QUALITY_BENCH_RATE:-0.4}"
for run in A B; do
  if [ "$run" = A ]; then
    start "$run" "$rate" DRAGOMAN_AUTOPILOT_ROUNDS=0
  else
    start "$run" "$rate"
  fi
  python3 bench/quality_run.py "$run" http://127.0.0.1:18680 http://127.0.0.1:18690 "$(cat "$work/token")" \
    "$work/novel.json" "$work/$run/dragoman.db" "$bin" "$work/counts"
done
