"""Rewrite a float32 ONNX model's linear layers into int8 products with one activation scale per token.

For every ``MatMul`` whose second input is a weight ``W`` [K, N] (a ``torch.nn.Linear`` exported:
``y = x W (+ b)``), its input ``x`` is smoothed and quantized for that layer alone, even where layers
read the same input (a transformer layer's query, key and value): one smoothing shared by the three
(SmoothQuant's choice where it folds ``s`` into a LayerNorm, which BERT's post-norm residual forbids)
left the mean cosine error to float32 at 3.6e-4 instead of 2.9e-4 and the top-10 overlap at 0.977
instead of 0.982 (``scripts/bench_dense.py``; docs/retrievers.md, "int8"), for 4.5% less time.

1. **Smoothing** (SmoothQuant, Xiao et al. 2023): per input channel ``s_k = peak_k^α / w_k^(1-α)``,
   ``peak_k`` = the calibration ``max |x_k|`` (:mod:`rag.ort.calibration`), ``w_k`` = the layer's
   largest ``|W[k, :]|``, α = :data:`ALPHA`. ``x W = (x / s)(diag(s) W)``: dividing the activations moves
   their outlier channels' range into the weights, where a per-channel grid absorbs it.
2. **Weights**: ``diag(s) W`` rounded to int8 by GPTQ (:mod:`rag.ort.gptq`) against the smoothed
   calibration inputs' ``Xᵀ X``, symmetric, one scale per output column.
3. **Activations**, per call and per token (each row of ``x / s`` alone, never the batch as a
   whole): uint8, ``scale = (max(hi, 0) - min(lo, 0)) / 255`` and ``zp = round(-min(lo, 0) / scale)``
   over the row (ONNX Runtime's ``DynamicQuantizeLinear`` rule, applied to each row), by
   ``QuantizeLinear`` with a block of the whole row (opset 21). So a text's vector does not depend
   on which texts share its batch.
4. **Product**: ``MatMulIntegerToFloat`` (uint8 x int8 codes, int32 sums, times the weight scales), then
   ``(y - zp ⊗ c) · scale`` with ``c_n = Σ_k Q[k, n] · wscale_n``: the row's zero point is taken out
   after the product, since ONNX Runtime's integer products take a single zero point for ``x``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np

from rag.ort.calibration import LayerInputs

#: SmoothQuant's migration strength (chosen by measurement: docs/retrievers.md, "int8").
ALPHA = 0.5
OPSET = 21
_TINY = np.float32(1e-12)


def smoothing(peak: np.ndarray, weight: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """SmoothQuant's per-input-channel factors ``s`` of a weight [K, N] whose input has the calibration
    ``peak`` [K]."""
    weight_peak = np.abs(weight).max(axis=1)
    return np.maximum(np.maximum(peak, 1e-5) ** alpha / np.maximum(weight_peak, 1e-5) ** (1 - alpha), 1e-5)


def weight_codes(codes: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The stored weights [K, N] of int8 ``codes`` [N, K] and their zero point: the codes as int8
    (zero point 0), or as uint8 ``code + 128`` (zero point 128) where ``signed`` is False (the same
    values, multiplied exactly on CPUs whose uint8 x int8 products saturate: :mod:`rag.ort.build`)."""
    if signed:
        return np.ascontiguousarray(codes.T), np.array(0, np.int8)
    return np.ascontiguousarray((codes.T.astype(np.int16) + 128).astype(np.uint8)), np.array(128, np.uint8)


def quantize_linear_layers(model, layers: Mapping[str, tuple[np.ndarray, LayerInputs]],
                           round_weights: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
                           signed_weights: bool):
    """``model`` (an ``onnx.ModelProto``, float32) with every ``MatMul`` whose weight is one of
    ``layers`` (module name -> (``nn.Linear`` weight [N, K], its calibration inputs)) replaced as the
    module docstring says; ``round_weights(weight [N, K], gram [K, K]) -> (codes int8 [N, K], scales [N])``.
    ``signed_weights``: :func:`weight_codes`. The model is converted to opset :data:`OPSET` first.
    Raises ValueError if a layer is not found."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper, version_converter

    model = version_converter.convert_version(model, OPSET)
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    by_shape = defaultdict(list)
    for name, (weight, _) in layers.items():
        by_shape[weight.T.shape].append(name)

    def layer_of(node) -> str | None:
        if node.op_type != "MatMul" or node.input[1] not in initializers:
            return None
        value = numpy_helper.to_array(initializers[node.input[1]])
        return next((name for name in by_shape.get(value.shape, ()) if np.array_equal(layers[name][0].T, value)), None)

    found = {index: layer for index, node in enumerate(graph.node) if (layer := layer_of(node)) is not None}
    missing = set(layers) - set(found.values())
    if missing:
        raise ValueError(f"int8 build: no MatMul of the exported model holds the weights of {sorted(missing)}")

    constants = [numpy_helper.from_array(np.array(0, np.float32), "int8_zero"),
                 numpy_helper.from_array(np.array(255, np.float32), "int8_levels"),
                 numpy_helper.from_array(_TINY, "int8_tiny"),
                 numpy_helper.from_array(np.array(1, np.float32), "int8_one"),
                 numpy_helper.from_array(np.array([-1], np.int64), "int8_last_axis")]
    replaced: dict[int, list] = {}
    dropped_weights = set()
    for number, (index, layer) in enumerate(found.items()):
        node, (weight, calibration) = graph.node[index], layers[layer]
        weight = weight.T  # [K, N]
        factors = smoothing(calibration.peak, weight)
        codes, scales = round_weights((weight * factors[:, None]).T, calibration.gram / np.outer(factors, factors))
        stored, stored_zero = weight_codes(codes, signed_weights)
        p = f"int8_l{number}"
        constants += [numpy_helper.from_array((1 / factors).astype(np.float32), f"{p}_inverse_smoothing"),
                      numpy_helper.from_array(stored, f"{p}_codes"),
                      numpy_helper.from_array(stored_zero, f"{p}_codes_zp"),
                      numpy_helper.from_array(scales.astype(np.float32), f"{p}_scales"),
                      numpy_helper.from_array((codes.astype(np.int64).sum(axis=1) * scales).astype(np.float32),
                                              f"{p}_zp_correction")]
        dropped_weights.add(node.input[1])
        replaced[index] = [
            # the smoothed input, its per-row range, scale and zero point, and its uint8 codes
            helper.make_node("Mul", [node.input[0], f"{p}_inverse_smoothing"], [f"{p}_x"]),
            helper.make_node("ReduceMin", [f"{p}_x", "int8_last_axis"], [f"{p}_rowmin"], keepdims=1),
            helper.make_node("ReduceMax", [f"{p}_x", "int8_last_axis"], [f"{p}_rowmax"], keepdims=1),
            helper.make_node("Min", [f"{p}_rowmin", "int8_zero"], [f"{p}_lo"]),
            helper.make_node("Max", [f"{p}_rowmax", "int8_zero"], [f"{p}_hi"]),
            helper.make_node("Sub", [f"{p}_hi", f"{p}_lo"], [f"{p}_span"]),
            helper.make_node("Div", [f"{p}_span", "int8_levels"], [f"{p}_step"]),
            helper.make_node("Max", [f"{p}_step", "int8_tiny"], [f"{p}_scale"]),
            helper.make_node("Div", [f"{p}_lo", f"{p}_scale"], [f"{p}_lo_steps"]),
            helper.make_node("Neg", [f"{p}_lo_steps"], [f"{p}_zp_steps"]),
            helper.make_node("Round", [f"{p}_zp_steps"], [f"{p}_zp_float"]),
            helper.make_node("Cast", [f"{p}_zp_float"], [f"{p}_zp"], to=TensorProto.UINT8),
            helper.make_node("QuantizeLinear", [f"{p}_x", f"{p}_scale", f"{p}_zp"], [f"{p}_q"], axis=-1,
                             block_size=weight.shape[0]),
            # the integer product, its zero-point correction and the row's scale
            helper.make_node("MatMulIntegerToFloat", [f"{p}_q", f"{p}_codes", "int8_one", f"{p}_scales", "", f"{p}_codes_zp"],
                             [f"{p}_product"], domain="com.microsoft"),
            helper.make_node("Mul", [f"{p}_zp_float", f"{p}_zp_correction"], [f"{p}_correction"]),
            helper.make_node("Sub", [f"{p}_product", f"{p}_correction"], [f"{p}_unscaled"]),
            helper.make_node("Mul", [f"{p}_unscaled", f"{p}_scale"], [node.output[0]]),
        ]
    nodes = [new for index, node in enumerate(graph.node) for new in replaced.get(index, [node])]
    still_read = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name not in dropped_weights or init.name in still_read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + constants)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    # The IR version of the opsets (onnx's table), not the input's, which the converter keeps: an
    # older one is invalid for opset 21, and onnx's newest is refused by an older onnxruntime.
    model.ir_version = helper.find_min_ir_version_for(model.opset_import, ignore_unknown=True)
    onnx.checker.check_model(model)
    return model
