"""Benchmark: dense retrieval on the bundled wiki corpus.

1. Corpus embedding throughput of our cached :class:`rag.embeddings.Embedder` vs a bare
   ``SentenceTransformer.encode`` of the same texts (goal: within 10%), best of ``--repeats``.
2. Cold vs cached ``DenseRetriever.index`` (embeddings + Chroma collection).
3. Chroma HNSW recall@10 vs exact (numpy) search (goal: >= 0.99), for our HNSW defaults and
   Chroma's own defaults (ef 100).
4. Query latency per batch: embedding, Chroma search, exact search.

By default a seeded subset of ``--corpus-size`` chunks (2,000) keeps it to a few minutes on 2 CPU
cores; ``--corpus-size 0`` uses the full corpus. ``--cache-dir`` keeps the embeddings between runs.

    python scripts/bench_dense.py [--corpus-size 2000] [--queries 1000] [--batch 100]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from rag.embeddings import Embedder, EmbeddingStore
from rag.encoders import load_sentence_transformer
from rag.retrievers import IndexStorage
from rag.retrievers.dense import DenseParams, DenseRetriever

from bench_bm25 import sample_queries, timed, wiki_chunks  # noqa: E402  (scripts/ is on sys.path)

MODEL = "all-MiniLM-L6-v2"


def recall_at(found, exact, k: int) -> float:
    """Mean over queries of |approximate top-k ∩ exact top-k| / k."""
    return sum(len(set(a.chunk_ids[:k]) & set(b.chunk_ids[:k])) / k for a, b in zip(found, exact)) / len(exact)


def compare_throughput(model, texts: list[str], repeats: int) -> None:
    """Best-of-``repeats`` time of a bare ``encode`` vs our Embedder with an empty cache."""
    model.encode(texts[:64], batch_size=64)  # warm-up
    bare_s, ours_s = [], []
    for _ in range(repeats):
        bare_s.append(timed(lambda: model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False))[1])
        with tempfile.TemporaryDirectory() as tmp:
            ours_s.append(timed(Embedder(model, EmbeddingStore.for_model(tmp, MODEL), batch_size=64).embed, texts)[1])
    bare, ours = min(bare_s), min(ours_s)
    print(f"embedding: bare encode {len(texts) / bare:7.1f} texts/s ({bare:.1f} s) | "
          f"ours (cold cache) {len(texts) / ours:7.1f} texts/s ({ours:.1f} s) | ours/bare time {ours / bare:.3f} (goal <= 1.10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-size", type=int, default=2000, help="seeded subset of chunks; 0 = all")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100, help="queries per search batch")
    parser.add_argument("--repeats", type=int, default=2, help="throughput runs of each encoder (best counts); 0 skips")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep the dense cache here (default: temporary)")
    args = parser.parse_args()

    chunks, questions = wiki_chunks()
    if args.corpus_size:
        chunks = random.Random(0).sample(chunks, min(args.corpus_size, len(chunks)))
    queries = sample_queries(questions, chunks, args.queries)
    texts = [chunk.text for chunk in chunks]
    model = load_sentence_transformer(MODEL, args.device)
    print(f"corpus: {len(chunks)} chunks; {len(queries)} queries; device {model.device}")

    if args.repeats:
        compare_throughput(model, texts, args.repeats)

    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache_dir or Path(tmp)
        builds = []
        for _ in range(2):
            retriever = DenseRetriever("bench_dense", DenseParams(device=args.device), encoder=model)
            builds.append((timed(retriever.index, chunks, IndexStorage.under(cache_dir, "bench_dense"))[1],
                           retriever.collection_rebuilt))
        (cold_s, cold_rebuilt), (cached_s, cached_rebuilt) = builds
        print(f"index build: first {cold_s:.2f} s (collection built: {cold_rebuilt}) | "
              f"second {cached_s:.2f} s (collection built: {cached_rebuilt}); the first reuses the embeddings "
              f"cached by the throughput runs only with --cache-dir")

        exact = DenseRetriever("bench_exact", DenseParams(search="exact"), encoder=model)
        exact.index(chunks, IndexStorage.under(cache_dir, "bench_exact"))
        chroma_default = DenseRetriever(
            "bench_ef100", DenseParams(hnsw={"construction_ef": 100, "search_ef": 100, "M": 16}), encoder=model
        )
        chroma_default.index(chunks, IndexStorage.under(cache_dir, "bench_ef100"))

        embed_s = timed(retriever.embedder.embed, queries)[1]  # queries embedded (and cached) once
        timings = {"hnsw": 0.0, "exact": 0.0, "ef100": 0.0}
        results = {name: [] for name in timings}
        for start in range(0, len(queries), args.batch):
            batch = queries[start : start + args.batch]
            for name, searcher in (("hnsw", retriever), ("exact", exact), ("ef100", chroma_default)):
                rankings, seconds = timed(searcher.search, batch, 10)
                results[name].extend(rankings)
                timings[name] += seconds
        n_batches = -(-len(queries) // args.batch)
        print(f"query embedding: {1000 * embed_s / n_batches:.1f} ms per batch of {args.batch} "
              f"({len(queries) / embed_s:.0f} queries/s, first time; cached afterwards)")
        print(f"search per batch of {args.batch} (query vectors cached): Chroma HNSW {1000 * timings['hnsw'] / n_batches:.1f} ms"
              f" | exact numpy {1000 * timings['exact'] / n_batches:.1f} ms")
        print(f"recall@10 vs exact: HNSW ef 200 (our default) {recall_at(results['hnsw'], results['exact'], 10):.4f}"
              f" | ef 100 (Chroma default) {recall_at(results['ef100'], results['exact'], 10):.4f} (goal >= 0.99)")


if __name__ == "__main__":
    main()
