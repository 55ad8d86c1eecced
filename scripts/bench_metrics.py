"""Speed of the evaluation engine against pytrec_eval and ranx, measured in the same run.

Synthetic data: N queries x M results with random scores over a pool of documents, graded qrels
(grades 0..3: half of the judged documents drawn from the query's own results, half from the pool).
Metrics: ndcg@10, map, mrr, recall@100 (pytrec_eval: ndcg_cut.10, map, recip_rank, recall.100).

Two figures, each as times and ratios:
1. end to end from the same Python dicts {qid: {doc_id: score}}: ours (evaluate_run) vs
   pytrec_eval (RelevanceEvaluator + evaluate) vs ranx (Qrels + Run + evaluate);
2. metric computation on prepared inputs: ours (compute_metrics on RankedJudgments) vs ranx
   (evaluate on built Qrels/Run, warm); ranx's first-call Numba compile is timed separately.

Also checks that our per-query values equal pytrec_eval's (max absolute difference).

Usage: python scripts/bench_metrics.py [--queries 100000] [--results 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from evaluation import evaluate_run, prepare_run
from evaluation.metrics import compute_metrics, parse_metric
from evaluation.runs import check_run, qrels_grades, query_order

OURS = ["ndcg@10", "map", "mrr", "recall@100"]
PYTREC = {"ndcg@10": "ndcg_cut_10", "map": "map", "mrr": "recip_rank", "recall@100": "recall_100"}
RANX = ["ndcg@10", "map", "mrr", "recall@100"]


def make_data(n_queries: int, n_results: int, seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    pool = [f"doc{i}" for i in range(max(10 * n_results, 100_000))]
    picks = rng.integers(0, len(pool), size=(n_queries, n_results)).tolist()
    scores = rng.random((n_queries, n_results)).tolist()
    run = {f"q{q}": {pool[d]: s for d, s in zip(picks[q], scores[q])} for q in range(n_queries)}
    own = rng.integers(0, n_results, size=(n_queries, 5)).tolist()
    other = rng.integers(0, len(pool), size=(n_queries, 5)).tolist()
    grades = rng.integers(0, 4, size=(n_queries, 10)).tolist()
    qrels = {}
    for q in range(n_queries):
        judged = [pool[picks[q][i]] for i in own[q]] + [pool[d] for d in other[q]]
        qrels[f"q{q}"] = dict(zip(judged, grades[q]))
    return qrels, run


def timed(label: str, action: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    print(f"  {label:<58s} {elapsed:8.3f} s", flush=True)
    return elapsed, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--results", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx (its compile takes ~30 s)")
    args = parser.parse_args()

    import pytrec_eval

    print(f"data: {args.queries} queries x {args.results} results, graded qrels (10 judged per query)")
    _, (qrels, run) = timed("generate synthetic data", lambda: make_data(args.queries, args.results, args.seed))

    print("end to end, from Python dicts:")
    t_ours, table = timed("ours: evaluate_run", lambda: evaluate_run(qrels, run, OURS))

    def pytrec() -> dict:
        return pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)

    t_pytrec, reference = timed("pytrec_eval: RelevanceEvaluator + evaluate", pytrec)

    worst = 0.0
    for metric, name in PYTREC.items():
        theirs = np.array([reference[qid][name] for qid in table.index if qid in reference])
        ours = table.loc[[qid for qid in table.index if qid in reference], metric].to_numpy()
        defined = ~np.isnan(ours)
        worst = max(worst, float(np.abs(ours[defined] - theirs[defined]).max(initial=0.0)))
    print(f"  max |ours - pytrec_eval| over all queries and metrics: {worst:.3g}")

    specs = [parse_metric(name) for name in OURS]
    t_prepare, judged = timed("ours: prepare (dicts -> RankedJudgments)",
                              lambda: prepare_run(qrels_grades(qrels), check_run(run), query_order(qrels, run)))
    t_compute, _ = timed("ours: compute_metrics on prepared arrays", lambda: compute_metrics(judged, specs))

    rows = [("end to end: ours vs pytrec_eval", t_ours, t_pytrec)]
    if not args.no_ranx:
        from ranx import Qrels, Run, evaluate

        t_compile, _ = timed("ranx: first call on a tiny input (Numba compile)",
                             lambda: evaluate(Qrels({"q": {"d": 1}}), Run({"q": {"d": 1.0}}), RANX))
        t_build, (ranx_qrels, ranx_run) = timed("ranx: build Qrels + Run from dicts", lambda: (Qrels(qrels), Run(run)))
        warm = [timed(f"ranx: evaluate on prepared Qrels/Run (call {i})",
                      lambda: evaluate(ranx_qrels, ranx_run, RANX, save_results_in_run=False))[0] for i in (1, 2)]
        t_ranx_eval = min(warm)
        rows += [
            ("end to end: ours vs ranx (build + evaluate)", t_ours, t_build + t_ranx_eval),
            ("prepared: ours compute vs ranx evaluate (warm)", t_compute, t_ranx_eval),
            ("prepared: ours compute vs ranx evaluate + compile", t_compute, t_ranx_eval + t_compile),
        ]

    print("\nsummary (ratio = peer time / our time; > 1 means we are faster):")
    print(f"  {'comparison':<52s} {'ours (s)':>9s} {'peer (s)':>9s} {'ratio':>8s}")
    for label, ours_time, peer_time in rows:
        print(f"  {label:<52s} {ours_time:9.3f} {peer_time:9.3f} {peer_time / ours_time:8.1f}x")


if __name__ == "__main__":
    main()
