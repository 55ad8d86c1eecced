"""Benchmark: our vectorized BM25 vs the rank-bm25 library on the bundled wiki corpus.

Checks that both give the identical top-k (ids and order) for every query and reports the largest
score difference, build times and query throughput, and the speed ratio (goal: >= 20x).

    python scripts/bench_bm25.py [--queries 1000] [--k 10] [--variant okapi]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

import numpy as np

from rag.chunking import ChunkingConfig, chunk_documents
from rag.data import DatasetConfig, load_dataset
from rag.retrievers import IndexStorage, build_retriever
from rag.types import Chunk


def wiki_chunks() -> tuple[list[Chunk], list[str]]:
    """The bundled wiki corpus, chunked with the default settings, and all its question texts."""
    dataset = load_dataset(DatasetConfig(format="wiki"))
    chunks = chunk_documents(dataset.documents, ChunkingConfig())
    questions = [question.text for questions in dataset.question_sets.values() for question in questions]
    return chunks, questions


def sample_queries(questions: list[str], chunks: list[Chunk], n: int, seed: int = 0) -> list[str]:
    """``n`` query texts: the question texts first, then sentences sampled (seeded) from the chunks."""
    queries = questions[:n]
    rng = random.Random(seed)
    while len(queries) < n:
        sentences = [s for s in rng.choice(chunks).text.split(". ") if len(s.split()) >= 4]
        if sentences:
            queries.append(rng.choice(sentences))
    return queries


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--variant", choices=["okapi", "bm25l", "bm25plus"], default="okapi")
    args = parser.parse_args()

    chunks, questions = wiki_chunks()
    queries = sample_queries(questions, chunks, args.queries)
    print(f"corpus: {len(chunks)} chunks; {len(queries)} queries; top-{args.k}; variant {args.variant}")

    results, seconds = {}, {}
    with tempfile.TemporaryDirectory() as cache_dir:
        for backend in ("sparse", "rank_bm25"):
            retriever = build_retriever(backend, "bm25", {"variant": args.variant, "backend": backend})
            _, build_s = timed(retriever.index, chunks, IndexStorage.under(cache_dir, backend))
            rankings, search_s = timed(retriever.search, queries, args.k)
            results[backend], seconds[backend] = rankings, search_s
            print(
                f"{backend:>9}: build {build_s:7.2f} s | {len(queries)} queries {search_s:7.2f} s = "
                f"{1000 * search_s / len(queries):7.3f} ms/query, {len(queries) / search_s:8.1f} queries/s"
            )
            if backend == "sparse":
                cached = build_retriever(backend, "bm25", {"variant": args.variant})
                _, load_s = timed(cached.index, chunks, IndexStorage.under(cache_dir, backend))
                print(f"{backend:>9}: cached index load {load_s:.2f} s")

    ours, reference = results["sparse"], results["rank_bm25"]
    same_top_k = sum(a.chunk_ids == b.chunk_ids for a, b in zip(ours, reference))
    max_diff = max(float(np.max(np.abs(np.subtract(a.scores, b.scores)))) for a, b in zip(ours, reference))
    ratio = seconds["rank_bm25"] / seconds["sparse"]
    print(f"identical top-{args.k}: {same_top_k}/{len(queries)} queries; max |score difference| {max_diff:.3g}")
    print(f"query throughput ratio (ours / rank-bm25): {ratio:.1f}x (goal >= 20x)")


if __name__ == "__main__":
    main()
