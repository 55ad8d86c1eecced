"""One CLI vocabulary (issue 43): the same option name for the same thing in every subcommand, the
old names accepted but hidden, and ``--seed`` on every subcommand that has a seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.cli import main
from rag.cli import questions as questions_cli
from rag.cli import run as run_cli
from rag.cli import sweep as sweep_cli
from rag.cli.common import overrides_from_args
from rag.config import load_config

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"


def test_questions_takes_the_names_of_run_and_hides_the_old_ones() -> None:
    parser = questions_cli.build_parser()
    new = parser.parse_args(["--out", "q.jsonl", "--n-questions", "7", "--question-generator", "llm", "--seed", "3"])
    old = parser.parse_args(["--out", "q.jsonl", "--n", "7", "--generator", "llm", "--seed", "3"])
    assert (new.n_questions, new.question_generator, new.seed) == (old.n_questions, old.question_generator, old.seed) \
        == (7, "llm", 3)
    defaults = parser.parse_args(["--out", "q.jsonl"])
    assert (defaults.n_questions, defaults.question_generator, defaults.seed) == (50, "template", None)
    text = parser.format_help()
    assert "--n-questions" in text and "--question-generator" in text
    assert "--n " not in text and "--n}" not in text and "--generator" not in text.replace("--question-generator", "")


def test_run_has_the_same_question_options() -> None:
    text = run_cli.build_parser().format_help()
    assert "--n-questions" in text and "--question-generator" in text and "--seed" in text


@pytest.mark.parametrize("build, argv", [(run_cli.build_parser, []), (sweep_cli.build_parser, ["--config", "c", "--grid", "k=1,2"])])
def test_seed_on_run_and_sweep_overrides_the_config_seed(build, argv) -> None:
    args = build().parse_args([*argv, "--seed", "7", "--set", "top_k=5"])
    if not hasattr(args, "no_generation"):
        args.no_generation = False
    assert overrides_from_args(args) == ["top_k=5", "seed=7"]
    assert load_config(SMOKE, overrides_from_args(args)).seed == 7
    unset = build().parse_args(argv)
    unset.no_generation = getattr(unset, "no_generation", False)
    assert "seed=" not in " ".join(overrides_from_args(unset))


def test_run_seed_reaches_the_run_config() -> None:
    args = run_cli.build_parser().parse_args(["--config", str(SMOKE), "--seed", "11"])
    assert run_cli._config(args).seed == 11


def test_a_negative_seed_is_one_line_and_exit_2(capsys) -> None:
    assert main(["run", "--config", str(SMOKE), "--seed", "-1"]) == 2
    assert "seed" in capsys.readouterr().err


@pytest.mark.parametrize("subcommand", ["run", "sweep", "questions", "compare"])
def test_every_subcommand_with_a_seed_calls_it_seed(subcommand, capsys) -> None:
    with pytest.raises(SystemExit):
        main([subcommand, "--help"])
    assert "--seed S" in capsys.readouterr().out
