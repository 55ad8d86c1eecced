"""Offline question designs measured for validity and left out (docs/data.md, "Validity").

Usage:
  python scripts/question_designs.py CONFIG OUT_DIR [--set KEY=VALUE ...]

Writes one question file per design to OUT_DIR (``lead.jsonl``, ``lead4.jsonl``, ``appositive.jsonl``,
``mention.jsonl``, ``gmention.jsonl``; at most 300 questions each, 200 for ``gmention``, one per gold
document, drawn with ``random.Random(1)``; a question naming its gold document is skipped) for the
config's data set, and prints each file's size and its mean share of question content words found
in the gold document's text. Measure a design by running the files as question sets beside a
third-party set and comparing with ``scripts/question_validity.py compare`` (commands in docs/data.md).

Designs (none is a generator of ``rag-bench questions``: none met the validity goal, see docs/data.md):

- ``lead``: the first prose sentence of each document as a known-item question (Azzopardi et al.
  2007), the document's names removed, answer = its title: "{Name} is a {P}" -> "What is the name
  of the {P, cut at its first clause, relative or participle, at most 8 words}?"; "This command
  {does X}" -> "What command {does X}?"; "{Verb}s {X}" (a man page's description) -> "What {verb}s {X}?".
- ``lead4``: ``lead`` cut after its 4th content word at the next function word or comma.
- ``appositive``: what OTHER documents call a document (the anchor-text idea, without links): "the
  {description} {Title}" or "{Title}, a {description}," in another document's sentence -> "What is
  the name of the {description}?", gold = the titled document (titles that are proper names and
  unique).
- ``mention``: another document's sentence that names a document's title (a proper name), the
  title replaced by "what" (a cloze question), gold = the titled document.
- ``gmention``: the same with any page name (:func:`rag.data.questions.leak.document_names`, e.g.
  ``git-stash(1)``), for folders whose titles are not proper names.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from rag.config import load_config
from rag.data import load_dataset
from rag.data.questions.common import content_words
from rag.data.questions.leak import document_names, names_gold, normalize
from rag.data.questions.templates import (
    _ARTICLE,
    _DEFINITION,
    proper_name,
    prose_sentences,
)
from rag.stopwords import ENGLISH_STOPWORDS
from rag.types import Document

_CUT = re.compile(r"[,;:(]|\s(?:that|which|who|whose|where|when|and|or|but|also|as|such)\s|\s\w+(?:ed|ing)\s")
_VERB3 = re.compile(r"^(?P<verb>[A-Z][a-z]+s)\s+(?P<rest>.+)$")
_THIS = re.compile(r"^(?:This|The)\s+(?P<noun>command|tool|program|script|utility|function|module|option|page|"
                   r"document|library|package)\s+(?P<rest>[a-z].+)$")
_NP = r"((?:[A-Za-z][\w'-]*\s+){1,5}?)"
Record = dict  # one question record of our JSONL format


def _record(question: str, gold: str, answer: str, kind: str, **extra: str) -> Record:
    return {"question": question, "gold_urls": [[gold]], "answers": [answer], "type": kind, **extra}


def short_predicate(predicate: str, max_words: int = 8) -> str:
    """``predicate`` up to its first clause, relative or participle, at most ``max_words`` words,
    without trailing function words."""
    words = _CUT.split(" " + predicate + " ", maxsplit=1)[0].strip().rstrip(".").split()[:max_words]
    while words and words[-1].lower() in ENGLISH_STOPWORDS:
        words.pop()
    return " ".join(words)


def _without_names(text: str, names: frozenset[str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        words = name.split()
        if words:
            text = re.sub(r"(?<!\w)" + r"[\W_]*".join(map(re.escape, words)) + r"(?!\w)", "", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def lead(documents: Sequence[Document], names: dict[str, frozenset[str]]) -> list[Record]:
    records = []
    for document in documents:
        sentences = prose_sentences(document.text)
        if not sentences:
            continue
        sentence = re.split(r"[;:]", sentences[0].rstrip("."))[0]
        question = None
        if (match := _DEFINITION.match(sentence + ".")) and (names_gold(match.group("subject"), names[document.url])
                                                              or proper_name(match.group("subject"))):
            phrase = _ARTICLE.sub("", short_predicate(match.group("predicate")))
            if len(content_words(phrase)) >= 2:
                question = f"What is the name of the {phrase}?"
        elif match := _THIS.match(sentence):
            question = f"What {match.group('noun')} {match.group('rest')}?"
        elif ((match := _VERB3.match(sentence)) and match.group("verb").lower() not in ENGLISH_STOPWORDS
              and not match.group("verb").endswith("ss")):
            question = f"What {match.group('verb').lower()} {match.group('rest')}?"
        if question:
            question = _without_names(question, names[document.url])
            if 4 <= len(question.split()) <= 30:
                records.append(_record(question, document.url, document.title, "lead"))
    return records


def truncated(question: str, k: int) -> str:
    """``question`` cut after its ``k``-th content word (NLTK stop words are not content words; the
    question word is not counted, "name" of "What is the name of" is) at the next function word or
    comma, never right after a participle; trailing function words dropped."""
    body, kept, counted = question.rstrip("?").split(), [], 0
    for i, word in enumerate(body):
        bare = re.sub(r"\W", "", word.lower())
        if (counted >= k and (bare in ENGLISH_STOPWORDS or word.endswith(",")) and i > 0
                and not re.sub(r"\W", "", kept[-1]).endswith(("ing", "ed"))):
            break
        kept.append(word.rstrip(","))
        if i >= 1 and bare and bare not in ENGLISH_STOPWORDS:
            counted += 1
    while kept and re.sub(r"\W", "", kept[-1].lower()) in ENGLISH_STOPWORDS:
        kept.pop()
    return " ".join(kept) + "?"


def _proper_titles(documents: Sequence[Document]) -> dict[str, str]:
    """Title (without a parenthesized qualifier) -> URL, for unique titles that are proper names."""
    titles: dict[str, list[str]] = {}
    for document in documents:
        title = re.sub(r"\s*\([^)]*\)$", "", document.title).strip()
        if proper_name(title) and len(title) > 3 and not title.isupper():
            titles.setdefault(title, []).append(document.url)
    return {title: urls[0] for title, urls in titles.items() if len(urls) == 1}


def _by_first_word(names: Sequence[str] | dict[str, str]) -> dict[str, list[str]]:
    """Each name's first word -> the names starting with it, in ``names``' order."""
    by_first: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        by_first[name.split()[0]].append(name)
    return by_first


def _description(sentence: str, title: str) -> str | None:
    """The description another author gives ``title`` in ``sentence`` ("the {NP} Title", "Title, a {NP},")."""
    found = None
    for match in re.finditer(r"(?<![\w-])[Tt]he " + _NP + re.escape(title) + r"(?P<after>[\s,.;)]|$)", sentence):
        words, following = match.group(1).split(), sentence[match.end():].split()[:1]
        if following and following[0][:1].isupper() and match.group("after") == " ":
            continue
        if (words[-1][:1].islower() and not any(w.lower() in ENGLISH_STOPWORDS for w in words)
                and all(w[:1].islower() for w in words[1:]) and not words[-1].endswith(("ly", "ed", "ing"))):
            found = match.group(1).strip()
    for match in re.finditer(r"(?:^|[a-z] |\band )" + re.escape(title) + r", an? ([^,;()]{3,60}?),", sentence):
        words = match.group(1).split()
        if (words[-1][:1].islower() and words[-1].lower() not in ENGLISH_STOPWORDS
                and not words[-1].endswith(("ly", "ed", "ing")) and not {"is", "was", "are", "were", "has", "had"} & set(words)):
            found = match.group(1).strip()
    if found and len(content_words(found)) >= 2 and not {"who", "which", "that"} & {w.lower() for w in found.split()}:
        return found
    return None


def appositive(documents: Sequence[Document]) -> list[Record]:
    titles = _proper_titles(documents)
    by_first = _by_first_word(titles)
    records = []
    for source in documents:
        for sentence in prose_sentences(source.text):
            words = sentence.split()
            for i in range(1, len(words)):
                for title in by_first.get(words[i].strip(",.;"), ()):
                    if not re.search(r"(?<=\s)" + re.escape(title) + r"\b", sentence) or titles[title] == source.url:
                        continue
                    if description := _description(sentence, title):
                        records.append(_record(f"What is the name of the {description}?", titles[title], title,
                                               "appositive", source_url=source.url))
    return records


def mention(documents: Sequence[Document]) -> list[Record]:
    titles = _proper_titles(documents)
    by_first = _by_first_word(titles)
    records = []
    for source in documents:
        for sentence in prose_sentences(source.text):
            for title in (t for w in sorted(set(sentence.split()[1:])) for t in by_first.get(w.strip(",.;"), ())):
                gold = titles[title]
                if gold == source.url or not re.search(r"(?<=\s)" + re.escape(title) + r"\b", sentence):
                    continue
                question = re.sub(r"\s+", " ", sentence.replace(title, "what")).rstrip(".") + "?"
                if len(question.split()) <= 30:
                    records.append(_record(question, gold, title, "mention", source_url=source.url))
    return records


def page_name_mention(documents: Sequence[Document], names: dict[str, frozenset[str]]) -> list[Record]:
    owners = collections.defaultdict(set)
    for document in documents:
        for name in sorted(names[document.url]):
            if len(name) >= 4 and name not in ENGLISH_STOPWORDS:
                owners[name].add(document.url)
    unique = {name: next(iter(urls)) for name, urls in owners.items() if len(urls) == 1}
    by_first = _by_first_word(unique)
    records = []
    for source in documents:
        for sentence in prose_sentences(source.text):
            tokens = normalize(sentence).split()
            for i, token in enumerate(tokens):
                for name in by_first.get(token, ()):
                    if " ".join(tokens[i:i + len(name.split())]) != name or unique[name] == source.url:
                        continue
                    pattern = r"(?<!\w)" + r"[\W_]*".join(map(re.escape, name.split())) + r"(?:\(\d\))?(?!\w)"
                    question, replaced = re.subn(pattern, "what", sentence, count=1, flags=re.IGNORECASE)
                    if replaced and 6 <= len(question.split()) <= 30 and not question.startswith("what"):
                        records.append(_record(question.rstrip(".") + "?", unique[name], name, "mention",
                                               source_url=source.url))
    return records


def write_set(path: Path, records: list[Record], names: dict[str, frozenset[str]], texts: dict[str, str],
              n: int = 300) -> list[Record]:
    """At most ``n`` of ``records`` (shuffled with ``random.Random(1)``, one per gold document, none
    naming its gold document) written to ``path``; prints the count and the mean content-word
    share found in the gold document."""
    random.Random(1).shuffle(records)
    seen: set[str] = set()
    kept = []
    for record in records:
        gold = record["gold_urls"][0][0]
        if gold in seen or names_gold(record["question"], names[gold]):
            continue
        seen.add(gold)
        kept.append(record)
        if len(kept) >= n:
            break
    with path.open("w", encoding="utf-8") as handle:
        for i, record in enumerate(kept, start=1):
            record["id"] = f"{path.stem}-{i:04d}"
            handle.write(json.dumps(record) + "\n")
    shares = [len(content_words(r["question"]) & content_words(texts[r["gold_urls"][0][0]]))
              / max(1, len(content_words(r["question"]))) for r in kept]
    print(f"{path.stem}: {len(kept)} questions, mean share of content words in the gold document "
          f"{sum(shares) / max(1, len(shares)):.2f}")
    return kept


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    documents = load_dataset(load_config(args.config, args.overrides).dataset).documents
    names = {d.url: document_names(d.url, d.title) for d in documents}
    texts = {d.url: d.text for d in documents}
    args.out_dir.mkdir(parents=True, exist_ok=True)

    def write(stem, records, n=300):
        write_set(args.out_dir / f"{stem}.jsonl", records, names, texts, n)

    write("appositive", appositive(documents))
    write("mention", mention(documents))
    leads = lead(documents, names)
    write("lead", leads)  # shuffles ``leads`` in place: lead4 is cut from the same order
    write("lead4", [dict(r, question=truncated(r["question"], 4)) for r in leads])
    write("gmention", page_name_mention(documents, names), 200)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
