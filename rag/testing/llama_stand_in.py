"""The stand-in server in the managed llama.cpp server's place, to inject native crashes.

Takes the command line :class:`rag.generation.local_server.ManagedLlamaServer` builds after its
program (``--extra_buffer_types on|off`` and ``llama_cpp.server``'s ``--port``,
``--model_alias``; the other flags are accepted and ignored), prints what it runs with (the log's
last line) and serves :class:`rag.testing.StandInServer` with that model name. Its own flags, placed
in the program part (``ManagedLlamaServer(program=[sys.executable, "-m",
"rag.testing.llama_stand_in", "--crash-on-completion", "1", "--only-with-extra-buffer-types"])``):

``--crash-on-completion N``          die by ``SIGSEGV`` on the N-th chat completion (0: never); each
                                     start counts anew, the self-check completion included
``--only-with-extra-buffer-types``   crash only when started with ``--extra_buffer_types on`` (llama.cpp's
                                     AMX crash, which the safe setting avoids)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rag.testing.stand_in import StandInServer, StandInSettings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crash-on-completion", type=int, default=0)
    parser.add_argument("--only-with-extra-buffer-types", action="store_true")
    parser.add_argument("--extra_buffer_types", choices=("on", "off"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model_alias", default="stand-in")
    args, _ = parser.parse_known_args(argv)
    crashes = args.extra_buffer_types == "on" or not args.only_with_extra_buffer_types
    settings = StandInSettings(model=args.model_alias, crash_on_completion=args.crash_on_completion if crashes else 0)
    server = StandInServer(settings, port=args.port)
    print(f"stand-in llama server on port {server.port}, extra buffer types {args.extra_buffer_types}, "
          f"crash on completion {settings.crash_on_completion or 'never'}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
