"""``rag-bench run --docs DIR``: from a folder of documents to a verdict in one command.

The built-in ``documents`` config (rag/resources/configs/documents.yaml), or any config whose data
set is a folder of files, is pointed at DIR; unless a question file is given, questions are made from
the documents' chunks (:func:`rag.runner.questions.make_questions`, cached by corpus, chunking,
generator and seed) and the run reads them like any question file, provenance included.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag.config import RunConfig, load_config
from rag.data import DatasetConfig
from rag.runner.questions import GeneratorKind, QuestionsResult, make_questions
from rag.errors import ConfigError
from rag.resources import builtin_config

DOCUMENTS_CONFIG = "documents"  # the built-in config behind --docs


def documents_config(docs: Path, config: Path | None, overrides: list[str], questions: Path | None) -> RunConfig:
    """``config`` (default: the built-in ``documents``) with ``dataset.path`` = ``docs`` and, when
    given, ``dataset.questions`` = ``questions``; both relative to the working directory."""
    if not docs.is_dir():
        raise ConfigError("--docs", f"{docs} is not a directory; expected a folder of documents")
    located = [f"dataset.path={json.dumps(str(docs.resolve()))}"]
    if questions is not None:
        located.append(f"dataset.questions={json.dumps(str(questions.resolve()))}")
    loaded = load_config(config or builtin_config(DOCUMENTS_CONFIG), [*overrides, *located])  # never a local file
    if loaded.dataset.format != "files":
        raise ConfigError("--docs", f"the config's dataset.format is {loaded.dataset.format!r}; --docs needs a "
                                    "config of a folder of files (format: files), such as the built-in 'documents'")
    return loaded


def with_made_questions(
    config: RunConfig, n: int, generator: GeneratorKind, progress: bool = True,
) -> tuple[RunConfig, QuestionsResult]:
    """``config`` reading questions made from its own documents (cached; see the module docstring)."""
    result = make_questions(config, n, generator, progress=progress)
    dataset = config.dataset.root.model_copy(update={"questions": result.path})
    return config.model_copy(update={"dataset": DatasetConfig(dataset)}), result
