#!/usr/bin/env python3
"""The fidelity benchmark's measures (bench/fidelity.sh, docs/benchmarks.md),
on real English prose translated into Spanish by Apertium, with faults put in
by bench/fidelity_faults.py, which knows nothing of the quality checks.

  detect   the checks alone (pipeline/examples/assess.rs) on clean and
           faulty passages of two novels: per fault category the share
           flagged (a major or critical signal) and the share with any
           signal; on clean passages the false alarms, code by code, with
           examples.
  deliver  the service end to end: a book sent to a running server whose
           provider is reached through a proxy (in this process) that puts a
           fault into 10 % of the passages, the first time each is
           translated only, and keeps a ledger; then for every fault whether
           the delivered passage is repaired, still faulty or in source
           text, and the provider calls, against a clean run.

Python standard library only; runs Apertium (`apertium -u eng-spa`) and
`lt-proc` from the installed packages, once per corpus (cached in the
temporary folder), and downloads nothing.
"""
import argparse
import collections
import hashlib
import html
import http.server
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ left in bench/
import fidelity_faults as faults  # noqa: E402

CORPUS = os.environ.get("DRAGOMAN_CORPUS_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpus")
NOWHERE = "txt-en-gutenberg-news-from-nowhere-ascii-crlf.txt"
MOBY = "valid-epub3-moby-dick.epub"
MODE = "/usr/share/apertium/modes/eng-spa.mode"

# Deterministic categories the checks are meant to catch, with the target
# share flagged; `number_word` and `swap` are measured without a target.
TARGET_FLAGGED = 0.90
DETERMINISTIC = ["number", "omission", "addition", "partial", "untranslated", "name", "term", "truncation"]
TARGET_FALSE_ALARMS = 0.05
TARGET_DELIVERED = 0.05
TARGET_CALLS_ADDED = 0.15
SERIOUS = ("major", "critical")


def corpus_file(name):
    path = os.path.join(CORPUS, name)
    if not os.path.exists(path):
        sys.exit(f"corpus file not found: {path} (set DRAGOMAN_CORPUS_DIR)")
    return path


# ---------------------------------------------------------------- the texts

def nowhere_chapters():
    """News from Nowhere: (title, paragraphs) per chapter, each paragraph's
    wrapped lines joined."""
    text = open(corpus_file(NOWHERE), encoding="ascii").read().replace("\r", "")
    text = text[:text.index("***END OF THE PROJECT")]
    parts = re.split(r"\n(CHAPTER [IVXL]+: [^\n]*)\n", text)
    chapters = []
    for i in range(1, len(parts), 2):
        paragraphs = [" ".join(p.split()) for p in parts[i + 1].split("\n\n") if p.strip()]
        chapters.append((parts[i].strip(), paragraphs))
    return chapters


def moby_chapters():
    """Moby-Dick from the EPUB: (file, paragraphs) per chapter file."""
    book = zipfile.ZipFile(corpus_file(MOBY))
    chapters = []
    for name in sorted(n for n in book.namelist() if re.search(r"chapter_\d+\.xhtml$", n)):
        page = book.read(name).decode("utf-8")
        paragraphs = []
        for m in re.finditer(r"<p[^>]*>(.*?)</p>", page, re.S):
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).split())
            if text:
                paragraphs.append(text)
        chapters.append((name, paragraphs))
    return chapters


def worth_testing(paragraph):
    """A passage of prose: four words or more, not a footnote mark alone."""
    return len(faults.words(paragraph)) >= 4 and not paragraph.startswith("{")


# ---------------------------------------------------------------- Apertium

def cache_dir():
    path = os.path.join(tempfile.gettempdir(), "dragoman-fidelity-cache")
    os.makedirs(path, exist_ok=True)
    return path


def tidy(text):
    """Apertium's output with the spaces it leaves where it drops a pronoun
    (doubled, leading, before a comma, after an opening quote) closed up, as
    any translator's text would be."""
    text = " ".join(text.split())
    text = re.sub(r" +([,.;:!?)\]…])", r"\1", text)
    text = re.sub(r"([(\[¿¡“«]) +", r"\1", text)
    # Straight double quotes open and close in turn.
    out, opening = [], True
    for i, piece in enumerate(text.split('"')):
        if i and opening:
            piece = piece.lstrip(" ")
        if i:
            opening = not opening
        out.append(piece)
    return '"'.join(out)


def apertium(texts):
    """Each text translated en→es by Apertium, in one process call, cached."""
    if not texts:
        return []
    mode = open(MODE, encoding="utf-8").read() if os.path.exists(MODE) else ""
    key = hashlib.sha256(("\x00".join(texts) + "\x01" + mode + "raw").encode()).hexdigest()[:24]
    cached = os.path.join(cache_dir(), f"apertium-{key}.json")
    if os.path.exists(cached):
        return [tidy(t) for t in json.load(open(cached, encoding="utf-8"))]
    blob = "".join(f"{t}\n\n[[{i}]]\n\n" for i, t in enumerate(texts))
    run = subprocess.run(["apertium", "-u", "eng-spa"], input=blob, capture_output=True,
                         text=True, check=True)
    pieces = re.split(r"\[\[(\d+)\]\]", run.stdout)
    out = [None] * len(texts)
    for i in range(1, len(pieces), 2):
        out[int(pieces[i])] = pieces[i - 1]
    if any(t is None for t in out):
        sys.exit("apertium lost a separator")
    json.dump(out, open(cached, "w", encoding="utf-8"), ensure_ascii=False)
    return [tidy(t) for t in out]


def translate_paragraphs(paragraphs):
    """Each paragraph's sentences and their Apertium translations, aligned."""
    split = [faults.split_sentences(p) for p in paragraphs]
    flat = [s for sentences in split for s in sentences]
    translated = apertium(flat)
    out, at = [], 0
    for sentences in split:
        out.append((sentences, translated[at:at + len(sentences)]))
        at += len(sentences)
    return out


def analyses(tokens):
    """lt-proc's analyses of each token: {token: [analysis, ...]}."""
    mode = open(MODE, encoding="utf-8").read()
    automorf = re.search(r"lt-proc '([^']*automorf\.bin)'", mode).group(1)
    run = subprocess.run(["lt-proc", "-w", automorf], input="\n".join(tokens) + "\n",
                         capture_output=True, text=True, check=True)
    out = {}
    for m in re.finditer(r"\^([^/$]*)/([^$]*)\$", run.stdout):
        out[m.group(1)] = m.group(2).split("/")
    return out


# ---------------------------------------------------------------- the sheet

def _has(word, text):
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE) is not None


PLACE_WORDS = {"the", "to", "at", "in", "from", "of", "near", "by", "into", "towards", "up", "down"}


def pick_sheet(pairs, names=6, terms=5, least=8):
    """The sheet a user would write for a book: its most frequent character
    names that the translation keeps as they are, and frequent nouns with
    the rendering the translation gives them nearly everywhere (locked)."""
    capitalised = collections.Counter()
    placed = collections.Counter()
    lower = collections.Counter()
    for source, _ in pairs:
        for sentence in faults.split_sentences(source):
            tokens = re.findall(r"[A-Za-z][a-z]+", sentence)
            for i, t in enumerate(tokens):
                if t[0].isupper() and i > 0:
                    capitalised[t] += 1
                    # "the Thames", "to Hammersmith": a place or a thing.
                    placed[t] += tokens[i - 1].lower() in PLACE_WORDS
                elif t.islower():
                    lower[t] += 1
    name_candidates = [t for t, n in capitalised.most_common(80)
                       if n >= least and lower[t.lower()] < n / 4 and placed[t] < n * 0.3]
    noun_candidates = [t for t, n in lower.most_common(400) if n >= least and len(t) >= 3]
    found = analyses(name_candidates + noun_candidates)

    def consistent(word, rendering):
        having = [t for s, t in pairs if _has(word, s)]
        kept = sum(1 for t in having if _has(rendering, t))
        return len(having), kept / max(len(having), 1)

    sheet_names = []
    for t in name_candidates:
        readings = found.get(t, [])
        if not readings or not all(r.startswith("*") or "<np>" in r for r in readings):
            continue
        if any("<top>" in r or "<org>" in r for r in readings):
            continue
        having, share = consistent(t, t)
        if having >= least and share >= 0.95:
            sheet_names.append({"names": [t], "rendering": t})
        if len(sheet_names) == names:
            break
    nouns = [t for t in noun_candidates if found.get(t, [""])[0].endswith("<n><sg>")]
    renderings = apertium(nouns)
    sheet_terms = []
    for t, r in zip(nouns, renderings):
        r = r.strip(" .").lower()
        if " " in r or not r or r == t or not r.isalpha():
            continue
        having, share = consistent(t, r)
        if having >= least and share >= 0.95:
            sheet_terms.append({"source": t, "translation": r, "locked": True})
        if len(sheet_terms) == terms:
            break
    return {"names": sheet_names, "terms": sheet_terms}


# ---------------------------------------------------------------- detect

def assess(binary, cases):
    """Runs the Rust checks on every case; one assessment per case."""
    lines = "".join(json.dumps({
        "source": c["source"], "translation": c["translation"],
        "source_language": "en", "target_language": "es",
        "terms": c["sheet"]["terms"], "names": c["sheet"]["names"],
    }, ensure_ascii=False) + "\n" for c in cases)
    run = subprocess.run(binary, input=lines, capture_output=True, text=True, check=True)
    out = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    if len(out) != len(cases):
        sys.exit(f"assess answered {len(out)} lines for {len(cases)}")
    for a in out:
        if "error" in a:
            sys.exit(f"assess: {a['error']}")
    return out


def serious(assessment):
    return any(s["severity"] in SERIOUS for s in assessment["signals"])


def pct(part, whole):
    return f"{100 * part / whole:.1f} %" if whole else "–"


def detect(args):
    books = {"News from Nowhere": nowhere_chapters(), "Moby-Dick": moby_chapters()}
    cases = []
    for book, chapters in books.items():
        paragraphs = [p for _, ps in chapters for p in ps if worth_testing(p)]
        aligned = translate_paragraphs(paragraphs)
        pairs = [(p, " ".join(t)) for p, (_, t) in zip(paragraphs, aligned)]
        sheet = pick_sheet(pairs)
        print(f"{book}: {len(pairs)} passages, {sum(len(faults.words(p)) for p, _ in pairs)} words; "
              f"names {[n['rendering'] for n in sheet['names']]}; "
              f"terms {[(t['source'], t['translation']) for t in sheet['terms']]}", flush=True)
        pool = [s for _, (_, t) in zip(paragraphs, aligned) for s in t if len(faults.words(s)) >= 4]
        for i, (source, translation) in enumerate(pairs):
            cases.append({"book": book, "kind": "clean", "source": source, "translation": translation,
                          "clean": translation, "sheet": sheet})
        for category in faults.CATEGORIES:
            rng = random.Random(f"{args.seed}:{book}:{category}")
            order = list(range(len(pairs)))
            rng.shuffle(order)
            made = 0
            for i in order:
                if made >= args.per_category:
                    break
                source, translation = pairs[i]
                faulty = faults.inject(category, source, translation, sheet, rng, pool)
                if faulty is None:
                    continue
                made += 1
                cases.append({"book": book, "kind": category, "source": source, "translation": faulty,
                              "clean": translation, "sheet": sheet})
    started = time.monotonic()
    results = assess(args.assess, cases)
    elapsed = time.monotonic() - started
    for c, a in zip(cases, results):
        c["assessment"] = a

    print(f"\nassessed {len(cases)} passages in {elapsed:.1f} s\n")
    print("| category | faulty passages | flagged (major or critical) | any signal | target | most frequent codes |")
    print("|---|---|---|---|---|---|")
    summary = {"categories": {}, "clean": {}}
    for category in faults.CATEGORIES:
        group = [c for c in cases if c["kind"] == category]
        flagged = sum(1 for c in group if serious(c["assessment"]))
        any_signal = sum(1 for c in group if c["assessment"]["signals"])
        codes = collections.Counter(s["code"] for c in group for s in c["assessment"]["signals"])
        target = f"≥ {TARGET_FLAGGED:.0%}" if category in DETERMINISTIC else "none"
        met = "" if category not in DETERMINISTIC else (" ✓" if group and flagged / len(group) >= TARGET_FLAGGED else " ✗")
        print(f"| {category} | {len(group)} | {pct(flagged, len(group))}{met} | {pct(any_signal, len(group))} | {target} | "
              + ", ".join(f"{k} {v}" for k, v in codes.most_common(4)) + " |")
        summary["categories"][category] = {"passages": len(group), "flagged": flagged, "any": any_signal}
    clean = [c for c in cases if c["kind"] == "clean"]
    flagged = [c for c in clean if serious(c["assessment"])]
    any_signal = [c for c in clean if c["assessment"]["signals"]]
    met = "✓" if len(flagged) / len(clean) <= TARGET_FALSE_ALARMS else "✗"
    print(f"\nclean passages: {len(clean)}; flagged (major or critical) {len(flagged)} = {pct(len(flagged), len(clean))} "
          f"{met} (target ≤ {TARGET_FALSE_ALARMS:.0%}); any signal {len(any_signal)} = {pct(len(any_signal), len(clean))}")
    by_book = collections.Counter(c["book"] for c in flagged)
    for book in books:
        n = sum(1 for c in clean if c["book"] == book)
        print(f"  {book}: {by_book[book]} of {n} flagged ({pct(by_book[book], n)})")
    summary["clean"] = {"passages": len(clean), "flagged": len(flagged), "any": len(any_signal)}
    print("\nsignals on clean passages (passages, severity):")
    codes = collections.defaultdict(list)
    for c in clean:
        for s in c["assessment"]["signals"]:
            codes[(s["code"], s["severity"])].append((c, s))
    examples = {}
    for (code, severity), hits in sorted(codes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {code} ({severity}): {len(hits)} = {pct(len(hits), len(clean))}")
        if severity in SERIOUS:
            for c, found in hits[:2]:
                print(f"    e.g. {found['message'][:150]!r} in {c['translation'][:150]!r}")
        examples[f"{code} ({severity})"] = [
            {"book": c["book"], "message": s["message"], "source": c["source"], "translation": c["translation"]}
            for c, s in hits[:args.examples]]
    summary["clean_codes"] = {k: len(v) for k, v in ((f"{c} ({s})", h) for (c, s), h in codes.items())}
    misses = {}
    for category in DETERMINISTIC:
        missed = [c for c in cases if c["kind"] == category and not serious(c["assessment"])]
        misses[category] = [{"book": c["book"], "source": c["source"], "clean": c["clean"],
                             "faulty": c["translation"], "signals": c["assessment"]["signals"]}
                            for c in missed[:args.examples]]
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        json.dump({"summary": summary, "clean_examples": examples, "missed_examples": misses},
                  open(os.path.join(args.out, "detect.json"), "w", encoding="utf-8"),
                  ensure_ascii=False, indent=1)
        print(f"\nexamples of clean-text signals and of missed faults: {os.path.join(args.out, 'detect.json')}")


# ---------------------------------------------------------------- deliver

def book_chapters(count):
    """The book sent to the service: the first chapters of News from Nowhere."""
    return nowhere_chapters()[:count]


def key(text):
    return " ".join(text.split())


def plan_faults(paragraphs, translations, sheet, rate, seed):
    """Which passages get a fault and of which category: `rate` of them,
    drawn with the seed, the categories in turn, each passage given the next
    category that applies to its (Apertium) translation."""
    rng = random.Random(f"{seed}:plan")
    count = round(rate * len(paragraphs))
    chosen = rng.sample(range(len(paragraphs)), count) if count else []
    categories = list(faults.CATEGORIES)
    rng.shuffle(categories)
    can = {i: [c for c in categories if faults.applicable(c, paragraphs[i], translations[i], sheet, translations)]
           for i in chosen}
    # The passages with the fewest choices first, each given the category
    # used least so far among those that apply, so that every category
    # gets its share wherever it can apply.
    plan, used = {}, collections.Counter()
    for i in sorted(chosen, key=lambda i: (len(can[i]), i)):
        if can[i]:
            category = min(can[i], key=lambda c: (used[c], categories.index(c)))
            used[category] += 1
            plan[key(paragraphs[i])] = category
    return plan, categories


class Proxy:
    """An OpenAI-compatible pass-through to the provider that puts the
    planned fault into a passage's translation the first time that passage
    is translated, and counts the calls by kind."""

    def __init__(self, upstream, plan, order, sheet, seed):
        self.upstream = upstream.rstrip("/")
        self.plan = plan
        self.order = order
        self.sheet = sheet
        self.seed = seed
        self.seen = set()
        self.pool = []
        self.ledger = []
        self.calls = collections.Counter()
        self.lock = threading.Lock()

    def forward(self, path, body, headers):
        request = urllib.request.Request(self.upstream + path, data=body, method="POST")
        for k, v in headers.items():
            if k.lower() in ("content-type", "authorization", "accept"):
                request.add_header(k, v)
        try:
            with urllib.request.urlopen(request, timeout=900) as answer:
                return answer.status, answer.headers.get("content-type", "application/json"), answer.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("content-type", "application/json"), e.read()

    def kind_of(self, message):
        if isinstance(message, dict) and message.get("task") in ("analysis", "review"):
            return message["task"]
        if isinstance(message, dict) and isinstance(message.get("passages"), list):
            return "translation"
        return "other"

    def rewrite(self, request, answer):
        """The answer with faults put in; counts the call."""
        try:
            user = next(m["content"] for m in request["messages"] if m["role"] == "user")
            message = json.loads(user)
        except (KeyError, StopIteration, TypeError, ValueError):
            message = None
        kind = self.kind_of(message)
        with self.lock:
            self.calls[kind] += 1
        if kind != "translation":
            return answer
        sources = {str(p.get("id")): p.get("text", "") for p in message["passages"]}
        try:
            content = answer["choices"][0]["message"]["content"]
            body = content.strip()
            if body.startswith("```"):
                body = body.split("\n", 1)[1].rsplit("```", 1)[0]
            parsed = json.loads(body[body.index("{"):body.rindex("}") + 1])
            items = parsed["translations"]
        except (KeyError, IndexError, TypeError, ValueError):
            return answer
        changed = False
        with self.lock:
            again = any(i in self.seen for i in sources if not i.startswith("title:"))
            self.calls["translation_again" if again else "translation_first"] += 1
            for item in items:
                pid = str(item.get("id"))
                text = item.get("text")
                if pid.startswith("title:") or pid not in sources or not isinstance(text, str):
                    continue
                first = pid not in self.seen
                self.seen.add(pid)
                planned = self.plan.get(key(sources[pid]))
                if first and planned:
                    rng = random.Random(f"{self.seed}:{key(sources[pid])}")
                    start = self.order.index(planned)
                    for step in range(len(self.order)):
                        category = self.order[(start + step) % len(self.order)]
                        faulty = faults.inject(category, sources[pid], text, self.sheet, rng, self.pool)
                        if faulty is not None:
                            self.ledger.append({"passage_id": pid, "category": category, "planned": planned,
                                                "source": sources[pid], "clean": text, "faulty": faulty})
                            item["text"] = faulty
                            changed = True
                            break
                    else:
                        self.ledger.append({"passage_id": pid, "category": None, "planned": planned,
                                            "source": sources[pid], "clean": text, "faulty": None})
                self.pool.extend(s for s in faults.split_sentences(text) if len(faults.words(s)) >= 4)
        if changed:
            answer["choices"][0]["message"]["content"] = json.dumps(parsed, ensure_ascii=False)
        return answer

    def serve(self, port):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.reply(*proxy.forward_get(self.path))

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status, ctype, data = proxy.forward(self.path, body, dict(self.headers))
                if status == 200 and self.path.rstrip("/").endswith("chat/completions"):
                    try:
                        answer = proxy.rewrite(json.loads(body), json.loads(data))
                        data = json.dumps(answer, ensure_ascii=False).encode()
                    except ValueError:
                        pass
                self.reply(status, ctype, data)

            def reply(self, status, ctype, data):
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def forward_get(self, path):
        try:
            with urllib.request.urlopen(self.upstream + path, timeout=60) as answer:
                return answer.status, answer.headers.get("content-type", "application/json"), answer.read()
        except urllib.error.HTTPError as e:
            return e.code, "application/json", e.read()


def call(api, token, method, path, body=None):
    request = urllib.request.Request(api + path, data=body, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=700) as answer:
        return json.loads(answer.read())


def wait(api, token, request_id, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        doc = call(api, token, "GET", f"/api/v1/translation-requests/{request_id}?wait=60")
        if doc["finished_at"] is not None:
            return doc
    sys.exit(f"request {request_id} did not finish within {limit} s")


def deliver(args):
    chapters = book_chapters(args.chapters)
    paragraphs = [p for _, ps in chapters for p in ps]
    aligned = translate_paragraphs(paragraphs)
    translations = [" ".join(t) for _, t in aligned]
    sheet = pick_sheet(list(zip(paragraphs, translations)), names=6, terms=args.terms, least=4)
    plan, order = plan_faults(paragraphs, translations, sheet, args.rate, args.seed)
    proxy = Proxy(args.sim, plan, order, sheet, args.seed)
    server = proxy.serve(args.proxy_port)

    payload = {
        "series": {"name": f"Fidelity {args.run}", "create_if_missing": True},
        "volume": {"number": 1, "title": "News from Nowhere"},
        "author": "William Morris",
        "source_language": "en",
        "target_language": "es",
        "chapters": [{"external_id": f"ch{n}", "number": n, "title": title.split(": ", 1)[-1].title(),
                      "content": "\n\n".join(ps)} for n, (title, ps) in enumerate(chapters, 1)],
        "pipeline": {"start": False},
        "output": {"format": "json"},
    }
    imported = call(args.api, args.token, "POST", "/api/v1/translation-requests", json.dumps(payload).encode())
    wait(args.api, args.token, imported["request_id"], 600)
    env = dict(os.environ, DRAGOMAN_DATA_DIR=os.path.dirname(args.db))
    for t in sheet["terms"]:
        subprocess.run([args.bin, "term", "add", "--series", imported["series_id"], "--source", t["source"],
                        "--translation", t["translation"], "--locked"], env=env, check=True, capture_output=True)
    payload["pipeline"] = {"final_review": args.final_review}
    started = time.monotonic()
    summary = call(args.api, args.token, "POST", "/api/v1/translation-requests", json.dumps(payload).encode())
    doc = wait(args.api, args.token, summary["request_id"], args.timeout)
    wall = time.monotonic() - started
    result = call(args.api, args.token, "GET", f"/api/v1/translation-requests/{summary['request_id']}/result?format=json")
    stats = json.loads(proxy.forward_get("/stats")[2])
    chat = sum(proxy.calls[k] for k in ("translation", "analysis", "review", "other"))
    server.shutdown()
    report = doc["report"]

    db = sqlite3.connect(args.db)
    rows = db.execute(
        "SELECT p.id, p.chapter_id, p.position, p.source, p.translation, p.status, p.signals "
        "FROM passages p WHERE p.project_id = ? ORDER BY p.chapter_id, p.position",
        (summary["project_id"],)).fetchall()
    passages = {r[0]: r for r in rows}
    reviewed = {r[0] for r in db.execute(
        "SELECT id FROM passages WHERE project_id = ? AND reviewed", (summary["project_id"],))}
    actions = collections.defaultdict(list)
    reasons = collections.defaultdict(list)
    for pid, action, reason in db.execute(
            "SELECT passage_id, action, reason FROM autopilot_decisions WHERE request_id = ? "
            "ORDER BY created_at, round", (summary["request_id"],)):
        actions[pid].append(action)
        reasons[pid].append(reason)
    # What the reader gets: each chapter's text of the JSON result, one
    # passage per paragraph, in the stored order.
    delivered = {}
    for chapter in result["chapters"]:
        ids = sorted((r for r in rows if r[1] == chapter["chapter_id"]), key=lambda r: r[2])
        texts = chapter["translation"].split("\n\n")
        if len(texts) == len(ids):
            delivered.update({r[0]: t for r, t in zip(ids, texts)})
    unmapped = len(rows) - len(delivered)
    residuals = {x["segment_id"]: x["reason"] for x in report["residuals"]}

    print(f"## Run {args.run}: {'faults in ' + format(args.rate, '.0%') if args.rate else 'no fault'}, "
          f"final_review {str(args.final_review).lower()}")
    print(f"status {doc['status']}; {len(rows)} passages ({len(paragraphs)} paragraphs sent); wall {wall:.1f} s; "
          f"sheet: names {[n['rendering'] for n in sheet['names']]}, locked terms "
          f"{[(t['source'], t['translation']) for t in sheet['terms']]}")
    if unmapped:
        print(f"warning: {unmapped} passages not found in the JSON result's chapter text; read from the database")
    print(f"provider calls through the proxy {chat} {json.dumps(dict(proxy.calls))}; simulator requests "
          f"{stats.get('requests')} (embeddings {stats.get('embeddings')}); report.usage.calls {report['usage']['calls']}")
    print(f"autopilot {json.dumps(report['autopilot'])}; residual_total {report['residual_total']}; "
          f"passages {json.dumps(report['passages']['by_status'])}")

    # Passages without a fault that the review or the autopilot took up:
    # what the checks' false alarms cost in the service.
    faulty_ids = {e["passage_id"] for e in proxy.ledger if e["faulty"] is not None}
    alarms = [r for r in rows if r[0] not in faulty_ids and (actions.get(r[0]) or r[0] in reviewed)]
    print(f"passages without a fault taken up by the review or the autopilot: {len(alarms)} of "
          f"{len(rows) - len(faulty_ids)}")
    for r in alarms[:args.examples or 3]:
        print(f"  {r[5]}, reviewed {r[0] in reviewed}, autopilot {reasons.get(r[0], [])}, "
              f"residual {residuals.get(r[0])}: {r[3][:160]!r} -> {(delivered.get(r[0]) or '')[:160]!r}")
    outcome = {"run": args.run, "alarms": len(alarms), "rate": args.rate, "final_review": args.final_review,
               "calls": dict(proxy.calls), "chat": chat, "requests": stats.get("requests"),
               "usage_calls": report["usage"]["calls"], "passages": len(rows),
               "residual_total": report["residual_total"], "faults": {}}
    if args.rate:
        table = collections.defaultdict(collections.Counter)
        notes = []
        for entry in proxy.ledger:
            category = entry["category"] or f"({entry['planned']}: none applied)"
            p = passages.get(entry["passage_id"])
            if p is None or entry["faulty"] is None:
                table[category]["not applied"] += 1
                continue
            text = delivered.get(p[0], p[4] if p[4] is not None else p[3])
            now, source = key(text), key(p[3])
            if p[0] in residuals and now == source and entry["category"] != "untranslated":
                fate = "source"
            elif now == key(entry["faulty"]):
                fate = "source" if p[0] in residuals else "delivered"
            elif now == key(entry["clean"]):
                fate = "repaired"
            elif now == source:
                fate = "source"
            else:
                fate = "other"
            table[category][fate] += 1
            table[category]["taken up"] += bool(actions.get(p[0])) or p[0] in reviewed
            entry.update(fate=fate, delivered=text, signals=json.loads(p[6] or "[]"),
                         autopilot=actions.get(p[0], []), reviewed=p[0] in reviewed)
            if fate in ("delivered", "other"):
                notes.append((category, fate, entry, text, json.loads(p[6] or "[]"), actions.get(p[0], [])))
        print("\n| category | faults | taken up (review or autopilot) | repaired (clean text) | other text | still delivered | in source text (residual) |")
        print("|---|---|---|---|---|---|---|")
        total = collections.Counter()
        for category in faults.CATEGORIES + sorted(k for k in table if k not in faults.CATEGORIES):
            t = table.get(category)
            if not t:
                continue
            n = sum(v for k, v in t.items() if k != "taken up")
            total.update(t)
            print(f"| {category} | {n} | {t['taken up']} | {t['repaired']} | {t['other']} | "
                  f"{t['delivered']} ({pct(t['delivered'], n)}) | {t['source']} |")
        n = sum(v for k, v in total.items() if k not in ("not applied", "taken up"))
        met = "✓" if n and total["delivered"] / n <= TARGET_DELIVERED else "✗"
        print(f"| all | {n} | {total['taken up']} | {total['repaired']} | {total['other']} | "
              f"{total['delivered']} ({pct(total['delivered'], n)}) {met} | {total['source']} |")
        outcome["faults"] = {k: dict(v) for k, v in table.items()}
        for category, fate, entry, text, signals, done in notes[:args.examples]:
            print(f"\n{fate} {category} {entry['passage_id']}: signals {[(s['code'], s.get('penalty')) for s in signals]}, "
                  f"autopilot {done}"
                  f"\n  clean:     {entry['clean'][:300]}\n  faulty:    {entry['faulty'][:300]}\n  delivered: {text[:300]}")
        base = os.path.join(args.out, f"{args.baseline}.json") if args.baseline else None
        if base and os.path.exists(base):
            clean = json.load(open(base))
            added = chat - clean["chat"]
            met = "✓" if added / clean["chat"] <= TARGET_CALLS_ADDED else "✗"
            print(f"\nprovider calls: {chat} against {clean['chat']} in the clean run {clean['run']}: "
                  f"+{added} = {pct(added, clean['chat'])} {met} (target ≤ {TARGET_CALLS_ADDED:.0%}); "
                  f"by kind {json.dumps(dict(proxy.calls))} against {json.dumps(clean['calls'])}")
            outcome["calls_added"] = added
            outcome["baseline_chat"] = clean["chat"]
    os.makedirs(args.out, exist_ok=True)
    outcome["ledger"] = proxy.ledger
    json.dump(outcome, open(os.path.join(args.out, f"{args.run}.json"), "w", encoding="utf-8"),
              ensure_ascii=False, indent=1)
    print(flush=True)


def summary(args):
    """The deliver runs of one setting added up: runs named RUN and
    RUN-<seed> against their clean run."""
    fates = ["taken up", "repaired", "other", "delivered", "source"]
    for setting, clean_name in (("faults", "clean"), ("faults-noreview", "clean-noreview")):
        path = os.path.join(args.out, f"{clean_name}.json")
        runs = [json.load(open(os.path.join(args.out, f), encoding="utf-8"))
                for f in sorted(os.listdir(args.out))
                if re.fullmatch(re.escape(setting) + r"(-\d+)?\.json", f)]
        if not runs or not os.path.exists(path):
            continue
        clean = json.load(open(path, encoding="utf-8"))
        print(f"\n## {setting}: {len(runs)} runs of {runs[0]['passages']} passages, final_review "
              f"{str(runs[0]['final_review']).lower()}, faults in {runs[0]['rate']:.0%} of the passages\n")
        print("| category | faults | taken up (review or autopilot) | repaired (clean text) | other text "
              "| still delivered | in source text (residual) |")
        print("|---|---|---|---|---|---|---|")
        table = collections.defaultdict(collections.Counter)
        for run in runs:
            for category, counts in run["faults"].items():
                table[category].update(counts)
        total = collections.Counter()
        for category in faults.CATEGORIES + sorted(k for k in table if k not in faults.CATEGORIES):
            t = table.get(category)
            if not t:
                continue
            n = sum(t[f] for f in fates[1:])
            total.update(t)
            print(f"| {category} | {n} | {t['taken up']} | {t['repaired']} | {t['other']} | "
                  f"{t['delivered']} ({pct(t['delivered'], n)}) | {t['source']} |")
        n = sum(total[f] for f in fates[1:])
        met = "✓" if n and total["delivered"] / n <= TARGET_DELIVERED else "✗"
        print(f"| all | {n} | {total['taken up']} | {total['repaired']} | {total['other']} | "
              f"{total['delivered']} ({pct(total['delivered'], n)}) {met} | {total['source']} |")
        det = sum(table[c][f] for c in DETERMINISTIC for f in fates[1:])
        det_delivered = sum(table[c]["delivered"] for c in DETERMINISTIC)
        print(f"\nstill delivered, deterministic categories only ({', '.join(DETERMINISTIC)}): "
              f"{det_delivered} of {det} = {pct(det_delivered, det)}")
        added = [r["chat"] - clean["chat"] for r in runs]
        mean = sum(added) / len(added)
        met = "✓" if mean / clean["chat"] <= TARGET_CALLS_ADDED else "✗"
        missed = [e for r in runs for e in r["ledger"] if e.get("fate") == "delivered"]
        for e in missed[:args.examples]:
            print(f"\nstill delivered: {e['category']}; signals "
                  f"{[(x['code'], x.get('penalty')) for x in e['signals']]}, reviewed {e['reviewed']}, "
                  f"autopilot {e['autopilot']}\n  source: {e['source'][:400]}\n  clean:  {e['clean'][:400]}"
                  f"\n  faulty: {e['faulty'][:400]}")
        print(f"\nprovider calls: clean run {clean['chat']} ({json.dumps(clean['calls'])}); with faults "
              f"{', '.join(str(r['chat']) for r in runs)}: +{mean:.1f} on average = {pct(mean, clean['chat'])} {met} "
              f"(target ≤ {TARGET_CALLS_ADDED:.0%}); clean run residuals {clean['residual_total']}")
        print(f"passages without a fault taken up by the review or the autopilot: clean run {clean.get('alarms')} "
              f"of {clean['passages']}; runs with faults {', '.join(str(r.get('alarms')) for r in runs)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("detect", help="the checks alone on clean and faulty passages")
    d.add_argument("--assess", nargs="+", required=True, help="the command of pipeline/examples/assess.rs")
    d.add_argument("--seed", default="1")
    d.add_argument("--per-category", type=int, default=400, help="faulty passages per category and book, at most")
    d.add_argument("--examples", type=int, default=5)
    d.add_argument("--out")
    v = sub.add_parser("deliver", help="one run of the service through the fault-injecting proxy")
    v.add_argument("--run", required=True)
    v.add_argument("--api", required=True)
    v.add_argument("--sim", required=True, help="the provider (simulator) base, e.g. http://127.0.0.1:18690")
    v.add_argument("--proxy-port", type=int, required=True)
    v.add_argument("--token", required=True)
    v.add_argument("--db", required=True)
    v.add_argument("--bin", required=True)
    v.add_argument("--out", required=True)
    v.add_argument("--rate", type=float, default=0.0)
    v.add_argument("--final-review", type=lambda s: s.lower() in ("1", "true", "yes"), default=True)
    v.add_argument("--baseline", help="the clean run to compare the calls with")
    v.add_argument("--chapters", type=int, default=7)
    v.add_argument("--terms", type=int, default=4)
    v.add_argument("--seed", default="1")
    v.add_argument("--timeout", type=int, default=900)
    v.add_argument("--examples", type=int, default=6)
    m = sub.add_parser("summary", help="the deliver runs added up, per setting")
    m.add_argument("--out", required=True)
    m.add_argument("--examples", type=int, default=4)
    args = parser.parse_args()
    {"detect": detect, "deliver": deliver, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
