"""The generator interface: question + top chunks in, answer (or a recorded failure) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.registry import Registry


@dataclass(frozen=True)
class GenerationRequest:
    """One answer to produce. ``key`` identifies it in the run (e.g. ``"dense/q17"``).

    ``closed_book``: answer without any context (the ``closed_book`` baseline); ``contexts`` must be
    empty then, and the prompt has no context section (an empty ``contexts`` list without the flag
    is a retrieval that found nothing: the usual prompt with an empty context)."""

    key: str
    question: str
    contexts: list[str]
    closed_book: bool = False

    def __post_init__(self) -> None:
        if self.closed_book and self.contexts:
            raise ValueError(f"{self.key}: a closed-book request carries no contexts")


@dataclass
class GenerationResult:
    """An answer, or a failure record when retries were exhausted (``answer`` is None then).

    A failed question is reported as failed in the tables: it is never scored as a zero answer.
    """

    key: str
    answer: str | None
    error_kind: str | None = None
    error_message: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.answer is None


ProgressCallback = Callable[[GenerationResult], None]


class Generator(ABC):
    """Produces answers for a batch of requests. Implementations must return exactly one result per
    request, in request order, and must not raise for per-request failures."""

    @abstractmethod
    def generate(
        self, requests: Sequence[GenerationRequest], on_result: ProgressCallback | None = None
    ) -> list[GenerationResult]: ...

    def run_facts(self) -> dict:
        """What the run's manifest records under ``generation`` about how the answers were made
        beyond the config (the managed local server's settings and deaths); empty by default."""
        return {}

    def close(self) -> None:
        """Release resources (servers, clients)."""

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


GENERATORS: Registry[Generator] = Registry("generator")
