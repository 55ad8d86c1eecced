"""SmolLM2 answered in PyTorch: the packaged GGUF's weights, dequantized to float32, prompts in batches.

Why: on a CPU, llama.cpp evaluates the answer prompts (about 1,100 tokens of ten chunks each) at
about a third of the CPU's float32 matrix-product rate, one prompt at a time; the same weights as
float32 matrices in PyTorch evaluate a prompt at about two thirds of it, and the answers' short
generations run for a batch of prompts at once (docs/generation.md, "The torch engine").

What is the same as llama.cpp: the weights (the packaged ``SmolLM2-135M-Instruct.Q4_1.gguf``,
dequantized by gguf's own functions: :mod:`rag.generation.gguf_weights`), the prompt (the GGUF's
own chat template through llama-cpp-python's formatter, tokenized by llama.cpp's tokenizer: the
token ids the server would evaluate), greedy decoding, ``max_tokens``, and the stop at the
end-of-turn and end-of-text tokens.
What differs: the arithmetic. llama.cpp multiplies 4-bit weights by activations it rounds to 8 bits
and keeps the attention cache in float16; here every product is float32. Greedy decoding of a 135M
model amplifies such differences, so some answers are worded differently; the agreement with
llama.cpp's answers on the main job is measured by ``scripts/bench_torch_answers.py``.

Determinism: prompts are batched in prefix order over every distinct prompt of a ``generate``
call, cached or not, and a prompt reuses only the previous prompt of its own batch, so the same
request list gives the same batches, hence the same answers bit for bit on one machine, also when an
interrupted run resumes (a batch's cached members are computed again with it, their cached answers
kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.generation.gguf_weights import load_llama
from rag.models import quiet_thread_pools

#: SmolLM2's end-of-turn (``<|im_end|>``) and end-of-text tokens: llama.cpp stops at either.
DEFAULT_STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")


@dataclass(frozen=True)
class Completion:
    """One prompt's greedy continuation: its text (stop token excluded, not stripped), token counts,
    and when asked the first generated token's most likely alternatives {token: log-prob}."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    top_logprobs: dict[str, float] | None = None


class TorchSmolLM:
    """The GGUF model in PyTorch with llama.cpp's tokenizer and chat template.

    ``n_threads``: PyTorch's intra-op threads while a batch runs (the previous setting is restored
    after); None leaves PyTorch's own. Loading takes seconds (dequantizing 135M weights)."""

    def __init__(self, model_path: Path, n_threads: int | None = None):
        quiet_thread_pools()
        import torch
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter


        self.model_path = Path(model_path)
        self.n_threads = n_threads
        self._torch = torch
        self.vocab = Llama(str(self.model_path), vocab_only=True, verbose=False)
        self.formatter = Jinja2ChatFormatter(
            self.vocab.metadata["tokenizer.chat_template"], eos_token="<|im_end|>", bos_token="<|im_start|>",
            add_generation_prompt=True)
        self.stop_ids = sorted({self._token_id(text) for text in DEFAULT_STOP_TOKENS} | {self.vocab.token_eos()})
        self.pad_id = self.vocab.token_eos()
        with self._threads():
            self.model = load_llama(self.model_path)

    def _token_id(self, text: str) -> int:
        ids = self.vocab.tokenize(text.encode(), add_bos=False, special=True)
        if len(ids) != 1:
            raise ValueError(f"{text!r} is not one token of {self.model_path.name}")
        return ids[0]

    @contextlib.contextmanager
    def _threads(self):
        """PyTorch's intra-op threads at ``n_threads`` for the block, then as they were."""
        previous = self._torch.get_num_threads()
        if self.n_threads is not None:
            self._torch.set_num_threads(self.n_threads)
        try:
            yield
        finally:
            self._torch.set_num_threads(previous)

    def tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The token ids llama-cpp-python's server evaluates for these chat messages."""
        prompt = self.formatter(messages=messages).prompt
        return self.vocab.tokenize(prompt.encode(), add_bos=False, special=True)

    def piece(self, token_ids: Sequence[int]) -> str:
        return self.vocab.detokenize(list(token_ids)).decode("utf-8", errors="ignore")

    def complete(self, prompts: Sequence[Sequence[int]], max_tokens: int, top_logprobs: int | None = None
                 ) -> list[Completion]:
        """Greedy continuations of a batch of tokenized prompts, at most ``max_tokens`` tokens each,
        each ending before its first stop token.

        Each prompt is evaluated alone (no padding, so no score matrix is held), after the start it
        shares with the previous prompt of the batch (whose keys and values it reuses, as
        llama.cpp's server does: pass the prompts in prefix order), its keys and values copied into
        the batch's buffers; then the batch generates together, one token per prompt per step
        (:meth:`_generate`): a step reads every weight once whatever the batch's size, which is
        what a step costs on a CPU (docs/generation.md, "The torch engine")."""
        torch = self._torch
        from transformers import DynamicCache

        lengths = [len(p) for p in prompts]
        config = self.model.config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        shape = (len(prompts), config.num_key_value_heads, max(lengths) + max_tokens, head_dim)
        with self._threads(), torch.inference_mode():
            buffers = [(torch.zeros(shape), torch.zeros(shape)) for _ in range(config.num_hidden_layers)]
            first, cache, previous = [], None, []
            for row, prompt in enumerate(prompts):
                shared = min(common_prefix(previous, prompt), len(prompt) - 1)
                if shared:  # the previous prompt's keys and values of the shared start
                    cache = DynamicCache([(layer.keys[:, :, :shared], layer.values[:, :, :shared])
                                          for layer in cache.layers])
                out = self.model(input_ids=torch.tensor([list(prompt[shared:])]), use_cache=True, logits_to_keep=1,
                                 **({"cache": cache} if shared else {}))
                first.append(out.logits[0, -1].float())
                cache, previous = (out.cache if hasattr(out, "cache") else out.past_key_values), prompt
                for (k_buffer, v_buffer), layer in zip(buffers, cache.layers):
                    k_buffer[row, :, :lengths[row]] = layer.keys[0]
                    v_buffer[row, :, :lengths[row]] = layer.values[0]
                del out
            del cache
            generated = self._generate(torch.stack(first).argmax(-1), buffers, lengths, max_tokens)
        completions = []
        for row, prompt in enumerate(prompts):
            answer = generated[row]
            alternatives = None
            if top_logprobs is not None:
                values, indices = torch.topk(torch.log_softmax(first[row], dim=-1), top_logprobs)
                alternatives = {}
                for value, index in zip(values.tolist(), indices.tolist()):
                    alternatives.setdefault(self.piece([index]), value)
            completions.append(Completion(self.piece(answer), len(prompt), len(answer), alternatives))
        return completions

    def _generate(self, tokens, buffers, lengths: list[int], max_tokens: int) -> list[list[int]]:
        """Greedy decoding of a batch from its first tokens; ``buffers`` holds per layer the keys and
        values (rows x heads x positions x dim) of each row's prompt at its start, each new token's
        written after the row's own length. Attention is grouped (each key/value head serves its
        query heads without being copied) and masked to each row's positions. The layers are the
        model's own modules (norms, projections, rotary embedding, MLP): the computation of
        ``LlamaForCausalLM`` at one new token per row. tests/generation/test_torch_engine.py
        compares the answers with greedy decoding by the model's own forward pass."""
        torch = self._torch
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        decoder = self.model.model
        rows = len(lengths)
        kv_heads, head_dim = buffers[0][0].shape[1], buffers[0][0].shape[3]
        every = torch.arange(rows)
        position = torch.tensor(lengths)
        out = [[int(t)] for t in tokens]
        done = [t in self.stop_ids for t in tokens.tolist()]
        for _ in range(max_tokens - 1):
            if all(done):
                break
            x = decoder.embed_tokens(tokens[:, None])
            cos, sin = decoder.rotary_emb(x, position[:, None])
            seen = int(position.max()) + 1
            visible = (torch.arange(seen)[None, :] <= position[:, None])[:, None, None, :]
            for layer, (k_buffer, v_buffer) in zip(decoder.layers, buffers):
                attention = layer.self_attn
                h = layer.input_layernorm(x)
                q = attention.q_proj(h).view(rows, 1, -1, head_dim).transpose(1, 2)
                k = attention.k_proj(h).view(rows, 1, -1, head_dim).transpose(1, 2)
                v = attention.v_proj(h).view(rows, 1, -1, head_dim).transpose(1, 2)
                q, k = apply_rotary_pos_emb(q, k, cos, sin)
                k_buffer[every, :, position] = k[:, :, 0]
                v_buffer[every, :, position] = v[:, :, 0]
                grouped = q.reshape(rows, kv_heads, -1, head_dim)  # query head = kv head x group + r
                scores = torch.matmul(grouped, k_buffer[:, :, :seen].transpose(2, 3)) * attention.scaling
                weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
                mixed = torch.matmul(weights, v_buffer[:, :, :seen]).reshape(rows, 1, -1)
                x = x + attention.o_proj(mixed)
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            tokens = self.model.lm_head(decoder.norm(x))[:, -1].argmax(-1)
            position = position + 1
            for row, token in enumerate(tokens.tolist()):
                if not done[row]:
                    out[row].append(token)
                    done[row] = token in self.stop_ids
        return [row[:next((i for i, t in enumerate(row) if t in self.stop_ids), len(row))] for row in out]


#: A batch holds at most this many key/value positions (prompts x (longest prompt + max_tokens)):
#: its buffers take 46 KB a position (30 layers, keys and values, 3 heads of 64 float32), so ~1.2 GB
#: (16 prompts of 1,600 tokens: the main job's batches).
MAX_BATCH_POSITIONS = 16 * 1600


def batches(tokens: dict[str, Sequence[int]], size: int, max_positions: int = MAX_BATCH_POSITIONS
            ) -> list[list[str]]:
    """The keys cut into batches in prefix order (of their token ids, then key): a prompt follows the
    one it shares the longest start with, whose keys and values it reuses (:meth:`TorchSmolLM.complete`),
    and the same prompts always give the same batches. A batch holds at most ``size`` prompts and,
    past its first, at most ``max_positions`` positions (prompts x its longest length)."""
    ordered = sorted(tokens, key=lambda key: (list(tokens[key]), key))
    cut: list[list[str]] = []
    longest = 0
    for key in ordered:
        length = len(tokens[key])
        if not cut or len(cut[-1]) >= size or (len(cut[-1]) + 1) * max(longest, length) > max_positions:
            cut.append([key])
            longest = length
        else:
            cut[-1].append(key)
            longest = max(longest, length)
    return cut


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
