#!/usr/bin/env bash
# Name consistency across a series, internal memory against hybrid (external
# Chroma memory added to it), through the provider simulator (issue 17).
#
# What is measured: a synthetic series of VOLUMES volumes (bench/make_novel.py,
# recurring cast of 8 characters, 3 of them with an alias introduced once as
# `Name (Alias)` in volume 1 only; afterwards every second occurrence of an
# aliased character is written with its alias, see bench/consistency.py) is
# translated twice, volumes in order: series A with
# `"pipeline": {"context_backend": "internal"}`, series B with `hybrid`, each
# on a fresh installation (data directory and Chroma of its own; one
# simulator), since the translation memory would otherwise hand series B the
# translations of series A. The status document's `memory` is printed per
# volume (`answered_by` says whether Chroma answered).
#
# The figure: for each passage and each character, the occurrences of the
# character in the source (its name or its alias, whole words, case-sensitive,
# from the generator's own cast list, not from the memory) are checked; they
# are consistent up to the number of times the character's canonical
# rendering appears in the passage's translation in force (whole words):
# consistent = min(source occurrences, canonical renderings in translation).
# The canonical rendering is the target_name of the series identity of that
# name (GET /api/v1/series/{id}/narrative-context), else of the volume 1
# entity (GET /api/v1/books/{id}/narrative-context). Share = consistent /
# checked, per volume and for the series; the alias columns are the part of
# the occurrences written with the alias (counted consistent only for the
# canonical renderings left over once the name's own occurrences are matched).
# A passage without a translation in force counts as checked, not consistent.
#
# Note on the simulator: it writes the context's renderings verbatim (a
# character's aliases map to its rendering) and pseudo-translates everything
# else (vowels accented); the analysis simulator's target_name is that same
# accented form of the name. So a name's own occurrences come out canonical
# with or without context; only alias occurrences (and name-drift faults,
# off by default) depend on the context. With NAME_DRIFT_RATE > 0 both series
# share one simulator whose fault draws run on, so they get different faults:
# a difference of a few occurrences is then the draw, not the backend.
#
# Usage: bash bench/memory_consistency.sh [VOLUMES] [WORDS_PER_VOLUME] [CHAPTERS] [NAME_DRIFT_RATE]
#   defaults 2 10000 10 0; needs python3, curl and Chroma: $DRAGOMAN_TEST_CHROMA
#   or .venv-ci/bin/chroma (PyPI chromadb). DRAGOMAN_BENCH_BIN=/path/to/dragoman
#   measures that binary instead of a fresh release build.
set -euo pipefail
cd "$(dirname "$0")/.."
volumes="${1:-2}"
words="${2:-10000}"
chapters="${3:-10}"
drift="${4:-0}"
if [ -n "${DRAGOMAN_BENCH_BIN:-}" ]; then
  bin="$DRAGOMAN_BENCH_BIN"
else
  cargo build --release -q
  bin="$PWD/target/release/dragoman"
  [ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/dragoman"
fi
chroma="${DRAGOMAN_TEST_CHROMA:-$PWD/.venv-ci/bin/chroma}"
[ -x "$chroma" ] || { echo "no Chroma executable at $chroma (set DRAGOMAN_TEST_CHROMA)" >&2; exit 2; }
work="$(mktemp -d)"
cleanup() {
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
api=http://127.0.0.1:18680 sim=127.0.0.1:18690 chroma_port=18695
started=$(date +%s)
python3 bench/consistency.py make "$work" "$volumes" "$words" "$chapters"
"$bin" simulate-provider --listen "$sim" --latency-ms 0 --rate-name-drift "$drift" >"$work/sim.log" 2>&1 &
echo "# memory_consistency: $volumes volumes x ~$words words, $chapters chapters each, name drift rate $drift"
# Each series runs on a fresh installation (data directory and Chroma of its
# own): the translation memory is always on, so series B on the installation
# of series A would reuse A's translations and ask no context at all.
series() { # NAME BACKEND
  local dir="$work/$1" chroma_pid serve_pid token
  mkdir -p "$dir"
  "$chroma" run --path "$dir/chroma" --host 127.0.0.1 --port "$chroma_port" >"$dir/chroma.log" 2>&1 &
  chroma_pid=$!
  for _ in $(seq 150); do curl -sf "http://127.0.0.1:$chroma_port/api/v2/heartbeat" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$chroma_port/api/v2/heartbeat" >/dev/null || { cat "$dir/chroma.log" >&2; exit 1; }
  export DRAGOMAN_DATA_DIR="$dir/data" DRAGOMAN_LISTEN=127.0.0.1:18680 DRAGOMAN_GRPC_LISTEN=127.0.0.1:18681 \
    DRAGOMAN_MEMORY_EXTERNAL_URL="http://127.0.0.1:$chroma_port" \
    DRAGOMAN_MEMORY_EMBEDDINGS_URL="http://$sim/v1"
  "$bin" serve >"$dir/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 150); do curl -sf "$api/health" >/dev/null && break; sleep 0.2; done
  curl -sf "$api/health" >/dev/null || { tail -20 "$dir/serve.log" >&2; exit 1; }
  printf '%s\n' 'a long password here' >"$dir/pw"
  "$bin" admin create-user --username bench --password-file "$dir/pw" --admin >/dev/null
  "$bin" provider add --name sim --kind openai --model sim --base-url "http://$sim/v1" \
    --api-key-env HOME --capacity 8 --default >/dev/null
  curl -sf -c "$dir/jar" -H 'content-type: application/json' -H "Origin: $api" \
    -d '{"username":"bench","password":"a long password here"}' "$api/api/auth/login" >/dev/null
  token=$(curl -sf -b "$dir/jar" -H 'content-type: application/json' -H "Origin: $api" \
    -d '{"name":"bench","scopes":["content:write","pipeline:start","jobs:read","results:read","narrative:read","series:read"]}' \
    "$api/api/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
  # Between volumes the client waits for the mirror's outbox to drain.
  export OUTBOX_STATUS="curl -sf -b $dir/jar $api/api/settings/memory/status"
  echo "# $1: Chroma $(eval "$OUTBOX_STATUS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("configured", d["configured"], "reachable", d["reachable"])')"
  python3 bench/consistency.py run "$api" "$token" "$work" "$1" "$2"
  echo "# $1: Chroma after: $(eval "$OUTBOX_STATUS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("collection", d["collection"], "mirrored_items", d["mirrored_items"], "outbox pending", d["outbox"]["pending"])')"
  echo "# $1: simulator /stats (cumulative) $(curl -sf "http://$sim/stats" | head -c 400)"
  kill "$serve_pid" "$chroma_pid"
  wait "$serve_pid" "$chroma_pid" 2>/dev/null || true
}
series A-internal internal
series B-hybrid hybrid
echo "# wall $(( $(date +%s) - started )) s"
