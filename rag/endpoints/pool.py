"""Requests to an endpoint, ``concurrency`` at a time, for clients whose requests all must succeed
(embeddings, reranking): a request that fails for good stops the others at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def all_or_nothing(count: int, concurrency: int, job: Callable[[int], Awaitable[T]]) -> list[T]:
    """``[await job(i) for i in range(count)]``, at most ``concurrency`` jobs at a time; the first job
    that raises cancels the running ones and its exception is raised."""
    results: list[T | None] = [None] * count
    pending = iter(range(count))

    async def worker() -> None:
        for i in pending:
            results[i] = await job(i)

    tasks = [asyncio.create_task(worker()) for _ in range(min(concurrency, count))]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return results  # type: ignore[return-value]  # every index was filled by a worker
