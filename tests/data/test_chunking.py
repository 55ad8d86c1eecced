"""Chunking with the real all-MiniLM-L6-v2 tokenizer: budget, coverage, ids, overlap, min length."""

import functools

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from rag.chunking import ChunkingConfig, chunk_documents
from rag.text.sentences import split_sentences
from rag.errors import ConfigError
from rag.models import load_tokenizer
from rag.types import Chunk, Document


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def n_tokens(tokenizer, text):
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def doc(text, doc_id="D"):
    return Document(doc_id, f"https://example.org/{doc_id}", doc_id, text)


def locate(text, chunks, overlap_fits):
    """Character spans of the chunks as verbatim slices of the document, in order (each starts at or
    after the previous one's start), together covering every non-space character, each overlap
    between consecutive chunks satisfying ``overlap_fits(overlapping text)``; None if no placement
    does. A chunk's text may occur more than once (a repeated word: 'e.g. e.g.'), so its first
    occurrence need not be its place: the occurrences are searched depth-first, with backtracking."""
    content_end = len(text.rstrip())

    def next_content(position):  # the first non-space character at or after position
        return len(text) - len(text[position:].lstrip())

    @functools.cache
    def place(index, previous_start, previous_end, covered):
        if index == len(chunks):
            return () if covered >= content_end else None
        piece = chunks[index].text
        latest = next_content(covered)  # starting later would leave a non-space character uncovered
        found = text.find(piece, previous_start)
        while 0 <= found <= latest:
            if found >= previous_end or overlap_fits(text[found:previous_end]):
                rest = place(index + 1, found, found + len(piece), max(covered, found + len(piece)))
                if rest is not None:
                    return ((found, found + len(piece)), *rest)
            found = text.find(piece, found + 1)
        return None

    return place(0, 0, 0, 0)


def test_locate_places_repeated_text_and_rejects_bad_chunkings():
    text = "Thex0 photosynthesis, photosynthesis, e.g.."
    pieces = [Chunk(f"D#{i}", "D", "u", piece, i, 0) for i, piece in enumerate(["Thex0 photosynthesis,", "photosynthesis,", "e.g.."])]
    anything, nothing = (lambda overlap: True), (lambda overlap: False)
    assert locate(text, pieces, nothing) == ((0, 21), (22, 37), (38, 43))  # the repeat is the second occurrence
    assert locate(text, [pieces[0], pieces[2]], anything) is None  # a non-space character left uncovered
    assert locate(text, [pieces[2], pieces[0]], anything) is None  # out of order
    overlapping = [pieces[0], Chunk("D#1", "D", "u", "photosynthesis, photosynthesis, e.g..", 1, 0)]
    assert locate(text, overlapping, anything) == ((0, 21), (6, 43))
    assert locate(text, overlapping, nothing) is None  # the overlap is over budget


def test_sentences_split_with_abbreviations():
    text = ("J. R. R. Tolkien was born in 1892. He met Dr. Smith in the U.S. in 1920, e.g. in Boston! "
            "Was it fun? Yes.\nNew line starts here")
    assert split_sentences(text) == [
        "J. R. R. Tolkien was born in 1892.", "He met Dr. Smith in the U.S. in 1920, e.g. in Boston!",
        "Was it fun?", "Yes.", "New line starts here"]


def test_hand_computed_packing_with_overlap(tokenizer):
    sentences = ["One two three four.", "Five six seven eight.", "Nine ten eleven twelve.", "Red green blue black."]
    assert [n_tokens(tokenizer, s) for s in sentences] == [5, 5, 5, 5]
    chunks = chunk_documents([doc(" ".join(sentences))], ChunkingConfig(max_tokens=10, overlap_tokens=5, min_tokens=0),
                             tokenizer=tokenizer, progress=False)
    assert [c.text for c in chunks] == [" ".join(sentences[0:2]), " ".join(sentences[1:3]), " ".join(sentences[2:4])]
    assert [c.chunk_id for c in chunks] == ["D#0", "D#1", "D#2"]
    assert [c.n_tokens for c in chunks] == [10, 10, 10]
    assert {c.url for c in chunks} == {"https://example.org/D"}


def test_no_overlap_and_tail_merge(tokenizer):
    text = "One two three four. Five six seven eight. Nine ten eleven twelve. Red."
    config = ChunkingConfig(max_tokens=12, overlap_tokens=0, min_tokens=3)
    chunks = chunk_documents([doc(text)], config, tokenizer=tokenizer, progress=False)
    # "red." (2 tokens) is below min_tokens and fits into the previous chunk (5 + 2 <= 12)
    assert [c.text for c in chunks] == ["One two three four. Five six seven eight.", "Nine ten eleven twelve. Red."]


def test_long_sentence_is_split_not_truncated(tokenizer):
    words = [f"word{i}" for i in range(120)]
    text = " ".join(words) + "."
    chunks = chunk_documents([doc(text)], ChunkingConfig(max_tokens=16, overlap_tokens=0, min_tokens=0),
                             tokenizer=tokenizer, progress=False)
    assert len(chunks) > 1
    assert all(n_tokens(tokenizer, c.text) <= 16 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_budget_must_fit_the_embedder_window(tokenizer):
    with pytest.raises(ConfigError, match="max_tokens.*254"):
        chunk_documents([doc("Hello world.")], ChunkingConfig(max_tokens=255), tokenizer=tokenizer, progress=False)
    with pytest.raises(ValueError):
        ChunkingConfig(max_tokens=20, overlap_tokens=20)
    with pytest.raises(ValueError):
        ChunkingConfig(chunk_size=100)


def test_default_budget_fills_minilm_window(tokenizer):
    from rag.chunking import embedder_token_limit
    assert embedder_token_limit(tokenizer, "all-MiniLM-L6-v2") == 256
    assert ChunkingConfig().max_tokens + tokenizer.num_special_tokens_to_add() == 256


WORDS = ("The cat sat on a mat Dr. Paris 1892 e.g. antidisestablishmentarianism naïve "
         "photosynthesis, (bracketed) U.S. København 東京 well-known").split()


def make_text(sentence_word_indices):
    """Sentences of vocabulary words; plain words get a unique suffix so every chunk is locatable."""
    counter = iter(range(10**6))
    sentences = []
    for indices in sentence_word_indices:
        words = [WORDS[i] + (f"x{next(counter)}" if WORDS[i].isalpha() else "") for i in indices]
        sentences.append(" ".join(words) + ("." if len(words) % 3 else "?"))
    return " ".join(sentences)


texts_strategy = st.lists(st.lists(st.integers(0, len(WORDS) - 1), min_size=1, max_size=40), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(texts_strategy.map(make_text), min_size=1, max_size=3),
       max_tokens=st.integers(8, 80), overlap_fraction=st.floats(0, 0.9), min_tokens=st.integers(0, 10))
@example(texts=[make_text([[0, 12, 12, 9]])], max_tokens=8, overlap_fraction=0.0, min_tokens=0)  # a repeated word
def test_chunking_properties(tokenizer, texts, max_tokens, overlap_fraction, min_tokens):
    config = ChunkingConfig(max_tokens=max_tokens, overlap_tokens=int(overlap_fraction * (max_tokens - 1)),
                            min_tokens=min(min_tokens, max_tokens))
    documents = [doc(text, f"d{i}") for i, text in enumerate(texts)]
    chunks = chunk_documents(documents, config, tokenizer=tokenizer, progress=False)
    assert chunks == chunk_documents(documents, config, tokenizer=tokenizer, progress=False)  # stable
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for document in documents:
        own = [c for c in chunks if c.doc_id == document.doc_id]
        assert [c.chunk_id for c in own] == [f"{document.doc_id}#{i}" for i in range(len(own))]
        for chunk in own:
            assert chunk.n_tokens == n_tokens(tokenizer, chunk.text) <= max_tokens
        # verbatim, in order, covering the document; repeated text stays within the overlap budget
        spans = locate(document.text, own, lambda overlap: n_tokens(tokenizer, overlap) <= config.overlap_tokens)
        assert spans is not None, f"chunks {[c.text for c in own]} are not such slices of {document.text!r}"
        for sentence in split_sentences(document.text):
            if n_tokens(tokenizer, sentence) <= max_tokens:
                assert any(sentence in c.text for c in own)
