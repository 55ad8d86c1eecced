"""What the runner injects into the stages of a method that call models: :class:`StageServices`.

A leaf module (no project imports), so retrievers, query transforms and rerankers can all name it
without importing each other's packages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StageServices:
    """What a retriever's stages may use beyond their own index, injected by the runner (tests pass
    a small real one): ``generator_factory(config, cache_dir)`` opens a generator (the run's factory:
    the managed local llama.cpp server or an OpenAI-compatible client, with the generation cache and
    retry rules of :mod:`rag.generation`); ``default_generator`` is the generator config a stage uses
    when its own settings name none (the run's ``generation.generator``, else the local SmolLM2);
    ``cache_dir`` is the run's cache directory (a stage keeps its LLM outputs under
    ``<cache_dir>/stages/<method name>``); ``questions`` maps the TREC query id (``<set>/<qid>``,
    :mod:`rag.topics`) of every question of the data set to its text, for methods whose rankings are
    keyed by question id (a run file, :mod:`rag.retrievers.run_file`)."""

    generator_factory: Callable[[Any, Path], AbstractContextManager[Any]]
    default_generator: Any
    cache_dir: Path
    questions: Mapping[str, str] = field(default_factory=dict)

    def stage_cache(self, method: str) -> Path:
        """Where ``method``'s stages keep their LLM outputs: ``<cache_dir>/stages/<method>``."""
        return self.cache_dir / "stages" / method
