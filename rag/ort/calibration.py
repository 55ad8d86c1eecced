"""What the int8 build learns from calibration texts: each linear layer's inputs, summarized.

The texts (:func:`calibration_texts`) are a seeded sample of :data:`CALIBRATION_TEXTS` documents of
the bundled Wikipedia corpus (``rag/resources/data/wiki``, shipped in the package, so the build is
offline and the same everywhere), each cut at the model's ``max_seq_length`` tokens. The model runs
on them in float32 (batches of :data:`BATCH`) and, for every ``torch.nn.Linear``, the inputs of the
real tokens (padding excluded) are summarized as (:class:`LayerInputs`):

- ``peak``: per input channel, ``max |x|`` (SmoothQuant's activation statistic);
- ``gram``: ``Xᵀ X`` in float64 (GPTQ's ``H``, up to a factor that cancels).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

#: Documents the build calibrates on, and the seed of their sample.
CALIBRATION_TEXTS, CALIBRATION_SEED, BATCH = 256, 0, 16


@dataclass
class LayerInputs:
    """One linear layer's calibration inputs: per-channel peak ``max |x|`` and ``Xᵀ X``."""

    peak: np.ndarray
    gram: np.ndarray


def calibration_texts(count: int = CALIBRATION_TEXTS, seed: int = CALIBRATION_SEED) -> list[str]:
    """``count`` texts of the bundled wiki corpus, a ``seed``-ed sample of its documents (read by the
    data layer's corpus reader, :func:`rag.data.records.read_corpus_jsonl`)."""
    from rag.data.config import bundled_wiki_dir
    from rag.data.records import ProblemLog, read_corpus_jsonl

    texts = [document.text for document in read_corpus_jsonl(bundled_wiki_dir() / "corpus.jsonl.gz", ProblemLog())]
    return random.Random(seed).sample(texts, min(count, len(texts)))


def layer_inputs(sentence_transformer, tokenizer, texts: list[str]) -> dict[str, LayerInputs]:
    """Every ``nn.Linear`` of ``sentence_transformer`` that runs on each token (by module name) -> its
    :class:`LayerInputs` over ``texts``, the model in float32 on the CPU and in eval mode (it is put
    there: dropout would make every build another model), padding tokens left out."""
    import torch

    summaries: dict[str, LayerInputs] = {}
    real: list = [None]  # the current batch's attention mask, flattened to a boolean row selector

    def record(name):
        def hook(_module, inputs):
            if inputs[0].shape[:-1].numel() != len(real[0]):
                return  # not per token (BERT's pooler on the first token, which the embedding never reads)
            rows = inputs[0].detach().reshape(-1, inputs[0].shape[-1])[real[0]].double().numpy()
            peak, gram = np.abs(rows).max(axis=0), rows.T @ rows
            if name in summaries:
                np.maximum(summaries[name].peak, peak, out=summaries[name].peak)
                summaries[name].gram += gram
            else:
                summaries[name] = LayerInputs(peak, gram)
        return hook

    sentence_transformer.eval()  # no dropout: the same texts give the same summaries (and the same model)
    hooks = [module.register_forward_pre_hook(record(name)) for name, module in sentence_transformer.named_modules()
             if isinstance(module, torch.nn.Linear)]
    ordered = sorted(texts, key=len, reverse=True)
    try:
        with torch.no_grad():
            for start in range(0, len(ordered), BATCH):
                features = tokenizer(ordered[start : start + BATCH], padding=True, truncation=True,
                                     max_length=sentence_transformer.max_seq_length, return_tensors="pt")
                real[0] = features["attention_mask"].reshape(-1).bool()
                sentence_transformer(dict(features))
    finally:
        for hook in hooks:
            hook.remove()
    return summaries
