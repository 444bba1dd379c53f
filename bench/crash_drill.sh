#!/usr/bin/env bash
# The crash drill at full size: a seven-process cluster on PostgreSQL and
# Redis translates 100 small books with a final webhook each while, for 300
# seconds, a random process is stopped with SIGKILL every 3 to 8 s and
# started again at once (tests/tests/e2e/crash_drill.rs). Prints the test's
# figures: seed, books, kills per role, restarts, wall time, provider calls,
# passages, passages sent twice (all of them cut by a pipeline SIGKILL),
# webhooks sent again.
# Usage: bash bench/crash_drill.sh [BOOKS] [SECONDS]
# Needs PostgreSQL and Redis: TEST_DATABASE_URL and TEST_REDIS_URL (defaults
# below), cargo-nextest. DRAGOMAN_DRILL_SEED=<n> replays a drill.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
[ -x .venv-ci/bin/python ] && export DRAGOMAN_TEST_PYTHON="${DRAGOMAN_TEST_PYTHON:-$PWD/.venv-ci/bin/python}"
export DRAGOMAN_DRILL_BOOKS="${1:-100}"
export DRAGOMAN_DRILL_SECONDS="${2:-300}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo nextest run -p dragoman-e2e --test e2e crash_drill --no-capture 2>&1 | tee "$log" || status=$?
echo
echo "== crash drill figures =="
grep -E '^crash drill: (seed=|cluster up|kills over)' "$log" || echo "(no figures: the drill did not get that far)"
exit "$status"
