"""``python -m llama_cpp.server`` with llama.cpp's extra CPU buffer types switched on or off.

llama.cpp's ``llama_model_params.use_extra_bufts`` (default true) lets the CPU backend place weights
in "extra" buffer types: repacked layouts (``CPU_REPACK``) and, on CPUs with Intel AMX, the ``AMX``
buffer whose matrix product (``ggml_backend_amx_mul_mat``) segfaults on some machines on the first
completion (llama.cpp #20824; ollama #17249, #17006; docs/generation.md). llama-cpp-python 0.3.x
exposes no setting for it (neither ``llama_cpp.server``'s ``ModelSettings`` nor ``Llama(...)``), and
``Llama.__init__`` takes ``llama_cpp.llama_cpp.llama_model_default_params()`` and loads the model in
the same call. So this launcher, run as the server's own process::

    python -m rag.generation.llama_launcher --extra_buffer_types off <llama_cpp.server arguments>

replaces that function in the bindings module (``llama_cpp.llama_cpp``, through which ``Llama`` and
``LlamaModel`` call it) by one that returns llama.cpp's defaults with ``use_extra_bufts = False``,
then runs ``llama_cpp.server``'s own ``main`` on the remaining arguments. ``on`` changes nothing.
The replacement lives only in that server process.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXTRA_BUFFER_TYPES_FLAG = "--extra_buffer_types"


def disable_extra_buffer_types() -> None:
    """Make every model this process loads through llama-cpp-python skip the extra buffer types."""
    import llama_cpp.llama_cpp as bindings

    defaults = bindings.llama_model_default_params

    def without_extra_buffer_types():
        params = defaults()
        params.use_extra_bufts = False
        return params

    bindings.llama_model_default_params = without_extra_buffer_types


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(EXTRA_BUFFER_TYPES_FLAG, choices=("on", "off"), required=True)
    args, server_args = parser.parse_known_args(argv)
    if args.extra_buffer_types == "off":
        disable_extra_buffer_types()
    from llama_cpp.server.__main__ import main as serve

    sys.argv = [f"{sys.executable} -m llama_cpp.server", *server_args]
    serve()


if __name__ == "__main__":
    main()
