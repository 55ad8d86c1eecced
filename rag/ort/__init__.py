"""The local sentence-transformers model on ONNX Runtime, on the CPU: float32 (``runtime:
onnxruntime``, the exported model as it is) and int8 (``precision: int8``, its int8 rewrite).

- :mod:`rag.ort.build`: the model exported (and for int8 calibrated and rewritten) once per cache
  (the int8 recipe, the weight format each CPU multiplies exactly, the atomic cached build);
- :mod:`rag.ort.calibration`: the calibration texts and each linear layer's input statistics;
- :mod:`rag.ort.gptq`: GPTQ rounding of the weights;
- :mod:`rag.ort.graph`: the int8 ONNX rewrite (SmoothQuant, one activation scale per token);
- :mod:`rag.ort.encoder`: :class:`OnnxEncoder`, the model behind the ``encode`` signature.
"""

from rag.ort.encoder import OnnxEncoder, identity

__all__ = ["OnnxEncoder", "identity"]
