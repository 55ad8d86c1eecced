"""int8 embedding (``precision: int8``): :class:`rag.int8.encoder.Int8Encoder`."""

from rag.int8.encoder import Int8Encoder, identity

__all__ = ["Int8Encoder", "identity"]
