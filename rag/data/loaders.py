"""``load_dataset``: one entry point, a loader per ``format`` chosen through a registry.

Each loader turns its config variant into a :class:`Dataset`; every bad record goes through a
:class:`rag.data.records.ProblemLog`, which raises :class:`rag.errors.DataError` naming file, line
and problem, or (``skip_invalid=True``) skips and counts it. A question set left without any valid
question is an error naming the set and its file; a directory configured where a file belongs is
an error naming the config key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.data.config import (
    BeirDatasetConfig, DatasetConfig, JsonlDatasetConfig, WikiDatasetConfig, bundled_wiki_dir,
)
from rag.data.near_duplicates import NearDuplicate
from rag.data.questions.provenance import PROVENANCE_SUFFIX, read_provenance, sibling
from rag.data.records import ProblemLog, read_corpus_jsonl, read_questions_jsonl
from rag.errors import ConfigError, DataError
from rag.registry import Registry
from rag.types import Document, Question


@dataclass
class Dataset:
    """A loaded corpus with its question sets.

    ``skipped`` counts skipped records by problem kind (empty when nothing was skipped) and
    ``skipped_examples`` holds the first few as ``"file:line: problem"``; ``source_files`` lists every
    file read, for hashing in the run manifest, where files under ``source_root`` are named relative
    to it. A folder of files (:mod:`rag.data.files`) sets ``files_read`` and ``files_skipped``; its
    skipped files are counted in ``skipped`` and listed in ``skipped_examples`` like bad records.
    ``question_provenance`` holds, per question set read from a file with a provenance sidecar
    (:mod:`rag.data.questions.provenance`), how it was made. A folder of files also records the files
    read once for having the same bytes as another (``duplicates``: duplicate -> file kept), the files
    a documentation tool generated, left out (``generated``: file -> tool, :mod:`rag.data.generated`),
    the files holding others' text (``near_duplicates``: file -> which, :mod:`rag.data.near_duplicates`:
    twins left out, compilations kept), what its cleaning rules dropped, by rule (``cleaning``), and
    the lines found repeated across its documents (``boilerplate``, the first few).
    """

    name: str
    documents: list[Document]
    question_sets: dict[str, list[Question]]
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[str] = field(default_factory=list)
    source_files: list[Path] = field(default_factory=list)
    source_root: Path | None = None
    files_read: int | None = None
    files_skipped: int = 0
    question_provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: dict[str, str] = field(default_factory=dict)
    generated: dict[str, str] = field(default_factory=dict)
    near_duplicates: dict[str, NearDuplicate] = field(default_factory=dict)
    cleaning: dict[str, int] = field(default_factory=dict)
    boilerplate: list[str] = field(default_factory=list)


class DatasetLoader(ABC):
    """Builds a :class:`Dataset` from one config variant; ``cache_dir`` (the run's cache folder, or
    None) is where a loader may keep what it computes from the files (the ``files`` loader: their
    converted text)."""

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = cache_dir

    @abstractmethod
    def load(self, config: Any, base_dir: Path, problems: ProblemLog) -> Dataset:
        """Read the files of ``config`` (relative paths resolved against ``base_dir``)."""


DATASET_LOADERS: Registry[DatasetLoader] = Registry("dataset format")


def resolve_path(path: Path, base_dir: Path) -> Path:
    return path if path.is_absolute() else base_dir / path


def require_file(path: Path, key: str) -> Path:
    """``path`` itself, unless it is a directory or another file that is not a regular one (a device
    such as /dev/null, a pipe): then a :class:`ConfigError` naming ``key``."""
    if path.is_dir():
        raise ConfigError(key, f"{path} is a directory; expected a JSONL file")
    if path.exists() and not path.is_file():
        raise ConfigError(key, f"{path} is not a regular file (a device, pipe or socket); expected a JSONL file")
    return path


def require_questions(set_name: str, questions: list[Question], path: Path, problems: ProblemLog) -> list[Question]:
    """``questions`` when there is at least one, else a :class:`DataError` naming the set and file."""
    if not questions:
        skipped = " after skipping the invalid records" if problems.skip_invalid else ""
        raise DataError(path, f"question set {set_name!r} holds no valid question{skipped}; expected at least one")
    return questions


@dataclass
class QuestionFiles:
    """The question sets read from question files, with the provenance of those that have a sidecar
    (:mod:`rag.data.questions.provenance`) and every file read (sidecars included)."""

    question_sets: dict[str, list[Question]]
    provenance: dict[str, dict[str, Any]]
    files: list[Path]


def read_question_files(question_paths: Mapping[str, Path], known_urls: set[str], problems: ProblemLog,
                        aliases: Mapping[str, str] | None = None) -> QuestionFiles:
    """Read every question file (set name -> path) against the corpus' URLs; the one reader of every
    loader. ``aliases``: a file left out for holding a kept file's text -> that file (a gold URL
    naming it is read as the kept one's)."""
    question_sets = {
        set_name: require_questions(set_name, read_questions_jsonl(path, set_name, known_urls, problems, aliases or {}),
                                    path, problems)
        for set_name, path in question_paths.items()
    }
    provenance = {set_name: made for set_name, path in question_paths.items() if (made := read_provenance(path)) is not None}
    sidecars = [sibling(path, PROVENANCE_SUFFIX) for set_name, path in question_paths.items() if set_name in provenance]
    return QuestionFiles(question_sets, provenance, [*question_paths.values(), *sidecars])


def load_jsonl_files(
    name: str, corpus_path: Path, question_paths: Mapping[str, Path], problems: ProblemLog,
) -> Dataset:
    """A corpus JSONL file plus question JSONL files (set name -> path), in our format."""
    documents = read_corpus_jsonl(corpus_path, problems)
    if not documents:
        raise DataError(corpus_path, "the corpus holds no valid document")
    questions = read_question_files(question_paths, {document.url for document in documents}, problems)
    return Dataset(name, documents, questions.question_sets, source_files=[corpus_path, *questions.files],
                   question_provenance=questions.provenance)


def questions_files(questions: Path | Mapping[str, Path], base_dir: Path) -> dict[str, Path]:
    """Set name -> question file of a ``questions`` setting: one file is the set named after its stem."""
    if isinstance(questions, Path):
        return {questions.stem.removesuffix(".jsonl"): require_file(resolve_path(questions, base_dir), "dataset.questions")}
    return {set_name: require_file(resolve_path(path, base_dir), f"dataset.questions.{set_name}")
            for set_name, path in questions.items()}


@DATASET_LOADERS.register("jsonl")
class JsonlLoader(DatasetLoader):
    """Our JSONL format; a single questions file becomes the set named after its file stem."""

    def load(self, config: JsonlDatasetConfig, base_dir: Path, problems: ProblemLog) -> Dataset:
        corpus = require_file(resolve_path(config.corpus, base_dir), "dataset.corpus")
        questions = questions_files(config.questions, base_dir)
        name = config.name or corpus.name.split(".")[0]
        return load_jsonl_files(name, corpus, questions, problems)


@DATASET_LOADERS.register("wiki")
class WikiLoader(DatasetLoader):
    """The bundled data set: ``corpus.jsonl.gz`` and ``questions/<set>.jsonl`` under data/wiki."""

    def load(self, config: WikiDatasetConfig, base_dir: Path, problems: ProblemLog) -> Dataset:
        root = resolve_path(config.path, base_dir) if config.path is not None else bundled_wiki_dir()
        if not root.is_dir():
            raise DataError(root, "bundled wiki data set not found (run scripts/build_wiki_data.py bundled)")
        questions = {set_name: root / "questions" / f"{set_name}.jsonl" for set_name in config.question_sets}
        return load_jsonl_files(config.name or "wiki", root / "corpus.jsonl.gz", questions, problems)


def load_dataset(
    config: DatasetConfig | BeirDatasetConfig | JsonlDatasetConfig | WikiDatasetConfig | Mapping[str, Any],
    skip_invalid: bool = False,
    base_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
) -> Dataset:
    """Load the data set ``config`` describes (a :class:`DatasetConfig`, a variant, or a plain mapping).

    Without ``skip_invalid`` the first bad record raises :class:`rag.errors.DataError`; with it, bad
    records are skipped and counted in ``Dataset.skipped``. Relative paths are resolved against
    ``base_dir`` (default: the working directory). With ``cache_dir`` (the run's ``cache_dir``), a
    folder's converted files are cached there (:mod:`rag.data.conversions`).
    """
    if isinstance(config, Mapping):
        config = DatasetConfig.model_validate(config)
    variant = config.root if isinstance(config, DatasetConfig) else config
    problems = ProblemLog(skip_invalid=skip_invalid)
    loader = DATASET_LOADERS.get(variant.format, key="dataset.format")(None if cache_dir is None else Path(cache_dir))
    dataset = loader.load(variant, Path(base_dir) if base_dir is not None else Path.cwd(), problems)
    dataset.skipped = dict(Counter(dataset.skipped) + problems.counts)  # a loader's own (skipped files) + records
    dataset.skipped_examples = [*dataset.skipped_examples, *problems.examples]
    return dataset
