"""Canonical Wikipedia URLs: expected strings are the ones Wikipedia itself uses (oracle)."""

import pytest
from hypothesis import given, strategies as st

from rag.data.urls import title_from_wiki_url, wiki_url


@pytest.mark.parametrize("title, expected", [
    ("Game theory", "https://en.wikipedia.org/wiki/Game_theory"),
    ("Newton's laws of motion", "https://en.wikipedia.org/wiki/Newton%27s_laws_of_motion"),
    ("Schrödinger's cat", "https://en.wikipedia.org/wiki/Schr%C3%B6dinger%27s_cat"),
    ("Gabriel García Márquez", "https://en.wikipedia.org/wiki/Gabriel_Garc%C3%ADa_M%C3%A1rquez"),
    ("Phenomenology (philosophy)", "https://en.wikipedia.org/wiki/Phenomenology_(philosophy)"),
    ("AC/DC", "https://en.wikipedia.org/wiki/AC/DC"),
    ("Who's Afraid of Virginia Woolf?", "https://en.wikipedia.org/wiki/Who%27s_Afraid_of_Virginia_Woolf%3F"),
    ("2001: A Space Odyssey", "https://en.wikipedia.org/wiki/2001:_A_Space_Odyssey"),
    ("John V, Count of Nassau-Siegen", "https://en.wikipedia.org/wiki/John_V,_Count_of_Nassau-Siegen"),
    ("Acid–base reaction", "https://en.wikipedia.org/wiki/Acid%E2%80%93base_reaction"),
    ("AT&T", "https://en.wikipedia.org/wiki/AT%26T"),
    ("C++", "https://en.wikipedia.org/wiki/C%2B%2B"),
    ("東京", "https://en.wikipedia.org/wiki/%E6%9D%B1%E4%BA%AC"),
])
def test_wiki_url_matches_wikipedia(title, expected):
    assert wiki_url(title) == expected
    assert title_from_wiki_url(expected) == title


def test_empty_title_and_foreign_url_are_rejected():
    with pytest.raises(ValueError):
        wiki_url("  ")
    with pytest.raises(ValueError, match="not a Wikipedia article URL"):
        title_from_wiki_url("https://example.org/page")


titles = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="_#<>[]{}|"),
                 min_size=1, max_size=20).flatmap(
    lambda first: st.lists(st.just(first), min_size=1, max_size=3).map(" ".join))


@given(titles)
def test_url_round_trip(title):
    url = wiki_url(title)
    assert url.isascii() and " " not in url and "?" not in url
    assert title_from_wiki_url(url) == title
