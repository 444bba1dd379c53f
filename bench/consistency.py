#!/usr/bin/env python3
"""The client side of bench/memory_consistency.sh.

`make OUT_DIR VOLUMES WORDS CHAPTERS`: writes VOLUMES volume bodies
(vol-1.json ...) of one series from bench/make_novel.py (a seed per
volume), then, so that the aliases matter: the `Name (Alias)` introduction
is kept in volume 1 only (later volumes rely on the memory for it), and after
a name's introduction every second occurrence of an aliased character is
written with its alias.

`run API TOKEN DIR SERIES BACKEND`: sends the volumes in order to SERIES with
`pipeline.context_backend` BACKEND, waits for each, prints its status and
`memory`, then the name-consistency figure of the series (see the header of
bench/memory_consistency.sh) from the narrative-context bundles.
"""
import glob
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in bench/
sys.path.insert(0, HERE)
from make_novel import ALIASES, CAST  # noqa: E402


def make(out_dir, volumes, words, chapters):
    for v in range(1, volumes + 1):
        path = os.path.join(out_dir, f"vol-{v}.json")
        subprocess.run([sys.executable, os.path.join(HERE, "make_novel.py"), path, "X",
                        str(words), str(chapters), str(100 + v)], check=True)
        body = json.load(open(path))
        body["volume"] = {"number": v}
        for chapter in body["chapters"]:
            text = chapter["content"]
            for name, alias in ALIASES.items():
                intro = f"{name} ({alias})"
                if v > 1:
                    text = text.replace(intro, name)
            chapter["content"] = text
        # Every second later occurrence of an aliased name becomes the alias.
        for name, alias in ALIASES.items():
            seen_intro = v > 1
            count = 0
            for chapter in body["chapters"]:
                out, last = [], 0
                for m in re.finditer(rf"\b{name}\b( \({alias}\))?", chapter["content"]):
                    if m.group(1):
                        seen_intro = True
                        continue
                    if not seen_intro:
                        continue
                    count += 1
                    if count % 2 == 0:
                        out.append(chapter["content"][last:m.start()] + alias)
                        last = m.end()
                out.append(chapter["content"][last:])
                chapter["content"] = "".join(out)
        json.dump(body, open(path, "w"))


API = TOKEN = None


def call(method, url, body=None):
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=700) as answer:
        return json.loads(answer.read())


def find(doc, key):
    """The first value of `key` anywhere in doc (breadth first)."""
    queue = [doc]
    while queue:
        d = queue.pop(0)
        if isinstance(d, dict):
            if d.get(key):
                return d[key]
            queue.extend(d.values())
        elif isinstance(d, list):
            queue.extend(d)
    return None


def occurrences(text, phrase):
    return len(re.findall(rf"(?<!\w){re.escape(phrase)}(?!\w)", text))


def run(api, token, directory, series, backend):
    global API, TOKEN
    API, TOKEN = api, token
    books = []
    for path in sorted(glob.glob(os.path.join(directory, "vol-*.json"))):
        body = json.load(open(path))
        body["series"] = {"name": series, "create_if_missing": True}
        body["pipeline"] = {"context_backend": backend}
        started = time.monotonic()
        summary = call("POST", f"{API}/api/v1/translation-requests", json.dumps(body).encode())
        request_id = summary["request_id"]
        while True:
            doc = call("GET", f"{API}/api/v1/translation-requests/{request_id}?wait=60")
            if doc["finished_at"] is not None:
                break
        book_id = find(summary, "project_id") or find(doc, "project_id")
        memory = doc.get("memory") or {}
        print(f"{series} volume {body['volume']['number']}: status {doc['status']}, "
              f"{time.monotonic() - started:.1f} s, memory backend {memory.get('backend')}, "
              f"answered_by {memory.get('answered_by')}; memory {json.dumps(memory, sort_keys=True)}")
        books.append(book_id)
        # Let the mirror catch up before the next volume (hybrid reads it).
        wait_outbox()
    figure(series, books)


def wait_outbox():
    status_cmd = os.environ.get("OUTBOX_STATUS")
    if not status_cmd:
        return
    for _ in range(120):
        out = subprocess.run(status_cmd, shell=True, capture_output=True, text=True).stdout
        try:
            if json.loads(out)["outbox"]["pending"] == 0:
                return
        except (ValueError, KeyError, TypeError):
            pass
        time.sleep(1)
    print("warning: memory outbox not drained after 120 s", file=sys.stderr)


def figure(series, books):
    bundles = [call("GET", f"{API}/api/v1/books/{b}/narrative-context") for b in books]
    series_id = bundles[0]["book"]["series_id"]
    sbundle = call("GET", f"{API}/api/v1/series/{series_id}/narrative-context")
    canonical, where = {}, {}
    for name in CAST:
        ident = next((i for i in sbundle["identities"] if i["name"] == name and i["target_name"]), None)
        if ident:
            canonical[name], where[name] = ident["target_name"], "series"
            continue
        ent = next((e for e in bundles[0]["narrative"]["characters"]
                    if e["name"] == name and e["target_name"]), None)
        if ent:
            canonical[name], where[name] = ent["target_name"], "volume 1"
    print(f"{series} canonical renderings: " + ", ".join(
        (f"{n}/{ALIASES[n]}" if n in ALIASES else n) + f" => {canonical.get(n)} [{where.get(n, 'none')}]"
        for n in CAST))
    rows = []
    for v, bundle in enumerate(bundles, 1):
        checked = ok = a_checked = a_ok = untranslated = 0
        for chapter in bundle["content"]["chapters"]:
            for p in chapter["passages"]:
                source, translation = p["source"] or "", p["translation"]
                for name in CAST:
                    sources = [name] + ([ALIASES[name]] if name in ALIASES else [])
                    n_name = occurrences(source, name)
                    n_alias = sum(occurrences(source, s) for s in sources[1:])
                    n = n_name + n_alias
                    if n == 0:
                        continue
                    checked += n
                    a_checked += n_alias
                    if translation is None:
                        untranslated += n
                        continue
                    good = min(n, occurrences(translation, canonical[name])) if name in canonical else 0
                    ok += good
                    # Alias occurrences count as consistent only for what is left
                    # after the name's own occurrences were matched.
                    a_ok += max(0, min(n_alias, good - n_name))
        rows.append((v, checked, ok, a_checked, a_ok, untranslated))
    tot = [sum(r[i] for r in rows) for i in range(1, 6)]
    rows.append(("all", *tot))
    print(f"{'series':<10} {'volume':>6} {'checked':>8} {'consistent':>10} {'share':>7} "
          f"{'alias occ.':>10} {'alias cons.':>11} {'alias share':>11} {'untransl.':>9}")
    for v, c, o, ac, ao, u in rows:
        share = f"{o / c:.3f}" if c else "n/a"
        ashare = f"{ao / ac:.3f}" if ac else "n/a"
        print(f"{series:<10} {v:>6} {c:>8} {o:>10} {share:>7} {ac:>10} {ao:>11} {ashare:>11} {u:>9}")
    # A sample of how one alias came out, for the reader to check.
    for bundle in bundles[1:]:
        for chapter in bundle["content"]["chapters"]:
            for p in chapter["passages"]:
                if p["translation"] and re.search(r"\bAlly\b", p["source"] or ""):
                    s = p["source"]
                    i = s.index("Ally")
                    print(f"{series} sample (volume {bundle['book']['volume_number']}): "
                          f"source ...{s[max(0, i - 30):i + 30]}...")
                    t = p["translation"]
                    print(f"{series} sample translation: {t[:200]}...")
                    return


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        run(*sys.argv[2:7])
