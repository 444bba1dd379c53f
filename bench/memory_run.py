#!/usr/bin/env python3
"""The client side of bench/memory.sh: sends the books, waits for them and
prints the figures. Token counts use the service's estimate (ASCII
characters / 3 rounded up, plus one per other character), which the
simulator also reports as usage."""
import json
import sys
import time
import urllib.request
import uuid

API, SIM, TOKEN, NOVEL, LATENCY_MS, CAPACITY, CORPUS = sys.argv[1:8]
LATENCY = int(LATENCY_MS) / 1000
CAPACITY = int(CAPACITY)


def estimate(text):
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return -(-ascii_chars // 3) + (len(text) - ascii_chars)


def call(method, url, body=None, content_type="application/json", auth=True):
    request = urllib.request.Request(url, data=body, method=method)
    if auth:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    if body is not None:
        request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, timeout=700) as answer:
        return json.loads(answer.read())


def prompts():
    return call("GET", f"{SIM}/prompts", auth=False)


def wait(request_id):
    while True:
        doc = call("GET", f"{API}/api/v1/translation-requests/{request_id}?wait=60")
        if doc["finished_at"] is not None:
            return doc


def run(send):
    seen = len(prompts())
    started = time.monotonic()
    summary = send()
    doc = wait(summary["request_id"])
    wall = time.monotonic() - started
    return doc, wall, prompts()[seen:]


def figures(label, doc, wall, served, words, source_tokens):
    by_kind = {}
    for p in served:
        tokens = estimate(p["system"]) + estimate(p["user"])
        calls, total = by_kind.get(p["kind"], (0, 0))
        by_kind[p["kind"]] = (calls + 1, total + tokens)
    calls = len(served)
    bound = calls * LATENCY / CAPACITY
    t_calls, t_tokens = by_kind.get("translation", (0, 0))
    a_calls, a_tokens = by_kind.get("analysis", (0, 0))
    contexts = [json.loads(p["user"]).get("context") or "" for p in served if p["kind"] == "translation"]
    print(f"## {label}")
    print(f"status {doc['status']}, {words} words, {source_tokens} source tokens")
    print(f"provider calls {calls} (analysis {a_calls}, translation {t_calls}); per 1,000 words {calls * 1000 / words:.2f}")
    print(f"translation prompt tokens / source tokens {t_tokens / source_tokens:.3f}")
    print(f"all prompt tokens (analysis included) / source tokens {(t_tokens + a_tokens) / source_tokens:.3f}")
    if contexts:
        sizes = sorted(estimate(c) for c in contexts)
        print(f"context tokens per translation call: mean {sum(sizes) / len(sizes):.0f}, max {sizes[-1]}, empty {sum(1 for s in sizes if s == 0)}")
    print(f"wall {wall:.1f} s; bound calls x latency / capacity {bound:.1f} s; ratio {wall / bound if bound else float('nan'):.3f}")
    print(f"report usage: {json.dumps(doc['report']['usage'])}")
    print(f"analysis: {json.dumps(doc['progress']['analysis'])}")


def source_of(chapters):
    texts = [p for c in chapters for p in c["content"].split("\n\n") if p.strip()]
    return sum(len(t.split()) for t in texts), sum(estimate(t) for t in texts)


novel = json.load(open(NOVEL))
# The job may use the provider's whole capacity (a volume's share is 4 by default).
novel["pipeline"] = {"threads": CAPACITY}
words, tokens = source_of(novel["chapters"])
body = json.dumps(novel).encode()
doc, wall, served = run(lambda: call("POST", f"{API}/api/v1/translation-requests", body))
figures("Synthetic novel, first submission", doc, wall, served, words, tokens)

novel["series"]["name"] = "Novel again"
body = json.dumps(novel).encode()
doc, wall, served = run(lambda: call("POST", f"{API}/api/v1/translation-requests", body))
print("## The same novel sent again (another series)")
print(f"status {doc['status']}; provider calls {len(served)}; report usage {json.dumps(doc['report']['usage'])}; wall {wall:.1f} s")

if CORPUS:
    raw = open(CORPUS, "rb").read()
    boundary = uuid.uuid4().hex
    fields = {"series": "News from Nowhere", "volume": "1", "source_language": "en",
              "target_language": "fr", "split": "headings", "threads": str(CAPACITY)}
    parts = []
    for name, value in fields.items():
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n".encode())
    parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"001.txt\"\r\nContent-Type: text/plain\r\n\r\n".encode() + raw + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    form = b"".join(parts)
    text = raw.decode("ascii", "replace").replace("\r\n", "\n")
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    words = sum(len(p.split()) for p in paragraphs)
    tokens = sum(estimate(p) for p in paragraphs)
    doc, wall, served = run(lambda: call(
        "POST", f"{API}/api/v1/translation-requests", form, f"multipart/form-data; boundary={boundary}"))
    figures("News from Nowhere (corpus TXT, split at headings)", doc, wall, served, words, tokens)
