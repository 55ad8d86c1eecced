"""A llama-architecture GGUF (the packaged SmolLM2) read into transformers' ``LlamaForCausalLM``,
float32, in a few seconds (4.2 s here against transformers' 11.9 s).

transformers' own GGUF loader (``from_pretrained(..., gguf_file=...)``) builds the same model but took
14-19 s here: it parses the file twice with gguf's reader, which reads the tokenizer's ~98,000
strings one memory-mapped element at a time, and builds gguf's tensor-name map once per tensor
(cProfile). This reads the header once with ``struct`` (the
strings skipped, not decoded), dequantizes each tensor with gguf's own ``dequantize`` (the same
function transformers calls), undoes the row order llama.cpp's converter gives the query and key
weights, and maps the names. Checked once against transformers' loader: all 273 tensors and both
rotary buffers equal, and so the logits; tests/generation/test_torch_engine.py compares the
metadata with llama.cpp's reading of the file and the next-token predictions with llama.cpp's."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

#: GGUF metadata value types: fixed-size ones by their struct format; 8 is a string, 9 an array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
#: GGUF tensor name (after ``blk.N.``) -> transformers' Llama parameter (after ``model.layers.N.``)
_LAYER_NAMES = {
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


class GGUFFile:
    """The metadata (strings kept only when short: array elements are skipped) and the tensors'
    (type, shape, offset) of a GGUF file, read once."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.buffer = self.path.read_bytes()
        magic, _version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", self.buffer, 0)
        if magic != b"GGUF":
            raise ValueError(f"{self.path.name} is not a GGUF file")
        offset = 24
        self.metadata: dict[str, object] = {}
        for _ in range(n_kv):
            key, offset = self._string(offset)
            (kind,), offset = struct.unpack_from("<I", self.buffer, offset), offset + 4
            self.metadata[key], offset = self._value(kind, offset, keep=True)
        self.tensors: dict[str, tuple[int, tuple[int, ...], int]] = {}
        for _ in range(n_tensors):
            name, offset = self._string(offset)
            (n_dims,), offset = struct.unpack_from("<I", self.buffer, offset), offset + 4
            dims = struct.unpack_from(f"<{n_dims}Q", self.buffer, offset)
            offset += 8 * n_dims
            kind, start = struct.unpack_from("<IQ", self.buffer, offset)
            offset += 12
            self.tensors[name] = (kind, tuple(reversed(dims)), start)  # ggml's first dimension is the fastest
        alignment = int(self.metadata.get("general.alignment", 32))
        self.data_start = -(-offset // alignment) * alignment

    def _string(self, offset: int) -> tuple[str, int]:
        (n,) = struct.unpack_from("<Q", self.buffer, offset)
        return self.buffer[offset + 8:offset + 8 + n].decode("utf-8", errors="replace"), offset + 8 + n

    def _value(self, kind: int, offset: int, keep: bool) -> tuple[object, int]:
        if kind in _SCALARS:
            fmt = _SCALARS[kind]
            return struct.unpack_from(fmt, self.buffer, offset)[0], offset + struct.calcsize(fmt)
        if kind == _STRING:
            (n,) = struct.unpack_from("<Q", self.buffer, offset)
            value = self.buffer[offset + 8:offset + 8 + n].decode("utf-8", errors="replace") if keep else None
            return value, offset + 8 + n
        if kind == _ARRAY:
            item, count = struct.unpack_from("<IQ", self.buffer, offset)
            offset += 12
            if item in _SCALARS:  # fixed size: skipped in one step
                return count, offset + count * struct.calcsize(_SCALARS[item])
            for _ in range(count):
                _, offset = self._value(item, offset, keep=False)
            return count, offset  # arrays are kept as their length only
        raise ValueError(f"{self.path.name}: unknown GGUF value type {kind}")

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name`` as float32, in its logical shape (gguf's ``dequantize``)."""
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
        from gguf.quants import dequantize

        kind, shape, start = self.tensors[name]
        qtype = GGMLQuantizationType(kind)
        block, size = GGML_QUANT_SIZES[qtype]
        count = int(np.prod(shape))
        raw = np.frombuffer(self.buffer, dtype=np.uint8, count=count // block * size, offset=self.data_start + start)
        return dequantize(raw, qtype).reshape(shape).astype(np.float32, copy=False)


def unpermute(weights: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's converter, which stores each head's query/key rows with the two halves of the
    rotary pairs interleaved (``reshape(heads, 2, d/2, ...).swapaxes(1, 2)``) for its rope."""
    rows = weights.shape[0]
    return weights.reshape(heads, rows // heads // 2, 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def load_llama(path: Path):
    """``LlamaForCausalLM`` in float32, evaluation mode, from a llama-architecture GGUF."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    gguf = GGUFFile(path)
    meta = gguf.metadata
    if meta.get("general.architecture") != "llama":
        raise ValueError(f"{gguf.path.name}: architecture {meta.get('general.architecture')!r}, not llama")
    heads, kv_heads = int(meta["llama.attention.head_count"]), int(meta["llama.attention.head_count_kv"])
    config = LlamaConfig(
        vocab_size=int(meta.get("llama.vocab_size", gguf.tensors["token_embd.weight"][1][0])),
        hidden_size=int(meta["llama.embedding_length"]), intermediate_size=int(meta["llama.feed_forward_length"]),
        num_hidden_layers=int(meta["llama.block_count"]), num_attention_heads=heads, num_key_value_heads=kv_heads,
        rms_norm_eps=float(meta["llama.attention.layer_norm_rms_epsilon"]),
        max_position_embeddings=int(meta["llama.context_length"]), rope_theta=float(meta["llama.rope.freq_base"]),
        tie_word_embeddings="output.weight" not in gguf.tensors,
        bos_token_id=meta.get("tokenizer.ggml.bos_token_id"), eos_token_id=meta.get("tokenizer.ggml.eos_token_id"),
        pad_token_id=meta.get("tokenizer.ggml.padding_token_id"))
    state = {}
    for name in gguf.tensors:
        stem, _, suffix = name.rpartition(".")
        parts = stem.split(".")
        if parts[0] == "blk":
            layer, kind = int(parts[1]), parts[2]
            target = f"model.layers.{layer}.{_LAYER_NAMES[kind]}.{suffix}"
        else:
            kind, target = parts[0], f"{_TOP_NAMES[parts[0]]}.{suffix}"
        weights = gguf.array(name)
        if kind in ("attn_q", "attn_k"):
            weights = unpermute(weights, heads if kind == "attn_q" else kv_heads)
        if not weights.flags.writeable:  # a float32 tensor is a view of the file's bytes
            weights = weights.copy()
        state[target] = torch.from_numpy(np.ascontiguousarray(weights))
    with torch.device("meta"):  # no random initialization of weights about to be replaced
        model = LlamaForCausalLM(config)
    model.load_state_dict(state, assign=True, strict=False)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)  # its buffers, made on the CPU
    missing = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if missing:
        raise ValueError(f"{gguf.path.name}: no tensor for {missing[0]}")
    return model.float().eval()
