#!/usr/bin/env python3
"""Writes a synthetic novel as a translation request (spec 2.4) for the
memory benchmark: deterministic for a seed, about WORDS words in CHAPTERS
chapters of paragraphs of 60 to 140 words, with a recurring cast (some with
an alias given once), places and invented ALL-CAPS terms, so that analysis,
character sheets and glossary context have something to find.

Usage: make_novel.py OUT.json SERIES [WORDS] [CHAPTERS] [SEED]
"""
import json
import random
import sys

CAST = ["Alice", "Bob", "Morrow", "Elena", "Tobias", "Greta", "Hassan", "Ines"]
ALIASES = {"Alice": "Ally", "Tobias": "Toby", "Greta": "Gigi"}
PLACES = ["Harbourton", "Greyfell", "Saltmarsh", "Vellan"]
TERMS = ["WARPCORE", "SKYLANE", "EMBERSTONE", "TIDEGLASS"]
VERBS = ["watched", "followed", "questioned", "remembered", "answered", "waited for", "warned"]
THINGS = ["the old map", "a lantern", "the sealed letter", "the iron key", "a coil of rope"]
MOODS = ["quietly", "at last", "without a word", "in the grey light", "before dawn"]


def sentence(rng):
    a, b = rng.sample(CAST, 2)
    shape = rng.randrange(6)
    if shape == 0:
        return f"Then {a} {rng.choice(VERBS)} {b} {rng.choice(MOODS)}."
    if shape == 1:
        return f"In {rng.choice(PLACES)}, {a} carried {rng.choice(THINGS)} towards the {rng.choice(TERMS)}."
    if shape == 2:
        return f"The wind rose over {rng.choice(PLACES)} while {a} and {b} spoke of the {rng.choice(TERMS)}."
    if shape == 3:
        return f"Nobody knew why {a} had kept {rng.choice(THINGS)}; {b} {rng.choice(VERBS)} the sea."
    if shape == 4:
        return f"Once more, {a} said that the {rng.choice(TERMS)} would fail {rng.choice(MOODS)}."
    return f"Everyone in {rng.choice(PLACES)} {rng.choice(VERBS)} {a} as the tide turned."


def main():
    out, series = sys.argv[1], sys.argv[2]
    words = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    chapters = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 7)
    per_chapter = words // chapters
    items, total, introduced = [], 0, set()
    for number in range(1, chapters + 1):
        paragraphs, count = [], 0
        while count < per_chapter:
            text = []
            while sum(len(s.split()) for s in text) < rng.randrange(60, 140):
                text.append(sentence(rng))
            paragraph = " ".join(text)
            for name, alias in ALIASES.items():
                if name not in introduced and f", {name} " in paragraph:
                    paragraph = paragraph.replace(f", {name} ", f", {name} ({alias}) ", 1)
                    introduced.add(name)
            paragraphs.append(paragraph)
            count += len(paragraph.split())
        total += count
        items.append({
            "external_id": f"ch-{number}",
            "number": number,
            "title": f"Chapter {number}",
            "content": "\n\n".join(paragraphs),
        })
    body = {
        "series": {"name": series, "create_if_missing": True},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "chapters": items,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(body, f)
    print(f"{out}: {chapters} chapters, {total} words", file=sys.stderr)


if __name__ == "__main__":
    main()
