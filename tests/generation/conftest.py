"""Shared fixtures: a whitespace token counter for hand-computed prompt cases and a stand-in server."""

from __future__ import annotations

import pytest

from rag.testing import StandInServer, StandInSettings


class WhitespaceCounter:
    """One token per whitespace-separated word: makes budgets easy to compute by hand."""

    def count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])


@pytest.fixture
def whitespace_counter() -> WhitespaceCounter:
    return WhitespaceCounter()


@pytest.fixture
def stand_in():
    with StandInServer(StandInSettings(slow_s=3.0, retry_after="0")) as server:
        yield server
