"""A real SMTP server for the reporter tests, built on aiosmtpd.

Usage: smtp_sink.py PORT OUTDIR [CERT KEY [implicit]]

Every delivered message is written to OUTDIR/<n>.json with the envelope
(mail_from, rcpt_tos), the login used (auth_user, auth_password, or null)
and the raw message text. With CERT and KEY the server requires STARTTLS,
or, with "implicit" after them, speaks TLS from the first byte (SMTPS).
Logins are accepted for any user name with the password "s3cret".
Prints "ready" on stdout once it accepts connections, then runs until it
is killed.
"""

import json
import os
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, outdir):
        self.outdir = outdir
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        login = session.auth_data if isinstance(session.auth_data, LoginPassword) else None
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "auth_user": login.login.decode() if login else None,
            "auth_password": login.password.decode() if login else None,
            # Set after STARTTLS and for a TLS-from-the-start listener alike.
            "tls": server.transport.get_extra_info("ssl_object") is not None,
            "data": envelope.content.decode("utf-8", "replace"),
        }
        tmp = os.path.join(self.outdir, ".%d.tmp" % n)
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.outdir, "%d.json" % n))
        return "250 OK"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.password == b"s3cret"
    return AuthResult(success=ok, handled=False, auth_data=auth_data)


def main():
    port = int(sys.argv[1])
    outdir = sys.argv[2]
    kwargs = {
        "authenticator": authenticator,
        "auth_require_tls": False,
    }
    implicit = None
    if len(sys.argv) > 4:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[3], sys.argv[4])
        if len(sys.argv) > 5 and sys.argv[5] == "implicit":
            implicit = context
        else:
            kwargs["tls_context"] = context
            kwargs["require_starttls"] = True
    controller = Controller(
        Sink(outdir), hostname="127.0.0.1", port=port, ssl_context=implicit, **kwargs
    )
    controller.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
