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

Usage: ``python scripts/bench_judging.py [--sets known_item,reference,smoke] [--limit N]``. The first
run builds the wiki corpus' dense index (minutes; cached in the config's cache_dir after).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="smoke,reference,known_item")
    parser.add_argument("--limit", type=int, help="first N questions of each set")
    args = parser.parse_args(argv)
    lines: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-judging-") as tmp:
        for name in [s.strip() for s in args.sets.split(",")]:
            config_name, source = SOURCES[name]
            records, gold = gold_of(data_dir(source.split("/")[0]) / source.split("/", 1)[1], args.limit)
            began = time.perf_counter()
            pool = pooled(config_name, name, records, Path(tmp))
            pooled_chunks = sum(len(q.pooled()) for q in pool.set_questions(name))
            leader, means = full_gold_leader(pool, name, gold)
            print(f"\n{name}: {len(records)} questions, {pooled_chunks} pooled chunks (top {pool.top_k} of "
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
        print(lines[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
