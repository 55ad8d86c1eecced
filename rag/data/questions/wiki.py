"""Seeded, deterministic question generators over a Wikipedia-style corpus.

Each generator takes documents (``metadata`` may hold ``topic`` and ``description``), a count and a
seed, and returns questions whose ids are ``f"{set}-{i:04d}"``. The random generator is
:func:`rag.data.questions.common.seeded_rng` of the seed and the set name, and every choice iterates
over sorted inputs, so the same corpus and seed always give the same questions.

* ``seed_style`` -- the reference system's templates (seed 003; data/seed_repo/questions_100.json),
  in its proportions per 100: 40 "What is {first three words of a sentence}?" (answer: that
  sentence), 19 factual title templates ("Who discovered {title}?", "Where is {title} located?", ...),
  11 inferential title templates ("How does {title} work?", ...) -- answer: the article's first
  sentence (the reference cut the first 200 characters, mid-word) -- 15 comparative and 15 multi-hop
  questions over two random articles ("How are {A} and {B} related?"), both required.
* ``known_item`` -- from unique short descriptions of >= 4 words that do not contain the title:
  "What is the name of the {description}?" / "Who is the {description}?" (People); answer: the title.
* ``multi_doc`` -- two articles of the same topic whose descriptions share a content word,
  compared by title or by description; ground truth: both URLs, both required.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.data.questions.common import allocate, first_sentence, numbered, seeded_rng
from rag.text.sentences import split_sentences
from rag.types import Document, Question

DEFAULT_SEED = 3

SEED_STYLE_MIX = (("factual_sentence", 40), ("factual_title", 19), ("inferential", 11), ("comparative", 15), ("multi_hop", 15))
SEED_STYLE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "factual_sentence": ("What is {words}?",),
    "factual_title": (
        "What is {title}?", "Who discovered {title}?", "What does {title} mean?", "What are the main features of {title}?",
        "When did {title} happen?", "Where is {title} located?", "When was {title} established?",
        "Where did {title} originate?", "Who is associated with {title}?",
    ),
    "inferential": ("How does {title} work?", "Why was {title} created?", "How is {title} used?", "Why is {title} important?"),
    "comparative": (
        "What is the difference between {a} and {b}?", "What are the similarities between {a} and {b}?",
        "Compare {a} and {b}.", "How do {a} and {b} differ?",
    ),
    "multi_hop": ("How are {a} and {b} related?",),
}
SEED_STYLE_LABELS = {  # kind -> (the reference's question_type, difficulty)
    "factual_sentence": ("factual", "easy"), "factual_title": ("factual", "easy"), "inferential": ("inferential", "medium"),
    "comparative": ("comparative", "medium"), "multi_hop": ("multi_hop", "hard"),
}
KNOWN_ITEM_TEMPLATES = {"People": ("Who is the {d}?", "Name the {d}."), "": ("What is the name of the {d}?", "What is the {d} called?")}
MULTI_DOC_TITLE_TEMPLATES = (
    "What is the difference between {a} and {b}?", "What do {a} and {b} have in common?",
    "Compare {a} and {b}.", "How do {a} and {b} differ?",
)
MULTI_DOC_DESCRIPTION_TEMPLATES = ("How does the {a} differ from the {b}?", "What do the {a} and the {b} have in common?")
MIN_SENTENCE_WORDS = 6
MIN_DESCRIPTION_WORDS = 4
_STOPWORDS = frozenset("that this with from which their other than into also born century based known".split())
_WORD = re.compile(r"[A-Za-z][a-z]+")


def _question(set_name: str, text: str, gold: list[Document], answers: list[str], metadata: dict) -> Question:
    return Question(qid="", text=text, gold_urls=[[d.url] for d in gold], answers=answers, qtype=set_name,
                    question_set=set_name, metadata=metadata)


def _collect(count: int, make: Callable[[], Question | None], seen_texts: set[str], max_tries_per_item: int = 50) -> list[Question]:
    """Call ``make`` until ``count`` questions with new texts exist (``None`` = try again)."""
    questions: list[Question] = []
    for _ in range(count * max_tries_per_item):
        if len(questions) == count:
            break
        question = make()
        if question is not None and question.text not in seen_texts:
            seen_texts.add(question.text)
            questions.append(question)
    if len(questions) < count:
        raise ValueError(f"could only make {len(questions)} of {count} questions from this corpus")
    return questions


def generate_seed_style(documents: Sequence[Document], count: int, seed: int = DEFAULT_SEED) -> list[Question]:
    """The reference system's template questions (see the module docstring)."""
    set_name, rng = "seed_style", seeded_rng(seed, "seed_style")
    docs = sorted(documents, key=lambda d: d.doc_id)
    sentences = {d.doc_id: [s for s in split_sentences(d.text) if len(s.split()) >= MIN_SENTENCE_WORDS] for d in docs}
    with_sentences = [d for d in docs if sentences[d.doc_id]]

    def make(kind: str) -> Question | None:
        template = rng.choice(SEED_STYLE_TEMPLATES[kind])
        seed_type, difficulty = SEED_STYLE_LABELS[kind]
        metadata = {"seed_type": seed_type, "difficulty": difficulty, "template": template}
        if kind == "factual_sentence":
            doc = rng.choice(with_sentences)
            sentence = rng.choice(sentences[doc.doc_id])
            text = template.format(words=" ".join(sentence.split()[:3]))
            return _question(set_name, text, [doc], [sentence], metadata)
        if kind in ("factual_title", "inferential"):
            doc = rng.choice(docs)
            return _question(set_name, template.format(title=doc.title), [doc], [first_sentence(doc)], metadata)
        a, b = rng.sample(docs, 2)
        text = template.format(a=a.title, b=b.title)
        return _question(set_name, text, [a, b], [f"{first_sentence(a)} {first_sentence(b)}"], metadata)

    seen: set[str] = set()
    questions = [
        question
        for (kind, _), n in zip(SEED_STYLE_MIX, allocate(count, [w for _, w in SEED_STYLE_MIX]))
        for question in _collect(n, lambda kind=kind: make(kind), seen)
    ]
    rng.shuffle(questions)
    return numbered(set_name, questions)


@dataclass(frozen=True)
class _Described:
    document: Document
    phrase: str  # the description as a noun phrase: article dropped, first letter cased as in running text


def _case_votes(documents: Sequence[Document]) -> Counter[str]:
    """Per lower-cased word: occurrences written lower-case minus occurrences capitalized."""
    votes: Counter[str] = Counter()
    for document in documents:
        for word in _WORD.findall(document.text):
            votes[word.lower()] += 1 if word[0].islower() else -1
    return votes


def description_phrase(description: str, case_votes: Counter[str]) -> str:
    """``"A 1968 film by Stanley Kubrick."`` -> ``"1968 film by Stanley Kubrick"``; ``"Painting by X"`` ->
    ``"painting by X"`` (lower-cased when the corpus writes that word lower-case more often)."""
    phrase = description.strip().rstrip(".").strip()
    phrase = re.sub(r"^(?:a|an|the)\s+", "", phrase, flags=re.IGNORECASE)
    first = phrase.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower() and case_votes[first.lower()] > 0:
        phrase = first.lower() + phrase[len(first):]
    return phrase


def unique_descriptions(documents: Sequence[Document]) -> list[_Described]:
    """Documents whose short description is unique in the corpus, has >= 4 words and omits the title."""
    descriptions = {d.doc_id: str(d.metadata.get("description") or "").strip() for d in documents}
    counts = Counter(text.casefold() for text in descriptions.values() if text)
    votes = _case_votes(documents)
    described = []
    for document in sorted(documents, key=lambda d: d.doc_id):
        text = descriptions[document.doc_id]
        if (text and counts[text.casefold()] == 1 and len(text.split()) >= MIN_DESCRIPTION_WORDS
                and document.title.casefold() not in text.casefold()):
            described.append(_Described(document, description_phrase(text, votes)))
    return described


def generate_known_item(documents: Sequence[Document], count: int, seed: int = DEFAULT_SEED) -> list[Question]:
    """Questions from short descriptions whose answer is the article's title."""
    set_name, rng = "known_item", seeded_rng(seed, "known_item")
    candidates = unique_descriptions(documents)
    if len(candidates) < count:
        raise ValueError(f"only {len(candidates)} usable descriptions for {count} known-item questions")
    questions = []
    for item in rng.sample(candidates, count):
        topic = str(item.document.metadata.get("topic", ""))
        template = rng.choice(KNOWN_ITEM_TEMPLATES["People" if topic == "People" else ""])
        questions.append(_question(set_name, template.format(d=item.phrase), [item.document], [item.document.title], {
            "template": template, "description": item.document.metadata.get("description"), "topic": topic}))
    return numbered(set_name, questions)


def _content_words(phrase: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(phrase) if len(w) >= 4 and w.lower() not in _STOPWORDS}


def generate_multi_doc(documents: Sequence[Document], count: int, seed: int = DEFAULT_SEED) -> list[Question]:
    """Comparisons of two same-topic articles with related descriptions; both articles required."""
    set_name, rng = "multi_doc", seeded_rng(seed, "multi_doc")
    described = unique_descriptions(documents)
    by_topic_word: dict[tuple[str, str], list[_Described]] = defaultdict(list)
    for item in described:
        for word in sorted(_content_words(item.phrase)):
            by_topic_word[(str(item.document.metadata.get("topic", "")), word)].append(item)
    pairs_seen: set[tuple[str, str]] = set()

    def make() -> Question | None:
        a = rng.choice(described)
        topic = str(a.document.metadata.get("topic", ""))
        words = sorted(w for w in _content_words(a.phrase) if len(by_topic_word[(topic, w)]) > 1)
        if not words:
            return None
        word = rng.choice(words)
        b = rng.choice([item for item in by_topic_word[(topic, word)] if item is not a])
        pair = tuple(sorted((a.document.doc_id, b.document.doc_id)))
        if pair in pairs_seen:
            return None
        pairs_seen.add(pair)
        by_description = rng.random() < 1 / 3
        template = rng.choice(MULTI_DOC_DESCRIPTION_TEMPLATES if by_description else MULTI_DOC_TITLE_TEMPLATES)
        text = template.format(a=a.phrase, b=b.phrase) if by_description else template.format(a=a.document.title, b=b.document.title)
        answer = f"{first_sentence(a.document)} {first_sentence(b.document)}"
        return _question(set_name, text, [a.document, b.document], [answer], {
            "template": template, "topic": topic, "shared_word": word, "by_description": by_description})

    return numbered(set_name, _collect(count, make, set()))


QUESTION_GENERATORS: dict[str, Callable[[Sequence[Document], int, int], list[Question]]] = {
    "seed_style": generate_seed_style, "known_item": generate_known_item, "multi_doc": generate_multi_doc,
}
