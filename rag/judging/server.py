"""The judging page's server: 127.0.0.1 only, one self-contained page, a small JSON API.

* ``GET /`` the page (:file:`templates/judge.html.j2`: no network resource, every text set as
  text, never as markup);
* ``GET /api/status``, ``GET /api/next``, ``GET /api/item?set=&qid=&chunk=``,
  ``GET /api/previous?set=&qid=&chunk=``;
* ``POST /api/judge`` ``{"set", "qid", "chunk", "grade": 0-3 | null}`` (null: can't tell): answered
  only after the judgment is on disk; ``POST /api/skip``.

Every request must name this server in ``Host`` (``127.0.0.1:PORT`` or ``localhost:PORT``) and,
when it has an ``Origin``, come from this page: a page elsewhere that points a name at 127.0.0.1
(DNS rebinding) or posts to it (cross-site request) is refused with 403. A POST must be JSON.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jinja2

from rag.errors import BenchError
from rag.judging.store import CANT_TELL, GRADE_DEFINITIONS, GRADES
from rag.judging.session import JudgingSession

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024


def render_page(session: JudgingSession) -> str:
    template = resources.files("rag.judging").joinpath("templates/judge.html.j2").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.from_string(template).render(
        judge=session.judge, grades=[{"grade": g, "label": GRADES[g], "definition": GRADE_DEFINITIONS[g]} for g in GRADES],
        cant_tell=CANT_TELL, order=session.order)


class JudgingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, session: JudgingSession, port: int = 0):
        self.session = session
        self.lock = threading.Lock()
        super().__init__((HOST, port), JudgingHandler)
        self.page = render_page(session).encode("utf-8")

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"


class JudgingHandler(BaseHTTPRequestHandler):
    server: JudgingServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the terminal shows progress
        return

    def _allowed(self) -> bool:
        port = self.server.port
        hosts = {f"{HOST}:{port}", f"localhost:{port}"}
        if self.headers.get("Host") not in hosts:
            return False
        origin = self.headers.get("Origin")
        return origin is None or origin in {f"http://{h}" for h in hosts}

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy",
                         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                         "connect-src 'self'; base-uri 'none'; form-action 'none'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode("utf-8"), "application/json")

    def _refuse(self) -> None:
        self._json(HTTPStatus.FORBIDDEN, {"error": "refused: this server answers only its own page on 127.0.0.1"})

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._allowed():
            return self._refuse()
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        session = self.server.session
        with self.server.lock:
            try:
                if parts.path == "/":
                    return self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
                if parts.path == "/api/status":
                    return self._json(HTTPStatus.OK, session.status())
                if parts.path == "/api/next":
                    item = session.next_item()
                    return self._json(HTTPStatus.OK, {"item": session.item(*item) if item else None})
                if parts.path in ("/api/item", "/api/previous"):
                    key = (query.get("set", ""), query.get("qid", ""), query.get("chunk", ""))
                    if parts.path == "/api/previous":
                        found = session.previous(key if all(key) else None)
                        return self._json(HTTPStatus.OK, {"item": session.item(*found) if found else None})
                    return self._json(HTTPStatus.OK, {"item": session.item(*key)})
            except (KeyError, ValueError):
                return self._json(HTTPStatus.NOT_FOUND, {"error": "no such item in this run's pool"})
        self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._allowed():
            return self._refuse()
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            return self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "expected application/json"})
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": f"over {MAX_BODY} bytes"})
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            key = (str(body["set"]), str(body["qid"]), str(body["chunk"]))
        except (ValueError, KeyError, TypeError):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "expected {set, qid, chunk, grade}"})
        session = self.server.session
        path = urlsplit(self.path).path
        with self.server.lock:
            try:
                if path == "/api/judge":
                    grade = body.get("grade")
                    if grade is not None and (isinstance(grade, bool) or not isinstance(grade, int)):
                        return self._json(HTTPStatus.BAD_REQUEST, {"error": "grade: expected 0-3 or null"})
                    session.record(*key, grade)
                    return self._json(HTTPStatus.OK, {"stored": True, "status": session.status()})
                if path == "/api/skip":
                    session.skip(*key)
                    return self._json(HTTPStatus.OK, {"skipped": True})
            except BenchError as exc:
                return self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
