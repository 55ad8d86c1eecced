"""Test helpers that are part of the package so tests and benchmark scripts share them."""

from rag.testing.stand_in import FAULTS, StandInProcess, StandInServer, StandInSettings

__all__ = ["FAULTS", "StandInProcess", "StandInServer", "StandInSettings"]
