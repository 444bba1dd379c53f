"""Schemathesis hooks of the OpenAPI end-to-end test (tests/tests/e2e/openapi.rs).

Loaded through SCHEMATHESIS_HOOKS. A raw EPUB body (`application/epub+zip`)
is sent as the bytes generated for it, like `application/octet-stream`:
without this, schemathesis has no serializer for that media type and would
send such cases without a body.
"""

import schemathesis

schemathesis.serializer.alias("application/epub+zip", "application/octet-stream")
