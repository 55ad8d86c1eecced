"""BM25: hand-computed scores, property-based parity with the rank-bm25 library, cache, config errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import BenchError, ConfigError
from rag.retrievers import IndexStorage, bm25_kernel, build_retriever
from rag.retrievers.bm25 import SparseBM25, top_k_positive_first
from rag.retrievers.ranking import top_k_indices
from rag.retrievers.index_cache import COMPLETE_MARKER

NO_STOPWORDS = {"tokenizer": {"stopwords": False}}

# The 3-document corpus scored by hand below. N = 3, lengths 3, 3, 2, avgdl = 8/3.
CORPUS = {"a": "cat sat mat", "b": "cat cat dog", "c": "dog bird"}
B_LEN3 = 1 - 0.75 + 0.75 * 3 / (8 / 3)  # 1.09375
B_LEN2 = 1 - 0.75 + 0.75 * 2 / (8 / 3)  # 0.8125
IDF_DF1 = math.log(2.5 / 1.5)  # sat, mat, bird: ln((3 - 1 + 0.5) / (1 + 0.5))
IDF_DF2 = math.log(1.5 / 2.5)  # cat, dog: negative -> floored
EPS_IDF = 0.25 * (3 * IDF_DF1 + 2 * IDF_DF2) / 5  # epsilon x mean idf over the 5 terms


def okapi_tf(tf: int, norm: float) -> float:
    return tf * 2.5 / (tf + 1.5 * norm)


def as_float32(values: list[float]) -> list[float]:
    """Hand-computed scores as retrievers hand them out: rounded to float32 (the one tie rule)."""
    return [float(np.float32(value)) for value in values]


@pytest.fixture
def okapi(make_chunks, storage):
    retriever = build_retriever("sparse", "bm25", NO_STOPWORDS)
    retriever.index(make_chunks(CORPUS), storage)
    return retriever


def test_okapi_scores_by_hand(okapi):
    """Only chunks holding a query token are returned: "c" has no "cat", "a" neither "bird" nor "dog"."""
    cat, bird_dog = okapi.search(["cat", "bird dog"], k=3)
    assert cat.chunk_ids == ["b", "a"]
    assert cat.scores == as_float32([EPS_IDF * okapi_tf(2, B_LEN3), EPS_IDF * okapi_tf(1, B_LEN3)])
    assert bird_dog.chunk_ids == ["c", "b"]
    expected_c = IDF_DF1 * okapi_tf(1, B_LEN2) + EPS_IDF * okapi_tf(1, B_LEN2)
    assert bird_dog.scores == as_float32([expected_c, EPS_IDF * okapi_tf(1, B_LEN3)])


def test_keep_non_matching_fills_the_list_as_rank_bm25s_top_k(make_chunks, storage):
    """``non_matching: keep``: every chunk is ranked, the non-matching ones at score 0, id descending."""
    retriever = build_retriever("sparse", "bm25", {"non_matching": "keep", **NO_STOPWORDS})
    retriever.index(make_chunks(CORPUS), storage)
    cat, bird_dog, unknown = retriever.search(["cat", "bird dog", "zebra"], k=3)
    assert cat.chunk_ids == ["b", "a", "c"]
    assert cat.scores == as_float32([EPS_IDF * okapi_tf(2, B_LEN3), EPS_IDF * okapi_tf(1, B_LEN3), 0.0])
    assert bird_dog.chunk_ids == ["c", "b", "a"] and bird_dog.scores[2] == 0.0
    assert unknown.chunk_ids == ["c", "b", "a"] and unknown.scores == [0.0, 0.0, 0.0]


def test_a_matching_chunk_is_kept_even_at_idf_zero(make_chunks, storage):
    """Okapi with epsilon 0: "cat" (df 2 of 3, negative raw idf) gets idf 0, so a and b score 0 for
    "cat" — yet they hold it, so they are returned (tie: id descending); c, which lacks it, is not."""
    retriever = build_retriever("sparse", "bm25", {"epsilon": 0.0, **NO_STOPWORDS})
    retriever.index(make_chunks(CORPUS), storage)
    cat, cat_bird = retriever.search(["cat", "cat bird"], k=3)
    assert cat.chunk_ids == ["b", "a"] and cat.scores == [0.0, 0.0]
    assert cat_bird.chunk_ids == ["c", "b", "a"]
    assert cat_bird.scores == as_float32([IDF_DF1 * okapi_tf(1, B_LEN2), 0.0, 0.0])


def test_repeated_query_tokens_count_repeatedly(okapi):
    once, twice = okapi.search(["bird", "bird bird"], k=1)
    assert twice.scores[0] == pytest.approx(2 * once.scores[0])


def test_unknown_and_empty_queries_match_nothing(okapi):
    for ranking in okapi.search(["zebra", ""], k=5):
        assert ranking.chunk_ids == [] and ranking.scores == []


def test_bm25plus_scores_by_hand(make_chunks, storage):
    retriever = build_retriever("sparse", "bm25", {"variant": "bm25plus", **NO_STOPWORDS})
    retriever.index(make_chunks(CORPUS), storage)
    (bird,) = retriever.search(["bird"], k=3)
    idf = math.log(4 / 1)  # ln((N + 1) / df)
    assert bird.chunk_ids == ["c"]  # a and b lack "bird": a positive score (idf x delta), but no match
    assert bird.scores == as_float32([idf * (1 + 2.5 / (1.5 * B_LEN2 + 1))])
    keep = build_retriever("keep", "bm25", {"variant": "bm25plus", "non_matching": "keep", **NO_STOPWORDS})
    keep.index(make_chunks(CORPUS), storage)
    (bird,) = keep.search(["bird"], k=3)
    assert bird.chunk_ids == ["c", "b", "a"]  # both idf x delta, tie -> id descending
    assert bird.scores == as_float32([idf * (1 + 2.5 / (1.5 * B_LEN2 + 1)), idf, idf])


def test_identical_documents_tie_by_chunk_id(make_chunks, storage):
    retriever = build_retriever("sparse", "bm25", NO_STOPWORDS)
    texts = {"z": "red fox", "m": "red fox", "a": "blue sky", "q": "red fox", "b": "green tree", "c": "grey cloud", "d": "big sea"}
    retriever.index(make_chunks(texts), storage)
    (ranking,) = retriever.search(["fox"], k=2)
    assert ranking.chunk_ids == ["z", "q"]  # m, q, z tie: chunk id descending


def reference_model(variant: str, corpus: list[list[str]], k1: float, b: float, extra: float):
    classes = {"okapi": ("BM25Okapi", "epsilon"), "bm25l": ("BM25L", "delta"), "bm25plus": ("BM25Plus", "delta")}
    name, extra_name = classes[variant]
    return getattr(rank_bm25, name)(corpus, k1=k1, b=b, **{extra_name: extra})


TOKENS = st.sampled_from(["t0", "t1", "t2", "t3", "t4", "t5", "t6"])


@settings(max_examples=60, deadline=None)
@given(
    variant=st.sampled_from(["okapi", "bm25l", "bm25plus"]),
    corpus=st.lists(st.lists(TOKENS, min_size=1, max_size=12), min_size=1, max_size=15),
    queries=st.lists(st.lists(st.sampled_from(["t0", "t1", "t2", "t3", "t4", "t5", "t6", "oov"]), max_size=6), min_size=1, max_size=4),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
    extra=st.floats(0.0, 2.0),
    k=st.integers(1, 20),
    non_matching=st.sampled_from(["drop", "keep"]),
)
def test_parity_with_rank_bm25(make_chunks, tmp_path_factory, variant, corpus, queries, k1, b, extra, k, non_matching):
    """Our default backend vs the rank-bm25 library called directly: same scores, same rankings —
    over the documents holding a query token (``drop``) or over all documents (``keep``)."""
    ids = [f"d{i:03d}" for i in range(len(corpus))]
    extra_name = "epsilon" if variant == "okapi" else "delta"
    params = {"variant": variant, "k1": k1, "b": b, extra_name: extra, "non_matching": non_matching, **NO_STOPWORDS}
    retriever = build_retriever("sparse", "bm25", params)
    retriever.index(make_chunks(dict(zip(ids, (" ".join(doc) for doc in corpus)))),
                    IndexStorage.under(tmp_path_factory.mktemp("bm25"), "sparse"))
    reference = reference_model(variant, corpus, k1, b, extra)
    rankings = retriever.search([" ".join(query) for query in queries], k)
    for query, ranking in zip(queries, rankings):
        full_precision = retriever._backend.scores(retriever.tokenizer(" ".join(query)))
        np.testing.assert_array_equal(full_precision, reference.get_scores(query))  # bitwise equal
        expected_scores = reference.get_scores(query).astype(np.float32)  # as trec_eval reads them
        candidates = [i for i, doc in enumerate(corpus) if non_matching == "keep" or set(doc) & set(query)]
        expected_order = sorted(candidates, key=lambda i: (expected_scores[i], ids[i]), reverse=True)[:k]
        assert ranking.chunk_ids == [ids[i] for i in expected_order]
        assert ranking.scores == expected_scores[expected_order].tolist()


def test_streamed_build_in_many_blocks_is_bitwise_rank_bm25(make_chunks, storage, monkeypatch):
    """Blocks of 3 texts and score slices of 5 postings: the block-wise build changes no bit."""
    monkeypatch.setattr(SparseBM25, "BLOCK_TEXTS", 3)
    monkeypatch.setattr(SparseBM25, "SCORE_SLICE", 5)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(30)]
    corpus = [list(rng.choice(words, size=rng.integers(1, 15), p=np.arange(30, 0, -1) / 465)) for _ in range(25)]
    ids = [f"d{i:03d}" for i in range(len(corpus))]
    queries = [list(rng.choice(words, size=4)) for _ in range(10)]
    for variant, extra in (("okapi", {"epsilon": 0.25}), ("bm25l", {"delta": 0.5}), ("bm25plus", {"delta": 1.0})):
        retriever = build_retriever(variant, "bm25", {"variant": variant, **extra, **NO_STOPWORDS})
        retriever.index(make_chunks(dict(zip(ids, (" ".join(doc) for doc in corpus)))), storage)
        reference = reference_model(variant, corpus, 1.5, 0.75, next(iter(extra.values())))
        for query in queries:
            np.testing.assert_array_equal(retriever._backend.scores(query), reference.get_scores(query))


@pytest.mark.parametrize("dense_reads", [0, 4, 1 << 30], ids=["sparse", "by-reads", "dense"])
@pytest.mark.parametrize("parallel_postings", [0, bm25_kernel.PARALLEL_POSTINGS])
def test_many_queries_rank_as_rank_bm25(make_chunks, storage, monkeypatch, parallel_postings, dense_reads):
    """40 queries at once in the compiled kernel, shared among threads or not, each query's documents
    listed as postings name them (sparse), by a scan of all scores (dense) or as its reads decide;
    at depth 30 over 25 documents every query has fewer than k matching documents: its list holds
    those (``drop``), or the zero scores fill it (``keep``). Searching the same queries again (their
    pieces now known) changes nothing."""
    monkeypatch.setattr(bm25_kernel, "PARALLEL_POSTINGS", parallel_postings)
    monkeypatch.setattr(bm25_kernel, "DENSE_READS", dense_reads)
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(30)]
    corpus = [list(rng.choice(words, size=rng.integers(1, 15))) for _ in range(25)]
    ids = [f"d{i:03d}" for i in range(len(corpus))]
    queries = [list(rng.choice(words + ["oov"], size=rng.integers(0, 6))) for _ in range(40)]
    reference = reference_model("okapi", corpus, 1.5, 0.75, 0.25)
    for non_matching in ("drop", "keep"):
        retriever = build_retriever("okapi", "bm25", {"non_matching": non_matching, **NO_STOPWORDS})
        retriever.index(make_chunks(dict(zip(ids, (" ".join(doc) for doc in corpus)))), storage)
        for k in (3, 30, 3):
            for query, ranking in zip(queries, retriever.search([" ".join(query) for query in queries], k)):
                expected = reference.get_scores(query).astype(np.float32)
                candidates = [i for i, doc in enumerate(corpus) if non_matching == "keep" or set(doc) & set(query)]
                order = sorted(candidates, key=lambda i: (expected[i], ids[i]), reverse=True)[:k]
                assert ranking.chunk_ids == [ids[i] for i in order] and ranking.scores == expected[order].tolist()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_kernel_equals_brute_force_on_random_postings(data):
    """Random postings with many equal values (ties in float32 across documents), random queries
    with repeated and absent terms: each mode of the kernel returns the brute-force ranking of the
    float64 sums in query order, under the tie rule (float32 score desc, index desc): the positive
    float32 scores, then (``fill_zeros``) the zeros."""
    n_docs = data.draw(st.integers(1, 60))
    n_terms = data.draw(st.integers(1, 8))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dense = rng.random((n_docs, n_terms)) < rng.random(n_terms)
    values = np.where(dense, rng.choice([0.5, 1.0, 1.0, 2.25, 1e-46, 3.0], size=(n_docs, n_terms)), 0.0)
    postings = scipy.sparse.csc_matrix(values)
    queries = [list(rng.integers(0, n_terms, size=rng.integers(0, 6))) for _ in range(data.draw(st.integers(1, 6)))]
    k = data.draw(st.integers(1, n_docs + 2))
    fill_zeros = data.draw(st.booleans())
    terms = np.array([t for q in queries for t in q], dtype=np.int64)
    starts = np.cumsum([0] + [len(q) for q in queries]).astype(np.int64)
    for dense_reads in (0, 1 << 30):
        bm25_kernel.DENSE_READS, saved = dense_reads, bm25_kernel.DENSE_READS
        try:
            docs, scores, counts = bm25_kernel.top_k_many(postings.indptr, postings.indices, postings.data, n_docs,
                                                          terms, starts, k, fill_zeros)
        finally:
            bm25_kernel.DENSE_READS = saved
        for i, query in enumerate(queries):
            sums = np.zeros(n_docs)
            for term in query:
                sums = sums + values[:, term]
            kept = [d for d in range(n_docs) if fill_zeros or np.float32(sums[d]) > 0]
            order = sorted(kept, key=lambda d: (np.float32(sums[d]), d), reverse=True)[:k]
            assert counts[i] == len(order)
            assert docs[i, : counts[i]].tolist() == order
            assert scores[i, : counts[i]].tolist() == sums[order].astype(np.float32).tolist()


def test_query_vocabulary_follows_the_index(make_chunks, storage):
    """Pieces resolved by one search are reused by the next, but a new index (another corpus, other
    term numbers) starts a new query vocabulary: a stale one would score against the wrong postings."""
    retriever = build_retriever("okapi", "bm25", NO_STOPWORDS)
    retriever.index(make_chunks({"a": "apple banana", "b": "cherry date", "c": "elder fig"}), storage)
    assert retriever.search(["cherry", "fig zzz"], 1)[0].chunk_ids == ["b"]
    retriever.index(make_chunks({"a": "fig", "b": "grape", "c": "cherry cherry"}), storage)
    assert [r.chunk_ids for r in retriever.search(["cherry", "fig zzz"], 1)] == [["c"], ["a"]]


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.0, 0.0, 0.0, -1.0, 0.5, 1.0, 1.0, 2.0, 3.5]), min_size=1, max_size=40),
    k=st.integers(1, 45),
)
def test_top_k_over_positive_scores_equals_the_full_top_k(scores, k):
    scores = np.array(scores)
    assert top_k_positive_first(scores, k).tolist() == top_k_indices(scores, k).tolist()


def test_reference_backend_matches_default_on_text(make_chunks, storage):
    sentences = ["The cat sat on the mat.", "Dogs and cats, together!", "A bird sang.", "The mat is red; the cat is not."]
    texts = {f"c{i}": text for i, text in enumerate(sentences)}
    queries = ["the cat on the mat", "red bird", "dogs"]
    results = []
    for backend in ("sparse", "rank_bm25"):
        retriever = build_retriever(backend, "bm25", {"backend": backend})
        retriever.index(make_chunks(texts), storage)
        results.append(retriever.search(queries, k=4))
    assert results[0] == results[1]


class CountingTokenizer:
    """Counts the texts tokenized (one by one or in blocks)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls = tokenizer, 0

    def __call__(self, text):
        self.calls += 1
        return self.tokenizer(text)

    def many(self, texts):
        self.calls += len(texts)
        return self.tokenizer.many(texts)

    def encode(self, texts, vocabulary):
        self.calls += len(texts)
        return self.tokenizer.encode(texts, vocabulary)


def test_index_is_cached_and_interrupted_build_is_redone(make_chunks, tmp_path, storage):
    chunks = make_chunks(CORPUS)
    first = build_retriever("sparse", "bm25", NO_STOPWORDS)
    first.index(chunks, storage)
    (index_dir,) = (tmp_path / "bm25").iterdir()

    second = build_retriever("sparse", "bm25", NO_STOPWORDS)
    second.tokenizer = CountingTokenizer(second.tokenizer)
    second.index(chunks, storage)
    assert second.tokenizer.calls == 0  # loaded, nothing tokenized
    assert second.search(["bird dog"], 3) == first.search(["bird dog"], 3)

    (index_dir / COMPLETE_MARKER).unlink()  # as if the build had been interrupted
    third = build_retriever("sparse", "bm25", NO_STOPWORDS)
    third.tokenizer = CountingTokenizer(third.tokenizer)
    third.index(chunks, storage)
    assert third.tokenizer.calls == len(chunks)
    assert (index_dir / COMPLETE_MARKER).is_file()
    assert third.search(["bird dog"], 3) == first.search(["bird dog"], 3)


@pytest.mark.parametrize(
    ("damaged", "damage"),
    [
        ("postings.npz", lambda data: data[: len(data) // 2]),  # truncated: BadZipFile
        ("postings.npz", lambda data: b""),
        ("zero_tf_scores.npy", lambda data: data[:20]),
        ("vocabulary.json", lambda data: data[:-5]),
        ("vocabulary.json", lambda data: b'["cat"]'),  # readable, but inconsistent with the postings
    ],
)
def test_an_unreadable_cache_file_is_rebuilt_in_the_same_run(make_chunks, tmp_path, storage, caplog, damaged, damage):
    chunks = make_chunks(CORPUS)
    first = build_retriever("sparse", "bm25", NO_STOPWORDS)
    first.index(chunks, storage)
    (index_dir,) = (tmp_path / "bm25").iterdir()
    target = index_dir / damaged
    target.write_bytes(damage(target.read_bytes()))

    second = build_retriever("sparse", "bm25", NO_STOPWORDS)
    second.tokenizer = CountingTokenizer(second.tokenizer)
    second.index(chunks, storage)
    assert second.tokenizer.calls == len(chunks)  # rebuilt
    assert "unreadable" in caplog.text and str(index_dir) in caplog.text
    assert second.search(["cat", "bird dog"], 3) == first.search(["cat", "bird dog"], 3)
    third = build_retriever("sparse", "bm25", NO_STOPWORDS)
    third.tokenizer = CountingTokenizer(third.tokenizer)
    third.index(chunks, storage)
    assert third.tokenizer.calls == 0  # the repaired cache is read again


def test_changed_settings_or_corpus_use_another_index(make_chunks, tmp_path, storage):
    build_retriever("s", "bm25", NO_STOPWORDS).index(make_chunks(CORPUS), storage)
    build_retriever("s", "bm25", {"k1": 1.2, **NO_STOPWORDS}).index(make_chunks(CORPUS), storage)
    build_retriever("s", "bm25", NO_STOPWORDS).index(make_chunks({**CORPUS, "c": "dog bird bird"}), storage)
    assert len(list((tmp_path / "bm25").iterdir())) == 3


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"k1": -1}, "retrievers.sparse.params.k1"),
        ({"b": 1.5}, "retrievers.sparse.params.b"),
        ({"kl": 1.2}, "retrievers.sparse.params.kl"),
        ({"variant": "bm26"}, "retrievers.sparse.params.variant"),
        ({"backend": "lucene"}, "retrievers.sparse.params.backend"),
        ({"tokenizer": {"stemmer": "snowball"}}, "retrievers.sparse.params.tokenizer.stemmer"),
        ({"tokenizer": {"name": "whitespace"}}, "retrievers.sparse.params.tokenizer.name"),
        ({"variant": "bm25l", "epsilon": 0.3}, "retrievers.sparse.params"),
        ({"delta": 0.3}, "retrievers.sparse.params"),
    ],
)
def test_bad_params_name_their_key(params, key):
    with pytest.raises(ConfigError) as error:
        build_retriever("sparse", "bm25", params)
    assert error.value.key == key


def test_unknown_retriever_type_and_misuse():
    with pytest.raises(ConfigError, match="retrievers.x.type"):
        build_retriever("x", "bm99", {})
    with pytest.raises(BenchError, match="before index"):
        build_retriever("sparse", "bm25", {}).search(["q"], 1)


def test_duplicate_chunk_ids_and_empty_corpus_are_errors(make_chunks, storage):
    retriever = build_retriever("sparse", "bm25", {})
    with pytest.raises(BenchError, match="empty corpus"):
        retriever.index([], storage)
    chunks = make_chunks({"a": "x"})
    with pytest.raises(BenchError, match="duplicate chunk id 'a'"):
        retriever.index(chunks + chunks, storage)


def test_corpus_without_tokens_is_an_error(make_chunks, storage):
    retriever = build_retriever("sparse", "bm25", {})  # stop words removed: nothing left
    with pytest.raises(BenchError, match="none of the 2 chunks has a token"):
        retriever.index(make_chunks({"a": "the and of", "b": ""}), storage)
