"""NLTK's word tokenizer (``nltk.tokenize.NLTKWordTokenizer``, NLTK 3.10) as rule tables applied to a
whole block of texts at once, with the same tokens as NLTK applied sentence by sentence.

NLTK tokenizes one sentence at a time with about thirty regular-expression substitutions; on short
strings most of the time goes to per-call overhead and to patterns the engine cannot skip through.
Here the rules are split in two at NLTK's whitespace normalization (``\\s+`` -> one space):

- :data:`HEAD` (NLTK's starting quotes, punctuation, brackets, double dashes and the first three
  ending-quote rules) runs once over a whole block: every text lower-cased, joined with
  :data:`TEXT_SEP`, and its sentence ends replaced by :data:`SENTENCE_SEP`. Each rule is NLTK's, with
  the separators excluded from its negated character classes (``[^\\.]`` -> ``[^\\.<seps>]``), ``^``
  read as "after a separator or at the start" and ``$`` as "before an optional newline, then a
  separator or the end". Since no rule matches empty text and no match can contain a separator, each
  sentence is rewritten exactly as NLTK rewrites it alone. Texts holding a separator character are
  rewritten one sentence at a time with the unmodified rules instead.
- The result is cut into *pieces*: maximal runs without white space (the ``regex`` engine's ``\\s``,
  the one NLTK's normalization uses). Every later rule — :data:`TAIL`: the clitic rules and
  contractions — matches inside one piece, with one space on each side as its only context (NLTK
  pads the sentence with spaces and normalizes white space to single spaces first), so a piece
  always gives the same tokens wherever it occurs: distinct pieces are resolved once, all together
  (joined by `` <sep> ``), and a token is what ``str.split`` leaves of the result, as in NLTK.

Rules keep NLTK's engine: NLTK compiles its own rules with the third-party ``regex`` module and the
contractions with ``re``; a rule of literal characters only (no ``\\w``, ``\\s``, ``\\d``, ``\\b``, no
case folding) means the same in both engines and runs on whichever is faster.
``tests/retrievers/test_tokenizers.py`` checks every token against NLTK itself on the bundled corpus,
its questions and random Unicode.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

import regex

SENTENCE_SEP = "\x00"
TEXT_SEP = "\x01"
SEPARATORS = SENTENCE_SEP + TEXT_SEP
#: The sentence splitter of the ``seed003`` tokenizer (see :mod:`rag.retrievers.tokenizers`).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Rule(NamedTuple):
    """One substitution; the pattern may hold ``~X~`` (the separators, inside a character class),
    ``~START~`` (NLTK's ``^``) and ``~END~`` (NLTK's ``$``)."""

    pattern: str
    replacement: str
    engine: Literal["regex", "re"]


_CLOSERS = r"\]\)}>\"'"
HEAD = (
    # NLTKWordTokenizer.STARTING_QUOTES
    Rule("([«“‘„]|[`]+)", r" \1 ", "regex"),
    Rule(r'~START~"', "``", "regex"),
    Rule("(``)", r" \1 ", "re"),
    Rule(r"([ \(\[{<])(\"|\'{2})", r"\1 `` ", "re"),
    Rule(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", r"\1 ", "regex"),
    # PUNCTUATION
    Rule(r"([^\.~X~])(\.)([" + _CLOSERS + r"»”’ ]*+)\s*~END~", r"\1 \2 \3 ", "regex"),
    Rule(r"([:,])([^\d~X~])", r" \1 \2", "regex"),
    Rule(r"([:,])~END~", r" \1 ", "regex"),
    Rule(r"\.{2,}", r" \g<0> ", "re"),
    Rule(r"[;@#$%&]", r" \g<0> ", "re"),
    Rule(r"[\u2012-\u2015]", r" \g<0> ", "regex"),
    Rule(r"([^\.~X~])(\.)([" + _CLOSERS + r"]*)\s*~END~", r"\1 \2\3 ", "regex"),
    Rule(r"[?!]", r" \g<0> ", "re"),
    # NLTK: ([^'])' -> \1 ' ; written to start with its literal (fast to search for). It can match
    # where NLTK's cannot (the char before the quote ending the previous match), but only by adding
    # spaces next to spaces: no later rule before the white-space normalization looks at spaces.
    Rule(r"' (?<=[^'~X~]' )", " ' ", "re"),
    Rule(r"[*]", r" \g<0> ", "re"),
    # PARENS_BRACKETS, DOUBLE_DASHES
    Rule(r"[\]\[\(\)\{\}\<\>]", r" \g<0> ", "re"),
    Rule(r"--", r" -- ", "re"),
    # ENDING_QUOTES before the white-space normalization (they need no context: NLTK runs them after
    # padding the sentence with spaces, which changes nothing for them)
    Rule("([»”’])", r" \1 ", "regex"),
    Rule(r"''", " '' ", "re"),
    Rule(r'"', " '' ", "re"),
)
TAIL = (
    # ENDING_QUOTES after the normalization
    Rule(r"([^' ~X~])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 ", "re"),
    Rule(r"([^' ~X~])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 ", "re"),
    # MacIntyreContractions.CONTRACTIONS2 and CONTRACTIONS3 (NLTK compiles these with ``re``)
    *(
        Rule(pattern, r" \1 \2 ", "re")
        for pattern in (
            r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b",
            r"(?i)\b(gon)(?#X)(na)\b", r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b",
            r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)",
            r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b",
        )
    ),
)
#: A piece: a maximal run of characters that are not white space for ``regex`` (NLTK's ``\s+``).
_PIECE = regex.compile(r"\S+")
#: What a tail rule needs in an ASCII piece (see :func:`resolve`).
_TAIL_TRIGGER = re.compile("'|cannot|gimme|gonna|gotta|lemme|wanna")
#: The only characters ``str.split`` takes for white space and ``regex`` does not.
_STR_ONLY_SPACE = regex.compile("[\x1c-\x1f]")


@lru_cache(maxsize=4)
def _compiled(rules: tuple[Rule, ...], joined: bool) -> list[tuple[re.Pattern, str]]:
    """``rules`` compiled for a joined block (``joined``) or for one sentence (NLTK's own patterns)."""
    seps = "".join(f"\\x{ord(sep):02x}" for sep in SEPARATORS)
    marks = {"~X~": seps, "~START~": f"(?:^|(?<=[{seps}]))", "~END~": f"(?=\\n?(?:[{seps}]|\\Z))"} if joined else {
        "~X~": "", "~START~": "^", "~END~": "$"}
    compiled = []
    for rule in rules:
        pattern = rule.pattern
        for mark, value in marks.items():
            pattern = pattern.replace(mark, value)
        compiled.append(((regex if rule.engine == "regex" else re).compile(pattern), rule.replacement))
    return compiled


def _apply(rules: list[tuple[re.Pattern, str]], text: str) -> str:
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


def cut(texts: list[str]) -> list[list[str]]:
    """The pieces of each text (lower-cased, split into sentences, :data:`HEAD` applied)."""
    joinable = [i for i, text in enumerate(texts) if not any(sep in text for sep in SEPARATORS)]
    pieces: list[list[str]] = [[] for _ in texts]
    if joinable:
        block = SENTENCE_END.sub(SENTENCE_SEP, TEXT_SEP.join(texts[i].lower() for i in joinable))
        block = _apply(_compiled(HEAD, True), block).replace(SENTENCE_SEP, " ")
        split = _PIECE.findall if _STR_ONLY_SPACE.search(block) else str.split
        for i, text in zip(joinable, block.split(TEXT_SEP)):
            pieces[i] = split(text)
    rules = _compiled(HEAD, False)
    for i in sorted(set(range(len(texts))) - set(joinable)):
        pieces[i] = [p for sentence in SENTENCE_END.split(texts[i].lower()) for p in _PIECE.findall(_apply(rules, sentence))]
    return pieces


def resolve(pieces: list[str]) -> list[list[str]]:
    """The tokens of each piece (:data:`TAIL` applied with a space on each side, then split).

    An ASCII piece that :data:`_TAIL_TRIGGER` does not find is left alone by every tail rule (each
    needs an apostrophe or one of those words; lower-cased ASCII has no other case variants): its
    tokens are ``piece.split()`` (``str.split`` also splits at \\x1c-\\x1f)."""
    if not pieces:
        return []
    tokens: list[list[str]] = [[]] * len(pieces)
    changing = []
    for i, piece in enumerate(pieces):
        if piece.isascii() and not _TAIL_TRIGGER.search(piece):
            tokens[i] = piece.split()
        else:
            changing.append(i)
    if any(sep in pieces[i] for i in changing for sep in SEPARATORS):  # the joined rules exclude both
        rules = _compiled(TAIL, False)
        for i in changing:
            tokens[i] = _apply(rules, f" {pieces[i]} ").split()
    elif changing:
        joined = _apply(_compiled(TAIL, True), " " + f" {SENTENCE_SEP} ".join(pieces[i] for i in changing) + " ")
        for i, part in zip(changing, joined.split(SENTENCE_SEP)):
            tokens[i] = part.split()
    return tokens
