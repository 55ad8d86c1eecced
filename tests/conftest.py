"""Settings for the whole test session."""

import os

import pytest

from rag.ort.build import MODEL_CACHE_ENV

# milvus-lite's gRPC client logs a harmless keepalive notice ("too_many_pings") when the interpreter
# exits, after pytest's summary line; keep the gRPC C core quiet so the summary stays the last line.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")


@pytest.fixture(scope="session", autouse=True)
def shared_onnx_models(tmp_path_factory):
    """Every test's runs build and read the ONNX models in one temporary directory of this session
    (``RAG_BENCH_MODEL_CACHE``, :func:`rag.ort.build.model_cache`): a model is exported once per
    session instead of once per fresh ``cache_dir``, and never in the user's own shared directory."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MODEL_CACHE_ENV, str(tmp_path_factory.mktemp("onnx-models")))
        yield
