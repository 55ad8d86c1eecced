"""Settings for the whole test session."""

import os

# milvus-lite's gRPC client logs a harmless keepalive notice ("too_many_pings") when the interpreter
# exits, after pytest's summary line; keep the gRPC C core quiet so the summary stays the last line.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
