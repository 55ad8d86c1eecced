"""RM3 (rag.retrievers.query_transforms.rm3) against an independent computation written here with plain dicts and
loops (BM25 Okapi as rank-bm25 defines it, Anserini's relevance model as docs/retrievers.md states
it), weighted BM25 queries against the rank-bm25 library, and properties."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import ConfigError
from rag.retrievers import IndexStorage, build_retriever

# No stop words, lower-case words only: the oracle's tokens are text.split(), as our tokenizer's.
CORPUS = {
    "d01": "apple orchard harvest autumn apple",
    "d02": "apple pie recipe cinnamon",
    "d03": "orchard trees harvest ladder",
    "d04": "cinnamon spice market trade",
    "d05": "harvest festival autumn music",
    "d06": "pie crust butter flour",
    "d07": "stock market trade shares",
    "d08": "music festival stage lights",
    "d09": "autumn leaves trees colour",
    "d10": "flour mill grain wheat",
    "d11": "apple cider vinegar orchard",
    "d12": "ladder climbing safety rope",
}
K1, B, EPSILON = 1.5, 0.75, 0.25


def oracle_bm25(corpus: dict[str, str]):
    """score(query weights {term: w}) -> {doc: score} for docs holding a query term (rank-bm25's BM25Okapi)."""
    docs = {d: text.split() for d, text in corpus.items()}
    n = len(docs)
    avgdl = sum(len(tokens) for tokens in docs.values()) / n
    df: dict[str, int] = {}
    for tokens in docs.values():
        for term in set(tokens):
            df[term] = df.get(term, 0) + 1
    raw = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    floor = EPSILON * sum(raw.values()) / len(raw)
    idf = {t: (floor if v < 0 else v) for t, v in raw.items()}

    def score(weights: dict[str, float]) -> dict[str, float]:
        out = {}
        for d, tokens in docs.items():
            if not any(t in tokens for t in weights):
                continue
            total = 0.0
            for term, w in weights.items():
                tf = tokens.count(term)
                if term in idf:
                    total += w * idf[term] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(tokens) / avgdl))
            out[d] = total
        return out

    return score, docs, df, n


def ranked(scores: dict[str, float]) -> list[str]:
    """Float32 score desc, then id desc (the project's tie rule, restated)."""
    return [d for d, _ in sorted(sorted(scores.items(), reverse=True), key=lambda item: -np.float32(item[1]))]


def top(weights: dict[str, float], size: int) -> dict[str, float]:
    return dict(sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:size])


def oracle_rm3(question: str, fb_docs: int, fb_terms: int, weight: float, filter_terms: bool) -> dict[str, float]:
    score, docs, df, n = oracle_bm25(CORPUS)
    query = question.split()
    first = score({t: float(query.count(t)) for t in query})  # plain BM25: a token counts each time
    feedback = ranked(first)[:fb_docs]
    vectors = []
    for d in feedback:
        counts = {}
        for term in docs[d]:
            ok = 2 <= len(term) <= 20 and term.isalnum() and df[term] / n <= 0.1
            if ok or not filter_terms:
                counts[term] = counts.get(term, 0) + 1
        vectors.append((top(counts, fb_terms), float(np.float32(first[d]))))
    model: dict[str, float] = {}
    for vector, s in vectors:
        norm = sum(vector.values())
        if norm > 0.001:
            for term, c in vector.items():
                model[term] = model.get(term, 0.0) + c / norm * s
    model = top(model, fb_terms)
    total = sum(model.values())
    model = {t: v / total for t, v in model.items()} if total else {}
    expanded = {}
    for term in query:
        expanded[term] = expanded.get(term, 0.0) + weight / len(query)
    for term, v in model.items():
        expanded[term] = expanded.get(term, 0.0) + (1 - weight) * v
    return score({t: w for t, w in expanded.items() if w > 0})


def bm25(tmp_path, name="rm3", **params):
    retriever = build_retriever(name, "bm25", params)
    chunks = [_chunk(d, text) for d, text in CORPUS.items()]
    retriever.index(chunks, IndexStorage.under(tmp_path, name))
    return retriever


def _chunk(chunk_id: str, text: str):
    from rag.types import Chunk

    return Chunk(chunk_id=chunk_id, doc_id=chunk_id, url=f"https://example.org/{chunk_id}", text=text, position=0, n_tokens=0)


@pytest.mark.parametrize("backend", ["sparse", "rank_bm25"])
@pytest.mark.parametrize("settings_", [
    {"fb_docs": 3, "fb_terms": 5, "original_query_weight": 0.5, "filter_terms": False},
    {"fb_docs": 2, "fb_terms": 3, "original_query_weight": 0.3, "filter_terms": True},
    {"fb_docs": 10, "fb_terms": 10, "original_query_weight": 0.5, "filter_terms": True},
])
@pytest.mark.parametrize("question", ["apple harvest", "trade market", "autumn"])
def test_rm3_equals_the_hand_computation(tmp_path, backend, settings_, question):
    retriever = bm25(tmp_path, backend=backend, query={"type": "rm3", **settings_})
    [ranking] = retriever.search([question], k=12)
    expected = oracle_rm3(question, settings_["fb_docs"], settings_["fb_terms"], settings_["original_query_weight"],
                          settings_["filter_terms"])
    assert ranking.chunk_ids == ranked(expected)
    assert ranking.scores == pytest.approx([expected[d] for d in ranking.chunk_ids], rel=1e-6)


def test_feedback_adds_the_feedback_chunks_terms(tmp_path):
    """'apple harvest' -> orchard (in 2 of the 3 feedback chunks) enters the query: d03 (orchard, harvest)
    outranks what plain BM25 ranks, and a chunk holding no query term at all (d11 via orchard) is found."""
    plain = bm25(tmp_path, "plain").search(["apple harvest"], 12)[0]
    expanded = bm25(tmp_path, query={"type": "rm3", "fb_docs": 3, "fb_terms": 5, "filter_terms": False}).search(
        ["apple harvest"], 12)[0]
    assert set(expanded.chunk_ids) > set(plain.chunk_ids)
    assert "d09" in expanded.chunk_ids and "d09" not in plain.chunk_ids  # autumn came from the feedback


WORDS = st.sampled_from(["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "owl", "yak"])


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(WORDS, min_size=1, max_size=8), min_size=3, max_size=12),
       query=st.lists(WORDS, min_size=1, max_size=4, unique=True).filter(lambda q: len(q) in (1, 2, 4)),
       fb_docs=st.integers(1, 5), fb_terms=st.integers(1, 6))
def test_original_query_weight_one_is_plain_bm25(tmp_path_factory, texts, query, fb_docs, fb_terms):
    """lambda = 1: the expanded query is the question's terms weighted 1/|q| (|q| a power of two, so the
    scaling is exact): the same chunks in the same order as plain BM25, scores divided by |q|."""
    from rag.types import Chunk

    chunks = [Chunk(f"c{i:02d}", f"c{i:02d}", f"u{i}", " ".join(words), 0, 0) for i, words in enumerate(texts)]
    storage = IndexStorage.under(tmp_path_factory.mktemp("rm3"), "x")
    plain = build_retriever("x", "bm25", {"tokenizer": {"stopwords": False}})
    plain.index(chunks, storage)
    rm3 = build_retriever("x", "bm25", {"tokenizer": {"stopwords": False}, "query": {
        "type": "rm3", "original_query_weight": 1, "fb_docs": fb_docs, "fb_terms": fb_terms, "filter_terms": False}})
    rm3.index(chunks, storage)
    text = " ".join(query)
    expected, got = plain.search([text], 20)[0], rm3.search([text], 20)[0]
    assert got.chunk_ids == expected.chunk_ids
    assert got.scores == pytest.approx([s / len(query) for s in expected.scores], rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(WORDS, min_size=1, max_size=8), min_size=2, max_size=10),
       weights=st.dictionaries(WORDS, st.floats(0.01, 3.0), min_size=1, max_size=5))
def test_weighted_query_equals_rank_bm25_per_term(tmp_path_factory, texts, weights):
    """A weighted query's scores = sum_t w_t * rank-bm25's score of the one-term query t (the library itself)."""
    import rank_bm25

    from rag.types import Chunk

    chunks = [Chunk(f"c{i:02d}", f"c{i:02d}", f"u{i}", " ".join(words), 0, 0) for i, words in enumerate(texts)]
    retriever = build_retriever("w", "bm25", {"tokenizer": {"stopwords": False}})
    retriever.index(chunks, IndexStorage.under(tmp_path_factory.mktemp("w"), "w"))
    [ranking] = retriever.search_weighted([weights], 20)
    reference = rank_bm25.BM25Okapi(texts)
    expected = sum(w * np.asarray(reference.get_scores([t])) for t, w in weights.items())
    matching = [i for i, words in enumerate(texts) if set(words) & set(weights)]
    order = sorted(matching, key=lambda i: (-np.float32(expected[i]), -i))
    assert ranking.chunk_ids == [f"c{i:02d}" for i in order]
    assert ranking.scores == pytest.approx([float(np.float32(expected[i])) for i in order], rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("retriever_type, params, key, message", [
    ("dense", {"query": {"type": "rm3"}}, "retrievers.m.params.query", "applies to retriever type(s) bm25, not 'dense'"),
    ("bm25", {"query": {"type": "rm3", "fb_docs": 0}}, "retrievers.m.params.query.fb_docs", "greater than 0"),
    ("bm25", {"query": {"type": "rm3", "fbDocs": 5}}, "retrievers.m.params.query.fbDocs", "unknown key"),
    ("bm25", {"query": {"type": "rm3", "original_query_weight": 1.5}}, "retrievers.m.params.query.original_query_weight",
     "less than or equal to 1"),
    ("bm25", {"query": {"type": "hyde"}}, "retrievers.m.params.query", "applies to retriever type(s) dense, not 'bm25'"),
    ("bm25", {"query": {"type": "nope"}}, "retrievers.m.params.query", "nope"),
])
def test_config_errors_name_the_key(retriever_type, params, key, message):
    with pytest.raises(ConfigError) as error:
        build_retriever("m", retriever_type, params)
    assert error.value.key == key
    assert message in str(error.value)


def test_query_settings_change_the_cache_key_but_not_a_plain_one():
    from rag.config import config_from_mapping
    from rag.runner.retrieval import spec_fingerprint

    def fingerprint(params):
        config = config_from_mapping({"name": "t", "dataset": {"format": "wiki"},
                                      "retrievers": [{"name": "b", "type": "bm25", "params": params}]}, Path("."))
        return spec_fingerprint(config, "b")

    plain = fingerprint({})
    assert "query" not in plain["params"]  # caches written before query transforms stay valid
    assert len({str(fingerprint(p)) for p in [{}, {"query": {"type": "rm3"}}, {"query": {"type": "rm3", "fb_terms": 20}}]}) == 3


def test_the_ranking_cache_key_changes_with_the_tokenizer_code(edit_module):
    """Rankings cached by an older tokenizer or normalization (rag.normalize.fold) are not served."""
    from rag.config import config_from_mapping
    from rag.runner.retrieval import spec_fingerprint

    config = config_from_mapping({"name": "t", "dataset": {"format": "wiki"},
                                  "retrievers": [{"name": "b", "type": "bm25", "params": {}},
                                                 {"name": "f", "type": "rrf", "params": {"retrievers": ["b"]}}]},
                                 Path("."))
    before = spec_fingerprint(config, "f")
    edit_module("rag.normalize")
    after = spec_fingerprint(config, "f")
    assert after["inputs"][0]["code"] != before["inputs"][0]["code"] and after != before  # the fusion's key too


def test_a_run_config_names_the_query_key():
    from rag.config import config_from_mapping

    with pytest.raises(ConfigError) as error:
        config_from_mapping({"name": "t", "dataset": {"format": "wiki"}, "retrievers": [
            {"name": "bm25_rm3", "type": "bm25", "params": {"query": {"type": "rm3", "fb_terms": -1}}}]}, Path("."))
    assert error.value.key == "retrievers.bm25_rm3.params.query.fb_terms"


# issue 44: fb_docs 1000000000 allocated 224 GiB (depth was bounded by the corpus, fb_docs was not)
def test_fb_docs_beyond_the_corpus_is_bounded_by_its_chunks(tmp_path):
    settings_ = {"fb_docs": 10**9, "fb_terms": 5, "filter_terms": False}
    huge = bm25(tmp_path, "huge", query={"type": "rm3", **settings_}).search(["apple harvest"], 12)[0]
    whole = bm25(tmp_path, "whole", query={"type": "rm3", **settings_, "fb_docs": len(CORPUS)}).search(
        ["apple harvest"], 12)[0]
    assert huge == whole


def test_a_run_bounds_fb_docs_by_the_chunks_and_names_the_cap():
    from rag.config import bounded_by_chunks, bounded_settings, config_from_mapping

    config = config_from_mapping({"name": "t", "dataset": {"format": "wiki"}, "retrievers": [
        {"name": "bm25_rm3", "type": "bm25", "params": {"query": {"type": "rm3", "fb_docs": 10**9}}},
        {"name": "bm25", "type": "bm25", "params": {"query": {"type": "rm3", "fb_docs": 10}}}]}, Path("."))
    bounded = bounded_by_chunks(config, 48)
    assert [spec.params.query.fb_docs for spec in bounded.retrievers] == [48, 10]
    assert bounded_settings(config, bounded) == [
        "retrievers.bm25_rm3.params.query.fb_docs 1000000000 exceeds the corpus's 48 chunks; bounded to 48"]
