"""Red team of the judging paths (issue 50): the page's server under hostile requests, the grade file
under careless editors and writers, grades in and out, the options of ``judge``, rescore's inputs and
``run --judgments``. Each test failed on the code before the issue's change."""

from __future__ import annotations

import ast
import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.cli import main
from rag.data.records import ProblemLog, iter_json_objects, read_questions_text, text_question_id
from rag.errors import DataError
from rag.judging.apply import apply_judgments
from rag.judging.combine import combine
from rag.judging.exchange import export_grades, import_grades
from rag.judging.pool import PoolChunk, PoolQuestion, read_pool, write_pool
from rag.judging.server import MAX_BODY, JudgingServer
from rag.judging.session import JudgingSession
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, read_judgments
from rag.progress import PROGRESS_ENV
from rag.types import Question

NESTED = "[" * 100_000 + "]" * 100_000


def line(**fields) -> str:
    record = {"question_set": "mine", "question_id": "q1", "chunk_id": "c1", "url": "c1.html", "grade": 1,
              "judge": "ana", "time": "2026-11-28T12:00:00+00:00", **fields}
    return json.dumps(record) + "\n"


def tiny_run(run_dir: Path, texts: tuple[str, str] = ("Why?", "How?"), sets: tuple[str, str] = ("mine", "mine")) -> Path:
    """A pool of two questions: q1 pools c1 and c2, q2 pools c3 only."""
    run_dir.mkdir(parents=True, exist_ok=True)
    questions = [PoolQuestion(sets[0], "q1", texts[0], {"a": ["c1", "c2"], "b": ["c2"]}),
                 PoolQuestion(sets[1], "q2", texts[1], {"a": ["c3"], "b": ["c3"]})]
    chunks = {c: PoolChunk(c, f"{c}.html", "", f"text of {c}") for c in ("c1", "c2", "c3")}
    write_pool(run_dir / "pool.json", 10, "ndcg@10", 0, ["a", "b"], questions, chunks)
    pool = json.loads((run_dir / "pool.json").read_text())  # the corpus' pages: other.html is in no pool
    (run_dir / "pool.json").write_text(json.dumps({**pool, "pages": ["c1.html", "other.html"]}))
    return run_dir


@contextmanager
def serving(run_dir: Path) -> Iterator[JudgingServer]:
    server = JudgingServer(JudgingSession(run_dir, "ana"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def raw_exchange(server: JudgingServer, data: bytes, hang_up: bool = False, timeout: float = 3.0) -> bytes:
    """Everything the server sends back on one connection until it closes it (``<still open>`` if it
    keeps it open past ``timeout``)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        if hang_up:
            sock.shutdown(socket.SHUT_WR)
        received = []
        try:
            while chunk := sock.recv(65536):
                received.append(chunk)
        except TimeoutError:
            received.append(b"<still open>")
        except ConnectionResetError:
            received.append(b"<reset>")
    return b"".join(received)


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), response[:200]
    return int(response.split(b" ", 2)[1])


def request(port: int, headers: dict[str, str], body: bytes = b"") -> bytes:
    head = "".join(f"{name}: {value}\r\n" for name, value in {"Host": f"127.0.0.1:{port}", **headers}.items())
    return f"POST /api/judge HTTP/1.1\r\n{head}\r\n".encode() + body


def stored(run_dir: Path) -> list[Judgment]:
    return read_judgments(run_dir / JUDGMENTS_FILE).judgments


# 1. The server closes the door behind a refusal -----------------------------------------------------

@pytest.mark.parametrize("refusal, status", [("cross-site", 403), ("text/plain", 415), ("too large", 413)])
def test_a_request_smuggled_in_a_refused_body_is_never_read(tmp_path: Path, refusal: str, status: int) -> None:
    run_dir = tiny_run(tmp_path / "run")
    with serving(run_dir) as server:
        grade = json.dumps({"set": "mine", "qid": "q1", "chunk": "c1", "grade": 3}).encode()
        smuggled = request(server.port, {"Content-Type": "application/json", "Content-Length": str(len(grade))}, grade)
        headers = {
            "cross-site": {"Origin": "http://attacker.example", "Content-Type": "text/plain"},
            "text/plain": {"Content-Type": "text/plain"},
            "too large": {"Content-Type": "application/json"},
        }[refusal]
        length = MAX_BODY + 1 if refusal == "too large" else len(smuggled)
        response = raw_exchange(server, request(server.port, {**headers, "Content-Length": str(length)}, smuggled))
    assert status_of(response) == status
    assert response.count(b"HTTP/1.1 ") == 1 and b"<still open>" not in response  # one answer, then closed
    assert b"Connection: close" in response
    assert stored(run_dir) == []


def test_bad_lengths_nested_bodies_and_hang_ups_get_an_answer_and_no_traceback(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    json_type = {"Content-Type": "application/json"}
    with serving(run_dir) as server:
        port = server.port
        assert status_of(raw_exchange(server, request(port, json_type))) == 411  # no Content-Length
        for length in ("abc", "-5", "1e3", "5, 6"):
            response = raw_exchange(server, request(port, {**json_type, "Content-Length": length}, b"{}"))
            assert status_of(response) == 400 and b"<still open>" not in response, length
        nested = ("[" * 5000 + "]" * 5000).encode()
        response = raw_exchange(server, request(port, {**json_type, "Content-Length": str(len(nested))}, nested))
        assert status_of(response) == 400 and b"nested deeper" in response
        cut = raw_exchange(server, request(port, {**json_type, "Content-Length": "100"}, b'{"set": '), hang_up=True)
        assert status_of(cut) == 400
        assert httpx.get(server.url + "api/status").status_code == 200  # still serving
    assert "Traceback" not in capsys.readouterr().err
    assert stored(run_dir) == []


def test_a_grade_that_cannot_be_written_tells_the_page_why(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    with serving(run_dir) as server:
        def read_only(judgments):
            raise OSError(errno.EROFS, "Read-only file system", str(run_dir / JUDGMENTS_FILE))

        server.session.log.append = read_only
        response = httpx.post(server.url + "api/judge", json={"set": "mine", "qid": "q1", "chunk": "c1", "grade": 2})
        assert response.status_code == 503
        assert response.json()["error"].startswith("the run directory is read-only")
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "read-only" in err


@pytest.mark.parametrize("body, problem", [
    ({"set": "mine", "qid": "q1", "chunk": "c1"}, "grade"),  # no grade: never an implied can't tell
    ({"set": "mine", "qid": "q1", "chunk": "c3", "grade": 3}, "not in this run's pool of question mine/q1"),
    ({"set": "mine", "qid": "q1", "chunk": 7, "grade": 3}, "expected"),
])
def test_a_post_the_grade_file_would_refuse_is_400_and_stores_nothing(tmp_path: Path, body: dict, problem: str) -> None:
    run_dir = tiny_run(tmp_path / "run")
    with serving(run_dir) as server:
        httpx.post(server.url + "api/judge", json={"set": "mine", "qid": "q1", "chunk": "c1", "grade": 3})
        response = httpx.post(server.url + "api/judge", json=body)
        assert response.status_code == 400 and problem in response.json()["error"]
        assert httpx.get(server.url + "api/item", params={"set": "mine", "qid": "q1", "chunk": "c3"}).status_code == 404
    assert [j.grade for j in stored(run_dir)] == [3]  # the earlier grade stands


# 2. One validator for a grade line ------------------------------------------------------------------

@pytest.mark.parametrize("fields, problem", [
    ({"grade": None, "cant_tell": True, "drop": "grade"}, "grade: Field required"),
    ({"judge": "ana\nbo"}, "control character"),
    ({"judge": "ana,bo"}, "comma"),
    ({"chunk_id": "c3", "url": "c3.html"}, "'c3' is not in this run's pool of question mine/q1"),
    ({"chunk_id": "c1", "url": "c3.html"}, "is on page 'c1.html', not 'c3.html'"),
    ({"chunk_id": None, "url": "nowhere.md"}, "page 'nowhere.md' is not a page of this run's corpus"),
])
def test_a_line_the_page_would_refuse_is_refused_by_the_file_reader_with_its_line(tmp_path: Path, capsys, fields,
                                                                                    problem) -> None:
    run_dir = tiny_run(tmp_path / "run")
    bad = json.loads(line(**{k: v for k, v in fields.items() if k != "drop"}))
    bad.pop(fields.get("drop", "-"), None)
    path = run_dir / JUDGMENTS_FILE
    path.write_text(line(grade=2) + json.dumps(bad) + "\n")
    before = path.read_bytes()
    for argv in (["--export", "qrels", "--out", str(tmp_path / "x.qrels")], ["--import", str(tmp_path / "none.qrels")]):
        (tmp_path / "none.qrels").write_text("mine/q2 0 c3 1\n")
        assert main(["judge", str(run_dir), *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{path}:2" in err[0] and problem in err[0], err
    assert path.read_bytes() == before and not (tmp_path / "x.qrels").exists()


def test_a_page_level_line_of_a_corpus_page_outside_the_pool_travels_out_and_in(tmp_path: Path) -> None:
    run_dir = tiny_run(tmp_path / "run")
    (run_dir / JUDGMENTS_FILE).write_text(line(chunk_id=None, url="other.html", grade=2))
    assert export_grades(run_dir, "qrels", tmp_path / "out.qrels") == 1
    fresh = tiny_run(tmp_path / "fresh")
    assert import_grades(fresh, tmp_path / "out.qrels")[0] == 1
    assert [(j.chunk_id, j.url, j.grade) for j in stored(fresh)] == [(None, "other.html", 2)]


def test_nested_json_in_the_grade_file_or_a_question_file_is_one_line(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    (run_dir / JUDGMENTS_FILE).write_text(line() + NESTED + "\n")
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{JUDGMENTS_FILE}:2" in err[0] and "nested deeper" in err[0]
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "question": "x?"}) + "\n" + NESTED + "\n")
    with pytest.raises(DataError, match=r"q\.jsonl:2: invalid JSON: nested deeper"):
        list(iter_json_objects(questions, ProblemLog()))
    questions.write_text(json.dumps({"id": "a", "question": "x?"}) + "\n" + '{"id": ' + "1" * 5000 + "}\n")
    with pytest.raises(DataError, match=r"q\.jsonl:2: invalid JSON: Exceeds the limit \(4300 digits\)"):
        list(iter_json_objects(questions, ProblemLog()))


def test_a_pool_without_methods_is_one_line(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    pool = json.loads((run_dir / "pool.json").read_text())
    (run_dir / "pool.json").write_text(json.dumps({**pool, "methods": []}))
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "methods: expected a non-empty list" in err[0]


# 3. The grade file is never lost --------------------------------------------------------------------

@pytest.mark.parametrize("own", [JUDGMENTS_FILE, "pool.json"])
def test_export_onto_the_runs_own_files_is_refused_and_they_stay(tmp_path: Path, capsys, own: str) -> None:
    run_dir = tiny_run(tmp_path / "run")
    (run_dir / JUDGMENTS_FILE).write_text(line(grade=3) + line(judge="bo", cant_tell=True, grade=None))
    before = (run_dir / own).read_bytes()
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(run_dir / own)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file of the run directory" in err[0]
    assert (run_dir / own).read_bytes() == before


def test_export_through_a_link_or_into_a_pipe_or_device_never_replaces_it(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    (run_dir / JUDGMENTS_FILE).write_text(line(grade=3))
    target, link = tmp_path / "real.qrels", tmp_path / "link.qrels"
    target.write_text("old\n")
    link.symlink_to(target)
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(link)]) == 0
    assert link.is_symlink() and target.read_text() == "mine/q1 0 c1 3\n"
    fifo = tmp_path / "grades.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(fifo)]) == 0
    reader.join(timeout=10)
    assert got == [b"mine/q1 0 c1 3\n"] and stat.S_ISFIFO(fifo.stat().st_mode)
    full = tmp_path / "full"
    try:
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's numbers
    except PermissionError:
        pytest.skip("cannot make a device node here")
    capsys.readouterr()
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(full)]) == 74
    assert stat.S_ISCHR(full.stat().st_mode) and len(capsys.readouterr().err.strip().splitlines()) == 1
    if stat.S_ISCHR(os.stat("/dev/full").st_mode):  # the real one, now that a copy held
        assert main(["judge", str(run_dir), "--export", "qrels", "--out", "/dev/full"]) == 74
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_export_to_standard_output_writes_the_grades_there_and_the_summary_apart(tmp_path: Path) -> None:
    """``--out /dev/fd/1`` (as ``/dev/stdout``) into a pipe and into a file a shell redirected to: the
    grades alone on standard output, never a new file in place of the descriptor."""
    run_dir = tiny_run(tmp_path / "run")
    (run_dir / JUDGMENTS_FILE).write_text(line(grade=3))
    argv = [sys.executable, "-m", "rag.cli", "judge", str(run_dir), "--export", "qrels", "--out", "/dev/fd/1"]
    piped = subprocess.run(argv, capture_output=True, timeout=120)
    assert (piped.returncode, piped.stdout) == (0, b"mine/q1 0 c1 3\n") and b"wrote 1 grades" in piped.stderr
    with open(tmp_path / "redirected.txt", "wb") as handle:
        assert subprocess.run(argv, stdout=handle, stderr=subprocess.DEVNULL, timeout=120).returncode == 0
    assert (tmp_path / "redirected.txt").read_bytes() == b"mine/q1 0 c1 3\n"


def first_two(run_dir: Path) -> tuple[str, str, list[str]]:
    question = next(iter(read_pool(run_dir).questions.values()))
    return question.question_set, question.qid, question.pooled()[:2]


@pytest.mark.slow
def test_a_valid_last_line_without_a_newline_is_kept_and_counted_everywhere(run_copy: Path, tmp_path, capsys) -> None:
    set_name, qid, (c1, c2) = first_two(run_copy)
    pool = read_pool(run_copy)
    path = run_copy / JUDGMENTS_FILE
    lines = [line(question_set=set_name, question_id=qid, chunk_id=c, url=pool.chunks[c].url, grade=2) for c in (c1, c2)]
    path.write_text(lines[0] + lines[1].rstrip("\n"))  # an editor that strips the final newline
    assert main(["rescore", str(run_copy), "--output-dir", str(tmp_path / "rescored"), "--quiet"]) == 0
    assert "2 judgments" in capsys.readouterr().out
    session = JudgingSession(run_copy, "ana")
    assert {s["name"]: s["judged"] for s in session.status()["sets"]}[set_name] == 2
    assert path.read_text() == lines[0] + lines[1] and not (run_copy / (JUDGMENTS_FILE + ".partial")).exists()
    assert export_grades(run_copy, "qrels", tmp_path / "x.qrels") == 2


def test_a_last_line_cut_by_a_kill_is_moved_aside_with_one_warning(tmp_path: Path, caplog) -> None:
    run_dir = tiny_run(tmp_path / "run")
    path = run_dir / JUDGMENTS_FILE
    path.write_text(line(grade=2) + line(chunk_id="c2")[:30])
    JudgmentLog(path)
    assert path.read_text() == line(grade=2)
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: its last line was cut (30 bytes, not JSON); moved to {path}.partial"]


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_cr_and_crlf_grade_files_read_whole(tmp_path: Path, capsys, ending: str) -> None:
    run_dir = tiny_run(tmp_path / "run")
    path = run_dir / JUDGMENTS_FILE
    path.write_bytes("".join(line(chunk_id=c, url=f"{c}.html").rstrip("\n") + ending for c in ("c1", "c2")).encode())
    assert main(["judge", str(run_dir), "--export", "qrels", "--out", str(tmp_path / "x.qrels")]) == 0
    assert "wrote 2 grades" in capsys.readouterr().out
    JudgingSession(run_dir, "ana").record("mine", "q2", "c3", 1)  # appending keeps every line
    assert [j.chunk_id for j in stored(run_dir)] == ["c1", "c2", "c3"]


# 4. Import and export round-trip exactly ------------------------------------------------------------

def test_a_backslash_in_a_qrels_id_is_one_line(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    qrels = tmp_path / "hand.qrels"
    qrels.write_text("mine/q1 0 c1 2\nmine/q\\z 0 c1 2\n")
    assert main(["judge", str(run_dir), "--import", str(qrels)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{qrels}:2" in err[0] and "backslash" in err[0]
    assert not (run_dir / JUDGMENTS_FILE).exists()


def test_quepid_refuses_a_text_two_questions_share(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run", texts=("Same?", "Same?"), sets=("a", "b"))
    log = JudgmentLog(run_dir / JUDGMENTS_FILE)
    log.append([Judgment.model_validate(json.loads(line(question_set=s, question_id=q, chunk_id=c, url=f"{c}.html")))
                for s, q, c in (("a", "q1", "c1"), ("b", "q2", "c3"))])
    assert main(["judge", str(run_dir), "--export", "quepid", "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "same text" in err[0] and not (tmp_path / "x.csv").exists()
    csv_file = tmp_path / "in.csv"
    csv_file.write_text("query,docid,rating\nSame?,c1,2\n")
    assert main(["judge", str(run_dir), "--import", str(csv_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{csv_file}:2" in err[0] and "a/q1, b/q2" in err[0]


def test_the_same_file_imported_twice_is_refused(tmp_path: Path, capsys) -> None:
    run_dir = tiny_run(tmp_path / "run")
    qrels = tmp_path / "grades.qrels"
    qrels.write_text("mine/q1 0 c1 2\nmine/q2 0 c3 1\n")
    assert main(["judge", str(run_dir), "--import", str(qrels)]) == 0
    before = (run_dir / JUDGMENTS_FILE).read_bytes()
    shutil.copy(qrels, tmp_path / "renamed.qrels")
    assert main(["judge", str(run_dir), "--import", str(tmp_path / "renamed.qrels"), "--judge", "grades"]) == 2
    assert "already imported" in capsys.readouterr().err
    assert (run_dir / JUDGMENTS_FILE).read_bytes() == before and read_judgments(run_dir / JUDGMENTS_FILE).rejudged == 0


def test_formula_looking_quepid_cells_are_guarded_and_read_back(tmp_path: Path) -> None:
    run_dir = tiny_run(tmp_path / "run", texts=("=HYPERLINK(\"x\")", "'-quoted"))
    JudgmentLog(run_dir / JUDGMENTS_FILE).append([Judgment.model_validate(json.loads(line(grade=3))),
                                                  Judgment.model_validate(json.loads(line(question_id="q2", chunk_id="c3",
                                                                                          url="c3.html")))])
    export_grades(run_dir, "quepid", tmp_path / "x.csv")
    cells = (tmp_path / "x.csv").read_text().splitlines()[1:]
    assert cells == ['"\'=HYPERLINK(""x"")",c1,3', "''-quoted,c3,1"]
    fresh = tiny_run(tmp_path / "fresh", texts=("=HYPERLINK(\"x\")", "'-quoted"))
    import_grades(fresh, tmp_path / "x.csv")
    assert [(j.question_id, j.chunk_id, j.grade) for j in stored(fresh)] == [("q1", "c1", 3), ("q2", "c3", 1)]


IDS = st.text(alphabet="ab \\é/:\t😀", min_size=1, max_size=6).filter(lambda s: not s.startswith("url:"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(questions=st.lists(st.tuples(st.sampled_from(["s", "t"]), IDS, st.text(alphabet="=+-@'a ,\"", min_size=1,
                                                                                 max_size=4)),
                          min_size=1, max_size=4, unique_by=lambda q: q[:2]),
       chunks=st.lists(IDS, min_size=1, max_size=4, unique=True),
       grades=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.booleans()), max_size=8))
def test_export_then_import_reproduces_every_counted_grade(questions, chunks, grades) -> None:
    """Property: qrels and Quepid out and back in give the same combined grades, or (Quepid, two
    questions with one text) a refusal; never other grades."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pool_questions = [PoolQuestion(s, q, text, {"m": list(chunks)}) for s, q, text in questions]
        pool_chunks = {c: PoolChunk(c, f"page {i}", "", "x") for i, c in enumerate(chunks)}
        for name in ("run", "fresh-qrels", "fresh-quepid"):
            (root / name).mkdir()
            write_pool(root / name / "pool.json", 10, "ndcg@10", 0, ["m"], pool_questions, pool_chunks)
        lines = []
        for qi, ci, grade, page in grades:
            s, q, _ = questions[qi % len(questions)]
            chunk = chunks[ci % len(chunks)]
            lines.append(Judgment(question_set=s, question_id=q, chunk_id=None if page else chunk,
                                  url=pool_chunks[chunk].url, grade=grade, judge="ana", time="t"))
        JudgmentLog(root / "run" / JUDGMENTS_FILE).append(lines)
        expected = combine(read_judgments(root / "run" / JUDGMENTS_FILE).judgments)
        every_text = [text for _, _, text in questions]
        ambiguous = any(every_text.count(text) > 1 for s, q, text in questions if (s, q) in expected)
        for kind in ("qrels", "quepid"):
            out = root / f"grades.{kind}"
            if kind == "quepid" and ambiguous:
                with pytest.raises(DataError, match="same text"):
                    export_grades(root / "run", kind, out)
                continue
            export_grades(root / "run", kind, out)
            import_grades(root / f"fresh-{kind}", out, "ana")
            assert combine(read_judgments(root / f"fresh-{kind}" / JUDGMENTS_FILE).judgments) == expected


# 5. Options that cannot be combined are refused -----------------------------------------------------

@pytest.mark.parametrize("options, key", [
    (["--llm", "--limit", "0"], "--limit"), (["--llm", "--limit", "-5"], "--limit"), (["--port", "99999"], "--port"),
    (["--export", "qrels", "--import", "x.qrels"], "--import"),
    (["--import", "x.qrels", "--llm"], "--llm"), (["--export", "qrels", "--out", "x", "--limit", "5"], "--limit"),
    (["--export", "qrels", "--out", "x", "--port", "8000"], "--port"), (["--llm", "--judge", "ana"], "--judge"),
    (["--judge", "ana,bo", "--export", "qrels", "--out", "x"], "--judge"),
])
def test_options_that_cannot_hold_are_one_line_and_nothing_is_sent(tmp_path: Path, monkeypatch, capsys, options,
                                                                   key) -> None:
    run_dir = tiny_run(tmp_path / "run")
    (tmp_path / "x.qrels").write_text("mine/q1 0 c1 2\n")
    monkeypatch.chdir(tmp_path)

    def no_llm(*args, **kwargs):
        raise AssertionError("an LLM was asked")

    monkeypatch.setattr("rag.judging.llm.judge_with_llm", no_llm)
    assert main(["judge", str(run_dir), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "x").exists() and not (run_dir / JUDGMENTS_FILE).exists()


def test_quiet_turns_the_llm_judges_bars_off(tmp_path: Path, monkeypatch) -> None:
    run_dir = tiny_run(tmp_path / "run")
    seen = []

    def fake(*args, **kwargs):
        seen.append(os.environ.get(PROGRESS_ENV))
        yield "graded"

    monkeypatch.setattr("rag.judging.llm.judge_with_llm", fake)
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert main(["judge", str(run_dir), "--llm", "--quiet"]) == 0
    assert seen == ["off"] and PROGRESS_ENV not in os.environ  # restored after the command


# 6. Rescore checks its inputs first -----------------------------------------------------------------

@pytest.mark.slow
def test_rescore_with_a_corrupt_manifest_writes_nothing(run_copy: Path, capsys) -> None:
    set_name, qid, (chunk, _) = first_two(run_copy)
    (run_copy / JUDGMENTS_FILE).write_text(line(question_set=set_name, question_id=qid, chunk_id=chunk,
                                                url=read_pool(run_copy).chunks[chunk].url))
    (run_copy / "manifest.json").write_text("{not json")
    assert main(["rescore", str(run_copy), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "manifest.json" in err[0] and not (run_copy / "rescored").exists()


@pytest.mark.slow
def test_rescore_refuses_a_passage_outside_its_questions_pool_naming_the_line(run_copy: Path, capsys) -> None:
    pool = read_pool(run_copy)
    (q1, q2) = list(pool.questions.values())[:2]
    outside = next(c for c in q2.pooled() if c not in q1.pooled())
    (run_copy / JUDGMENTS_FILE).write_text(
        line(question_set=q1.question_set, question_id=q1.qid, chunk_id=q1.pooled()[0], url=pool.chunks[q1.pooled()[0]].url)
        + line(question_set=q1.question_set, question_id=q1.qid, chunk_id=outside, url=pool.chunks[outside].url))
    assert main(["rescore", str(run_copy), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{JUDGMENTS_FILE}:2" in err[0] and "not in this run's pool of question" in err[0]
    assert not (run_copy / "rescored").exists()


def test_re_judged_counts_only_the_counted_judges(tmp_path: Path) -> None:
    path = tmp_path / JUDGMENTS_FILE
    path.write_text(line(judge="llm:x", kind="llm", grade=1) + line(judge="llm:x", kind="llm", grade=2)
                    + line(judge="ana", grade=3))
    question = Question(qid="q1", text="Why?", gold_urls=[], answers=[], qtype="mine", question_set="mine")
    assert apply_judgments(path, {"mine": [question]}, {"c1.html"}).rejudged == 0
    assert apply_judgments(path, {"mine": [question]}, {"c1.html"}, trust_llm=True).rejudged == 1


# 7. run --judgments, and a byte-order mark ----------------------------------------------------------

@pytest.mark.slow
def test_run_judgments_scores_as_rescore_does(judging_runs, tmp_path: Path) -> None:
    from tests.judging.conftest import SMOKE_CONFIG

    questions = [json.loads(x) for x in (judging_runs["root"] / "mine-gold.jsonl").read_text().splitlines()]
    grades = tmp_path / "grades.jsonl"
    grades.write_text("".join(line(question_id=q["id"], chunk_id=None, url=url) for q in questions
                              for group in q["gold_urls"] for url in group))
    out = tmp_path / "run"
    argv = ["run", "--config", str(SMOKE_CONFIG), "--no-generation", "--quiet", "--output-dir", str(out),
            "--set", f"cache_dir={judging_runs['root'] / 'cache'}",
            "--set", f"dataset.questions={judging_runs['root'] / 'mine.jsonl'}", "--judgments", str(grades)]
    assert main(argv) == 0
    assert json.loads((out / "manifest.json").read_text())["judged"]["judges"] == {"ana": "person"}
    gold = pd.read_csv(judging_runs["gold"] / "per_query.csv").set_index(["method", "qid"]).sort_index()
    mine = pd.read_csv(out / "per_query.csv").set_index(["method", "qid"]).sort_index()
    columns = [c for c in gold.columns if c.split(":")[-1].split("@")[0] in {"mrr", "recall", "ndcg", "map"}]
    pd.testing.assert_frame_equal(mine[columns], gold[columns])


def test_a_byte_order_mark_is_not_part_of_the_first_question(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_bytes("\ufeffWhat is a closure?\nWhy?\n".encode())
    first = read_questions_text(path, "mine", ProblemLog())[0]
    assert first.text == "What is a closure?" and first.qid == text_question_id("What is a closure?")


# 8. Any run can be judged ---------------------------------------------------------------------------

@pytest.mark.slow
def test_a_labelled_run_writes_a_pool_and_the_page_serves_it(judging_runs, tmp_path: Path, capsys) -> None:
    run_dir = Path(shutil.copytree(judging_runs["gold"], tmp_path / "gold"))
    pool = read_pool(run_dir)  # the smoke questions with their gold: a pool to find the gold's holes
    assert len(pool.sets()) == 1 and len(pool.questions) == 12
    with serving(run_dir) as server:
        item = httpx.get(server.url + "api/next").json()["item"]
        assert (item["question_set"], item["question_id"]) in pool.questions
        response = httpx.post(server.url + "api/judge", json={"set": item["question_set"], "qid": item["question_id"],
                                                              "chunk": item["chunk_id"], "grade": 2})
        assert response.status_code == 200
    assert [j.grade for j in stored(run_dir)] == [2]
    assert main(["rescore", str(run_dir), "--output-dir", str(tmp_path / "rescored"), "--quiet"]) == 0
    assert "judged@10" in capsys.readouterr().out  # what the labelled set's verdict stands on


# 9. Imports point down -------------------------------------------------------------------------------

def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function."""
    tree = ast.parse(path.read_text())
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


def test_the_vector_store_registry_and_the_milvus_store_do_not_import_each_other() -> None:
    root = Path(__file__).parents[2] / "rag" / "retrievers"
    registry, store = imported_modules(root / "vector_store.py"), imported_modules(root / "milvus_store.py")
    assert not ("rag.retrievers.milvus_store" in registry and "rag.retrievers.vector_store" in store)
