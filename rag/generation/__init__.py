"""Answer generation from the retrieved chunks: LLM endpoints, the managed local server, a baseline.

>>> with build_generator(parse_generator_config({"type": "local"}), cache_dir) as generator:
...     results = generator.generate(requests, on_result=print)

``build_generator`` looks the config's ``type`` up in :data:`GENERATORS` (``openai``, ``local``,
``extractive``); see docs/generation.md.
"""

from __future__ import annotations

from pathlib import Path

from rag.generation.base import GENERATORS, GenerationRequest, GenerationResult, Generator, ProgressCallback
from rag.endpoints.settings import BackoffSettings
from rag.generation.config import (
    ExtractiveGeneratorConfig,
    GeneratorConfig,
    LocalGeneratorConfig,
    OpenAIGeneratorConfig,
    parse_generator_config,
)
from rag.generation.extractive import ExtractiveGenerator
from rag.generation.llm import ChatGenerator, OpenAIGenerator
from rag.generation.local import LocalGenerator, TorchGenerator


def build_generator(config: GeneratorConfig, cache_dir: str | Path, **injected) -> Generator:
    """The generator for ``config``, to be used as a context manager (it owns servers and files).

    ``injected`` reaches the class's ``from_config`` (LLM generators accept ``token_counter`` and
    ``client_factory``), so tests can swap in their own parts.
    """
    return GENERATORS.get(config.type).from_config(config, Path(cache_dir), **injected)


__all__ = [
    "GENERATORS", "BackoffSettings", "ChatGenerator", "ExtractiveGenerator", "ExtractiveGeneratorConfig",
    "GenerationRequest", "GenerationResult", "Generator", "GeneratorConfig", "LocalGenerator",
    "LocalGeneratorConfig", "OpenAIGenerator", "TorchGenerator", "OpenAIGeneratorConfig", "ProgressCallback",
    "build_generator", "parse_generator_config",
]
