"""A tiny name -> class registry, so config names map to implementations without if/else chains.

An entry may be lazy (:meth:`Registry.register_lazy`): its name is known, its module is imported on
the first :meth:`Registry.get` of that name, so an optional backend costs nothing until used."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Generic, TypeVar

from rag.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, type[T]] = {}
        self._lazy: dict[str, str] = {}  # name -> the module that registers it when imported

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorator(cls: type[T]) -> type[T]:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = cls
            self._lazy.pop(name, None)
            return cls

        return decorator

    def register_lazy(self, name: str, module: str) -> None:
        """Know ``name`` now; import ``module`` (which registers it) on its first :meth:`get`."""
        if name in self._entries or name in self._lazy:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._lazy[name] = module

    def get(self, name: str, key: str = "type") -> type[T]:
        if name not in self._entries and name in self._lazy:
            importlib.import_module(self._lazy[name])
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names())
            raise ConfigError(key, f"unknown {self.kind} {name!r}; expected one of: {known}") from None

    def names(self) -> list[str]:
        return sorted(set(self._entries) | set(self._lazy))

    def __contains__(self, name: str) -> bool:
        return name in self._entries or name in self._lazy
