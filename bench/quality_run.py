#!/usr/bin/env python3
"""The client side of bench/quality.sh for one run (A or B): imports the
novel, locks its four terms for the series (CLI `term add --locked`),
translates it, then reads the passages from the installation's SQLite file
and the simulator's fault ledger and prints the figures."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request

RUN, API, SIM, TOKEN, NOVEL, DB, BIN, COUNTS = sys.argv[1:9]
LOCKED = {
    "WARPCORE": "cœur-de-distorsion",
    "SKYLANE": "voie-céleste",
    "EMBERSTONE": "pierre-de-braise",
    "TIDEGLASS": "verre-de-marée",
}
KINDS = ["name_drift", "glossary_violation", "untranslated", "wrong_language"]


def call(method, url, body=None, auth=True):
    request = urllib.request.Request(url, data=body, method=method)
    if auth:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=700) as answer:
        return json.loads(answer.read())


def wait(request_id):
    while True:
        doc = call("GET", f"{API}/api/v1/translation-requests/{request_id}?wait=60")
        if doc["finished_at"] is not None:
            return doc


def auc(positives, negatives):
    """P(a clean passage scores above a faulty one), ties counting half."""
    if not positives or not negatives:
        return float("nan")
    wins = 0.0
    for p in positives:
        for n in negatives:
            wins += 1.0 if n > p else 0.5 if n == p else 0.0
    return wins / (len(positives) * len(negatives))


novel = json.load(open(NOVEL))
novel["pipeline"] = {"start": False}
imported = call("POST", f"{API}/api/v1/translation-requests", json.dumps(novel).encode())
wait(imported["request_id"])
env = dict(os.environ, DRAGOMAN_DATA_DIR=os.path.dirname(DB))
for source, rendering in LOCKED.items():
    subprocess.run([BIN, "term", "add", "--series", imported["series_id"], "--source", source,
                    "--translation", rendering, "--locked"], env=env, check=True, capture_output=True)

novel["pipeline"] = {"threads": 8, "final_review": RUN == "B"}
started = time.monotonic()
summary = call("POST", f"{API}/api/v1/translation-requests", json.dumps(novel).encode())
doc = wait(summary["request_id"])
wall = time.monotonic() - started
report = doc["report"]
stats = call("GET", f"{SIM}/stats", auth=False)
faults = call("GET", f"{SIM}/faults", auth=False)

db = sqlite3.connect(DB)
rows = db.execute(
    "SELECT id, source, translation, status, score, signals FROM passages WHERE project_id = ?",
    (summary["project_id"],)).fetchall()
passages = {r[0]: r for r in rows}
faulty = {}
for f in faults:
    if f["passage_id"] in passages:
        faulty.setdefault(f["kind"], set()).add(f["passage_id"])
any_fault = set().union(*faulty.values()) if faulty else set()

print(f"## Run {RUN}: {'review off, no autopilot round' if RUN == 'A' else 'defaults (review, autopilot)'}")
print(f"status {doc['status']}; {len(rows)} passages; wall {wall:.1f} s; simulator requests {stats['requests']} "
      f"(analyses {stats.get('analyses', 0)}, reviews {stats.get('reviews', 0)})")
print("faulty passages: " + ", ".join(f"{k} {len(faulty.get(k, ()))} ({100 * len(faulty.get(k, ())) / len(rows):.1f} %)" for k in KINDS))
quality = report["quality"]
print(f"quality: scored {quality['scored']}, average {quality['average']}, minimum {quality['minimum']}, "
      f"to_review {quality['to_review']}, bands {json.dumps(quality['bands'])}")
assert sum(quality["bands"].values()) == quality["scored"], "bands do not add up"
assert sum(quality["histogram"]) == quality["scored"], "histogram does not add up"
print(f"autopilot {json.dumps(report['autopilot'])}; decisions {report['decisions']['autopilot']}; "
      f"residual_total {report['residual_total']}")

if RUN == "A":
    clean = [passages[i][4] for i in passages if i not in any_fault]
    for kind in KINDS:
        hit = [passages[i][4] for i in faulty.get(kind, ())]
        print(f"ROC AUC {kind}: {auc(hit, clean):.3f} ({len(hit)} faulty against {len(clean)} clean)")
    first = [p["segment_id"] for p in quality["review_first"]]
    print(f"review_first: {sum(1 for i in first if i in any_fault)} of {len(first)} are faulty passages")
    translation_calls = stats["requests"] - stats.get("analyses", 0) - stats.get("reviews", 0)
    open(COUNTS, "w").write(json.dumps({"translation_calls": translation_calls, "requests": stats["requests"]}))
    print(f"translation calls {translation_calls}")
else:
    delivered = [r for r in rows if r[2] is not None and r[3] in ("ok", "check")
                 and not any(s["code"] in ("unchanged", "untranslated") for s in json.loads(r[5] or "[]"))]
    needed = kept = 0
    for r in delivered:
        for source, rendering in LOCKED.items():
            if re.search(rf"\b{source}\b", r[1], re.IGNORECASE):
                needed += 1
                kept += rendering in r[2]
    print(f"locked terms in delivered passages: {kept} of {needed} ({100 * kept / max(needed, 1):.1f} %)")
    residual_ids = {r[0] for r in rows} - {r[0] for r in delivered}
    listed = {x["segment_id"] for x in report["residuals"]}
    print(f"passages delivered in source text {len(residual_ids)}; listed among residuals {len(residual_ids & listed)}; "
          f"missing from the report {len(residual_ids - listed)}")
    reasons = {}
    for x in report["residuals"]:
        reasons[x["reason"]] = reasons.get(x["reason"], 0) + 1
    print(f"residual reasons {json.dumps(reasons)}")
    base = json.load(open(COUNTS))
    translation_calls = base["translation_calls"]
    extra = stats["requests"] - base["requests"]
    print(f"review calls {stats.get('reviews', 0)}; calls added by review and autopilot {extra} "
          f"= {100 * extra / max(translation_calls, 1):.1f} % of the {translation_calls} translation calls of run A")
