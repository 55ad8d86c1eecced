"""PostgreSQL's full-text search beside our BM25 on the same chunks and questions (docs/your-retriever.md):
starts a throw-away PostgreSQL cluster (rag.testing.postgres), runs CONFIG (smoke or wiki) with its bm25
and one postgres_fts method per query form (or, plain, websearch; ts_rank_cd, english) without
generation, and prints per question set each method's nDCG@10 with its CI, its ms per question and its
paired difference from bm25 with the difference's CI.

    python scripts/measure_postgres_fts.py smoke OUT_DIR [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd
import yaml

from rag.cli import main as rag_bench
from rag.config import read_config_mapping
from rag.testing.postgres import TemporaryCluster

FORMS = ("or", "plain", "websearch")
PASSWORD_ENV = "RAG_BENCH_MEASURE_PG_PASSWORD"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", help="a built-in config name or a YAML file (its bm25 retriever is kept)")
    parser.add_argument("out", type=Path, help="where the run directory and the cache go")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config overrides, as rag-bench's")
    args = parser.parse_args()
    raw, base_dir, _ = read_config_mapping(args.config)
    raw["dataset"] = {key: str((base_dir / value).resolve()) if key in ("corpus", "questions", "path", "qrels") else value
                      for key, value in raw["dataset"].items()}
    bm25 = next(spec for spec in raw["retrievers"] if spec["type"] == "bm25")
    with TemporaryCluster() as cluster:
        os.environ[PASSWORD_ENV] = cluster.password
        raw["retrievers"] = [bm25, *({"name": f"pg_{form}", "type": "postgres_fts", "params": {
            "uri": cluster.uri, "password_env": PASSWORD_ENV, "query": form}} for form in FORMS)]
        raw.pop("methods", None)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "config.yaml").write_text(yaml.safe_dump(raw))
        code = rag_bench(["run", "--config", str(args.out / "config.yaml"), "--no-generation", "--quiet",
                          "--output-dir", str(args.out / "run"), "--set", f"cache_dir={args.out / 'cache'}",
                          "--set", f"output_dir={args.out / 'runs'}", *(f"--set={o}" for o in args.overrides)])
    if code != 0:
        return code
    table = pd.read_csv(args.out / "run" / "comparison.csv")
    pairs = pd.DataFrame(json.loads((args.out / "run" / "comparison.json").read_text())["pairwise"])
    for question_set, rows in table.groupby("question_set", sort=False):
        print(f"{question_set} ({int(rows['questions'].iloc[0])} questions)")
        for row in rows.to_dict("records"):
            if row["method"] not in ("bm25", *(f"pg_{form}" for form in FORMS)):
                continue  # the config's answer-only baselines
            line = (f"  {row['method']:<13} ndcg@10 {row['ndcg@10']:.3f} [{row['ndcg@10_ci_low']:.3f}, "
                    f"{row['ndcg@10_ci_high']:.3f}]  {row['retrieval_ms_per_query']:.2f} ms/q")
            pair = pairs[(pairs["question_set"] == question_set) & (pairs["metric"] == "ndcg@10")
                         & (pairs[["method_a", "method_b"]].isin([row["method"], "bm25"]).all(axis=1))]
            if row["method"] != "bm25" and not pair.empty:
                p = pair.iloc[0]
                sign = 1 if p["method_a"] == row["method"] else -1  # the difference as method - bm25
                low, high = sorted((sign * p["interval_low"], sign * p["interval_high"]))
                line += f"  vs bm25 {sign * p['mean_diff']:+.3f} [{low:+.3f}, {high:+.3f}], p (Holm) {p['p_adjusted']:.3g}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
