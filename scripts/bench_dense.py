"""Benchmark: dense retrieval on the bundled wiki corpus.

1. Corpus embedding throughput of our cached :class:`rag.embeddings.Embedder` (its default batch:
   8 texts on CPU) vs a bare ``SentenceTransformer.encode`` of the same texts (its defaults: batches
   of 32; and with our batch of 8) vs onnxruntime (MiniLM exported here with ``torch.onnx.export``,
   the same tokenizer, our batches and mean pooling), best of ``--repeats``; the vectors' largest
   cosine distance to the bare encode's, and the exact top-10 overlap of the queries; ours on
   onnxruntime (``runtime: onnxruntime``: float32, :mod:`rag.ort`) and ours-int8 (``precision:
   int8``), with their speed ratios to the peers of the same run (rows
   alternate, so a change of load touches each alike). Then the limit: the encoder's FLOPs over these
   texts against this CPU's measured float32 matrix-product rate, and onnxruntime's float32 and int8
   (``MatMulInteger``) rates.
   ``--omp-wait-policy=default`` measures OpenMP's own spin-waiting instead of our short spin (it must be
   chosen before PyTorch loads; libgomp warns about the empty value it is given for "default").
2. Cold vs cached ``DenseRetriever.index`` (embeddings + Chroma collection).
3. Chroma HNSW recall@10 vs exact (numpy) search (goal: >= 0.99), for our HNSW defaults and
   Chroma's own defaults (ef 100).
4. Query latency per batch: embedding, Chroma search, exact search.

By default a seeded subset of ``--corpus-size`` chunks (2,000) keeps it to a few minutes on 2 CPU
cores; ``--corpus-size 0`` uses the full corpus. ``--cache-dir`` keeps the embeddings between runs.

    python scripts/bench_dense.py [--corpus-size 2000] [--queries 1000] [--batch 100]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__" and "--omp-wait-policy=default" in sys.argv:  # before PyTorch loads
    os.environ["OMP_WAIT_POLICY"] = ""  # chosen: quiet_thread_pools leaves the spin count alone too

import numpy as np

from rag.embeddings import Embedder, EmbeddingStore
from rag.encoders import SentenceTransformersEmbedderConfig, build_encoder
from rag.ort.build import signed_products_are_exact
from rag.retrievers import IndexStorage
from rag.retrievers.dense import DenseParams, DenseRetriever

from bench_bm25 import sample_queries, timed, wiki_chunks  # noqa: E402  (scripts/ is on sys.path)

MODEL = "all-MiniLM-L6-v2"
#: fastembed is not installed in this project's environment (not a dependency), so its row is not measured.
FASTEMBED_ROW = "  fastembed: not measured (not installed in this environment; whether it runs offline from a local path is unchecked)"


def recall_at(found, exact, k: int) -> float:
    """Mean over queries of |approximate top-k ∩ exact top-k| / k."""
    return sum(len(set(a.chunk_ids[:k]) & set(b.chunk_ids[:k])) / k for a, b in zip(found, exact)) / len(exact)


class OnnxMiniLM:
    """MiniLM on onnxruntime: exported from the loaded model, the model's tokenizer, mean pooling over
    the attention mask, L2 normalization (what the sentence-transformers model does), texts sorted
    by length into batches as sentence-transformers sorts them."""

    def __init__(self, model, directory: Path):
        import onnxruntime
        import torch

        class Encoder(torch.nn.Module):
            def __init__(self, transformer):
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                        token_type_ids=token_type_ids).last_hidden_state

        self.tokenizer, self.max_length = model.tokenizer, model.max_seq_length
        example = self.tokenizer(["a b", "c"], padding=True, return_tensors="pt")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        path = directory / "minilm.onnx"
        transformer = model[0].auto_model.eval()
        used = transformer.config._attn_implementation
        transformer.set_attn_implementation("eager")  # the int8 model's export: a plain additive mask (faster here)
        try:
            torch.onnx.export(Encoder(transformer), tuple(example[n] for n in names), str(path),
                              input_names=names, output_names=["hidden"], opset_version=17, dynamo=False,
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]})
        finally:
            transformer.set_attn_implementation(used)  # the bare rows keep the model as loaded
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        order = np.argsort([-len(text) for text in texts], kind="stable")
        vectors = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            batch = order[start : start + batch_size]
            inputs = dict(self.tokenizer([texts[i] for i in batch], padding=True, truncation=True,
                                         max_length=self.max_length, return_tensors="np"))
            hidden = self.session.run(None, {name: value.astype(np.int64) for name, value in inputs.items()})[0]
            mask = inputs["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
            vectors[batch] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return vectors


def encoder_flops(model, texts: list[str], batch_size: int) -> tuple[float, float]:
    """Floating-point operations of MiniLM's encoder over ``texts``: (on the real tokens, as computed
    with each batch padded to its longest text). Batches are formed as sentence-transformers forms
    them (texts sorted by length). Per sequence of L tokens, per layer, with hidden size h and
    feed-forward size f: 2·L·(4h² + 2hf) for the Q, K, V, output and feed-forward products, plus
    2·2·L²·h for the attention scores and their weighted sum (a multiply-add is 2 operations);
    embeddings, layer norms, softmax, GELU and pooling are left out (under 1% here)."""
    config = model[0].auto_model.config
    h, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    lengths = np.array([len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]])

    def flops(length: np.ndarray) -> float:
        return float(layers * np.sum(2.0 * length * (4 * h * h + 2 * h * f) + 4.0 * length**2 * h))

    ordered = np.sort(lengths)[::-1]
    batches = np.array_split(ordered, range(batch_size, len(ordered), batch_size))
    padded = np.concatenate([np.full(len(batch), batch.max()) for batch in batches])
    return flops(lengths), flops(padded)


def matmul_peak(repeats: int = 5) -> dict[str, float]:
    """This CPU's float32 matrix-product rate (GFLOP/s, best of ``repeats``) with PyTorch's threads:
    a 2048² square product, and the shape of MiniLM's largest product (a batch of 64 texts of 256
    tokens times the 384 x 1536 feed-forward weights)."""
    import time

    import torch

    rates = {}
    for name, (m, k, n) in {"2048x2048x2048": (2048, 2048, 2048), "16384x384x1536 (MiniLM FFN)": (64 * 256, 384, 1536)}.items():
        a, b = torch.randn(m, k), torch.randn(k, n)
        torch.mm(a, b)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
        rates[name] = 2.0 * m * k * n / best / 1e9
    return rates


def onnx_matmul_rates(repeats: int = 5) -> dict[str, tuple[float, float, float]]:
    """This CPU's float32 (``MatMul``) and int8 (``MatMulInteger``: uint8 activations x int8 weights,
    and x uint8 weights, the int8 model's two weight formats: :mod:`rag.ort.build`) matrix-product
    rates on onnxruntime, with the int8 encoder's thread settings, best of ``repeats`` (G operations/s;
    a multiply-add is 2), for
    MiniLM's largest product (a batch of 64 texts of 256 tokens times the 384 x 1536 feed-forward
    weights) and a 2048² square."""
    import time

    import onnx
    import onnxruntime
    from onnx import TensorProto, helper

    from rag.models import usable_cpus

    rng = np.random.default_rng(0)
    rates = {}
    for name, (m, k, n) in {"16384x384x1536 (MiniLM FFN)": (64 * 256, 384, 1536), "2048x2048x2048": (2048, 2048, 2048)}.items():
        best = []
        for op, a_type, b_type, out_type, a, b in (
            ("MatMul", TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT,
             rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)),
            ("MatMulInteger", TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32,
             rng.integers(0, 255, (m, k), dtype=np.uint8), rng.integers(-127, 127, (k, n), dtype=np.int8)),
            ("MatMulInteger", TensorProto.UINT8, TensorProto.UINT8, TensorProto.INT32,
             rng.integers(0, 255, (m, k), dtype=np.uint8), rng.integers(1, 255, (k, n), dtype=np.uint8)),
        ):
            graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["c"])], "product",
                                      [helper.make_tensor_value_info("a", a_type, [m, k])],
                                      [helper.make_tensor_value_info("c", out_type, [m, n])],
                                      [onnx.numpy_helper.from_array(b, "b")])
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = usable_cpus()
            opsets = [helper.make_opsetid("", 17)]  # and its IR version: an older onnxruntime refuses a newer one
            model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
            session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            session.run(None, {"a": a})
            seconds = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                session.run(None, {"a": a})
                seconds = min(seconds, time.perf_counter() - start)
            best.append(2.0 * m * k * n / seconds / 1e9)
        rates[name] = (best[0], best[1], best[2])
    return rates


def compare_throughput(encoder, texts: list[str], queries: list[str], repeats: int, model_cache: Path) -> None:
    """Best-of-``repeats`` time of a bare ``encode`` (its default batch, then ours), our Embedder with
    an empty cache (float32 on PyTorch and on onnxruntime, and int8, their ONNX models built in
    ``model_cache``), onnxruntime."""
    import torch

    model, batch = encoder.loaded, encoder.default_batch_size
    int8 = build_encoder(SentenceTransformersEmbedderConfig(precision="int8"), MODEL, "cpu")
    int8.use_model_cache(model_cache)
    on_onnxruntime = build_encoder(SentenceTransformersEmbedderConfig(runtime="onnxruntime"), MODEL, "cpu")
    on_onnxruntime.use_model_cache(model_cache)
    with tempfile.TemporaryDirectory() as tmp:
        onnx = OnnxMiniLM(model, Path(tmp))
    model.encode(texts[:64], batch_size=64)  # warm-up (and the int8 model's build, once per cache)
    onnx.encode(texts[:64], batch)
    int8.encode(texts[:64])
    on_onnxruntime.encode(texts[:64])

    def ours(over) -> np.ndarray:
        with tempfile.TemporaryDirectory() as tmp:  # an empty embedding cache every time
            return Embedder(over, EmbeddingStore.for_model(tmp, MODEL)).embed(texts)

    runs = {
        "bare": lambda: model.encode(texts, normalize_embeddings=True, show_progress_bar=False),
        f"bare, batch {batch}": lambda: model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False),
        "ours": lambda: ours(encoder),
        "onnxruntime": lambda: onnx.encode(texts, batch),
        "ours-ort": lambda: ours(on_onnxruntime),
        "ours-int8": lambda: ours(int8),
    }
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    vectors = {}
    for _ in range(repeats):  # alternating, so a change of the machine's load touches every row alike
        for name, run in runs.items():
            vectors[name], run_s = timed(run)
            seconds[name].append(run_s)
    print(f"embedding {len(texts)} chunks, {torch.get_num_threads()} threads, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')!r}, GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')!r} (best of {repeats}):")
    query_vectors = model.encode(queries, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    top10 = {name: np.argsort(-(query_vectors @ v.T), axis=1)[:, :10] for name, v in vectors.items()}
    for name, times in seconds.items():
        cosine = float(np.max(1 - np.sum(vectors[name] * vectors["bare"], axis=1)))
        overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top10[name], top10["bare"])])
        print(f"  {name:>12}: {len(texts) / min(times):7.1f} texts/s ({min(times):.1f} s) | largest cosine distance to "
              f"bare {cosine:.1e} | top-10 overlap with bare {overlap:.4f}")
    int8_queries = int8.encode(queries, batch_size=batch)
    own = np.argsort(-(int8_queries @ vectors["ours-int8"].T), axis=1)[:, :10]
    print(f"  ours-int8 with int8 query vectors too (as a run searches): top-10 overlap with bare "
          f"{np.mean([len(set(a) & set(b)) / 10 for a, b in zip(own, top10['bare'])]):.4f}")
    best = {name: min(times) for name, times in seconds.items()}
    print(f"ours-int8 vs the same run's peers: {best['onnxruntime'] / best['ours-int8']:.2f}x onnxruntime float32 "
          f"(goal >= 1.5), {best['bare'] / best['ours-int8']:.2f}x bare (goal >= 2), {best['ours'] / best['ours-int8']:.2f}x "
          "ours float32; top-10 overlap with bare above (goal >= 0.98)")
    print(f"ours-ort (runtime: onnxruntime, float32) vs the same run's peers: {best['onnxruntime'] / best['ours-ort']:.2f}x "
          f"onnxruntime float32, {best['bare'] / best['ours-ort']:.2f}x bare, {best['ours'] / best['ours-ort']:.2f}x ours (PyTorch)")
    print(FASTEMBED_ROW)
    useful, computed = encoder_flops(model, texts, batch)
    peaks = matmul_peak()
    ours_s = min(seconds["ours"])
    print(f"the limit: MiniLM's encoder is {useful / 1e12:.2f} TFLOP over these texts' tokens ({computed / 1e12:.2f} "
          f"with each batch padded to its longest text): ours computes {computed / ours_s / 1e9:.1f} GFLOP/s")
    for name, rate in peaks.items():
        print(f"  float32 matrix product {name}: {rate:.1f} GFLOP/s -> ours runs at {computed / ours_s / 1e9 / rate:.0%} "
              f"of it; at 100% the texts would take {computed / rate / 1e9:.1f} s ({len(texts) * rate * 1e9 / computed:.1f} texts/s)")
    int8_s = best["ours-int8"]
    signed = signed_products_are_exact()
    print(f"  ours-int8 weight format on this CPU: {'int8' if signed else 'uint8 (no VNNI: uint8 x int8 products saturate)'}")
    for name, (float_rate, signed_rate, unsigned_rate) in onnx_matmul_rates().items():
        used = signed_rate if signed else unsigned_rate
        print(f"  onnxruntime {name}: float32 MatMul {float_rate:.1f} GFLOP/s, MatMulInteger uint8 x int8 {signed_rate:.1f} "
              f"GOP/s ({signed_rate / float_rate:.2f}x), uint8 x uint8 {unsigned_rate:.1f} GOP/s ({unsigned_rate / float_rate:.2f}x)"
              f" -> ours-int8 computes {computed / int8_s / 1e9:.1f} GOP/s, {computed / int8_s / 1e9 / used:.0%} of its format's rate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-size", type=int, default=2000, help="seeded subset of chunks; 0 = all")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100, help="queries per search batch")
    parser.add_argument("--repeats", type=int, default=2, help="throughput runs of each encoder (best counts); 0 skips")
    parser.add_argument("--device", default="auto", help="of the index and search parts; the throughput rows run on the CPU")
    parser.add_argument("--throughput-only", action="store_true", help="stop after the embedding throughput")
    parser.add_argument("--omp-wait-policy", choices=["passive", "default"], default="passive",
                        help="passive: ours, a short spin then sleep (rag.models.quiet_thread_pools); default: OpenMP's spin-waiting")
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep the dense cache here (default: temporary)")
    args = parser.parse_args()

    chunks, questions = wiki_chunks()
    if args.corpus_size:
        chunks = random.Random(0).sample(chunks, min(args.corpus_size, len(chunks)))
    queries = sample_queries(questions, chunks, args.queries)
    texts = [chunk.text for chunk in chunks]
    encoder = build_encoder(SentenceTransformersEmbedderConfig(runtime="pytorch"), MODEL, args.device)  # "ours": on PyTorch
    model = encoder.loaded
    print(f"corpus: {len(chunks)} chunks; {len(queries)} queries; device {model.device}")

    if args.repeats:
        with tempfile.TemporaryDirectory() as tmp:
            # on the CPU whatever --device says: the onnxruntime and int8 rows run on the CPU only, and
            # every row is compared with the bare model on the same processor
            on_cpu = (encoder if model.device.type == "cpu"
                      else build_encoder(SentenceTransformersEmbedderConfig(runtime="pytorch"), MODEL, "cpu"))
            compare_throughput(on_cpu, texts, queries, args.repeats, (args.cache_dir or Path(tmp)) / "models")
    if args.throughput_only:
        return

    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache_dir or Path(tmp)
        builds = []
        for _ in range(2):
            retriever = DenseRetriever("bench_dense", DenseParams(device=args.device), encoder=encoder)
            builds.append((timed(retriever.index, chunks, IndexStorage.under(cache_dir, "bench_dense"))[1],
                           retriever.collection_rebuilt))
        (cold_s, cold_rebuilt), (cached_s, cached_rebuilt) = builds
        print(f"index build: first {cold_s:.2f} s (collection built: {cold_rebuilt}) | "
              f"second {cached_s:.2f} s (collection built: {cached_rebuilt}); the first reuses the embeddings "
              f"cached by the throughput runs only with --cache-dir")

        exact = DenseRetriever("bench_exact", DenseParams(search="exact"), encoder=encoder)
        exact.index(chunks, IndexStorage.under(cache_dir, "bench_exact"))
        chroma_default = DenseRetriever(
            "bench_ef100", DenseParams(hnsw={"construction_ef": 100, "search_ef": 100, "M": 16}), encoder=encoder
        )
        chroma_default.index(chunks, IndexStorage.under(cache_dir, "bench_ef100"))

        embed_s = timed(retriever.embedder.embed, queries)[1]  # queries embedded (and cached) once
        timings = {"hnsw": 0.0, "exact": 0.0, "ef100": 0.0}
        results = {name: [] for name in timings}
        for start in range(0, len(queries), args.batch):
            batch = queries[start : start + args.batch]
            for name, searcher in (("hnsw", retriever), ("exact", exact), ("ef100", chroma_default)):
                rankings, seconds = timed(searcher.search, batch, 10)
                results[name].extend(rankings)
                timings[name] += seconds
        n_batches = -(-len(queries) // args.batch)
        print(f"query embedding: {1000 * embed_s / n_batches:.1f} ms per batch of {args.batch} "
              f"({len(queries) / embed_s:.0f} queries/s, first time; cached afterwards)")
        print(f"search per batch of {args.batch} (query vectors cached): Chroma HNSW {1000 * timings['hnsw'] / n_batches:.1f} ms"
              f" | exact numpy {1000 * timings['exact'] / n_batches:.1f} ms")
        print(f"recall@10 vs exact: HNSW ef 200 (our default) {recall_at(results['hnsw'], results['exact'], 10):.4f}"
              f" | ef 100 (Chroma default) {recall_at(results['ef100'], results['exact'], 10):.4f} (goal >= 0.99)")


if __name__ == "__main__":
    main()
