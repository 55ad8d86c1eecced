"""The judging page's server: 127.0.0.1 only, one self-contained page, a small JSON API.

* ``GET /`` the page (:file:`templates/judge.html.j2`: no network resource, every text set as
  text, never as markup);
* ``GET /api/status``, ``GET /api/next``, ``GET /api/item?set=&qid=&chunk=``,
  ``GET /api/previous?set=&qid=&chunk=``;
* ``POST /api/judge`` ``{"set", "qid", "chunk", "grade": 0-3 | null}`` (null: can't tell): answered
  only after the judgment is on disk; ``POST /api/skip``.

Every request must name this server in ``Host`` (``127.0.0.1:PORT`` or ``localhost:PORT``) and,
when it has an ``Origin``, come from this page: a page elsewhere that points a name at 127.0.0.1
(DNS rebinding) or posts to it (cross-site request) is refused with 403. A POST must be JSON
(415), declare its length (411 without ``Content-Length``, 400 for one that is not a number), stay
under :data:`MAX_BODY` bytes (413) and :data:`rag.io_utils.MAX_JSON_DEPTH` levels of nesting (400),
and name a passage of that question's pool with an explicit grade (400; :mod:`rag.judging.lines`).

Every refusal closes the connection (``Connection: close``), after reading what it can of the
declared body: a refused request's body is never read as the next request (a ``text/plain``
cross-site POST, which a browser sends without asking first, could otherwise carry a second request
past every check). A request that fails is one line on the terminal at most, never a traceback; a
client hanging up is none; a grade that cannot be written tells the page why ("not saved: the run
directory is read-only").
"""

from __future__ import annotations

import errno
import json
import re
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jinja2

from rag.errors import BenchError
from rag.io_utils import parse_json
from rag.judging.lines import LineRules
from rag.judging.session import JudgingSession
from rag.judging.store import CANT_TELL, GRADE_DEFINITIONS, GRADES

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
DRAIN_TIMEOUT_S = 2.0  # how long a refusal waits for the rest of a declared body before closing
_LENGTH = re.compile(r"[0-9]{1,12}")
WRITE_FAILURES = {errno.EROFS: "the run directory is read-only", errno.EACCES: "no permission to write the grade file",
                  errno.EPERM: "no permission to write the grade file", errno.ENOSPC: "the disk is full",
                  errno.EDQUOT: "the disk quota is used up"}


class Refused(Exception):
    """A request this server does not answer: the status and the reason the page is told."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


def write_failure(exc: OSError) -> str:
    """Why a grade was not saved, in the page's words (``not saved: ...``)."""
    reason = WRITE_FAILURES.get(exc.errno or 0, exc.strerror or str(exc))
    return f"{reason} ({exc.filename}: {exc.strerror})" if exc.filename else reason


def log_line(text: str) -> None:
    """One line on the terminal (the server's only output besides its address)."""
    print(f"judging server: {text}", file=sys.stderr, flush=True)


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
        self.rules = LineRules.of_pool(session.pool)
        self.lock = threading.Lock()
        super().__init__((HOST, port), JudgingHandler)
        self.page = render_page(session).encode("utf-8")

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed outside the handler's own answers: nothing for a client that hung up,
        else one line (socketserver prints a traceback)."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            log_line(f"a request failed: {type(exc).__name__}: {exc}")


class JudgingHandler(BaseHTTPRequestHandler):
    server: JudgingServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # kept-alive answers without the ~43 ms delayed-ACK wait (rag.testing.stand_in)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the terminal shows progress
        return

    def parse_request(self) -> bool:
        self.body_read = False
        return super().parse_request()

    def _allowed(self) -> bool:
        port = self.server.port
        hosts = {f"{HOST}:{port}", f"localhost:{port}"}
        if self.headers.get("Host") not in hosts:
            return False
        origin = self.headers.get("Origin")
        return origin is None or origin in {f"http://{h}" for h in hosts}

    def _declared_length(self) -> int:
        """The body's length as declared: one ``Content-Length`` of digits; no chunked bodies."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise Refused(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length, not chunked")
        values = {value.strip() for value in self.headers.get_all("Content-Length") or []}
        if not values:
            raise Refused(HTTPStatus.LENGTH_REQUIRED, "Content-Length required")
        if len(values) > 1 or not _LENGTH.fullmatch(next(iter(values))):
            raise Refused(HTTPStatus.BAD_REQUEST, "Content-Length: expected one non-negative number")
        return int(next(iter(values)))

    def _body(self) -> Any:
        """The request's JSON body, read whole (a refusal otherwise)."""
        length = self._declared_length()
        if length > MAX_BODY:
            raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"over {MAX_BODY} bytes")
        data = self.rfile.read(length)
        self.body_read = True
        if len(data) < length:
            raise Refused(HTTPStatus.BAD_REQUEST, "the body ended before its Content-Length")
        try:
            return parse_json(data)
        except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
            raise Refused(HTTPStatus.BAD_REQUEST, f"not JSON: {exc}") from None

    def _drain(self) -> None:
        """Read and drop what arrives of a declared body before the connection closes, so that the
        client reads the refusal instead of a reset; a body over :data:`MAX_BODY` is not waited for."""
        if self.body_read or self.headers.get("Transfer-Encoding") is not None:
            return
        length = self.headers.get("Content-Length", "0").strip()
        if not _LENGTH.fullmatch(length) or not 0 < int(length) <= MAX_BODY:
            return
        try:
            self.connection.settimeout(DRAIN_TIMEOUT_S)
            self.rfile.read(int(length))
        except OSError:
            pass
        self.body_read = True

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy",
                         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                         "connect-src 'self'; base-uri 'none'; form-action 'none'")
        if status >= 400 or not self.body_read and self._declares_body():
            self._drain()
            self.send_header("Connection", "close")  # nothing after a refusal is read as a request
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _declares_body(self) -> bool:
        return (self.headers.get("Transfer-Encoding") is not None
                or self.headers.get("Content-Length", "0").strip() not in ("", "0"))

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode("utf-8"), "application/json")

    def _answer(self, route) -> None:
        """``route()``'s answer; a refusal, a grade that could not be written or a bug become a JSON
        error for the page (one line on the terminal for a bug), never a traceback."""
        try:
            if not self._allowed():
                raise Refused(HTTPStatus.FORBIDDEN, "refused: this server answers only its own page on 127.0.0.1")
            status, value = route()
        except Refused as exc:
            status, value = exc.status, {"error": str(exc)}
        except BenchError as exc:
            status, value = HTTPStatus.BAD_REQUEST, {"error": str(exc)}
        except OSError as exc:
            if isinstance(exc, ConnectionError):
                raise
            log_line(f"a grade was not saved: {write_failure(exc)}")
            status, value = HTTPStatus.SERVICE_UNAVAILABLE, {"error": write_failure(exc)}
        except Exception as exc:  # noqa: BLE001 - a bug: the page is told, the terminal gets one line
            log_line(f"{self.command} {urlsplit(self.path).path} failed: {type(exc).__name__}: {exc}")
            status, value = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"internal error: {type(exc).__name__}"}
        if isinstance(value, bytes):
            return self._send(status, value, "text/html; charset=utf-8")
        self._json(status, value)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._answer(self._post)

    def _get(self) -> tuple[int, Any]:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        session = self.server.session
        if parts.path == "/":
            return HTTPStatus.OK, self.server.page
        with self.server.lock:
            try:
                if parts.path == "/api/status":
                    return HTTPStatus.OK, session.status()
                if parts.path == "/api/next":
                    item = session.next_item()
                    return HTTPStatus.OK, {"item": session.item(*item) if item else None}
                if parts.path in ("/api/item", "/api/previous"):
                    key = (query.get("set", ""), query.get("qid", ""), query.get("chunk", ""))
                    if parts.path == "/api/previous":
                        found = session.previous(key if all(key) else None)
                        return HTTPStatus.OK, {"item": session.item(*found) if found else None}
                    return HTTPStatus.OK, {"item": session.item(*key)}
            except (KeyError, ValueError):
                return HTTPStatus.NOT_FOUND, {"error": "no such item in this run's pool"}
        return HTTPStatus.NOT_FOUND, {"error": "not found"}

    def _post(self) -> tuple[int, Any]:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            raise Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "expected application/json")
        path = urlsplit(self.path).path
        if path not in ("/api/judge", "/api/skip"):
            return HTTPStatus.NOT_FOUND, {"error": "not found"}
        key, grade = self._judgment(self._body(), grade_required=path == "/api/judge")
        session = self.server.session
        with self.server.lock:
            if path == "/api/skip":
                session.skip(*key)
                return HTTPStatus.OK, {"skipped": True}
            session.record(*key, grade)
            return HTTPStatus.OK, {"stored": True, "status": session.status()}

    def _judgment(self, body: Any, grade_required: bool) -> tuple[tuple[str, str, str], int | None]:
        """The (set, question id, chunk) and grade a POST names, checked by the grade file's rules
        (:mod:`rag.judging.lines`): strings, a passage of that question's pool, and with
        ``grade_required`` a ``grade`` key of 0-3 or null (can't tell)."""
        expected = "expected {set, qid, chunk, grade: 0-3 or null}"
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("set", "qid", "chunk")):
            raise Refused(HTTPStatus.BAD_REQUEST, expected)
        key = (body["set"], body["qid"], body["chunk"])
        grade = body.get("grade")
        if grade_required and ("grade" not in body or grade is not None and (
                isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES)):
            raise Refused(HTTPStatus.BAD_REQUEST, f"grade: {expected}")
        if problem := self.server.rules.item_problem(*key):
            raise Refused(HTTPStatus.BAD_REQUEST, problem)
        return key, grade
