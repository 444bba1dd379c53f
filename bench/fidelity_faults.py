#!/usr/bin/env python3
"""Faults put into a real translation, for the fidelity benchmark
(bench/fidelity.sh): the faults a reader meets in a machine translation,
written from their description and nothing else, so that the quality checks
are measured on faults they did not define. Python standard library only;
no code or word list shared with the Rust checks.

`inject(category, source, translation, sheet, rng, pool)` returns the faulty
translation, or None when the category cannot apply to the pair (no number,
a single sentence, no name of the sheet in it...). Deterministic for a given
random.Random. The categories:

- omission      one whole sentence of a translation of two or more dropped
- addition      a sentence from elsewhere in the book (`pool`) inserted
- number        a digit of a number of the translation changed, or the number dropped
- number_word   a number written in words (dos, tres, cien...) changed to another
- partial       one sentence (4 words or more) of the translation replaced by
                the source sentence it stands for
- untranslated  the whole source in place of the translation
- name          a character's rendering (sheet) misspelt wherever the passage has it
- name_once     in a passage that names a character twice or more, one of the
                mentions misspelt, the others right (measured, no target)
- term          a glossary rendering (sheet) replaced by a synonym, or by the
                untranslated source term
- truncation    the translation cut at a word boundary in its second half,
                not right after a stop
- swap          two sentences exchanged: every word is there, only the order
                is wrong, so a check that compares what is said rather than in
                which order cannot see it (measured, no target)

Command line, to look at the faults on one pair:
  python3 bench/fidelity_faults.py SOURCE TRANSLATION [SEED]
"""
import random
import re
import sys

CATEGORIES = [
    "omission",
    "addition",
    "number",
    "number_word",
    "partial",
    "untranslated",
    "name",
    "name_once",
    "term",
    "truncation",
    "swap",
]

# Abbreviations after which a full stop does not end a sentence, English and
# Spanish.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "capt", "col", "gen", "lt", "rev", "prof",
    "sr", "sra", "srta", "dra", "ud", "uds", "vd", "etc", "vol", "no", "nº",
    "p", "pp", "cf", "i.e", "e.g", "a.d", "b.c", "lbs", "oz",
}

_END = re.compile(r"[.!?…]+[\"'”’»)\]]*")
_OPENING = "\"'“‘«¿¡([_—-"


def split_sentences(text):
    """The sentences of a text: a stop (. ! ? …), with the quotes and
    brackets that close after it, then a space and a capital letter, an
    opening quote or a digit. A full stop after a known abbreviation or a
    single capital (an initial) does not end a sentence."""
    sentences = []
    start = 0
    for m in _END.finditer(text):
        end = m.end()
        rest = text[end:]
        if not rest.startswith((" ", "\n", "\t")):
            continue
        after = rest.lstrip()
        if not after:
            continue
        first = after[0]
        if not (first.isupper() or first.isdigit() or first in _OPENING):
            continue
        if m.group(0).startswith(".") and len(m.group(0).rstrip("\"'”’»)]")) == 1:
            word = re.search(r"([\w.]+)$", text[start:m.start()])
            token = word.group(1).lower() if word else ""
            if token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def words(text):
    return re.findall(r"\w+", text)


def _whole_word(term):
    return re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)", re.IGNORECASE)


def _same_case(model, word):
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _join(sentences):
    return " ".join(s for s in sentences if s)


def omission(source, translation, sheet, rng, pool):
    sentences = split_sentences(translation)
    if len(sentences) < 2:
        return None
    drop = rng.randrange(len(sentences))
    return _join(sentences[:drop] + sentences[drop + 1:])


def addition(source, translation, sheet, rng, pool):
    sentences = split_sentences(translation)
    if not sentences or not pool:
        return None
    # A sentence of four words or more that the passage does not have.
    for _ in range(100):
        extra = rng.choice(pool)
        if len(words(extra)) >= 4 and extra not in translation:
            break
    else:
        return None
    at = rng.randrange(len(sentences) + 1)
    return _join(sentences[:at] + [extra] + sentences[at:])


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def number(source, translation, sheet, rng, pool):
    found = list(_NUMBER.finditer(translation))
    if not found:
        return None
    m = rng.choice(found)
    text = m.group(0)
    if rng.random() < 0.5:
        # Drop the number and the space before it.
        before = translation[:m.start()].rstrip(" ")
        after = translation[m.end():]
        if before and after and not after.startswith((" ", ",", ".", ";", ":", ")", "!", "?")):
            after = " " + after
        return before + after
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    at = rng.choice(digits)
    choices = [d for d in "0123456789" if d != text[at] and not (at == 0 and d == "0" and len(digits) > 1)]
    changed = text[:at] + rng.choice(choices) + text[at + 1:]
    return translation[:m.start()] + changed + translation[m.end():]


# Spanish numbers in words, each with the values a slip could put instead.
_NUMBER_WORDS = [
    "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez",
    "once", "doce", "veinte", "treinta", "cuarenta", "cincuenta", "cien",
    "mil",
]


def number_word(source, translation, sheet, rng, pool):
    found = [m for w in _NUMBER_WORDS for m in _whole_word(w).finditer(translation)]
    if not found:
        return None
    m = rng.choice(sorted(found, key=lambda x: x.start()))
    word = m.group(0)
    other = rng.choice([w for w in _NUMBER_WORDS if w != word.lower()])
    return translation[:m.start()] + _same_case(word, other) + translation[m.end():]


def _counterpart(source_sentences, translation_sentences, i):
    """The source sentence that translation sentence i stands for: the same
    rank when both have as many sentences, else the one at the same place."""
    if len(source_sentences) == len(translation_sentences):
        return source_sentences[i]
    at = round(i * (len(source_sentences) - 1) / max(len(translation_sentences) - 1, 1))
    return source_sentences[min(at, len(source_sentences) - 1)]


def partial(source, translation, sheet, rng, pool):
    sentences = split_sentences(translation)
    originals = split_sentences(source)
    if len(sentences) < 2 or not originals:
        return None
    choices = [i for i in range(len(sentences))
               if len(words(_counterpart(originals, sentences, i))) >= 4
               and _counterpart(originals, sentences, i) != sentences[i]]
    if not choices:
        return None
    i = rng.choice(choices)
    faulty = list(sentences)
    faulty[i] = _counterpart(originals, sentences, i)
    return _join(faulty)


def untranslated(source, translation, sheet, rng, pool):
    if source.strip() == translation.strip():
        return None
    return source


def misspell(name, rng):
    """A misspelling or variant of a name: a letter doubled, dropped,
    exchanged with its neighbour, or given an accent."""
    accents = {"a": "á", "e": "é", "i": "í", "o": "ó", "u": "ú"}
    variants = []
    inner = range(1, len(name) - 1)
    for i in inner:
        if name[i].isalpha():
            variants.append(name[:i] + name[i] + name[i:])
            variants.append(name[:i] + name[i + 1:])
        if name[i].isalpha() and name[i + 1].isalpha() and name[i] != name[i + 1]:
            variants.append(name[:i] + name[i + 1] + name[i] + name[i + 2:])
    for i, c in enumerate(name):
        if c.lower() in accents:
            variants.append(name[:i] + _same_case(c, accents[c.lower()]) + name[i + 1:])
    variants = sorted({v for v in variants if v != name and len(v) >= 2})
    return rng.choice(variants) if variants else name + "o"


def name(source, translation, sheet, rng, pool, once=False):
    present = [n for n in sheet.get("names", [])
               if len(_whole_word(n["rendering"]).findall(translation)) >= (2 if once else 1)
               and any(_whole_word(s).search(source) for s in n["names"])]
    if not present:
        return None
    chosen = rng.choice(present)["rendering"]
    variant = misspell(chosen, rng)
    if once:
        found = list(_whole_word(chosen).finditer(translation))
        m = rng.choice(found)
        return translation[:m.start()] + _same_case(m.group(0), variant) + translation[m.end():]
    return _whole_word(chosen).sub(lambda m: _same_case(m.group(0), variant), translation)


def name_once(source, translation, sheet, rng, pool):
    return name(source, translation, sheet, rng, pool, once=True)


# Synonyms a translator might write instead of the glossary's rendering.
SYNONYMS = {
    "ballena": ["cetáceo"],
    "barco": ["navío", "nave"],
    "nave": ["navío", "barco"],
    "buque": ["navío", "barco"],
    "capitán": ["comandante", "patrón"],
    "mar": ["océano"],
    "océano": ["mar"],
    "río": ["corriente", "cauce"],
    "casa": ["vivienda", "morada", "hogar"],
    "hombre": ["varón", "individuo", "sujeto"],
    "gente": ["personas", "pueblo"],
    "mujer": ["dama", "señora"],
    "barca": ["bote", "lancha"],
    "bote": ["barca", "lancha"],
    "trabajo": ["labor", "faena", "oficio"],
    "tiempo": ["época", "período"],
    "día": ["jornada"],
    "mundo": ["orbe", "universo"],
    "cabeza": ["testa"],
    "agua": ["líquido"],
    "mano": ["palma"],
    "país": ["nación", "tierra"],
    "ciudad": ["urbe", "villa"],
    "campo": ["campiña"],
    "camino": ["sendero", "senda"],
    "viejo": ["anciano"],
    "amigo": ["compañero", "camarada"],
    "cubierta": ["puente"],
    "arpón": ["lanza"],
    "cosa": ["objeto", "asunto"],
    "vida": ["existencia"],
    "mercado": ["feria", "plaza"],
    "sociedad": ["comunidad"],
    "noche": ["velada"],
    "ojo": ["mirada"],
    "cara": ["rostro", "semblante"],
    "puerta": ["portal", "entrada"],
    "árbol": ["arbusto"],
    "jardín": ["huerto"],
    "calle": ["vía"],
}


def term(source, translation, sheet, rng, pool):
    present = [t for t in sheet.get("terms", [])
               if _whole_word(t["translation"]).search(translation)
               and _whole_word(t["source"]).search(source)]
    if not present:
        return None
    chosen = rng.choice(present)
    rendering = chosen["translation"]
    options = list(SYNONYMS.get(rendering.lower(), [])) + [chosen["source"]]
    other = rng.choice(options)
    return _whole_word(rendering).sub(lambda m: _same_case(m.group(0), other), translation)


def truncation(source, translation, sheet, rng, pool):
    spaces = [m.start() for m in re.finditer(r" ", translation)]
    if len(spaces) < 7:
        return None
    half = len(translation) // 2
    # Mid-sentence: a cut just after a stop would read as a dropped last
    # sentence instead.
    cuts = [i for i in spaces if half <= i <= len(translation) * 0.9
            and not re.search(r"[.!?…:;][\"'”’»)]*$", translation[:i])]
    if not cuts:
        return None
    return translation[:rng.choice(cuts)].rstrip()


def swap(source, translation, sheet, rng, pool):
    sentences = split_sentences(translation)
    if len(sentences) < 2:
        return None
    i, j = sorted(rng.sample(range(len(sentences)), 2))
    if sentences[i] == sentences[j]:
        return None
    faulty = list(sentences)
    faulty[i], faulty[j] = faulty[j], faulty[i]
    return _join(faulty)


_INJECTORS = {
    "omission": omission,
    "addition": addition,
    "number": number,
    "number_word": number_word,
    "partial": partial,
    "untranslated": untranslated,
    "name": name,
    "name_once": name_once,
    "term": term,
    "truncation": truncation,
    "swap": swap,
}


def inject(category, source, translation, sheet, rng, pool=None):
    """The translation with one fault of `category`, or None when the
    category cannot apply to this pair (or would leave it as it was).
    `sheet` is {"terms": [{"source", "translation"}], "names": [{"names",
    "rendering"}]}; `pool` holds target-language sentences to add from."""
    faulty = _INJECTORS[category](source, translation, sheet, rng, pool)
    if faulty is None or faulty.strip() == translation.strip() or not faulty.strip():
        return None
    return faulty


def applicable(category, source, translation, sheet, pool=None):
    """Whether `category` can apply to this pair."""
    return inject(category, source, translation, sheet, random.Random(0), pool) is not None


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    seed = sys.argv[3] if len(sys.argv) > 3 else "1"
    for category in CATEGORIES:
        rng = random.Random(f"{seed}:{category}")
        print(f"{category}: {inject(category, sys.argv[1], sys.argv[2], {}, rng, [])}")
