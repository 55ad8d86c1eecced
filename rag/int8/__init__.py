"""int8 embedding (``precision: int8``) of the local sentence-transformers model, on the CPU.

- :mod:`rag.int8.build`: the model exported, calibrated and rewritten once per cache (the recipe, the
  weight format each CPU multiplies exactly, the atomic cached build);
- :mod:`rag.int8.calibration`: the calibration texts and each linear layer's input statistics;
- :mod:`rag.int8.gptq`: GPTQ rounding of the weights;
- :mod:`rag.int8.graph`: the ONNX rewrite (SmoothQuant, one activation scale per token);
- :mod:`rag.int8.encoder`: :class:`Int8Encoder`, the model behind the ``encode`` signature.
"""

from rag.int8.encoder import Int8Encoder, identity

__all__ = ["Int8Encoder", "identity"]
