#!/usr/bin/env python3
"""Writes a synthetic EPUB 3 of about SIZE_MB megabytes: CHAPTERS chapters of
generated prose with inline markup, padded with incompressible binary resources (as
real illustrated books are padded by their images). Used by bench/upload.sh; nothing is downloaded.

usage: make_epub.py OUT.epub SIZE_MB CHAPTERS PARAGRAPHS_PER_CHAPTER
"""
import os
import random
import sys
import zipfile

out, size_mb, chapters, paragraphs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(7)
WORDS = ("the keeper counted ships that passed in night while storm rose over "
         "harbour and lamps burned low across grey water of old town").split()


def sentence():
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def paragraph():
    text = " ".join(sentence() for _ in range(4))
    first, rest = text.split(" ", 1)
    return f"<p><em>{first}</em> {rest}</p>"


manifest, spine, nav = [], [], []
with zipfile.ZipFile(out, "w") as z:
    z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
    z.writestr("META-INF/container.xml",
               '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
               '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
    for c in range(1, chapters + 1):
        body = "".join(paragraph() for _ in range(paragraphs))
        z.writestr(f"OEBPS/ch{c:04}.xhtml",
                   '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">'
                   f'<head><title>Chapter {c}</title></head><body><h1>Chapter {c}</h1>{body}</body></html>',
                   compress_type=zipfile.ZIP_DEFLATED)
        manifest.append(f'<item id="c{c}" href="ch{c:04}.xhtml" media-type="application/xhtml+xml"/>')
        spine.append(f'<itemref idref="c{c}"/>')
        nav.append(f'<li><a href="ch{c:04}.xhtml">Chapter {c}</a></li>')
    z.writestr("OEBPS/nav.xhtml",
               '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
               '<head><title>Contents</title></head><body><nav epub:type="toc"><ol>' + "".join(nav) + '</ol></nav></body></html>')
    images = 0
    while True:
        z.fp.flush()
        if os.path.getsize(out) >= size_mb * 1024 * 1024:
            break
        images += 1
        z.writestr(f"OEBPS/data{images:03}.bin", rng.randbytes(1024 * 1024), compress_type=zipfile.ZIP_STORED)
        manifest.append(f'<item id="i{images}" href="data{images:03}.bin" media-type="application/octet-stream"/>')
    z.writestr("OEBPS/content.opf",
               '<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">'
               '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="uid">urn:uuid:6f1c1c1e-5b0a-4f43-9d59-3b1d8a2f7c10</dc:identifier>'
               '<dc:title>Bench Book</dc:title><dc:language>en</dc:language><meta property="dcterms:modified">2026-11-23T00:00:00Z</meta></metadata>'
               '<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>' + "".join(manifest) +
               '</manifest><spine>' + "".join(spine) + '</spine></package>')
