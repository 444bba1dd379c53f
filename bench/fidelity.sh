#!/usr/bin/env bash
# Fidelity: the quality checks and the autopilot measured on faults they did
# not define (docs/benchmarks.md). Real English prose translated into Spanish
# by Apertium is the clean text; bench/fidelity_faults.py, written from the
# fault categories alone, puts the faults in.
#   1. detect: the checks alone (pipeline/examples/assess.rs) on every
#      passage of News from Nowhere and Moby-Dick, clean and with each fault
#      category: share flagged per category, false alarms on clean text.
#   2. deliver: the service (embedded SQLite) translating the first chapters
#      of News from Nowhere en→es through the simulator in Apertium mode,
#      reached through a proxy that puts a fault into 10 % of the passages
#      the first time each is translated: the faults still delivered, the
#      calls the repairs added against the same book without faults; at the
#      defaults (quality normal, review on) and with final_review false.
# Usage: bash bench/fidelity.sh [all|detect|deliver]
#   (needs python3, curl, apertium with apertium-eng-spa, and the corpus in
#   ../shared/corpus or DRAGOMAN_CORPUS_DIR; downloads nothing)
# DRAGOMAN_BENCH_BIN=/path/to/dragoman measures that binary instead of a
# fresh debug build; FIDELITY_OUT=DIR keeps the JSON outputs (ledgers,
# examples of false alarms and misses); FIDELITY_CHAPTERS (7: 273 passages),
# FIDELITY_RATE (0.1) and FIDELITY_SEEDS ("1 2 3": one run with faults per
# seed and setting, each with the faults in other passages) size the deliver
# runs; FIDELITY_TRANSLATOR=pseudo runs them on pseudo-translations.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/.."
what="${1:-all}"
for tool in python3 curl apertium lt-proc; do
  command -v "$tool" >/dev/null || { echo "fidelity: $tool is needed (apt-get install apertium apertium-eng-spa curl python3)" >&2; exit 1; }
done
# (grep -q would stop reading early, and pipefail count apertium's SIGPIPE.)
apertium -l | grep -cE '^[[:space:]]*eng-spa$' >/dev/null || { echo "fidelity: Apertium's eng-spa pair is needed (apt-get install apertium-eng-spa)" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$PWD/target}"
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build -q --bin dragoman
  bin="$target/debug/dragoman"
fi
cargo build -q -p dragoman-pipeline --example assess
assess="$target/debug/examples/assess"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
out="${FIDELITY_OUT:-$work/out}"
mkdir -p "$out"

if [ "$what" = all ] || [ "$what" = detect ]; then
  echo "# Detection: the checks alone"
  python3 bench/fidelity_run.py detect --assess "$assess" --out "$out"
fi
[ "$what" = all ] || [ "$what" = deliver ] || exit 0

translator="${FIDELITY_TRANSLATOR:-apertium}"
if [ "$translator" != pseudo ] && ! "$bin" simulate-provider --help | grep -c -- --translator >/dev/null; then
  echo "fidelity: this build's simulator has no --translator (FIDELITY_TRANSLATOR=pseudo runs on pseudo-translations)" >&2
  exit 1
fi
sim_args=()
[ "$translator" != pseudo ] && sim_args=(--translator "$translator")
printf '%s\n' 'a long password here' >"$work/pw"
api=http://127.0.0.1:18780

# Stops the previous run's processes, starts a simulator and a server on a
# fresh data folder whose provider is the proxy (port 18791, started by
# fidelity_run.py), and writes a token to $work/token.
start() {
  local name="$1"
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  while curl -sf "$api/health" >/dev/null; do sleep 0.2; done
  export DRAGOMAN_DATA_DIR="$work/$name" DRAGOMAN_LISTEN=127.0.0.1:18780 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18781
  "$bin" simulate-provider --listen 127.0.0.1:18790 "${sim_args[@]}" >"$work/sim-$name.log" 2>&1 &
  "$bin" serve >"$work/serve-$name.log" 2>&1 &
  for _ in $(seq 150); do curl -sf "$api/health" >/dev/null && break; sleep 0.2; done
  "$bin" admin create-user --username bench --password-file "$work/pw" --admin >/dev/null
  "$bin" provider add --name sim --kind openai --model sim --base-url http://127.0.0.1:18791/v1 \
    --api-key-env HOME --capacity 8 --default >/dev/null
  curl -sf -c "$work/jar" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"a long password here"}' "$api/api/auth/login" >/dev/null
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read"]}' \
    "$api/api/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$work/token"
}

echo "# Delivery: the service through the fault-injecting proxy (translator: $translator)"
rate="${FIDELITY_RATE:-0.1}"
chapters="${FIDELITY_CHAPTERS:-7}"
# Each seed puts the faults into other passages of the same book.
seeds="${FIDELITY_SEEDS:-1 2 3}"
deliver() {
  local run="$1"
  shift
  start "$run"
  python3 bench/fidelity_run.py deliver --run "$run" --api "$api" --sim http://127.0.0.1:18790 \
    --proxy-port 18791 --token "$(cat "$work/token")" --db "$work/$run/dragoman.db" --bin "$bin" \
    --out "$out" --chapters "$chapters" --examples 0 "$@"
}
deliver clean --rate 0 --final-review true
for seed in $seeds; do
  deliver "faults-$seed" --rate "$rate" --seed "$seed" --final-review true --baseline clean
done
deliver clean-noreview --rate 0 --final-review false
for seed in $seeds; do
  deliver "faults-noreview-$seed" --rate "$rate" --seed "$seed" --final-review false --baseline clean-noreview
done
echo "# Delivery, the runs added up"
python3 bench/fidelity_run.py summary --out "$out"
