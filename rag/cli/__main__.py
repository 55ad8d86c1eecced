"""``python -m rag.cli``: the same as ``rag-bench``."""

import sys

from rag.cli import main

sys.exit(main())
