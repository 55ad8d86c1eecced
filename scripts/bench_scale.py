"""Benchmark: how each cost grows with corpus size (cost curves to a million chunks).

For each size N (``--sizes``, default 10k, 100k and 1M chunks) a synthetic corpus is built: seeded
chunks of 40-160 words drawn from the word frequencies of the bundled wiki corpus, and, for Chroma,
seeded random unit vectors (384 dimensions, like MiniLM), so no embedding is needed. Measured, each
size in a fresh process (so memory baselines are clean):

- ``load``/``chunk``: reading N documents from a JSONL.gz file and chunking them (the project's
  loader and chunker; skipped above ``--chunking-max``);
- ``bm25``: index build (default tokenizer), cached index load, top-10 query time over ``--queries``
  queries drawn from the same word frequencies, index size on disk and in memory, and the same
  queries' time with rank-bm25-rs on the same tokens and our ratio (up to ``--peer-max``);
- ``chroma``: adding N vectors to a persistent Chroma collection (our ``ChromaStore``), top-10 query
  time, size on disk (skipped above ``--chroma-max``);
- ``milvus``: the same vectors in milvus-lite through our ``MilvusCollection`` (the dense retriever's
  Milvus store; HNSW M 16, efConstruction 200, ef 200): build, top-10 query time, recall@10 against
  exact search, size on disk (skipped above ``--milvus-max``);
- ``eval``: ``evaluation.evaluate_run`` of 4 methods x ``--questions`` questions (top-10 over the N
  chunk ids, 1-3 relevant chunks each), ``evaluation.compare_metrics`` over them (10,000 resamples),
  and the outputs: per_query.csv (the runner's columns), TREC run files, report.html.

Time is wall-clock seconds; memory is the peak resident set above the stage's start (Linux
``VmHWM``, reset per stage through ``/proc/self/clear_refs``). The table ends with each cost's
growth exponent: the least-squares slope of log(cost) on log(N) (1 = linear).

    python scripts/bench_scale.py [--sizes 10000,100000,1000000] [--stages load,bm25,chroma,milvus,eval]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("load", "bm25", "chroma", "milvus", "eval")
METRICS = ["mrr", "recall@10", "ndcg@10", "map@10", "p@10", "hit@10"]
METHODS = ["dense", "bm25", "rrf", "convex"]
DIMENSION = 384


# -- measuring --------------------------------------------------------------------------------------
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


@contextmanager
def measured(results: dict, name: str, memory: bool = True):
    """Record ``<name>_s`` (wall clock), ``<name>_cpu_s`` (this process's CPU time: the steadier number on
    a shared machine) and ``<name>_mib`` (peak RSS above the start) in ``results``."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # reset VmHWM to the current RSS
    start_rss = _status_kib("VmRSS")
    start, start_cpu = time.perf_counter(), time.process_time()
    yield
    results[f"{name}_s"] = time.perf_counter() - start
    results[f"{name}_cpu_s"] = time.process_time() - start_cpu
    if memory:
        results[f"{name}_mib"] = max(0, _status_kib("VmHWM") - start_rss) / 1024


def tree_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2**20


# -- synthetic data ---------------------------------------------------------------------------------
class Synthetic:
    """Seeded words with the bundled wiki corpus's frequencies."""

    def __init__(self, seed: int = 0):
        counts: Counter[str] = Counter()
        with gzip.open(ROOT / "data" / "wiki" / "corpus.jsonl.gz", "rt", encoding="utf-8") as corpus:
            for line in corpus:
                counts.update(re.findall(r"\w+", json.loads(line)["text"]))
        words, frequency = zip(*counts.most_common())
        self.words = np.array(words, dtype=object)
        self.cdf = np.cumsum(np.array(frequency, dtype=np.float64))
        self.cdf /= self.cdf[-1]
        self.rng = np.random.default_rng(seed)

    def draw(self, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), len(self.cdf) - 1)

    def texts(self, n: int, low: int = 40, high: int = 160):
        """``n`` texts of ``low``-``high`` words, a full stop every 15 words."""
        block = 50_000
        for first in range(0, n, block):
            lengths = self.rng.integers(low, high + 1, size=min(block, n - first))
            ids = self.draw(int(lengths.sum()))
            words = self.words[ids].tolist()
            position = 0
            for length in lengths.tolist():
                piece = words[position : position + length]
                position += length
                for end in range(14, length - 1, 15):
                    piece[end] += "."
                yield " ".join(piece) + "."

    def queries(self, n: int) -> list[str]:
        lengths = self.rng.integers(2, 9, size=n)
        ids = self.draw(int(lengths.sum())).tolist()
        out, position = [], 0
        for length in lengths.tolist():
            out.append(" ".join(self.words[ids[position : position + length]]))
            position += length
        return out


def chunk_id(i: int) -> str:
    return f"doc{i:07d}#0"


# -- stages -----------------------------------------------------------------------------------------
def stage_load(size: int, synthetic: Synthetic, work: Path, results: dict) -> None:
    from rag.chunking import ChunkingConfig, chunk_documents
    from rag.data.loaders import load_dataset
    from rag.models import load_tokenizer

    corpus, questions = work / "corpus.jsonl.gz", work / "questions.jsonl"
    with gzip.open(corpus, "wt", encoding="utf-8", compresslevel=1) as out:
        for i, text in enumerate(synthetic.texts(size)):
            out.write(json.dumps({"doc_id": f"doc{i:07d}", "url": f"https://x.org/{i}", "text": text}) + "\n")
    questions.write_text(json.dumps({"id": "q1", "question": "a question", "gold_urls": ["https://x.org/0"]}) + "\n")
    results["corpus_gz_mib"] = corpus.stat().st_size / 2**20
    with measured(results, "load"):
        dataset = load_dataset({"format": "jsonl", "corpus": corpus, "questions": questions})
    load_tokenizer(ChunkingConfig().tokenizer)  # loaded once per process, not a per-corpus cost
    with measured(results, "chunk"):
        chunks = chunk_documents(dataset.documents, ChunkingConfig(), progress=False)
    results["chunks_text_mib"] = sum(len(chunk.text.encode()) for chunk in chunks) / 2**20
    results["chunks_per_doc"] = len(chunks) / size


def stage_bm25(size: int, synthetic: Synthetic, work: Path, results: dict, n_queries: int, peer_max: int) -> None:
    from rag.retrievers import IndexStorage, build_retriever
    from rag.types import Chunk

    chunks = [Chunk(chunk_id(i), f"doc{i:07d}", f"https://x.org/{i}", text, 0, 0)
              for i, text in enumerate(synthetic.texts(size))]
    queries = synthetic.queries(n_queries)
    storage = IndexStorage.under(work, "bm25")
    retriever = build_retriever("bm25", "bm25", {})
    with measured(results, "bm25_build"):
        retriever.index(chunks, storage)
    postings = retriever._backend._postings
    results["bm25_index_mib"] = (postings.data.nbytes + postings.indices.nbytes + postings.indptr.nbytes) / 2**20
    results["bm25_disk_mib"] = tree_mib(storage.own)
    del retriever
    cached = build_retriever("bm25", "bm25", {})
    with measured(results, "bm25_load", memory=False):  # memory freed by the build is reused: not comparable
        cached.index(chunks, storage)
    cached.search(queries[:10], 10)  # warm-up
    start, start_cpu = time.perf_counter(), time.process_time()
    for first in range(0, len(queries), 256):
        cached.search(queries[first : first + 256], 10)
    results["bm25_query_ms"] = 1000 * (time.perf_counter() - start) / len(queries)
    results["bm25_query_cpu_ms"] = 1000 * (time.process_time() - start_cpu) / len(queries)
    if size <= peer_max:
        bm25_peer(cached, [chunk.text for chunk in chunks], queries, results)


def bm25_peer(ours, texts: list[str], queries: list[str], results: dict) -> None:
    """The fastest peer, rank-bm25-rs (Rust, all cores), on our tokens (each distinct token one
    string object): query time from texts to top-10 (our tokenizer, our tie rule), and our ratio."""
    import rank_bm25_rs

    from rag.retrievers.bm25 import top_k_positive_first
    from rag.retrievers.ranking import ranking_scores

    canonical: dict[str, str] = {}
    tokens = [[canonical.setdefault(t, t) for t in text_tokens]
              for first in range(0, len(texts), 4096) for text_tokens in ours.tokenizer.many(texts[first : first + 4096])]
    peer = rank_bm25_rs.BM25Okapi(tokens)
    del tokens, canonical
    start = time.perf_counter()
    for first in range(0, len(queries), 16):  # 16 dense score rows at a time
        for row in peer.get_scores_many(ours.tokenizer.many(queries[first : first + 16])):
            top_k_positive_first(ranking_scores(row), 10)
    results["bm25_rs_query_ms"] = 1000 * (time.perf_counter() - start) / len(queries)
    results["bm25_ours_vs_rs"] = results["bm25_rs_query_ms"] / results["bm25_query_ms"]


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMENSION), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def stage_chroma(size: int, work: Path, results: dict, n_queries: int) -> None:
    from rag.retrievers.chroma_store import ChromaStore, HnswParams, make_client

    rng = np.random.default_rng(1)
    vectors, queries = unit_vectors(rng, size), unit_vectors(rng, n_queries)
    ids = [chunk_id(i) for i in range(size)]
    store = ChromaStore(make_client("persistent", work / "chroma", "", 0), "bench", HnswParams())
    with measured(results, "chroma_add"):
        store.ensure(f"{size:032d}", ids, vectors)
    results["chroma_vectors_mib"] = vectors.nbytes / 2**20
    results["chroma_disk_mib"] = tree_mib(work / "chroma")
    store.query(queries[:10], 10)  # warm-up
    start = time.perf_counter()
    for first in range(0, n_queries, 256):
        store.query(queries[first : first + 256], 10)
    results["chroma_query_ms"] = 1000 * (time.perf_counter() - start) / n_queries


def stage_milvus(size: int, work: Path, results: dict, n_queries: int, recall_queries: int = 100) -> None:
    """Our ``MilvusCollection`` (the dense retriever's Milvus store) in milvus-lite: build (insert N
    vectors, flush, HNSW M 16 / efConstruction 200), top-10 query time (ef 200, batches of 256),
    recall@10 against exact search (numpy brute force) on ``recall_queries`` queries, size on disk."""
    from rag.retrievers.milvus_store import MilvusCollection, MilvusStoreConfig, milvus_client

    rng = np.random.default_rng(1)
    vectors, queries = unit_vectors(rng, size), unit_vectors(rng, n_queries)
    ids = [chunk_id(i) for i in range(size)]
    config = MilvusStoreConfig(type="milvus", uri=str(work / "milvus" / "milvus.db"), index="HNSW")
    store = MilvusCollection(milvus_client(config, work), "bench", config)
    with measured(results, "milvus_build"):
        store.ensure(f"{size:032d}", ids, vectors)
    results["milvus_disk_mib"] = tree_mib(work / "milvus")
    store.query(queries[:10], 10)  # warm-up
    start, start_cpu = time.perf_counter(), time.process_time()
    found = []
    for first in range(0, n_queries, 256):
        found.extend(store.query(queries[first : first + 256], 10))
    results["milvus_query_ms"] = 1000 * (time.perf_counter() - start) / n_queries
    results["milvus_query_cpu_ms"] = 1000 * (time.process_time() - start_cpu) / n_queries
    sample = queries[:recall_queries]
    exact = np.argsort(-(sample @ vectors.T), axis=1)[:, :10]
    results["milvus_recall@10"] = float(np.mean([len({ids[i] for i in row} & set(got)) / 10
                                                 for row, got in zip(exact, found[:recall_queries])]))


def stage_eval(size: int, work: Path, results: dict, n_questions: int) -> None:
    from evaluation import compare_metrics, evaluate_run, ranked_lists_to_run, write_run
    from rag.results.comparison import StatisticsSettings, compare
    from rag.results.csv_files import csv_text
    from rag.results.curves import curves
    from rag.results.html import write_html_report

    rng = np.random.default_rng(2)
    qids = [f"q{i:06d}" for i in range(n_questions)]
    gold = {qid: [chunk_id(int(i)) for i in rng.choice(size, rng.integers(1, 4), replace=False)] for qid in qids}
    qrels = {qid: {chunk: 1 for chunk in chunks} for qid, chunks in gold.items()}
    runs = {}
    for method in METHODS:
        lists = {}
        for qid in qids:
            ranked = [chunk_id(int(i)) for i in rng.choice(size, 10, replace=False)]
            if rng.random() < 0.6:
                ranked[int(rng.integers(10))] = gold[qid][0]
            lists[qid] = list(dict.fromkeys(ranked))
        runs[method] = lists
    with measured(results, "evaluate"):
        tables = {method: evaluate_run(qrels, ranked_lists_to_run(lists), METRICS) for method, lists in runs.items()}
    per_query = pd.concat(
        [table.reset_index().assign(method=method, question_set="synthetic") for method, table in tables.items()],
        ignore_index=True,
    )
    with measured(results, "statistics"):
        compare_metrics(per_query, METRICS, n_resamples=10_000)
    rows = per_query.assign(
        qtype="synthetic", question="What is the synthetic question number " + per_query["qid"] + "?",
        gold_urls=[json.dumps([[chunk] for chunk in gold[qid]]) for qid in per_query["qid"]],
        retrieved_urls=[json.dumps(runs[m][q]) for m, q in zip(per_query["method"], per_query["qid"])],
        retrieved_chunks=[json.dumps(runs[m][q]) for m, q in zip(per_query["method"], per_query["qid"])],
        gold_url_ranks="[1]", gold_chunk_ranks="[1]", retrieval_ms=1.0, reference="",
        generation_status="not requested", answer="", error="", em=math.nan, f1=math.nan,
        generation_s=math.nan, prompt_tokens=0, completion_tokens=0, attempts=0,
    )
    with measured(results, "per_query_csv"):
        (work / "per_query.csv").write_text(csv_text(rows))
    results["per_query_csv_mib"] = (work / "per_query.csv").stat().st_size / 2**20
    with measured(results, "trec_write"):
        for method, lists in runs.items():
            write_run(ranked_lists_to_run(lists), work / f"{method}.trec", tag=method)
    results["trec_mib"] = sum((work / f"{m}.trec").stat().st_size for m in METHODS) / 2**20
    with measured(results, "report"):
        comparison = compare(rows, METRICS, StatisticsSettings())
        chunk_ids = {c for m in METHODS for ranked in runs[m].values() for c in ranked}
        write_html_report(work / "report.html", "scale", comparison, rows, curves({}, {}, {}, 10), "", [], "hit@10",
                          {c: f"text of {c}" for c in chunk_ids}, {c: c for c in chunk_ids}, 10)
    results["report_html_mib"] = (work / "report.html").stat().st_size / 2**20


def run_one(size: int, stages: list[str], args: argparse.Namespace) -> dict:
    from rag.models import set_offline

    set_offline()
    results: dict = {"size": size}
    synthetic = Synthetic(seed=size)
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{size}-") as tmp:
        work = Path(tmp)
        if "load" in stages and size <= args.chunking_max:
            stage_load(size, synthetic, work, results)
        if "bm25" in stages:
            stage_bm25(size, synthetic, work, results, args.queries, args.peer_max)
        if "chroma" in stages and size <= args.chroma_max:
            stage_chroma(size, work, results, args.queries)
        if "milvus" in stages and size <= args.milvus_max:
            stage_milvus(size, work, results, args.queries)
        if "eval" in stages:
            stage_eval(size, work, results, args.questions)
    return results


# -- table ------------------------------------------------------------------------------------------
def growth_exponent(sizes: list[int], values: list[float]) -> float:
    """Least-squares slope of log(value) on log(size) (NaN with fewer than two positive points)."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values) if v and v > 0 and not math.isnan(v)]
    if len(points) < 2:
        return math.nan
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])


def table(rows: list[dict]) -> str:
    sizes = [row["size"] for row in rows]
    keys = list(dict.fromkeys(key for row in rows for key in row if key != "size"))
    header = "| cost | " + " | ".join(f"{s:,}" for s in sizes) + " | exponent |"
    lines = [header, "|" + "---|" * (len(sizes) + 2)]
    for key in keys:
        values = [row.get(key, math.nan) for row in rows]
        cells = ["–" if math.isnan(v) else f"{v:.3g}" for v in values]
        exponent = growth_exponent(sizes, values)
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {'–' if math.isnan(exponent) else f'{exponent:.2f}'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated corpus sizes (chunks)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    parser.add_argument("--queries", type=int, default=1000, help="queries timed per index")
    parser.add_argument("--questions", type=int, default=10_000, help="questions evaluated per method")
    parser.add_argument("--chroma-max", type=int, default=100_000, help="largest size given to Chroma")
    parser.add_argument("--milvus-max", type=int, default=1_000_000, help="largest size given to Milvus")
    parser.add_argument("--chunking-max", type=int, default=100_000, help="largest size loaded and chunked")
    parser.add_argument("--peer-max", type=int, default=1_000_000, help="largest size given to rank-bm25-rs")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one size, JSON on stdout
    args = parser.parse_args()
    stages = [stage for stage in args.stages.split(",") if stage]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stage(s) {unknown}; expected some of {', '.join(STAGES)}")
    if args.one is not None:
        print("RESULT " + json.dumps(run_one(args.one, stages, args)), flush=True)
        return
    rows = []
    for size in (int(s.replace("_", "")) for s in args.sizes.split(",")):
        command = [sys.executable, __file__, "--one", str(size), "--stages", ",".join(stages),
                   "--queries", str(args.queries), "--questions", str(args.questions),
                   "--chroma-max", str(args.chroma_max), "--milvus-max", str(args.milvus_max),
                   "--chunking-max", str(args.chunking_max), "--peer-max", str(args.peer_max)]
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        rows.append(json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:]))
        print(f"size {size:,}: done", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
