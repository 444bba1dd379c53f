#!/usr/bin/env python3
"""The two halves of bench/capacity.sh.

`proxy LISTEN_PORT UPSTREAM_PORT`: a pass-through HTTP proxy in front of the
provider simulator that records, for every call, when it reached the proxy,
when its answer came back and which book it belongs to (the first book tag
found in the request body: every passage and title of a bench book carries
its book's tag). `GET /_calls` answers the records. The simulator itself
keeps no timestamps, and the service's documents only show progress, so
this is what tells in-flight calls per book apart over time. Times are
CLOCK_MONOTONIC, comparable with the client's.

`run API PROXY SIM TOKEN_A TOKEN_B LATENCY_MS CAPACITY PASSAGES`: sends the
books and prints the figures:
  1. one book alone on the idle provider: wall time from submission to
     `completed` against calls x latency / capacity, and where the time
     went (before the first call, while calls ran, after the last);
  2. two books of two accounts submitted together: each book's mean number
     of calls in flight while both had calls to make.
"""
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.request

TAGS = (b"Alder", b"Birch", b"Cedar")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def proxy(listen_port, upstream_port):
    calls, lock = [], threading.Lock()
    local = threading.local()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body of an answer go out in two writes: with
        # Nagle's algorithm on, the body waits for the client's delayed ACK
        # of the headers (about 40 ms on Linux), which the service would be
        # charged for between an answer and its next call.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def upstream(self):
            if getattr(local, "conn", None) is None:
                local.conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=600)
            return local.conn

        def answer(self, status, headers, body):
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def forward(self, body):
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
            for attempt in (1, 2):
                try:
                    conn = self.upstream()
                    conn.request(self.command, self.path, body=body, headers=headers)
                    answer = conn.getresponse()
                    return answer.status, answer.getheaders(), answer.read()
                except (http.client.HTTPException, ConnectionError):
                    # A kept connection the simulator closed: once more on a new one.
                    local.conn = None
                    if attempt == 2:
                        raise

        def do_GET(self):
            if self.path == "/_calls":
                with lock:
                    body = json.dumps(calls).encode()
                self.answer(200, [("Content-Type", "application/json")], body)
                return
            self.answer(*self.forward(None))

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            start = time.monotonic()
            status, headers, answer = self.forward(body)
            end = time.monotonic()
            book = next((t.decode() for t in TAGS if t in body), "")
            with lock:
                calls.append({"book": book, "start": start, "end": end, "status": status})
            self.answer(status, headers, answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", listen_port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    server.serve_forever()


WORDS = ("the keeper counted ships that passed in the night while a storm rose over "
         "the harbour and lamps burned low across grey water of the old town").split()


def book(tag, series, passages):
    """A JSON request (spec 2.4) of `passages` passages, ten a chapter, every
    passage and title carrying `tag`."""
    chapters, left, number = [], passages, 0
    while left > 0:
        number += 1
        count = min(10, left)
        left -= count
        paragraphs = []
        for i in range(count):
            words = [WORDS[(number * 7 + i * 3 + k) % len(WORDS)] for k in range(18)]
            paragraphs.append(f"{tag} said that {' '.join(words)} (passage {number}.{i + 1}).")
        chapters.append({"external_id": f"ch-{number}", "number": number,
                         "title": f"{tag} chapter {number}", "content": "\n\n".join(paragraphs)})
    return {"series": {"name": series, "create_if_missing": True}, "volume": {"number": 1},
            "source_language": "en", "target_language": "fr",
            "pipeline": {"quality": "fast"}, "chapters": chapters}


def call(method, url, token=None, body=None):
    request = urllib.request.Request(url, data=body, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=700) as answer:
        return json.loads(answer.read())


def submit_and_wait(api, token, body, out):
    """Submits, waits for the request to finish; stores the times in `out`."""
    out["submitted"] = time.monotonic()
    request_id = call("POST", f"{api}/api/v1/translation-requests", token, json.dumps(body).encode())["request_id"]
    out["accepted"] = time.monotonic()
    while True:
        doc = call("GET", f"{api}/api/v1/translation-requests/{request_id}?wait=60", token)
        if doc["finished_at"] is not None:
            out["finished"] = time.monotonic()
            out["doc"] = doc
            return


def in_flight(calls, at):
    return sum(1 for c in calls if c["start"] <= at < c["end"])


def mean_in_flight(calls, lo, hi):
    """The time-weighted mean number of `calls` in flight over [lo, hi]."""
    if hi <= lo:
        return float("nan")
    busy = sum(max(0.0, min(c["end"], hi) - max(c["start"], lo)) for c in calls)
    return busy / (hi - lo)


def kinds(sim, since):
    counts = {}
    for p in call("GET", f"{sim}/prompts")[since:]:
        counts[p["kind"]] = counts.get(p["kind"], 0) + 1
    return counts


def lone(api, proxy_url, sim, token, latency, capacity, passages):
    seen_calls = len(call("GET", f"{proxy_url}/_calls"))
    seen_prompts = len(call("GET", f"{sim}/prompts"))
    times = {}
    submit_and_wait(api, token, book("Alder", "Capacity lone", passages), times)
    calls = [c for c in call("GET", f"{proxy_url}/_calls")[seen_calls:] if c["book"] == "Alder"]
    doc = times["doc"]
    wall = times["finished"] - times["submitted"]
    bound = len(calls) * latency / capacity
    first = min(c["start"] for c in calls)
    last = max(c["end"] for c in calls)
    served = sorted(c["end"] - c["start"] for c in calls)
    print("## 1. One book alone on the idle provider")
    print(f"status {doc['status']}; {passages} passages (+ chapter titles), quality fast, one passage a call")
    print(f"provider calls {len(calls)} by kind {json.dumps(kinds(sim, seen_prompts))}; "
          f"answers not 200: {sum(1 for c in calls if c['status'] != 200)}")
    print(f"report usage: {json.dumps(doc['report']['usage'])}")
    print(f"wall (submission to completed) {wall:.2f} s; bound calls x latency / capacity "
          f"{len(calls)} x {latency:.3f} / {capacity} = {bound:.2f} s; ratio {wall / bound:.3f}")
    print(f"  submission to 202 {times['accepted'] - times['submitted']:.2f} s; "
          f"202 to the first call {first - times['accepted']:.2f} s; "
          f"first call to the last answer {last - first:.2f} s (mean in flight "
          f"{mean_in_flight(calls, first, last):.2f} of {capacity}); "
          f"last answer to completed seen {times['finished'] - last:.2f} s")
    print(f"  a call as the proxy saw it: median {served[len(served) // 2] * 1000:.0f} ms, "
          f"max {served[-1] * 1000:.0f} ms (simulator latency {latency * 1000:.0f} ms)")
    # Gaps: how long a freed slot stayed empty before the next call started.
    ends = sorted(c["end"] for c in calls)
    starts = sorted(c["start"] for c in calls)
    waits = []
    for s in starts[capacity:]:
        before = [e for e in ends if e <= s]
        if before:
            waits.append(s - before[-1])
    if waits:
        waits.sort()
        print(f"  from an answer to the next call's start (slot refill): median {waits[len(waits) // 2] * 1000:.1f} ms, "
              f"p90 {waits[int(len(waits) * 0.9)] * 1000:.1f} ms")
    return wall / bound


def pair(api, proxy_url, token_a, token_b, latency, capacity, passages):
    seen_calls = len(call("GET", f"{proxy_url}/_calls"))
    times = {"Birch": {}, "Cedar": {}}
    threads = [
        threading.Thread(target=submit_and_wait,
                         args=(api, token_a, book("Birch", "Capacity pair A", passages), times["Birch"])),
        threading.Thread(target=submit_and_wait,
                         args=(api, token_b, book("Cedar", "Capacity pair B", passages), times["Cedar"])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = call("GET", f"{proxy_url}/_calls")[seen_calls:]
    by_book = {tag: [c for c in every if c["book"] == tag] for tag in times}
    lo = max(min(c["start"] for c in calls) for calls in by_book.values())
    hi = min(max(c["end"] for c in calls) for calls in by_book.values())
    print("## 2. Two books of two accounts submitted together")
    for tag, calls in by_book.items():
        t = times[tag]
        print(f"{tag}: status {t['doc']['status']}, {len(calls)} calls, wall {t['finished'] - t['submitted']:.2f} s, "
              f"first call {min(c['start'] for c in calls) - t['submitted']:.2f} s after submission")
    print(f"both had calls in flight from {lo - min(t['submitted'] for t in times.values()):.2f} s "
          f"to {hi - min(t['submitted'] for t in times.values()):.2f} s ({hi - lo:.2f} s)")
    means = {}
    for tag, calls in by_book.items():
        means[tag] = mean_in_flight(calls, lo, hi)
    # The same without the window's first and last tenth, where a book is
    # still starting or already finishing.
    trim = (hi - lo) / 10
    trimmed = {tag: mean_in_flight(calls, lo + trim, hi - trim) for tag, calls in by_book.items()}
    total = mean_in_flight(every, lo, hi)
    for tag in by_book:
        print(f"{tag}: mean calls in flight while both ran {means[tag]:.2f} "
              f"({(means[tag] / (capacity / 2) - 1) * 100:+.1f} % of {capacity / 2:g}); "
              f"middle 80 % of the window {trimmed[tag]:.2f}")
    # Sampled every 100 ms: how often each book was at its half.
    samples = []
    at = lo
    while at < hi:
        samples.append(tuple(in_flight(by_book[tag], at) for tag in by_book))
        at += 0.1
    histogram = {}
    for s in samples:
        histogram[s] = histogram.get(s, 0) + 1
    shown = ", ".join(f"{a}/{b}: {n}" for (a, b), n in sorted(histogram.items(), key=lambda kv: -kv[1])[:6])
    print(f"both books: mean in flight {total:.2f} of {capacity}; samples every 100 ms (Birch/Cedar: count) {shown}")
    return means


def run(api, proxy_url, sim, token_a, token_b, latency_ms, capacity, passages):
    latency = int(latency_ms) / 1000
    capacity = int(capacity)
    passages = int(passages)
    ratio = lone(api, proxy_url, sim, token_a, latency, capacity, passages)
    means = pair(api, proxy_url, token_a, token_b, latency, capacity, passages)
    half = capacity / 2
    misses = []
    if ratio > 1.1:
        misses.append(f"lone book: wall / bound {ratio:.3f} > 1.1")
    for tag, mean in means.items():
        if abs(mean - half) > 0.1 * half:
            misses.append(f"{tag}: mean in flight {mean:.2f} not within 10 % of {half:g}")
    print("## Targets")
    print("all met" if not misses else "missed: " + "; ".join(misses))
    return 1 if misses else 0


if __name__ == "__main__":
    if sys.argv[1] == "proxy":
        proxy(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(run(*sys.argv[2:10]))
