"""An SMTP server that keeps every mail it receives, for Dragoman's tests of
outgoing mail (testing/src/smtp.rs starts it).

Usage: python smtp_sink.py <port> <folder>

Listens on 127.0.0.1:<port> with aiosmtpd (plain SMTP, every sender and
recipient accepted; AUTH PLAIN and LOGIN are offered without TLS and any
credentials accepted, but not required) and writes each received mail to
<folder> as one JSON file, `<sequence>.json`:

  {"mail_from": <envelope sender>, "rcpt_to": [<envelope recipients>],
   "auth_login": <the user name the client authenticated as, or null>,
   "data": <the raw message, base64>}

The password a client sends is never written anywhere.

A file is written under a temporary name and then renamed, so a reader
never sees half a mail. The sequence goes on after a restart on the same
folder. Runs until killed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def accept_any(server, session, envelope, mechanism, auth_data) -> AuthResult:
    """Accepts every user name and password; keeps the user name only."""
    login = None
    if isinstance(auth_data, LoginPassword):
        login = auth_data.login.decode("utf-8", "replace")
    return AuthResult(success=True, handled=False, auth_data=login)


class Sink:
    """The aiosmtpd handler: one JSON file per accepted message."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        existing = [name for name in os.listdir(folder) if name.endswith(".json")]
        self.sequence = len(existing)

    async def handle_DATA(self, server, session, envelope) -> str:
        self.sequence += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_to": list(envelope.rcpt_tos),
            "auth_login": session.auth_data if session.authenticated else None,
            "data": base64.b64encode(envelope.original_content or b"").decode("ascii"),
        }
        final = os.path.join(self.folder, f"{self.sequence:06}.json")
        partial = final + ".part"
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(partial, final)
        return "250 Message accepted for delivery"


async def serve(port: int, folder: str) -> None:
    handler = Sink(folder)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        # decode_data=False keeps the raw bytes (original_content) as sent;
        # SMTPUTF8 is announced so a client may send UTF-8 addresses.
        lambda: SMTP(
            handler,
            decode_data=False,
            enable_SMTPUTF8=True,
            hostname="sink.test",
            authenticator=accept_any,
            auth_require_tls=False,
        ),
        host="127.0.0.1",
        port=port,
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: smtp_sink.py <port> <folder>")
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))


if __name__ == "__main__":
    main()
