"""Dataset configuration: one pydantic model, discriminated by ``format``.

``DatasetConfig`` wraps one of four variants (``config.root``); attribute access is forwarded to
it, so ``config.format`` and ``config.path`` work directly::

    DatasetConfig(format="wiki", question_sets=["known_item"])
    DatasetConfig(format="jsonl", corpus="my/corpus.jsonl", questions={"dev": "my/dev.jsonl"})
    DatasetConfig.model_validate({"format": "beir", "path": "datasets/scifact", "split": "test"})
    DatasetConfig(format="files", path="mydocs", questions="mydocs-questions.jsonl")

Relative paths are resolved against the ``base_dir`` given to :func:`rag.data.load_dataset` (the
config file's directory, say), or against the working directory when none is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, RootModel

from rag.resources import data_dir
from rag.validation import ConfigModel

WIKI_QUESTION_SETS = ("seed_style", "known_item", "multi_doc")  # the generated sets, the default
WikiQuestionSet = Literal["seed_style", "known_item", "multi_doc", "reference"]  # + the reference's own


def bundled_wiki_dir() -> Path:
    """The bundled data set, shipped in the package (``rag/resources/data/wiki``, :mod:`rag.resources`)."""
    return data_dir("wiki")


class _DatasetVariant(ConfigModel):
    name: str | None = Field(None, description="dataset name in reports (default: derived from the files)")


class WikiDatasetConfig(_DatasetVariant):
    """The bundled Wikipedia data set (data/wiki): corpus plus the chosen question sets (the generated
    ones by default; ``reference`` is the reference system's own questions)."""

    format: Literal["wiki"]
    question_sets: list[WikiQuestionSet] = Field(default_factory=lambda: list(WIKI_QUESTION_SETS), min_length=1)
    path: Path | None = Field(None, description="directory of the data set (default: the bundled data/wiki)")


class JsonlDatasetConfig(_DatasetVariant):
    """Our own format: a corpus JSONL file and one question JSONL file or a mapping set name -> file."""

    format: Literal["jsonl"]
    corpus: Path
    questions: Path | dict[str, Path]


class BeirDatasetConfig(_DatasetVariant):
    """A BEIR data set directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

    format: Literal["beir"]
    path: Path
    split: str = "test"
    title_in_text: bool = Field(True, description="index 'title text' like BEIR's SentenceBERT models")


FILES_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".xhtml", ".pdf", ".docx")


class FilesDatasetConfig(_DatasetVariant):
    """A folder of documents (rag.data.files): one document per file, its URL the path relative to
    ``path``; questions from a JSONL file or a mapping set name -> file, as for ``jsonl`` (none: the
    data set has documents only, for ``rag-bench questions``)."""

    format: Literal["files"]
    path: Path
    include: list[str] = Field(
        default_factory=lambda: [f"**/*{suffix}" for suffix in FILES_SUFFIXES], min_length=1,
        description="glob patterns of the files to read, relative to path ('**' spans folders; '*' does not "
                    "match '/' nor a leading '.')",
    )
    exclude: list[str] = Field(default_factory=list, description="glob patterns of files (or folders) to leave out")
    questions: Path | dict[str, Path] | None = None
    max_file_mb: float = Field(50.0, gt=0, description="larger files are skipped (too_large)")
    strict: bool = Field(False, description="an unreadable file is an error (exit 2) instead of skipped and counted")
    generated_pages: Literal["drop", "keep"] = Field(
        "drop", description="drop: files a documentation tool generated beside its pages (Sphinx's index, search and "
                            "module-index pages, _sources/ and _static/; Doxygen's, Javadoc's and rustdoc's indices, "
                            "member and use lists and source listings; MkDocs' 404 page; mdBook's print page) and "
                            "HTML pages that only redirect are left out (rag.data.generated); keep: they are read "
                            "like the others")
    near_duplicates: Literal["drop", "keep"] = Field(
        "drop", description="drop: a file holding another's text (the same page in another format, a compilation "
                            "of pages) is left out (rag.data.near_duplicates); keep: every file is indexed")


DatasetVariant = Annotated[
    Union[WikiDatasetConfig, JsonlDatasetConfig, BeirDatasetConfig, FilesDatasetConfig], Field(discriminator="format"),
]


class DatasetConfig(RootModel[DatasetVariant]):
    """The ``dataset`` section of a run config (see the module docstring)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # type: ignore[misc]
        except AttributeError:
            if name == "root":
                raise
            return getattr(self.root, name)
