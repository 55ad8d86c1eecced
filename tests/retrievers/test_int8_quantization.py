"""The int8 recipe's parts against independent oracles: GPTQ against round-to-nearest (equal where no
error can move, better where inputs correlate), the rewritten ONNX graph run by ONNX Runtime against
a numpy computation of the same integer arithmetic written here from the formulas, and the CPU rule
for the weight format."""

from __future__ import annotations

import numpy as np
import pytest

from rag.ort.build import signed_products_are_exact
from rag.ort.calibration import LayerInputs
from rag.ort.gptq import gptq, row_scales


def round_to_nearest(weight: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The baseline: each weight on the nearest point of its row's symmetric int8 grid."""
    return np.clip(np.rint(weight / scales[:, None]), -127, 127).astype(np.int8)


def output_error(x: np.ndarray, weight: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> float:
    return float(np.sum((x @ weight.T - x @ (codes * scales[:, None]).T) ** 2))


def test_gptq_equals_round_to_nearest_when_the_inputs_are_uncorrelated():
    rng = np.random.default_rng(3)
    weight = rng.normal(size=(24, 40))
    hessian = np.diag(rng.uniform(0.5, 2.0, size=40))  # diagonal: no error can be moved
    codes, scales = gptq(weight, hessian)
    np.testing.assert_allclose(scales, np.abs(weight).max(axis=1) / 127)
    np.testing.assert_array_equal(codes, np.clip(np.rint(weight / scales[:, None]), -127, 127))


@pytest.mark.parametrize("seed", range(5))
def test_gptq_has_a_smaller_output_error_than_round_to_nearest_on_correlated_inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, 8)) @ rng.normal(size=(8, 64)) + 0.1 * rng.normal(size=(2000, 64))
    weight = rng.normal(size=(32, 64))
    codes, scales = gptq(weight, x.T @ x)
    assert codes.dtype == np.int8 and np.abs(codes.astype(int)).max() <= 127
    np.testing.assert_allclose(scales, row_scales(weight))
    nearest = round_to_nearest(weight, scales)
    assert output_error(x, weight, codes, scales) < 0.5 * output_error(x, weight, nearest, scales)


def test_a_column_that_never_fires_gets_code_zero():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 12))
    x[:, 4] = 0.0
    codes, _ = gptq(rng.normal(size=(6, 12)), x.T @ x)
    assert not codes[:, 4].any()


@pytest.mark.parametrize(("cpuinfo", "exact"), [
    ("processor: 0\nflags\t\t: fpu sse avx2 fma\n", False),  # AMD EPYC (Zen 3): AVX2 only
    ("flags\t\t: avx2 avx512f avx512bw avx512_vnni\n", True),
    ("flags\t\t: avx2 avx_vnni\n", True),  # Alder Lake and later
    ("flags\t\t: avx2 avx512f amx_tile amx_int8 avx512_vnni\n", True),
    ("Features\t: fp asimd asimddp\n", False),  # no x86 flags line
])
def test_int8_weights_only_where_the_cpu_sums_their_products_exactly(cpuinfo, exact):
    assert signed_products_are_exact(cpuinfo) is exact


# --- the rewritten graph, run by ONNX Runtime, against numpy -----------------------------------------

def three_layer_model(weights: dict[str, np.ndarray], biases: dict[str, np.ndarray]):
    """x [B, T, K] -> a = x W_a + b_a, b = x W_b + b_b (the same input), c = relu(a) W_c + b_c."""
    from onnx import TensorProto, helper, numpy_helper

    def linear(source, name):
        return [helper.make_node("MatMul", [source, f"{name}_w"], [f"{name}_mm"]),
                helper.make_node("Add", [f"{name}_mm", f"{name}_b"], [name])]

    nodes = [*linear("x", "a"), *linear("x", "b"), helper.make_node("Relu", ["a"], ["a_relu"]), *linear("a_relu", "c")]
    initializers = [numpy_helper.from_array(weights[n].T.copy(), f"{n}_w") for n in "abc"]
    initializers += [numpy_helper.from_array(biases[n].astype(np.float32), f"{n}_b") for n in "abc"]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "bc"]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", 16])],
                              outputs, initializers)
    opsets = [helper.make_opsetid("", 17)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))


def oracle_linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, peak: np.ndarray) -> np.ndarray:
    """The module docstring of rag.ort.graph, in numpy: smoothing s = sqrt(peak / max|W|) (alpha 0.5),
    round-to-nearest int8 weights of diag(s) W, per-row uint8 activations of x / s by ONNX Runtime's
    DynamicQuantizeLinear rule (range widened to 0, zero point rounded half to even), int64 sums."""
    weight_peak = np.abs(weight).max(axis=0)  # torch layout [N, K]: per input channel
    s = np.maximum(np.sqrt(np.maximum(peak, 1e-5) / np.maximum(weight_peak, 1e-5)), 1e-5)
    smoothed = weight * s[None, :]
    w_scale = np.abs(smoothed).max(axis=1) / 127
    codes = np.clip(np.rint(smoothed / w_scale[:, None]), -127, 127).astype(np.int64)
    rows = (x / s).astype(np.float32).reshape(-1, x.shape[-1])
    lo, hi = np.minimum(rows.min(axis=1), 0), np.maximum(rows.max(axis=1), 0)
    scale = np.maximum((hi - lo) / 255, 1e-12)
    zero = np.rint(-lo / scale)
    q = np.clip(np.rint(rows / scale[:, None]) + zero[:, None], 0, 255).astype(np.int64)
    sums = (q - zero[:, None].astype(np.int64)) @ codes.T  # exact integers
    out = sums * scale[:, None] * w_scale[None, :] + bias
    return out.reshape(*x.shape[:-1], -1)


@pytest.fixture(scope="module")
def layers():
    rng = np.random.default_rng(11)
    weights = {"a": rng.normal(size=(16, 16)), "b": rng.normal(size=(8, 16)), "c": rng.normal(size=(12, 16))}
    weights["a"][:, 3] *= 20  # an outlier input channel, which smoothing moves into the weights
    weights = {n: w.astype(np.float32) for n, w in weights.items()}  # as torch's nn.Linear holds them
    biases = {n: rng.normal(size=w.shape[0]) for n, w in weights.items()}
    calibration = {n: LayerInputs(peak=rng.uniform(0.5, 4.0, size=16), gram=np.eye(16)) for n in "ac"}
    calibration["b"] = calibration["a"]  # one input, one summary
    return weights, biases, calibration


@pytest.mark.parametrize("signed", [
    False,
    pytest.param(True, marks=pytest.mark.skipif(not signed_products_are_exact(),
                                                reason="this CPU's uint8 x int8 products saturate (no VNNI)")),
])
def test_the_rewritten_graph_computes_the_integer_arithmetic_of_its_formulas(layers, signed):
    import onnxruntime

    from rag.ort.graph import quantize_linear_layers

    weights, biases, calibration = layers
    model = quantize_linear_layers(three_layer_model(weights, biases), {n: (weights[n], calibration[n]) for n in "abc"},
                                   lambda w, _gram: (round_to_nearest(w, row_scales(w)), row_scales(w)), signed)
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("MatMulIntegerToFloat") == 3 and "MatMul" not in ops
    assert ops.count("QuantizeLinear") == 3  # a and b read x, each with its own smoothing
    # opset 21's IR version in onnx's table, whatever the input model had: the converter keeps the
    # input's (8 here, too old for opset 21; onnx's newest, 14, where the input was made with the
    # defaults, which onnxruntime 1.30 refuses)
    assert model.ir_version == 10
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 7, 16)).astype(np.float32)
    x[..., 3] *= 8
    b, c = session.run(["b", "c"], {"x": x})

    expected_b = oracle_linear(x, weights["b"], biases["b"], calibration["b"].peak)
    a = oracle_linear(x, weights["a"], biases["a"], calibration["a"].peak)
    expected_c = oracle_linear(np.maximum(a, 0), weights["c"], biases["c"], calibration["c"].peak)
    np.testing.assert_allclose(b, expected_b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c, expected_c, rtol=1e-3, atol=1e-3)
    exact = np.maximum(x @ weights["a"].T + biases["a"], 0) @ weights["c"].T + biases["c"]
    assert np.abs(c - exact).max() < 0.05 * np.abs(exact).max()  # and it is still the float computation, roughly

    alone = session.run(["c"], {"x": x[1:2]})[0]  # every token's activations are quantized alone
    np.testing.assert_allclose(alone, c[1:2], rtol=1e-6, atol=1e-6)


def test_a_layer_missing_from_the_graph_is_named(layers):
    from rag.ort.graph import quantize_linear_layers

    weights, biases, _ = layers
    stranger = (np.random.default_rng(0).normal(size=(16, 16)), LayerInputs(np.ones(16), np.eye(16)))
    with pytest.raises(ValueError, match="stranger"):
        quantize_linear_layers(three_layer_model(weights, biases), {"stranger": stranger}, gptq, False)
