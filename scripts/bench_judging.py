"""How many judgments a verdict needs: minimal test collections (MTC) against depth pooling.

Replays known gold as a simulated judge on the pools of real runs: the bundled wiki corpus with its
``known_item`` and ``reference`` sets, and the ``smoke`` corpus with its given questions. Each set is
run through the product's own path: its questions are written *without* their gold, run as an
unjudged set (``pool.json``: every method's top-k, blind), then judged chunk by chunk, each chunk
graded with its page's gold grade (0 for a page that is not gold), in three orders:

* ``mtc``: :class:`evaluation.mtc.JudgingOrder`'s default (the chunk that moves an undecided pair most);
* ``depth``: question by question, each question's whole pool (TREC depth pooling);
* ``random``: a seeded shuffle of the whole pool.

After every judgment the recommendation's state is read (:meth:`evaluation.mtc.PoolDecision.decision`);
the count is taken when it is first *decided* (the leader on nDCG@10 can no longer be overtaken),
and that leader is compared with the leader of the full gold (every gold page, pooled or not,
scored by the evaluation engine). Also with a noisy judge: 10% of grades flipped (relevant <->
irrelevant), seeded. The bounds take the judge's scale: 0-1 for this binary gold (``scale 1``); the
page's scale 0-3 (``scale 3``) is shown for MTC too.

The last line reads ``known_item: mtc/depth = 0.NN, same verdict: yes`` (goal: <= 0.40).

These three sets are **tuned**: MTC's lookahead (``LOOKAHEAD``) and the confidence model's constants
were chosen on them, so their numbers are not held out.

**Held-out** sets were used to choose no constant: a real third-party folder with third-party
questions and known gold, built at run time from an installed Debian package (never downloaded):

* ``git``: git's HTML manual (``apt-get install -y git-doc``: the top-level ``*.html`` of
  /usr/share/doc/git-doc). A question per command page ``git-<cmd>.html``: its NAME line's synopsis
  without the command name ("git-add - Add file contents to the index" -> "Add file contents to the
  index"); gold: that page, named as ``rag-bench run --docs DIR`` names it (its path relative to the
  folder). Pages without a NAME line are skipped, and so is a synopsis two pages share.
* ``python-lib``: Python's library reference (``apt-get install -y python3.11-doc``): the synopses of
  the module index (py-modindex.html) of ``PYTHON_MODULES`` modules spread over the index, one a page,
  gold: the module's page under library/; the folder is those pages.

A held-out set goes through the product's own path twice, as ``rag-bench run --docs DIR --questions
FILE --no-generation`` (in-process, cache in the built-in config's cache_dir): once with its
questions as a plain text file (no gold: the pool), once as JSONL with ``gold_urls`` (the full-gold
verdict: comparison.json's recommendation for the set). A copy of the unjudged run is then judged
through :class:`rag.judging.session.JudgingSession` (judge ``gold-replay``): the passage the page offers
next gets 3 when its page is the question's gold page, else 0, and after every grade (as the page
does; ``--check-every N``: every N grades, at most 0.5% of the pool; printed) the page's decision is
read (``session.verdict`` and ``session.decided``) until the first "decided". ``rag-bench rescore``
of the copy gives the verdict from those grades; "same verdict": the same outcome and method as full
gold's (and for an equivalence the same methods). Person-hours: 35 s a grade (docs/judging.md, "A
person's time").

The last line reads ``held-out: decided at N of P (0.NN of the pool), same verdict: yes|no``, summed
over the held-out sets run (N: grades until decided, P: pooled passages; "yes" when every held-out
set's verdict is the same; a set not decided counts its grades up to the whole pool and "no").
Without a held-out set it is ``known_item: mtc/depth = 0.NN, same verdict: yes`` as before.

Usage: ``python scripts/bench_judging.py [--sets smoke,reference,known_item,git,python-lib] [--limit N]``
(default: every set; ``--sets git`` runs git's manual alone). The first run builds the wiki corpus'
dense index and each folder's (minutes; cached in the config's cache_dir after).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import html
import io
import json
import math
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import evaluate_run  # noqa: E402
from evaluation.runs import ranked_lists_to_run  # noqa: E402
from rag.config import load_config  # noqa: E402
from rag.judging.pool import Pool, read_pool  # noqa: E402
from rag.resources import data_dir  # noqa: E402
from rag.runner.pipeline import RunOptions, run_benchmark  # noqa: E402

NOISE = 0.10
TUNED = ("smoke", "reference", "known_item")  # LOOKAHEAD and the confidence model's constants were chosen on these
HELD_OUT = ("git", "python-lib")  # used to choose nothing
SECONDS_PER_GRADE = 35.0  # a person's time per passage (docs/judging.md, "A person's time")
CHECK_SHARE = 0.005  # the page's decision is read at least every 0.5% of the pool
JUDGE = "gold-replay"
GIT_DOC = Path("/usr/share/doc/git-doc")
PYTHON_DOC = Path("/usr/share/doc/python3.11/html")
PYTHON_MODULES = 100
SOURCES = {
    "known_item": ("wiki", "wiki/questions/known_item.jsonl"),
    "reference": ("wiki", "wiki/questions/reference.jsonl"),
    "smoke": ("smoke", "smoke/questions.jsonl"),
}
CORPUS = {"wiki": "wiki/corpus.jsonl.gz", "smoke": "smoke/corpus.jsonl"}


def gold_of(path: Path, limit: int | None) -> tuple[list[dict], dict[str, dict[str, int]]]:
    """The set's records without gold, and its gold: question id -> {url: grade}."""
    records, gold = [], {}
    for line in path.read_text(encoding="utf-8").splitlines()[:limit]:
        record = json.loads(line)
        urls = record.pop("gold_urls")
        if isinstance(urls, dict):
            gold[record["id"]] = {u: int(g) for u, g in urls.items()}
        else:
            gold[record["id"]] = {u: 1 for group in urls for u in ([group] if isinstance(group, str) else group)}
        records.append(record)
    return records, gold


def pooled(config_name: str, name: str, records: list[dict], workdir: Path) -> Pool:
    """Run the set unjudged through the product (cached retrieval) and read its pool."""
    questions = workdir / f"{name}.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    corpus = data_dir(config_name) / CORPUS[config_name].split("/", 1)[1]
    config = load_config(ROOT / "configs" / f"{config_name}.yaml", [
        f"dataset={json.dumps({'format': 'jsonl', 'corpus': str(corpus), 'questions': str(questions)})}",
        "generation=null", "baselines=[]", "question_sets=null",
    ])
    result = run_benchmark(config, RunOptions(output_dir=workdir / f"run-{name}", progress=False))
    return read_pool(result.run_dir)


def full_gold_leader(pool: Pool, name: str, gold: dict[str, dict[str, int]]) -> tuple[str, dict[str, float]]:
    """The best method on nDCG@k with the full gold (pooled or not), by the evaluation engine."""
    means = {}
    for method in pool.methods:
        lists = {q.qid: pool.question_pool(q).lists.get(method, []) for q in pool.set_questions(name)}
        table = evaluate_run(gold, ranked_lists_to_run(lists), [f"ndcg@{pool.k}"])
        means[method] = float(table[f"ndcg@{pool.k}"].reindex(list(lists)).fillna(0.0).mean())
    return max(pool.methods, key=lambda m: (means[m], -pool.methods.index(m))), means


def simulate(pool: Pool, name: str, gold: dict[str, dict[str, int]], order: str, noise: float, scale: int,
             seed: int = 0, until: str = "confident") -> tuple[int, str, bool]:
    """Judge in ``order`` until decided (``until``: "confident", the 95% rule, or "certain", the
    bounds): (judgments made, the leader then, decided)."""
    questions = pool.set_questions(name)
    decision, judging = pool.judging(questions, order, scale, seed)
    rng = np.random.default_rng(seed + 1)
    made = 0
    def done(state) -> bool:
        return state.confident if until == "confident" else state.decided

    while not done(decision.decision()):
        item = judging.next()
        if item is None:
            break
        qid, chunk = item
        grade = min(gold[qid].get(pool.chunks[chunk].url, 0), scale)
        if noise and rng.random() < noise:
            grade = 0 if grade > 0 else 1
        decision.judge(qid, chunk, grade)
        made += 1
    state = decision.decision()
    return made, state.leader, done(state)


# --- held-out sets: a real folder, third-party questions, known gold ---------------------------------


def _text(fragment: str) -> str:
    """An HTML fragment's text: tags dropped, entities read, white space collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def git_set() -> tuple[list[Path], list[tuple[str, str]]]:
    """git's HTML manual: its top-level pages, and (question, gold page) per command page's NAME line."""
    pages = sorted(GIT_DOC.glob("*.html"))
    if not pages:
        raise SystemExit(f"git's manual is not installed ({GIT_DOC}/*.html): apt-get install -y git-doc")
    found = []
    for page in pages:
        if not page.name.startswith("git-"):
            continue
        name = re.search(r"<h2>NAME</h2>\s*<div class=\"sectionbody\">\s*<p>(.*?)</p>",
                         page.read_text(encoding="utf-8", errors="replace"), re.S)
        line = _text(name.group(1)) if name else ""
        if " - " not in line:
            continue  # no NAME line
        synopsis = line.split(" - ", 1)[1].strip()
        if synopsis:
            found.append((synopsis, page.name))
    return pages, found


def python_set() -> tuple[list[Path], list[tuple[str, str]]]:
    """Python's library reference: PYTHON_MODULES modules spread evenly over the module index (one
    per page), each its synopsis as the question and its page as gold; the folder is those pages."""
    index = PYTHON_DOC / "py-modindex.html"
    if not index.is_file():
        raise SystemExit(f"Python's library reference is not installed ({index}): apt-get install -y python3.11-doc")
    rows = re.findall(r'<a href="library/([^"#]+\.html)#module-[^"]*"><code[^>]*>[^<]*</code></a></td><td>\s*'
                      r'(?:<strong>[^<]*</strong>)?\s*<em>(.*?)</em>',
                      index.read_text(encoding="utf-8"), re.S)
    by_page: dict[str, str] = {}
    for page, synopsis in rows:
        text = _text(synopsis)
        if text and page not in by_page and (PYTHON_DOC / "library" / page).is_file():
            by_page[page] = text
    chosen = list(by_page.items())
    step = max(len(chosen) / PYTHON_MODULES, 1.0)
    chosen = [chosen[int(i * step)] for i in range(min(PYTHON_MODULES, len(chosen)))]
    return [PYTHON_DOC / "library" / page for page, _ in chosen], [(text, page) for page, text in chosen]


HELD_OUT_SOURCES = {"git": git_set, "python-lib": python_set}


def text_id(text: str) -> str:
    """A plain question file's question id (docs/judging.md, "Questions without gold")."""
    return "q" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def folder_of(name: str, pages: list[Path], workdir: Path) -> Path:
    """The set's folder (a copy of its pages, kept between runs so that the caches hold)."""
    folder = workdir / f"{name}-docs"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {page.name for page in pages}
    for old in folder.iterdir():
        if old.name not in wanted:
            old.unlink()
    for page in pages:
        target = folder / page.name
        if not target.is_file() or target.read_bytes() != page.read_bytes():
            shutil.copyfile(page, target)
    return folder


def docs_run(docs: Path, questions: Path, output: Path):
    """``rag-bench run --docs DOCS --questions QUESTIONS --no-generation`` in-process."""
    from rag.runner.documents import documents_config

    config = documents_config(docs, None, ["generation=null"], questions)
    return run_benchmark(config, RunOptions(output_dir=output, progress=False))


def set_verdict(comparison: Path, name: str):
    """The set's recommendation in a run's comparison.json, and whether its tests were corrected."""
    from rag.results.recommendation import Recommendation

    data = json.loads(comparison.read_text(encoding="utf-8"))
    recommendation = Recommendation.from_dict(data["recommendation"])
    corrected = (data.get("statistics") or {}).get("correction") is not None
    return next(s for s in recommendation.sets if s.question_set == name), corrected


def verdict_key(s) -> tuple:
    """What "same verdict" compares: the outcome and the method, and for an equivalence its methods."""
    from rag.results.recommendation import EQUIVALENT

    return (s.outcome, s.method, tuple(sorted(s.top_group)) if s.outcome == EQUIVALENT else ())


def verdict_words(s) -> str:
    from rag.results.recommendation import EQUIVALENT

    if s.outcome == EQUIVALENT:
        return f"equivalent: {', '.join(s.top_group)}"
    return f"{s.outcome}: {s.method}"


@dataclass
class HeldOut:
    name: str
    questions: int
    pooled: int
    judged: int
    decided: bool
    kind: str | None
    same: bool
    check_every: int


def replay(run_dir: Path, name: str, gold: dict[str, str], check_every: int | None, pooled: int):
    """Judge a copy of ``run_dir`` through the page's session with the gold as the judge until the
    page first says "decided": (the copy, grades given, decided, the verdict then, check step)."""
    from rag.judging.session import JudgingSession

    copy = run_dir.parent / f"{run_dir.name}-judged"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run_dir, copy)
    session = JudgingSession(copy, JUDGE)
    state = session.sets[name]
    step = check_every or 1
    if step > max(1, math.floor(CHECK_SHARE * pooled)):
        print(f"  note: reading the decision every {step} grades is more than {CHECK_SHARE:.1%} of the pool")
    made, decided, verdict, checked, began = 0, False, None, 0.0, time.perf_counter()
    while True:
        if made % step == 0:
            tick = time.perf_counter()
            verdict = session.verdict(state)
            decided = session.decided(state, verdict)
            checked += time.perf_counter() - tick
            if decided:
                break
        item = session.next_item()
        if item is None:
            verdict = session.verdict(state)
            decided = session.decided(state, verdict)
            break
        question_set, qid, chunk = item
        page = session.pool.chunks[chunk].url
        session.record(question_set, qid, chunk,
                       3 if page == gold[session.pool.questions[(question_set, qid)].text] else 0)
        made += 1
    print(f"  judged {made} in {time.perf_counter() - began:.0f} s ({checked:.0f} s reading the decision, every "
          f"{step} grade{'s' if step > 1 else ''} = {step / pooled:.2%} of the pool)")
    status = next(x for x in session.status()["sets"] if x["name"] == name)
    print(f"  page: decided {status['decided']}, kind {status['decision']}, grades left {status['grades_left']}; "
          f"{status['verdict']}")
    return copy, made, decided, verdict, step


def rescore(copy: Path, name: str):
    """``rag-bench rescore COPY`` in-process; its set's recommendation."""
    from rag.cli import main as cli

    output = copy.parent / f"{copy.name}-rescored"
    shutil.rmtree(output, ignore_errors=True)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli(["rescore", str(copy), "--quiet", "--output-dir", str(output)])
    if code != 0:
        print(printed.getvalue())
        raise SystemExit(f"rescore of {copy} failed (exit {code})")
    return set_verdict(output / "comparison.json", name)


def held_out(name: str, limit: int | None, workdir: Path, tmp: Path, check_every: int | None) -> HeldOut:
    from rag.results.format import set_line

    pages, found = HELD_OUT_SOURCES[name]()
    texts = [text for text, _ in found]
    found = [(text, page) for text, page in found if texts.count(text) == 1][:limit]  # a synopsis two pages share: out
    docs = folder_of(name, pages, workdir)
    began = time.perf_counter()
    plain, gold_file = tmp / "plain" / f"{name}.txt", tmp / "gold" / f"{name}.jsonl"
    for attempt in range(2):
        plain.parent.mkdir(exist_ok=True)
        plain.write_text("".join(f"{text}\n" for text, _ in found), encoding="utf-8")
        result = docs_run(docs, plain, tmp / f"run-{name}")
        pool = read_pool(result.run_dir)
        missing = [(text, page) for text, page in found if page not in pool.pages]
        if not missing:
            break
        print(f"  left out {len(missing)} question(s) whose gold page the run left out of the folder: "
              + ", ".join(page for _, page in missing[:5]))
        found = [(text, page) for text, page in found if page in pool.pages]
        shutil.rmtree(tmp / f"run-{name}")
    gold = dict(found)
    gold_file.parent.mkdir(exist_ok=True)
    gold_file.write_text("".join(json.dumps({"id": text_id(text), "question": text, "gold_urls": [page]}) + "\n"
                                 for text, page in found), encoding="utf-8")
    gold_run = docs_run(docs, gold_file, tmp / f"gold-{name}")
    full, corrected = set_verdict(gold_run.run_dir / "comparison.json", name)
    questions = pool.set_questions(name)
    pooled_chunks = sum(len(q.pooled()) for q in questions)
    table = gold_run.comparison.table
    means = {m: float(table.loc[(table["question_set"] == name) & (table["method"] == m), pool.primary].iloc[0])
             for m in pool.methods}
    print(f"\n{name} (held-out): {len(questions)} questions on {len(pages)} pages, {pooled_chunks} pooled passages "
          f"(top {pool.top_k} of {', '.join(pool.methods)}); both runs {time.perf_counter() - began:.0f} s; "
          f"full-gold {pool.primary}: " + ", ".join(f"{m} {v:.3f}" for m, v in means.items()))
    copy, made, decided, verdict, step = replay(result.run_dir, name, gold, check_every, pooled_chunks)
    began = time.perf_counter()
    rescored, _ = rescore(copy, name)
    same = decided and verdict_key(rescored) == verdict_key(full)
    kind = verdict.outcome if decided and verdict is not None else None
    print(f"  rescore {time.perf_counter() - began:.0f} s")
    rows = [("questions", f"{len(questions)}"), ("pooled passages", f"{pooled_chunks}"),
            ("judgments until decided", f"{made}" + ("" if decided else " (never decided: the whole pool)")),
            ("share of the pool", f"{made / pooled_chunks:.2f}"),
            ("person-hours at 35 s a grade", f"{made * SECONDS_PER_GRADE / 3600:.1f}"),
            ("decision kind", kind or "not decided"), ("decision read every", f"{step} grade{'s' if step > 1 else ''}"),
            ("rescored verdict", set_line(rescored, corrected)),
            ("full-gold verdict", set_line(full, corrected)),
            ("same verdict", f"{'yes' if same else 'no'} (rescored {verdict_words(rescored)}; full gold "
                             f"{verdict_words(full)})")]
    for label, value in rows:
        print(f"  {label:<29} {value}")
    return HeldOut(name, len(questions), pooled_chunks, made, decided, kind, same, step)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(TUNED + HELD_OUT),
                        help=f"comma-separated; tuned: {', '.join(TUNED)}; held-out: {', '.join(HELD_OUT)}")
    parser.add_argument("--limit", type=int, help="first N questions of each set")
    parser.add_argument("--check-every", type=int, metavar="N",
                        help="held-out sets: read the page's decision every N grades (default 1, as the page does; "
                             "keep it at most 0.5%% of the pool)")
    parser.add_argument("--workdir", type=Path, default=ROOT / ".cache" / "bench_judging",
                        help="held-out sets: where their folders are copied (kept, so the caches hold)")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.sets.split(",")]
    unknown = [n for n in names if n not in TUNED + HELD_OUT]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; expected {', '.join(TUNED + HELD_OUT)}")
    lines: dict[str, str] = {}
    held: list[HeldOut] = []
    with tempfile.TemporaryDirectory(prefix="bench-judging-") as tmp:
        for name in names:
            if name in HELD_OUT:
                workdir = Path(tmp) / name
                workdir.mkdir()
                held.append(held_out(name, args.limit, args.workdir, workdir, args.check_every))
                continue
            config_name, source = SOURCES[name]
            records, gold = gold_of(data_dir(source.split("/")[0]) / source.split("/", 1)[1], args.limit)
            began = time.perf_counter()
            pool = pooled(config_name, name, records, Path(tmp))
            pooled_chunks = sum(len(q.pooled()) for q in pool.set_questions(name))
            leader, means = full_gold_leader(pool, name, gold)
            print(f"\n{name} (tuned): {len(records)} questions, {pooled_chunks} pooled chunks (top {pool.top_k} of "
                  f"{', '.join(pool.methods)}); run {time.perf_counter() - began:.0f} s; full-gold nDCG@{pool.k}: "
                  + ", ".join(f"{m} {v:.3f}" for m, v in means.items()) + f" -> {leader}")
            print(f"  {'until':<9} {'order':<7} {'noise':>5} {'scale':>5} {'judgments':>9} {'of pool':>8} {'leader':<8} "
                  f"{'decided':<7} same verdict")
            needed: dict[str, tuple[int, bool]] = {}
            runs = [("confident", "mtc", 0.0, 1), ("confident", "depth", 0.0, 1), ("confident", "random", 0.0, 1),
                    ("confident", "mtc", 0.0, 3), ("confident", "mtc", NOISE, 1), ("confident", "depth", NOISE, 1),
                    ("certain", "mtc", 0.0, 1), ("certain", "depth", 0.0, 1)]
            for until, order, noise, scale in runs:
                began = time.perf_counter()
                made, found, decided = simulate(pool, name, gold, order, noise, scale, until=until)
                same = decided and found == leader
                if noise == 0 and scale == 1 and until == "confident":
                    needed[order] = (made, same)
                print(f"  {until:<9} {order:<7} {noise:>5.0%} {scale:>5} {made:>9} {made / pooled_chunks:>8.0%} "
                      f"{found:<8} {'yes' if decided else 'no':<7} {'yes' if same else 'no'} "
                      f"({time.perf_counter() - began:.1f} s)")
            ratio = needed["mtc"][0] / max(needed["depth"][0], 1)
            lines[name] = f"{name}: mtc/depth = {ratio:.2f}, same verdict: {'yes' if needed['mtc'][1] else 'no'}"
    print()
    for name in sorted(lines, key=lambda n: n == "known_item"):
        print(f"{lines[name]} (tuned)" if held else lines[name])
    for h in held[:-1] if len(held) > 1 else []:
        print(f"held-out {h.name}: decided at {h.judged} of {h.pooled} ({h.judged / h.pooled:.2f} of the pool), "
              f"same verdict: {'yes' if h.same else 'no'}")
    if held:
        judged, pool = sum(h.judged for h in held), sum(h.pooled for h in held)
        print(f"held-out: decided at {judged} of {pool} ({judged / pool:.2f} of the pool), same verdict: "
              f"{'yes' if all(h.same for h in held) else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
