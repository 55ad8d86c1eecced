"""Benchmark: our BM25 vs rank-bm25-rs, bm25s and rank-bm25 on the bundled wiki corpus.

Every engine gets the same tokens (our ``seed003`` tokenizer with stop words, as configs/wiki.yaml)
and is timed from query *texts* to top-k lists: query tokenizing is counted for every engine, and so
is the top-k selection (the peers' score arrays ranked with our tie rule; bm25s ranks itself). The
query phase runs ``--repeats`` times, engines interleaved; the best time counts (the machine is shared).

Checks: rank-bm25-rs and rank-bm25 give identical lists and bitwise-equal float32 scores, and our
full-precision (float64) scores equal theirs bit for bit. bm25s scores differently by design
(Robertson idf without rank-bm25's epsilon floor, no (k1 + 1) factor), so only its list agreement is
shown. rank-bm25 (pure Python, slow) runs on the first ``--reference-queries`` queries.

    python scripts/bench_bm25.py [--queries 2000] [--depths 10 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time

import numpy as np

from rag.chunking import ChunkingConfig, chunk_documents
from rag.data import DatasetConfig, load_dataset
from rag.retrievers import IndexStorage, build_retriever
from rag.retrievers.bm25 import top_k_positive_first
from rag.retrievers.ranking import ranking_scores, sorted_by_id
from rag.types import Chunk

PARAMS = {"variant": "okapi", "k1": 1.5, "b": 0.75, "tokenizer": {"name": "seed003", "stopwords": True}}


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


def ranked(score_rows, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Top k of each row of float64 scores under our tie rule (float32 score desc, index desc), positive
    scores only: for okapi with epsilon 0.25 the documents holding a query token, as our lists."""
    best = []
    for row in score_rows:
        scores = ranking_scores(row)
        top = top_k_positive_first(scores, k)
        top = top[scores[top] > 0]
        best.append((top, scores[top]))
    return best


def nltk_reference_tokens(texts: list[str]) -> list[list[str]]:
    """seed003 raw tokens the slow way (NLTK sentence by sentence), for its time only."""
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer = NLTKWordTokenizer()
    return [[t for s in re.split(r"(?<=[.!?])\s+", text.lower()) for t in tokenizer.tokenize(s)] for text in texts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference-queries", type=int, default=200)
    args = parser.parse_args()

    import bm25s
    import rank_bm25
    import rank_bm25_rs

    chunks, questions = wiki_chunks()
    queries = sample_queries(questions, chunks, args.queries)
    chunks = sorted_by_id(chunks)  # our document order, given to every engine: the same ties
    texts = [chunk.text for chunk in chunks]
    print(f"corpus: {len(chunks)} chunks; {len(queries)} queries; okapi k1 1.5 b 0.75; seed003 tokens, stop words dropped")

    with tempfile.TemporaryDirectory() as cache_dir:
        ours = build_retriever("ours", "bm25", PARAMS)
        storage = IndexStorage.under(cache_dir, "ours")
        _, build_ours = timed(ours.index, chunks, storage)
        tokenizer = ours.tokenizer
        corpus_tokens, tokenize_s = timed(tokenizer.many, texts)
        rs, rs_s = timed(rank_bm25_rs.BM25Okapi, corpus_tokens)
        peer = bm25s.BM25(method="robertson", dtype="float64")
        _, bm25s_s = timed(lambda: peer.index(corpus_tokens, show_progress=False))
        reference, reference_s = timed(rank_bm25.BM25Okapi, corpus_tokens)
        _, nltk_s = timed(nltk_reference_tokens, texts)
        print(f"build (s): ours {build_ours:.2f} (tokenizing included) | corpus tokenizing {tokenize_s:.2f} (NLTK itself "
              f"{nltk_s:.2f}: {nltk_s / tokenize_s:.1f}x) | then rank-bm25-rs {rs_s:.2f}, bm25s {bm25s_s:.2f}, rank-bm25 {reference_s:.2f}")
        _, query_tokens_s = timed(tokenizer.many, queries)
        _, query_nltk_s = timed(nltk_reference_tokens, queries)
        print(f"query tokenizing: {1000 * query_tokens_s / len(queries):.3f} ms/query (NLTK itself "
              f"{1000 * query_nltk_s / len(queries):.3f} ms/query: {query_nltk_s / query_tokens_s:.1f}x)")

        engines = {
            "ours": lambda qs, k: ours.search(qs, k),
            "rank-bm25-rs": lambda qs, k: ranked(rs.get_scores_many(tokenizer.many(qs)), k),
            "bm25s": lambda qs, k: peer.retrieve(tokenizer.many(qs), k=k, show_progress=False, n_threads=0),
            "rank-bm25": lambda qs, k: ranked((reference.get_scores(q) for q in tokenizer.many(qs)), k),
        }
        position = {chunk.chunk_id: i for i, chunk in enumerate(chunks)}
        for k in args.depths:
            best: dict[str, float] = {}
            lists: dict[str, list] = {}
            for _ in range(args.repeats):
                for name, run in engines.items():
                    if name == "ours":  # reloaded from its cache, untimed: the query vocabulary starts cold
                        ours.index(chunks, storage)
                    subset = queries[: args.reference_queries] if name == "rank-bm25" else queries
                    found, seconds = timed(run, subset, k)
                    best[name] = min(best.get(name, float("inf")), seconds / len(subset))
                    lists[name] = found
            ours_lists = [([position[c] for c in r.chunk_ids], np.float32(r.scores)) for r in lists["ours"]]
            print(f"\ntop-{k}: ms/query (best of {args.repeats}), and our speed ratio")
            _, scoring_s = timed(rs.get_scores_many, tokenizer.many(queries))
            for name in engines:
                ratio = best[name] / best["ours"]
                print(f"  {name:>13}: {1000 * best[name]:8.3f} ms/query  {'' if name == 'ours' else f'ours is {ratio:6.1f}x faster'}")
            print(f"  (rank-bm25-rs scoring alone, tokens given, no ranking: {1000 * scoring_s / len(queries):.3f} ms/query)")
            for name in ("rank-bm25-rs", "rank-bm25"):
                theirs = lists[name]
                same = sum(list(a[0]) == list(map(int, b[0])) for a, b in zip(ours_lists, theirs))
                bitwise = sum(np.array_equal(a[1].view(np.uint32), np.asarray(b[1], np.float32).view(np.uint32))
                              for a, b in zip(ours_lists, theirs))
                print(f"  vs {name}: identical lists {same}/{len(theirs)}, bitwise-equal float32 scores {bitwise}/{len(theirs)}")
            documents, scores = lists["bm25s"]
            documents = [d[s > 0] for d, s in zip(documents, scores)]  # its positive scores, as ours
            same = sum(list(a[0]) == list(map(int, d)) for a, d in zip(ours_lists, documents))
            overlap = np.mean([len(set(a[0]) & set(map(int, d))) / max(len(a[0]), 1) for a, d in zip(ours_lists, documents)])
            print(f"  vs bm25s: identical lists {same}/{len(documents)}, mean share of our top-{k} in its {overlap:.3f} "
                  "(different idf by design)")

        sample = tokenizer.many(queries[: args.reference_queries])
        full = [ours._backend.scores(q) for q in sample]
        rs_full = rs.get_scores_many(sample)
        ref_full = [reference.get_scores(q) for q in sample]
        equal_rs = sum(np.array_equal(a.view(np.uint64), b.view(np.uint64)) for a, b in zip(full, rs_full))
        equal_ref = sum(np.array_equal(a.view(np.uint64), np.asarray(b).view(np.uint64)) for a, b in zip(full, ref_full))
        print(f"\nfloat64 scores of all {len(chunks)} chunks, bit for bit: = rank-bm25-rs {equal_rs}/{len(sample)}, "
              f"= rank-bm25 {equal_ref}/{len(sample)} queries")


if __name__ == "__main__":
    main()
