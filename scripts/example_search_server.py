"""A search endpoint rag-bench can call (type: http, docs/your-retriever.md): POST {"query", "k"} ->
{"results": [{"url", "score"}]}. Usage: python scripts/example_search_server.py DOCS_DIR PORT
It ranks the folder's files by the words they share with the question; put your engine there."""
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

root = Path(sys.argv[1])
pages = {path.relative_to(root).as_posix(): set(re.findall(r"\w+", path.read_text(errors="ignore").lower()))
         for path in sorted(root.rglob("*")) if path.is_file()}


class Search(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the name http.server calls
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = set(re.findall(r"\w+", asked["query"].lower()))
        found = sorted(((len(words & seen), url) for url, seen in pages.items() if words & seen), reverse=True)
        body = json.dumps({"results": [{"url": url, "score": score} for score, url in found[: asked["k"]]]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Search).serve_forever()
