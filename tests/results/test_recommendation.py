"""The recommendation rule on hand-built comparisons: a clear winner, a cheaper method shown non-inferior,
equivalent methods, undecided sets with the questions they need (checked against the formula), small sets,
ties, a different method per set, and the answer lift over closed_book."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag.results.comparison import POOLED, StatisticsSettings, compare
from rag.results.format import lift_lines, recommendation_lines, verdict_line
from scipy import stats

from rag.results.recommendation import (
    EQUIVALENT, MIN_QUESTIONS, NON_INFERIOR, PER_SET, UNDECIDED, WINNER, cheaper_beyond_noise, default_primary,
)
from rag.runner.answers import answer_power_warning

SETTINGS = StatisticsSettings(n_resamples=2000)
MS = {"dense": 3.0, "bm25": 1.0, "convex": 4.0}
NOISE = {"dense": 0.2, "bm25": 0.1, "convex": 0.3}  # far below the gaps between MS: costs tell apart


def frame(scores: dict[str, dict[str, list[float]]], answers: dict[str, dict[str, list[float]]] | None = None,
          ms: dict[str, float] = MS, noise: dict[str, float] = NOISE) -> pd.DataFrame:
    """Per-query rows from ``{set: {method: ndcg values}}`` (and ``{set: {method: f1 values}}``),
    each method costing ``ms`` per question with timing noise ``noise``."""
    rows = []
    for question_set, by_method in scores.items():
        methods = list(by_method) + [m for m in (answers or {}).get(question_set, {}) if m not in by_method]
        for method in methods:
            values = by_method.get(method)
            n = len(values) if values is not None else len(answers[question_set][method])
            for i in range(n):
                f1 = (answers or {}).get(question_set, {}).get(method)
                rows.append({"question_set": question_set, "method": method, "qid": f"q{i}",
                             "ndcg@10": np.nan if values is None else values[i],
                             "f1": np.nan if f1 is None else f1[i],
                             "generation_status": "answered" if f1 is not None else "not requested",
                             "retrieval_ms": ms.get(method, np.nan), "retrieval_ms_noise": noise.get(method, np.nan),
                             "generation_s": 1.0, "prompt_tokens": 1,
                             "completion_tokens": 1, "chunks_used": 1.0})
    return pd.DataFrame(rows)


def ramp(n: int, shift: float = 0.0) -> list[float]:
    return list(np.linspace(0.2, 0.6, n) + shift)


def test_clear_winner_everywhere() -> None:
    n = 30
    per_set = {"dense": ramp(n), "bm25": ramp(n, -0.1), "convex": ramp(n, 0.1)}
    comparison = compare(frame({"s1": per_set, "s2": per_set}), ["ndcg@10"], SETTINGS)
    r = comparison.recommendation
    assert (r.outcome, r.method) == (WINNER, "convex")
    assert [s.outcome for s in r.sets] == [WINNER, WINNER] and r.wins["convex"] == 2
    assert r.eligible == ["convex"]
    lines = recommendation_lines(comparison)
    assert lines[1].strip().startswith("Use convex: best on ndcg@10 in 2 of 2 sets, significantly better than "
                                       "every other method in 2")
    assert "4.0 ms per question against 1.0 ms for bm25" in " ".join(recommendation_lines(comparison, width=10_000))
    assert len(lines) <= 25 and max(map(len, lines)) <= 100


def test_indistinguishable_methods_are_undecided_and_the_cheapest_is_not_chosen_by_default() -> None:
    rng = np.random.default_rng(0)
    noise = lambda: list(0.5 + rng.normal(0, 0.2, 20))  # noqa: E731 - three indistinguishable methods
    comparison = compare(frame({"s1": {"dense": noise(), "bm25": noise(), "convex": noise()}}), ["ndcg@10"], SETTINGS)
    r, s = comparison.recommendation, comparison.recommendation.sets[0]
    assert s.outcome == UNDECIDED and sorted(s.top_group) == ["bm25", "convex", "dense"]
    assert s.method == s.best and r.outcome == UNDECIDED and r.method == s.best
    assert s.questions_needed > 20 and r.questions_needed == s.questions_needed
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert "cheapest" not in text and f"about {s.questions_needed} questions would decide (20 now)" in text
    assert "may be up to" in text


def close(n: int, gap: float, spread: float, seed: int = 0) -> dict[str, list[float]]:
    """Two methods on the same questions: convex ``gap`` above bm25 on average, per-question spread ``spread``."""
    rng = np.random.default_rng(seed)
    base = rng.random(n) * 0.6 + 0.2
    return {"bm25": list(base + rng.normal(0, spread, n)), "convex": list(base + gap + rng.normal(0, spread, n))}


def test_a_cheaper_method_within_the_margin_is_non_inferior() -> None:
    comparison = compare(frame({"s1": close(300, 0.004, 0.02)}, ms={"bm25": 0.1, "convex": 9.0},
                               noise={"bm25": 0.05, "convex": 0.5}), ["ndcg@10"], SETTINGS)
    r, s = comparison.recommendation, comparison.recommendation.sets[0]
    assert (s.outcome, s.method, s.best) == (NON_INFERIOR, "bm25", "convex")
    assert -0.02 < s.against("bm25").interval[0] < s.against("bm25").difference < 0
    assert (r.outcome, r.method) == (NON_INFERIOR, "bm25")
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert "Use bm25: not worse than the best on ndcg@10 by more than the margin 0.02 in its one set" in text
    assert "0.1 ms per question against 9.0 ms for convex" in text


def test_unknown_noise_chooses_nothing_on_cost() -> None:
    # an LLM-backed method's noise is not measured (NaN): a cost that looks far lower decides nothing
    comparison = compare(frame({"s1": close(300, 0.004, 0.02)}, ms={"bm25": 0.1, "convex": 9.0},
                               noise={"bm25": np.nan, "convex": 0.5}), ["ndcg@10"], SETTINGS)
    assert comparison.recommendation.sets[0].outcome != NON_INFERIOR
    assert comparison.recommendation.sets[0].method == "convex"


def test_methods_within_the_margin_on_enough_questions_are_equivalent() -> None:
    comparison = compare(frame({"s1": close(300, 0.002, 0.02)}, ms={"bm25": 1.0, "convex": 1.2},
                               noise={"bm25": 0.5, "convex": 0.5}), ["ndcg@10"], SETTINGS)
    r, s = comparison.recommendation, comparison.recommendation.sets[0]
    assert s.outcome == EQUIVALENT and sorted(s.top_group) == ["bm25", "convex"]
    low, high = s.against("bm25").interval
    assert -0.02 < low < high < 0.02
    assert (r.outcome, sorted(r.equivalent)) == (EQUIVALENT, ["bm25", "convex"])
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert "are equivalent on ndcg@10 within ±0.02 in its one set" in text and "pick on anything else" in text
    assert r.as_dict()["sets"][0]["versus"][0]["interval"] == [low, high]


def test_twenty_questions_with_a_large_consistent_difference_give_a_verdict() -> None:
    comparison = compare(frame({"mine": close(20, 0.25, 0.03)}), ["ndcg@10"], SETTINGS)
    r = comparison.recommendation
    assert (r.outcome, r.method) == (WINNER, "convex") and r.sets[0].outcome == WINNER
    assert "by more than the margin 0.02" in " ".join(recommendation_lines(comparison, width=10_000))


def test_twenty_questions_with_a_small_difference_say_how_many_more_they_need() -> None:
    """The number is the topic-set-size formula written out here: the fewest questions at which an
    interval at the set's level clears 0 (better) or the margin (equivalent), at 80% power."""
    comparison = compare(frame({"mine": close(20, 0.01, 0.08, seed=2)}), ["ndcg@10"], SETTINGS)
    s = comparison.recommendation.sets[0]
    assert s.outcome == UNDECIDED and s.questions == 20
    v = s.versus[0]
    diffs = np.array(close(20, 0.01, 0.08, seed=2)["bm25"]) - np.array(close(20, 0.01, 0.08, seed=2)["convex"])
    assert v.sd == pytest.approx(diffs.std(ddof=1)) and v.difference == pytest.approx(diffs.mean())
    level = s.interval_level
    assert level == pytest.approx(0.05)  # two methods: one comparison

    def fewest(distance: float) -> int | None:
        if distance <= 0:
            return None
        for n in range(2, 100_001):
            width = (stats.t.ppf(1 - level / 2, n - 1) + stats.t.ppf(0.8, n - 1)) * v.sd / np.sqrt(n)
            if width <= distance:
                return n
        return None

    expected = min(n for n in (fewest(-v.difference), fewest(0.02 - abs(v.difference))) if n is not None)
    assert s.questions_needed == max(expected, MIN_QUESTIONS) > 20
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert f"about {s.questions_needed} questions would decide (20 now)" in text


def test_fewer_than_the_floor_decide_nothing() -> None:
    comparison = compare(frame({"mine": close(MIN_QUESTIONS - 1, 0.4, 0.01)}), ["ndcg@10"], SETTINGS)
    s = comparison.recommendation.sets[0]
    assert s.outcome == UNDECIDED and s.versus[0].state == "better"  # the test alone would call it
    assert f"fewer than {MIN_QUESTIONS} questions decide nothing" in " ".join(recommendation_lines(comparison, 10_000))


def test_cheaper_beyond_noise() -> None:
    ms, noise = {"a": 1.0, "b": 2.0, "c": 2.5}, {"a": 0.3, "b": 0.3, "c": 0.1}
    assert cheaper_beyond_noise("a", ["a", "b", "c"], ms, noise)  # 1.0 gap > 0.6, 1.5 gap > 0.4
    assert not cheaper_beyond_noise("a", ["a", "b"], ms, {**noise, "b": 0.7})  # 1.0 gap = 0.3 + 0.7
    assert not cheaper_beyond_noise("b", ["a", "b"], ms, noise)  # not the cheaper
    assert not cheaper_beyond_noise("a", ["a", "b"], ms, {**noise, "a": np.nan})


def test_exact_tie_is_equivalent_and_config_order_names_the_best() -> None:
    same = ramp(12)
    comparison = compare(frame({"s1": {"dense": same, "convex": same}}), ["ndcg@10"], SETTINGS)
    s = comparison.recommendation.sets[0]
    assert (s.best, s.outcome, s.top_group, s.method) == ("dense", EQUIVALENT, ["dense", "convex"], "dense")
    assert s.versus[0].interval == [0.0, 0.0]


def test_a_different_winner_per_set_is_no_single_method() -> None:
    n = 30
    comparison = compare(frame({"s1": {"dense": ramp(n, 0.2), "bm25": ramp(n)},
                                "s2": {"dense": ramp(n), "bm25": ramp(n, 0.2)}}), ["ndcg@10"], SETTINGS)
    r = comparison.recommendation
    assert (r.outcome, r.method, r.eligible) == (PER_SET, None, [])
    assert [(s.question_set, s.method) for s in r.sets] == [("s1", "dense"), ("s2", "bm25")]
    assert "No single method" in recommendation_lines(comparison)[1]


def test_winner_in_one_set_tied_in_another() -> None:
    rng = np.random.default_rng(1)
    n = 30
    comparison = compare(frame({"s1": {"dense": ramp(n), "convex": ramp(n, 0.1)},
                                "s2": {"dense": list(0.5 + rng.normal(0, 0.2, n)), "convex": list(0.5 + rng.normal(0, 0.2, n))}}),
                         ["ndcg@10"], SETTINGS)
    r = comparison.recommendation
    assert (r.outcome, r.method) == (WINNER, "convex") and r.wins == {"convex": 1, "dense": 0}
    assert r.sets[1].outcome == UNDECIDED


def test_underpowered_set_says_so_with_the_smallest_p() -> None:
    """4 methods on 5 questions: 6 pairs, Holm: at best 6 * 2 / 32 = 0.375, whatever the scores."""
    per_set = {"dense": ramp(5), "bm25": ramp(5, -0.1), "convex": ramp(5, 0.1), "rrf": ramp(5, 0.05)}
    comparison = compare(frame({"s1": per_set}), ["ndcg@10"], SETTINGS)
    s = comparison.recommendation.sets[0]
    assert s.outcome == UNDECIDED and {v.state for v in s.versus} == {"underpowered"}
    assert all(v.smallest_p_adjusted == pytest.approx(0.375) for v in s.versus)
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert "underpowered (n = 5: smallest possible p after Holm 0.38)" in text
    verdict = comparison.verdicts.iloc[0]
    assert "underpowered (n = 5: smallest possible p after Holm 0.38)" in verdict_line(verdict)
    assert "not significant" not in verdict_line(verdict)


def test_answer_lift_over_closed_book_per_set_and_pooled() -> None:
    n = 7
    answers = {s: {"dense": [0.9] * n, "oracle": [1.0] * n, "closed_book": [0.1] * n} for s in ("s1", "s2")}
    comparison = compare(frame({s: {"dense": ramp(n)} for s in ("s1", "s2")}, answers), ["ndcg@10", "f1"], SETTINGS,
                         control="closed_book")
    lifts = comparison.lifts.set_index(["question_set", "method"])
    assert lifts.loc[("s1", "dense"), "lift"] == pytest.approx(0.8)
    assert lifts.loc[(POOLED, "oracle"), "lift"] == pytest.approx(0.9) and lifts.loc[(POOLED, "oracle"), "n_pairs"] == 14
    # per set: 2 tests on 7 pairs -> at best 2 * 2 / 128 = 0.031 < 0.05; pooled 14 pairs -> Monte Carlo floor x 2
    assert lifts.loc[("s1", "dense"), "smallest_p_adjusted"] == pytest.approx(2 * 2 / 2**7)
    assert lifts.loc[(POOLED, "dense"), "smallest_p_adjusted"] == pytest.approx(2 / 2001)
    assert lifts.loc[(POOLED, "dense"), "significant"]
    text = " ".join(lift_lines(comparison, width=10_000))
    assert "lift over closed_book" in text and "pooled over s1, s2 (14 questions" in text and "oracle +0.900" in text


def test_pre_run_warning_names_the_key_and_the_n_needed() -> None:
    # the old default: 6 answering methods, 15 pairs per set, no control: 7 per set can never be significant
    warning = answer_power_warning({"a": 7, "b": 7}, 6, False, 0.05, 10_000, "holm")
    assert warning.startswith("generation.questions_per_set: 7 ") and "0.23" in warning
    assert warning.endswith("generation.questions_per_set >= 10 needed")
    # with closed_book the pooled lift (5 tests) over 4 x 7 = 28 questions can be significant
    assert answer_power_warning({s: 7 for s in "abcd"}, 6, True, 0.05, 10_000, "holm") is None
    # one set of 3 with closed_book: 5 tests on 3 pairs -> 5 * 2 / 8 >= 0.05; 8 needed
    assert answer_power_warning({"a": 3}, 6, True, 0.05, 10_000, "holm").endswith(">= 8 needed")
    assert answer_power_warning({"a": 0}, 6, True, 0.05, 10_000, "holm") is None


def test_default_primary() -> None:
    assert default_primary(["mrr@10", "ndcg@10", "chunk:ndcg@10", "f1"], 10) == "ndcg@10"
    assert default_primary(["mrr@10", "recall@5", "f1"], 10) == "mrr@10"
    assert default_primary(["f1", "em"], 10) is None


def test_results_markdown_prints_the_recommendation_and_the_lift(tmp_path, monkeypatch, capsys) -> None:
    """scripts/results_markdown.py on written files: the run's own sentences, rebuilt from comparison.json."""
    import runpy
    import sys

    from rag.results.format import overall_line
    from rag.results.recommendation import Recommendation
    from rag.results.writers import write_comparison

    n = 30
    answers = {"s1": {"dense": ramp(n, 0.3), "convex": ramp(n, 0.35), "closed_book": ramp(n)}}
    comparison = compare(frame({"s1": {"dense": ramp(n), "convex": ramp(n, 0.1)}}, answers), ["ndcg@10", "f1"],
                         SETTINGS, control="closed_book")
    write_comparison(comparison, tmp_path, "trec", "url")
    data = __import__("json").loads((tmp_path / "comparison.json").read_text())
    assert overall_line(Recommendation.from_dict(data["recommendation"])) == overall_line(comparison.recommendation)
    monkeypatch.setattr(sys, "argv", ["results_markdown.py", str(tmp_path), "--metrics", "ndcg@10,f1"])
    runpy.run_path(str(__import__("pathlib").Path(__file__).parents[2] / "scripts" / "results_markdown.py"),
                   run_name="__main__")
    printed = capsys.readouterr().out
    assert overall_line(comparison.recommendation) in printed and printed.index("Recommendation") < printed.index("| question set")
    assert "- s1 (30 q): use convex (0.500), +0.100 [+0.100, +0.100] over dense" in printed
    assert "**Answers: lift over closed_book**" in printed and "| convex | +0.350 [+0.350, +0.350]* |" in printed


def test_first_screen_of_the_main_job_fits_25_lines() -> None:
    """4 sets x 4 retrieval methods + closed_book and oracle answering one set: the recommendation and
    the answer lift (with a blank line between) take at most 25 lines of at most 100 columns."""
    rng = np.random.default_rng(3)
    n = 28
    scores = {s: {m: list(rng.random(n)) for m in ("dense", "bm25", "rrf", "convex")}
              for s in ("seed_style", "known_item", "multi_doc", "reference")}
    answers = {"known_item": {m: list(rng.random(n)) for m in ("dense", "bm25", "rrf", "convex", "closed_book",
                                                               "oracle")}}
    per_query = frame(scores, answers)
    per_query["match"] = (per_query["f1"] > 0.5).astype(float).where(per_query["f1"].notna())
    comparison = compare(per_query, ["ndcg@10", "f1", "match"], StatisticsSettings(n_resamples=500),
                         control="closed_book")
    lines = recommendation_lines(comparison) + [""] + lift_lines(comparison)
    assert len(lines) <= 25 and max(map(len, lines)) <= 100
    assert "smallest possible p after Holm 0.01" in " ".join(lift_lines(comparison, width=10_000))  # 5 / 501


def test_terminal_summary_puts_verdicts_behind_verbose(tmp_path) -> None:
    from rag.runner.pipeline import RunResult
    from rag.runner.summary import summary_text

    n = 30
    per_set = {"dense": ramp(n), "bm25": ramp(n, -0.1), "convex": ramp(n, 0.1)}
    comparison = compare(frame({"s1": per_set, "s2": per_set}), ["ndcg@10"], SETTINGS)
    result = RunResult(tmp_path, comparison, pd.DataFrame(), {"load": 1.0}, {})
    short, verbose = summary_text(result), summary_text(result, verbose=True)
    first_screen = short.splitlines()[:25]
    assert any(line.strip().startswith("Use convex:") for line in first_screen)
    assert "convex best on ndcg@10" not in short and "--verbose" in short
    assert "convex best on ndcg@10 (0.500): +0.100" in verbose
    assert "paired paired" not in verbose and "paired sign-flip randomization test, Holm-adjusted" in verbose


def test_a_set_that_cannot_judge_is_left_out_of_the_overall_rule() -> None:
    """The wiki case of issue 27: a lexically biased set where bm25 wins outright, a third-party set where
    convex does. Left out, the biased set no longer decides; every set left out names no method."""
    from rag.results.recommendation import CANNOT_JUDGE, recommend

    n = 30
    biased = {"dense": ramp(n), "bm25": ramp(n, 0.2), "convex": ramp(n, 0.1)}
    third_party = {"dense": ramp(n), "bm25": ramp(n, -0.1), "convex": ramp(n, 0.1)}
    comparison = compare(frame({"template": biased, "given": third_party}), ["ndcg@10"], SETTINGS)
    both = comparison.recommendation
    assert both.outcome == "per set" and both.method is None  # bm25 wins one set, convex the other
    judged = recommend(comparison.table, comparison.pairwise, "ndcg@10", 0.05, unjudged=["template"])
    assert (judged.outcome, judged.method, judged.unjudged) == (WINNER, "convex", ["template"])
    assert [s.question_set for s in judged.sets] == ["template", "given"]  # its own line stays
    assert judged.wins == {"dense": 0, "bm25": 0, "convex": 1}
    comparison.recommendation = judged
    text = " ".join(recommendation_lines(comparison, width=10_000))
    assert "Use convex: best on ndcg@10 in 1 of 1 sets" in text and "Left out: template (its questions cannot judge)" in text
    assert "template (30 q): use bm25" in text and "its questions cannot judge (warning above); not counted" in text
    none = recommend(comparison.table, comparison.pairwise, "ndcg@10", 0.05, unjudged=["template", "given"])
    assert (none.outcome, none.method) == (CANNOT_JUDGE, None)
    comparison.recommendation = none
    assert "No recommendation on ndcg@10" in " ".join(recommendation_lines(comparison, width=10_000))


def test_a_comparison_json_written_before_the_margin_reads_as_undecided_without_intervals() -> None:
    """An earlier run's recommendation ("no winner", each versus's margin = best - method, by_cost) still
    prints: undecided, its difference with the sign of the new field, and no interval claimed."""
    from rag.results.format import overall_line, set_line
    from rag.results.recommendation import Recommendation

    versus = {"method": "rrf", "state": "tied", "margin": 0.039, "p_adjusted": 0.2, "n_pairs": 48,
              "smallest_p_adjusted": 0.001, "mdd": 0.05, "mean": 0.297, "ms_per_query": 6.5, "ms_noise": 11.6}
    earlier = {"primary": "ndcg@10", "alpha": 0.05, "outcome": "no winner", "method": "dense", "by_cost": False,
               "sets": [{"question_set": "reference", "questions": 48, "outcome": "no winner", "method": "dense",
                         "method_ms_per_query": 5.8, "best": "dense", "best_mean": 0.335, "top_group": ["dense", "rrf"],
                         "by_cost": False, "method_ms_noise": 11.3, "versus": [versus]}],
               "wins": {"dense": 0, "rrf": 0}, "best_in": {"dense": 1, "rrf": 0}, "eligible": ["dense", "rrf"],
               "ms_per_query": {"dense": 5.8, "rrf": 6.5}, "unjudged": [], "ms_noise": {"dense": 11.3, "rrf": 11.6}}
    r = Recommendation.from_dict(earlier)
    assert (r.outcome, r.sets[0].outcome, r.sets[0].versus[0].difference) == (UNDECIDED, UNDECIDED, -0.039)
    assert "run it again" in overall_line(r) and "nan" not in overall_line(r)
    assert "rrf - dense -0.039 (no interval" in set_line(r.sets[0])


@pytest.mark.parametrize("seed", range(12))
def test_every_outcome_is_backed_by_what_its_line_claims(seed: int) -> None:
    """Random sets (2-4 methods, 10-60 questions, shifts from none to large, costs near and far apart):
    a winner beats every other method in the tests; a non-inferior method is cheaper beyond noise than
    the best and its interval's lower end lies above -margin; an equivalent top group lies inside
    ±margin; an undecided set names the number of questions that would decide, or says none would."""
    rng = np.random.default_rng(seed)
    methods = ["dense", "bm25", "rrf", "convex"][: rng.integers(2, 5)]
    n = int(rng.integers(10, 61))
    base = rng.random(n)
    scores = {m: list(np.clip(base + rng.choice([0.0, 0.002, 0.03, 0.2]) + rng.normal(0, rng.choice([0.005, 0.05, 0.2]), n),
                              0, 1)) for m in methods}
    ms = {m: float(rng.choice([0.1, 1.0, 10.0])) for m in methods}
    noise = {m: float(rng.choice([0.01, 0.5, 20.0])) for m in methods}
    comparison = compare(frame({"s": scores}, ms=ms, noise=noise), ["ndcg@10"], StatisticsSettings(n_resamples=500))
    s, margin = comparison.recommendation.sets[0], comparison.recommendation.margin
    for v in s.versus:
        assert v.interval[0] <= v.difference + 1e-12 and v.difference - 1e-12 <= v.interval[1]
    if s.outcome == WINNER:
        assert all(v.state == "better" for v in s.versus) and s.method == s.best
    elif s.outcome == NON_INFERIOR:
        v = s.against(s.method)
        assert v.interval[0] > -margin and cheaper_beyond_noise(s.method, [s.best], ms, noise)
    elif s.outcome == EQUIVALENT:
        assert all(-margin < v.interval[0] and v.interval[1] < margin for v in s.versus if v.method in s.top_group)
    else:
        assert s.outcome == UNDECIDED
        assert s.questions_needed is None or s.questions_needed >= MIN_QUESTIONS
        said = " ".join(recommendation_lines(comparison, width=10_000))
        assert (f"about {s.questions_needed} questions would decide ({n} now)" in said if s.questions_needed
                else "smaller than any practical number" in said)
