"""A tiny name -> class registry, so config names map to implementations without if/else chains."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from rag.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorator(cls: type[T]) -> type[T]:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = cls
            return cls

        return decorator

    def get(self, name: str, key: str = "type") -> type[T]:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            raise ConfigError(key, f"unknown {self.kind} {name!r}; expected one of: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries
