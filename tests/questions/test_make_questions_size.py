"""``rag/runner/questions.py:make_questions`` was 78 lines (issue 44, item 10d): every function of the
module is now small enough to read at once."""

from __future__ import annotations

import ast
from pathlib import Path

import rag.runner.questions as module

MAX_LINES = 40


def test_every_function_of_the_question_runner_is_at_most_40_lines():
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    sizes = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert "make_questions" in sizes
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}
