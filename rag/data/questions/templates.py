"""The no-LLM question maker: answer-first templates over the prose sentences of a chunk.

Each template finds an answer span in one sentence of the chunk's prose and turns the rest of the
sentence into the question, so the answer is a phrase of the corpus's own authors and the question
a paraphrase-free restatement of what the sentence says (the cloze-to-question idea of Lewis et al.
2019, "Unsupervised Question Answering by Cloze Translation", with rule-based translation; the
known-item form is Azzopardi et al. 2007, "Building simulated queries for known-item topics").
For one chunk, every template that applies makes a candidate and one is drawn with the seeded
random generator. No template puts the document's title in the question, and an option whose
question names its document anyway ("Volcano is ..." -> "What is Volcano?") is not proposed: a
question naming its gold document measures name matching (:mod:`rag.data.questions.leak`); the
``names_gold_document`` filter (:mod:`rag.data.questions.filters`) removes any such LLM question too.

Prose sentences (:func:`prose_sentences`): the chunk is cut into blocks at blank lines; fenced code
blocks, headings, tables, block quotes, directive and option lines (``.. note::``, ``:param x:``),
and blocks whose lines are all indented (literal blocks) are left out; list markers are removed;
the lines of a block are joined with spaces (wrapped source text stays one sentence) and split into
sentences (:mod:`rag.text.sentences`). A prose sentence starts with an upper-case letter (a chunk
cut inside a sentence gives none), ends with ``.``, has 5 to 60 words, and holds no markup left
over from conversion (``<``, ``>``, ``{``, ``}``, ``[``, ``]``, ``|``, ``::``, a ``:role:`` or a URL); inline
code backticks and ``*``/``_`` emphasis are removed, the text of a code span kept as it is.

==============  ======================================================  ==========================
kind            sentence                                                question / answer
==============  ======================================================  ==========================
``definition``  "{X} is/are/was/were a/an/the {P}." (X: a noun phrase   "What is {X}?" / P's first
                of 1-8 words; an apposition "X, author of ..., was"     clause, or its head noun
                is left out)                                            phrase (:func:`_head`)
``known_item``  the same, X a proper name                               "What is the name of the
                                                                        {P}?" / X
``purpose``     "To {V}, {Y}." (V starts with a verb: not a function     "How do you {V}?" / Y's
                word, so not "To the extent possible, ...")             first clause
``wish``        "If you (only/just) want/need/wish/would like to {V},   "How do you {V}?" / Y
                {Y}."
``condition``   "If/When {C}, {Y}." (other conditions; C has a subject: "What happens if/when
                it does not start with a participle or "true", "set",   {C}?" / Y
                "enabled" ...)
``used_for``    "{X} is used to/for {V}." / "{X} lets/allows/enables    "What is used to {V}?" /
                you (to) {V}." (X: a noun phrase of 1-6 words)          X
``called``      "{X} is/was (also) known as/called/named {N}."          "What is {X} called?" / N
``when``        "{X} was/were {participle} ... in/on {date}."           "When was {X} {participle}?"
                                                                        / the date
==============  ======================================================  ==========================

A noun phrase starts with an article or a word that is not a function word (NLTK's stop words, the
pronouns, the fragment starts below) and holds no adverb in -ly ("Backups really are a ...") and no
"is"/"are"/"was"/"were" ("The sequence is unlogged and the server is a standby."). A
clause is cut at its first comma or semicolon. A candidate is made only when

* the slot the template filled (X, P, V or C) can stand in front of a whole corpus
  (:func:`specific`): no anaphora ("this", "it", "the above" ...) and at least two content words
  that are not generic ("option", "command", "default", "value", "file" ...), one for the term a
  definition asks about;
* the answer is a whole phrase (:func:`complete_answer`): it does not start like a dependent clause
  or a continuation ("if", "when", "or", "which", "then" ...) and points nowhere else ("the
  following function", "these"), its brackets and quotes are balanced,
  it holds a content word that is not generic, it does not end in an article, possessive,
  preposition or conjunction ("... sorted by their", a sentence cut or garbled in conversion), and it
  has at least two words (a name, for ``known_item`` and ``used_for``, may have one). The
  ``answer_length`` filter keeps it at 12 words;
* the answer completes its sentence (:func:`_continuation`, ``_INTERRUPTED``): it does not open
  with a participle (the rest of a condition: "automatically saving it in ..."), "one", "e.g." or
  "i.e.", holds no "thus"/"hence"/"therefore" (a consequence of an earlier sentence), and its
  clause was not cut at a comma inside an aside or a list of single words ("git push, like cvs
  commit, will complain" would give "git push", "a widely distributed, diverse, ever-changing group"
  "a widely distributed"); a how-to answer (``purpose``, ``wish``) has at least
  ``MIN_HOW_TO_ANSWER_WORDS`` (3) words ("safety triggers" is no instruction);
* the question stands alone: the slot's brackets and quotes are balanced (a condition cut at the
  comma of "(e.g., ...)" is not), no "the command", "the action" ... naming nothing
  (``_UNRESOLVED_ROLE``), no "any other ..." (``_RELATIVE_OTHER``: relative to a list in the
  passage), no "meantime", "still", "resulting", "otherwise" (``_ANAPHORA``); a condition has at
  least ``MIN_CONDITION_WORDS`` (4) words ("if pager is unspecified" names too little) and is not
  the reader's wish ("If you don't want to ...": ``_WISH_CONDITION``; "If you only want to ..." is a
  ``wish``); a definition's subject is not a gerund ("What is Supplying --prune-tags?");
* a definition's predicate does not open with a degree, a quantity or a judgement ("is a little
  easier", "is a bit special", "is the same", "is the default", "is a great way":
  ``_DEGREE_PREDICATE``): it says how much or how good, not what ("What is Verifying signatures?" /
  "a little easier");
* a definition or known item reads alone (issue 43, docs/data.md#template-ratings): its subject does
  not pick one out of what the passage spoke of ("the main inlet": :func:`_relational`), its predicate
  ranks only with a scope ("the most spoken language": :func:`_unscoped`) and is not a list's first
  item cut at a comma (``_LIST_AFTER_CUT``), its answer does not say the question again
  (:func:`_circular`), and a known item's description tells its item from others of its kind ("the
  Old English poem" does not: :func:`_described`); a condition is not a bare passive ("when
  difference equations are employed": ``_BARE_PASSIVE``); a how-to answer is addressed to the reader
  ("ATC enforces ...": :func:`_someone_else`); "the country", "the city" ... name no place
  (``_PLACE_ANAPHORA``);
* a condition or how-to names what it speaks of (docs/data.md#template-ratings, Python's library
  reference and Valgrind's manual): no definite noun phrase the passage introduced and neither a name,
  the chunk's title and section path nor the reader's common knowledge identifies ("if the testing
  strategy changes", "if the configure test succeeds", "to the specified socket":
  :func:`_unresolved_definite`; "the writerow() method", "the UTC offset", "the pool" under "Memory
  Pools" are resolved); a condition's answer is not a bare passive of such a thing ("the graph is
  updated": ``_DEFINITE_BARE_PASSIVE``), no answer ends in a bare comparative ("Memcheck can do better":
  ``_BARE_COMPARATIVE``), a ``used_for`` answer is no "a/an ..." kind that many chunks speak of ("A
  pattern": :func:`specific_in_folder` of the answer), and a condition
  is not the reader's wish anywhere in it ("a situation where you need to ...", "does not suit your
  needs": ``_WISH_CONDITION``) nor told in the past perfect ("had been copy-pasted": ``_PAST_PERFECT``);
* the sentence holds no link target (:meth:`FolderTerms.link_target`): a path whose last segment is
  a page of the folder ("... for achieving topics/repeatable-installs") is a link that conversion
  left in the text, not words a reader would ask with;
* the question is specific in its folder (:func:`specific_in_folder`, over the
  :class:`~rag.data.questions.specificity.FolderTerms` of every chunk given to the generator): its
  content words that are not generic hold a *distinctive* word (in at most 5 % of the folder's
  documents, at least 2) and at most ``MAX_MATCHING_CHUNKS`` (3) chunks hold them all. A condition
  that holds on many pages of a manual ("What happens if --recurse-submodules is specified?", "What
  happens if multiple patterns are given?") or a term every page of a library manual uses ("What is
  the return value?") is answered by many passages: the rubric's "so general that several documents
  answer it". Fewer chunks make a question; the templates may try every chunk.

Measured and left out (docs/data.md, "Questions from your corpus"): "What does {title} say about
{section}?" (it names the gold page by construction), "What is {title}?" (the same), link-anchor
questions (on the git HTML manual 2,720 of the 2,758 links between pages are the target's own page
name) and heading questions ("How to ..." headings: their first sentence seldom answers them).

Gold is the chunk's document; the chunk id is recorded (the question is
judged at chunk level too). A chunk no template applies to is counted (``no_template``), like an
LLM failure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from rag.data.questions.common import content_words, plain
from rag.data.questions.filters import MAX_ANSWER_WORDS, Candidate
from rag.data.questions.leak import document_names, names_gold
from rag.data.questions.specificity import FolderTerms
from rag.text.sentences import split_sentences
from rag.stopwords import ENGLISH_STOPWORDS
from rag.types import Chunk, Document

NO_TEMPLATE = "no_template"
MIN_SENTENCE_WORDS, MAX_SENTENCE_WORDS = 5, 60
MIN_ANSWER_WORDS = 2
#: An instruction ("How do you ...?") names an action and what it acts on.
MIN_HOW_TO_ANSWER_WORDS = 3
#: A condition of fewer words ("pager is unspecified", "you supply directories") names too little.
MIN_CONDITION_WORDS = 4
#: A condition about the reader's wishes ("If you don't want to ...", "When one wants to ...") is a
#: how-to, not an event.
_WISH_CONDITION = re.compile(r"^(?:you|one) (?:\S+ )?(?:wants?|needs?|wish(?:es)?|would like|(?:are|is) interested)\b"
                             r"|\b(?:you|one) (?:\S+ )?(?:wants?|needs?|wish(?:es)?|would like) to\b"
                             r"|\byour (?:needs|requirements|purposes)\b", re.IGNORECASE)
#: A condition in the past perfect ("When most everything in optparse had been copy-pasted over, ...") tells
#: a story: "What happens when ... had been ...?" asks about no circumstance.
_PAST_PERFECT = re.compile(r"\bhad\b", re.IGNORECASE)
MAX_SUBJECT_WORDS = 8
_PRONOUNS = frozenset("it this that these those he she they there here its his her their which who what one "
                      "each all some both either neither you we i".split())
_NAME_PARTICLES = frozenset("of and de von van al la le der del da di du".split())
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)
#: First words of a subject that start a noun phrase like an article, lower-cased in the question
#: ("Another zero-width assertion is ..." -> "What is another zero-width assertion?").
_DETERMINERS = frozenset("another every many several various certain".split())
#: Sentence adverbs: a subject starting with one is no noun phrase ("Perhaps the most important
#: metacharacter is the backslash.", Python's regex HOWTO).
_SENTENCE_ADVERBS = frozenset("perhaps maybe often sometimes always never again here".split())

#: Words that leave a question unanswerable in front of a whole corpus ("What happens if this option
#: is omitted?", "What is the first string?"): anaphora, deixis, ordinal positions and the authors' "we".
_ANAPHORA = frozenset("this that these those it its they them their such above below following previous same "
                      "meantime still resulting otherwise instead indeed "
                      "latter former here first second third last next we".split())
#: Words that point elsewhere in the text ("the following function"): an answer with one is no answer.
_DEIXIS = frozenset("this these those above below following such latter former first last next previous "
                    "resulting thus hence therefore".split())
#: Words too general to tell one passage from another; a slot needs two content words besides them.
_GENERIC = frozenset("option options command commands default value values file files result results script "
                     "example examples case cases way thing things one first second set specified given use used "
                     "name happens work works number string listed output mode behaviour behavior "
                     "cause causes reason reasons effect effects".split())
#: First words of a dependent clause or a continuation: an answer starting with one is a fragment.
_FRAGMENT_START = frozenset("if when whenever after before although though while since because unless until once "
                            "as so or and but nor in on at by with without for from of to into than whether "
                            "which who whose where also otherwise however anyway then thus hence therefore instead "
                            "note finally now still yet even default whilst e.g. i.e. etc. one".split())
#: A noun phrase holds no finite "to be": "The sequence is unlogged and the server is a standby." defines nothing.
_COPULAS = frozenset("is are was were".split())
#: First words of a condition without a subject ("If enabled, ...", "When installing packages, ..."):
#: "What happens if enabled?" cannot be asked in front of a corpus.
_SUBJECTLESS = frozenset("true false set unset unspecified specified enabled disabled given used called run omitted "
                         "absent present not no none zero asked combined left built found made kept written taken "
                         "seen shown done put known held sent read understood thought taught brought bought "
                         "caught meant chosen driven drawn spoken broken hidden grown thrown".split())
#: A condition that only says something is done ("When difference equations are employed, ...") names
#: no circumstance: a bare passive at its end, nothing after the participle.
_BARE_PASSIVE = re.compile(r"\b(?:is|are|was|were|be|been)\s+(?:\w+ly\s+)?\w+(?:ed|en|wn|ght|lt|ood)$",
                           re.IGNORECASE)
#: An answer that is a bare passive of a definite noun phrase ("When a thread acquires a new lock, the graph is
#: updated"): it says that something the passage introduced is done, not what happens; kept when the question
#: names the thing ("the transaction" after "... a transaction ...").
_DEFINITE_BARE_PASSIVE = re.compile(r"^the\s+(?P<np>[^,;]+?)\s+(?:is|are|was|were|gets?)\s+(?:(?:\w+ly|both|also|then|all)\s+)?"
                                    r"\w+(?:ed|en|wn|ght|lt|ood|set|put)$", re.IGNORECASE)
#: An answer ending in a comparative with nothing to compare ("Memcheck can do better") says how much, not what.
_BARE_COMPARATIVE = re.compile(r"\b(?:better|worse|faster|slower|more|less)$", re.IGNORECASE)
#: Things whose definite form names the one every reader knows: "the user", "the command line", "the earth".
_KNOWN_REFERENT = re.compile(r"\b(?:user|reader|kernel|compiler|interpreter|computer|machine|world|internet|earth"
                             r"|command line|shell|terminal|operating system|file ?system"
                             r"|standard (?:input|output|error))s?\b")
#: A token that names something: a capitalized word or acronym, a number, an identifier, option or path
#: ("the UTC offset", "the writerow() method", "the -I option", "the stack pointer register (SP)").
_NAMING_TOKEN = re.compile(r"[A-Z0-9_./()\"`=]|^-|[a-z][A-Z]")
#: Prepositions that continue a noun phrase ("the cmd argument to popen2 functions").
_NP_PREPOSITIONS = frozenset("of to in for with from on by at".split())
#: "the command", "the action" with nothing naming which: unresolved without the passage ("What happens
#: when the command enters the interactive mode?"); "the --aggressive option", "the command line", "the
#: result from pip freeze" are not.
_UNRESOLVED_ROLE = re.compile(
    r"\bthe\s+(?:command|option|action|operation|program|function|argument|helper|filter|tool|variable|setting|"
    r"value|result|entry|field|method|parameter|flag|hook)s?\b"
    r"(?!\s+(?:line|of|from|for|named|called)\b)(?!\s*[-`'\"(0-9])", re.IGNORECASE)
#: "any other operation", "all other cases": relative to a list the passage gave.
_RELATIVE_OTHER = re.compile(r"\b(?:any|all|every|no)\s+other\b", re.IGNORECASE)
#: A clause cut at a comma inside an aside or a list of single words: "git push, like cvs commit, will
#: complain" (the subject without its verb), "a widely distributed, diverse, ever-changing group" (the
#: modifiers without their noun).
_INTERRUPTED = re.compile(r"^[^,;]*,\s*(?:like|unlike|such as|e\.g\.|i\.e\.|for example|for instance|including)\b"
                          r"|^[^,;]*,\s*[\w'’-]+\s*,", re.IGNORECASE)
#: The comma a clause is cut at continues a list: "... throughout Mainland Southeast Asia, South Asia,
#: and East Asia" (items before ", and"), "the confluence of the Ganges, Brahmaputra and Meghna Rivers"
#: (names joined by "and"): the clause holds the first item only.
_LIST_AFTER_CUT = re.compile(r"^[^,;]*,\s*(?:[^,;]{1,40},\s*(?:and|or)\s"
                             r"|[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?\s+(?:and|or)\s+[A-Z])")
#: "the country", "the city" ... naming no place: the place the passage spoke of ("the second-largest city
#: and the busiest port of the country").
_PLACE_ANAPHORA = re.compile(r"\bthe\s+(?:country|nation|state|city|town|region|province|island|territory|"
                             r"capital|area)\b(?!\s+(?:of|called|named|known)\b)", re.IGNORECASE)
#: A superlative ("the most spoken", "the fifth-smallest") ranks among something it must name.
_SUPERLATIVE = re.compile(r"\b(?:most|least)\s+\w+|\b(?:\w+-)?(?:larg|small|bigg|high|low|long|short|old|young|"
                          r"great|busi|earli|lat|fast|deep|tall|heavi|rich|poor|clos)est\b", re.IGNORECASE)
_SCOPE = re.compile(r"\b(?:in|of|among|on|at|within|across|worldwide|ever)\b", re.IGNORECASE)
#: A definition's subject that ranks or picks out without naming among what ("the main inlet", "the largest
#: city"): relative to the passage.
_RELATIONAL = frozenset("main chief principal primary major only".split())
MIN_SLOT_WORDS = 2
#: Kinds whose slot is the term asked about (one specific content word is enough).
TERM_KINDS = ("definition", "called", "when")
#: The most chunks of the folder that may hold all of a question's specific words together.
MAX_MATCHING_CHUNKS = 3
#: Last words that leave an answer unfinished ("the default is set by the"): articles, possessives,
#: prepositions, conjunctions.
_DANGLING_END = frozenset("a an the its their his her our your my of to in on at by with without for from into "
                          "onto as than and or but nor if whether that which when while because via per".split())
#: A predicate that opens with a degree, a quantity or a judgement ("is a little easier", "is a bit
#: special", "is a great way to") says how much or how good, not what: it defines nothing.
_DEGREE_PREDICATE = re.compile(r"^(?:a\s+(?:little|bit|lot|few|great deal|good deal|number of|couple of)"
                               r"|(?:a|an|the)\s+(?:great|good|nice|useful|convenient|simple|easy|better|best)\s+"
                               r"(?:way|idea|place|choice|start)"
                               r"|(?:a|the)\s+(?:kind of|sort of|same|case|only|default))\b", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_SKIPPED_BLOCK = re.compile(r"^\s*(?:#{1,6}\s|\||>|\.\. |:[\w-]+:|[-=~^*+]{3,}\s*$)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|[a-z][.)])\s+")
#: A numbered section heading on a line of its own in a PDF's text ("7.1. Overview", "4.2.1. Illegal read /
#: Illegal write errors": DocBook's numbering, as Chromium prints it), which PDFs do not mark as a heading:
#: it ends its block, else it reads as the start of the next sentence ("Overview Helgrind is a ...").
_NUMBERED_HEADING = re.compile(r"^\s*\d+(?:\.\d+)+\.\s+[A-Z][^.!?]*$")
_MARKUP = re.compile(r"[<>{}|\[\]]|::|(?<!\w):[\w-]+:`|https?://|\bxml version\b")

#: An apposition between a subject and its verb ("Geoffrey Chaucer, author of The Canterbury Tales, was a
#: ...") is left out of the question; the subject alone is the noun phrase.
_APPOSITION = r"(?:,\s+[^,;:()\[\]]{1,80},)?"
_DEFINITION = re.compile(
    r"^(?P<subject>[A-Z][^,;:()\[\]]{0,80}?)" + _APPOSITION
    + r"\s+(?P<verb>is|are|was|were)\s+(?P<predicate>(?:a|an|the)\s+[^;]+?)\.$")
#: "{X} is/was known as/called {N}." (history and biography prose names things this way).
_CALLED = re.compile(
    r"^(?P<subject>[A-Z][^,;:()\[\]]{0,80}?)" + _APPOSITION
    + r"\s+(?P<verb>is|are|was|were)\s+(?:also\s+|often\s+|commonly\s+|sometimes\s+)?(?:known as|called|named)\s+"
    r"(?P<name>[^,;()]{2,60}?)(?:[,;(].*)?\.$")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
#: "{X} was/were {participle} ... in/on {date}." -> "When was {X} {participle}?" (the date of an event:
#: the commonest fact of history and biography prose).
_WHEN = re.compile(
    r"^(?P<subject>[A-Z][^,;:()\[\]]{0,80}?)" + _APPOSITION
    + r"\s+(?P<verb>was|were)\s+(?:first\s+)?(?P<participle>[a-z]+(?:ed|en|lt|wn|ght))"
    r"(?:\s+(?:by|at|near|from)\s+[^,;()]{1,60}?)?\s+(?:in|on)\s+(?P<date>(?:(?:\d{1,2}\s+)?" + _MONTH
    + r"\s+)?(?:\d{1,2},?\s+)?\d{3,4}s?)\b")
_PURPOSE = re.compile(r"^To (?P<goal>[a-z][^,;]{3,120}?), (?P<rest>[^;]+?)\.$")
_WISH = re.compile(r"^If you (?:only |just |really |simply )?(?:want|need|wish|would like) to "
                   r"(?P<goal>[^,;]{3,120}?), (?P<rest>[^;]+?)\.$")
_CONDITION = re.compile(r"^(?P<connective>If|When) (?P<condition>[^,;]{3,120}?), (?P<rest>[^;]+?)\.$")
_USED_FOR = re.compile(
    r"^(?P<subject>[A-Z][^,;:()\[\]]{0,60}?)\s+(?:is|are|can be) used (?P<prep>to|for) (?P<use>[^;]{3,120}?)\.$"
    r"|^(?P<subject2>[A-Z][^,;:()\[\]]{0,60}?)\s+(?:lets|allows|enables) you(?: to)? (?P<use2>[^;]{3,120}?)\.$")


class _Option(NamedTuple):
    kind: str
    template: str
    question: str
    answer: str
    slot: str  # the part of the question the template filled in
    sentence: str = ""  # the prose sentence it was made from


def prose_sentences(text: str) -> list[str]:
    """The prose sentences of ``text`` (see the module docstring), markup-free."""
    blocks: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            fenced = not fenced
            blocks.append([])
        elif fenced:
            continue
        elif not line.strip() or _NUMBERED_HEADING.match(line):
            blocks.append([])
        else:
            blocks[-1].append(line)
    sentences = []
    for block in blocks:
        if not block or _SKIPPED_BLOCK.match(block[0]) or all(line[:1].isspace() for line in block):
            continue
        joined = " ".join(_LIST_MARKER.sub("", line).strip() for line in block)
        for sentence in split_sentences(joined):
            sentence = sentence.strip()
            words = len(sentence.split())
            if (sentence[:1].isupper() and sentence.endswith(".") and MIN_SENTENCE_WORDS <= words <= MAX_SENTENCE_WORDS
                    and not _MARKUP.search(sentence)):
                sentences.append(plain(sentence))
    return sentences


def _clause(text: str) -> str:
    """``text`` up to its first comma or semicolon, without a closing period."""
    return re.split(r"[,;]", text, maxsplit=1)[0].strip().rstrip(".").strip()


def _lower_first(text: str) -> str:
    """``text`` with its first word lower-cased unless it is a name (has another upper-case letter)."""
    first, _, rest = text.partition(" ")
    keep = any(char.isupper() for char in first[1:]) or first == "I"
    return text if keep else (first.lower() + (" " + rest if rest else ""))


def _subject_ok(subject: str, max_words: int) -> bool:
    """A noun phrase: 1 to ``max_words`` words, the first an article or not a function word, none a
    form of "to be" (``_COPULAS``)."""
    words = subject.split()
    first = words[0].lower() if words else ""
    return (0 < len(words) <= max_words and first not in _PRONOUNS and first not in _FRAGMENT_START
            and not any(word.lower() in _COPULAS for word in words)  # "The sequence is unlogged and the server"
            and first not in _SENTENCE_ADVERBS
            and not any(word.lower().endswith("ly") and len(word) > 4 for word in words)  # "Backups really are"
            and (bool(_ARTICLE.match(subject)) or first not in ENGLISH_STOPWORDS)
            and not any(word.lower() in _FRAGMENT_START - {"of", "and", "for", "in", "on", "to", "with", "from"}
                        for word in words[1:]))


def specific(slot: str, minimum: int = MIN_SLOT_WORDS) -> bool:
    """Whether the part of a question that a template filled in can stand in front of a whole corpus:
    no anaphora (``_ANAPHORA``) and at least ``minimum`` content words that are not generic
    (``_GENERIC``): :data:`MIN_SLOT_WORDS`, one for the term a definition asks about."""
    words = re.findall(r"\w+", slot.casefold())
    return (not any(word in _ANAPHORA for word in words)
            and not _UNRESOLVED_ROLE.search(slot) and not _RELATIVE_OTHER.search(slot) and not _PLACE_ANAPHORA.search(slot)
            and len(content_words(slot) - _GENERIC) >= minimum)


def complete_answer(answer: str, kind: str) -> bool:
    """Whether ``answer`` is a whole phrase: it does not start like a dependent clause or a
    continuation (``_FRAGMENT_START``, :func:`_continuation`; after "either", "both" ... too: "either
    from the command line or ...") nor hold a word pointing elsewhere (``_DEIXIS`` but "such as",
    ``_PLACE_ANAPHORA``), its brackets and quotes are balanced, it does not end in ``_DANGLING_END``, and it
    has at least :data:`MIN_ANSWER_WORDS` words (a name, for ``known_item`` and ``used_for``, may have
    one; an instruction, for ``purpose`` and ``wish``, :data:`MIN_HOW_TO_ANSWER_WORDS`)."""
    words = answer.split()
    opening = words[1:] if words[:1] and words[0].lower() in {"either", "both", "only", "just"} else words
    if (not opening or _continuation(words) or opening[0].lower().strip("\"'“(") in _FRAGMENT_START
            or _DEIXIS & set(re.findall(r"\w+", re.sub(r"\bsuch as\b", "", answer.casefold())))
            or _PLACE_ANAPHORA.search(answer)):
        return False
    if not balanced(answer):
        return False
    if (not content_words(answer) - _GENERIC or words[-1].lower().strip("\"'”)") in _DANGLING_END
            or _BARE_COMPARATIVE.search(answer)):
        return False
    if kind in ("purpose", "wish"):  # addressed to the reader: not what a named someone does ("ATC enforces ...")
        return len(words) >= MIN_HOW_TO_ANSWER_WORDS and not _someone_else(words[0])
    if kind == "when":
        return bool(re.search(r"\d{3,4}", answer))
    return len(words) >= MIN_ANSWER_WORDS or kind in ("known_item", "used_for", "called")


def balanced(text: str) -> bool:
    """Whether ``text``'s round brackets and its straight and curly double quotes are balanced (a
    clause cut at a comma inside an aside is not: "the server (e.g.")."""
    return text.count("(") == text.count(")") and not text.count('"') % 2 and text.count("“") == text.count("”")


def _continuation(words: Sequence[str]) -> bool:
    """Whether an answer's words continue the sentence instead of completing it: they open with a
    participle, after an optional adverb in -ly ("automatically saving it in your CVS/Root files" is
    the rest of a condition, not what happens)."""
    lower = [word.lower().strip("\"'“”(),") for word in words]
    verb = lower[1] if len(lower) > 1 and lower[0].endswith("ly") and len(lower[0]) > 4 else lower[0]
    return verb.endswith("ing") and len(verb) > 5 and not verb.endswith("thing")


def proper_name(subject: str) -> bool:
    """Whether ``subject`` (without a leading article) is a proper name: every word capitalized but
    the particles of/and/de/von/van/al/...."""
    bare = _ARTICLE.sub("", subject).strip()
    return bool(bare) and all(word[:1].isupper() or word.lower() in _NAME_PARTICLES for word in bare.split())


def _sentence_options(sentence: str) -> list[_Option]:
    options = []
    if (match := _DEFINITION.match(sentence)) and not _INTERRUPTED.match(match.group("predicate")):
        subject, predicate = match.group("subject").strip(), _clause(match.group("predicate"))
        in_list = bool(_LIST_AFTER_CUT.match(match.group("predicate")))  # the clause holds a list's first item
        if (_subject_ok(subject, MAX_SUBJECT_WORDS) and not _DEGREE_PREDICATE.match(predicate) and not _gerund(subject)
                and not _relational(subject) and _names_enough(predicate) and not _unscoped(predicate)):
            question_subject = _lower_first(subject) if _determined(subject) else subject
            answer = _head(predicate, subject)
            if not (in_list and answer == predicate) and not _circular(answer, subject):
                options.append(_Option("definition", "What {verb} {subject}?",
                                       f"What {match.group('verb')} {question_subject}?", answer, subject))
            if proper_name(subject) and not in_list and _described(predicate):
                phrase = re.sub(r"^name of (?:the )?", "", _ARTICLE.sub("", predicate))  # "the name of the ..."
                options.append(_Option("known_item", "What is the name of the {predicate}?",
                                       f"What is the name of the {phrase}?", subject, phrase))
    options += _naming_options(sentence)
    for kind, pattern in (("purpose", _PURPOSE), ("wish", _WISH)):
        if ((match := pattern.match(sentence)) and match.group("goal").split()[0].lower() not in ENGLISH_STOPWORDS
                and not _INTERRUPTED.match(match.group("rest"))):
            goal = match.group("goal")
            options.append(_Option(kind, "How do you {goal}?", f"How do you {goal}?", _clause(match.group("rest")),
                                   goal))
    if (not _WISH.match(sentence) and (match := _CONDITION.match(sentence))
            and not _INTERRUPTED.match(match.group("rest"))):
        condition, connective = match.group("condition"), match.group("connective").lower()
        first = condition.split()[0].lower()
        if (first not in _SUBJECTLESS and not first.endswith(("ing", "ed")) and not _WISH_CONDITION.search(condition)
                and len(condition.split()) >= MIN_CONDITION_WORDS and not _BARE_PASSIVE.search(condition)
                and not _PAST_PERFECT.search(condition)):
            answer = _clause(match.group("rest")).removeprefix("then ")
            passive = _DEFINITE_BARE_PASSIVE.match(answer)
            if not (passive and not content_words(passive.group("np")) & content_words(condition)):
                options.append(_Option("condition", "What happens {if|when} {condition}?",
                                       f"What happens {connective} {condition}?", answer, condition))
    if (match := _USED_FOR.match(sentence)) and not _INTERRUPTED.match(match.group("use") or match.group("use2")):
        subject = (match.group("subject") or match.group("subject2")).strip()
        use = _clause(match.group("use") or match.group("use2"))
        verb = f"is used {match.group('prep')}" if match.group("use") else "lets you"
        if _subject_ok(subject, 6):
            options.append(_Option("used_for", "What {verb} {use}?", f"What {verb} {use}?", subject, use))
    return options


#: Where a long definition's head noun phrase ends: a relative clause ("a set of signs which are
#: correlated ...") or a participle phrase ("an area of mathematics used to describe ...").
_PARTICIPLE_WORD = r"[a-z]+ed|[a-z]{3,}ing|written|known|made|built|given|taken|seen"
_MODIFIER = re.compile(r"\s+(?:(?:in|of|by|to|from|at|on) (?:which|whom)|that|which|who|whom|whose|where|when"
                       rf"|{_PARTICIPLE_WORD})\b")


#: Where a long definition's head can end besides ``_MODIFIER``: before a prepositional phrase other than
#: "of ..." (which belongs to its noun: "a series expansion of a periodic function") or an infinitive.
_PREPOSITION = re.compile(r"\s+(?:in|on|at|by|for|from|with|without|into|onto|within|among|between|under|over|through"
                          r"|toward|towards|across|along|around|after|before|during|near|via|than|about|against"
                          r"|to|since|until)\b")
#: A head does not end in a participle ("a mangrove forest area in the Ganges Delta formed (by ...)").
_PARTICIPLE = re.compile(_PARTICIPLE_WORD)  # "used" is an "-ed" word
#: An active participle's second complement ("the value separating the higher half from the lower half"):
#: a head holding an -ing participle is not cut before it.
_ACTIVE = re.compile(r"[a-z]{3,}ing")
_SECOND_COMPLEMENT = re.compile(r"\s+(?:from|into|onto|with|between|than|against)\b")
#: Nouns that name a kind of thing, not the thing: a head of them and the subject's words says nothing.
_KIND_WORDS = frozenset("type form kind sort part term".split())
#: A head ending in a definite noun phrase after a preposition ("a broad term for many of the rhythms"): the
#: relative clause that follows says which rhythms, so the head cannot end before it.
_RESTRICTED = re.compile(r"\b(?:of|for|in|to|from|on|at|by|with)\s+the\s+[\w'’-]+(?:\s+[\w'’-]+)?$", re.IGNORECASE)
_RELATIVE_PRONOUNS = frozenset("that which who whom whose where".split())


#: Words that grade a noun rather than name it: a head of them and one noun says too little.
_DEGREE_WORDS = frozenset("significant important major main notable prominent key famous great aggressive "
                          "common largest smallest".split())


def _head(predicate: str, subject: str) -> str:
    """``predicate`` itself when it has at most :data:`MAX_ANSWER_WORDS` words, else its longest
    prefix of at most that many words that ends before a post-modifier (a relative clause, a
    participle phrase, or a prepositional phrase other than "of ...": ``_MODIFIER``,
    ``_PREPOSITION``) no later than its first relative clause, without a trailing adverb, and that
    adds two content words to the ``subject`` besides "type", "form", "term" ... (:func:`_says`).
    Wikipedia's leads define at length: "What is a syndrome?" / "a set of medical signs and
    symptoms", not the 22 words that follow; "What was Geoffrey Chaucer?" / "a significant figure
    developing the legitimacy of vernacular Middle English", not "a significant figure". A head
    ending in "of the {noun}" before a relative clause is not cut there (the clause says which
    ones: "a broad term for many of the rhythms that compose ..."). Any other predicate stays whole
    (and the ``answer_length`` filter drops it: "Tenpin bowling" / "a type of bowling" says nothing)."""
    if len(predicate.split()) <= MAX_ANSWER_WORDS:
        return predicate
    relative = next((cut for cut in _MODIFIER.finditer(predicate) if _RELATIVE_PRONOUNS & set(cut.group().split())),
                    None)
    limit = relative.start() if relative else len(predicate)
    cuts = sorted({cut.start() for pattern in (_MODIFIER, _PREPOSITION) for cut in pattern.finditer(predicate)
                   if 0 < cut.start() <= limit}, reverse=True)
    for cut in cuts:
        words = predicate[:cut].split()
        if cut == limit and _RESTRICTED.search(" ".join(words)):
            continue  # "many of the rhythms (that compose ...)": "the rhythms" needs its clause
        while words and words[-1].lower().endswith("ly") and len(words[-1]) > 4:  # "fiction usually (written)"
            words.pop()
        if (len(words) <= MAX_ANSWER_WORDS and words and words[-1].lower() not in _DANGLING_END
                and not _PARTICIPLE.fullmatch(words[-1]) and _says(words, subject)
                and not (_SECOND_COMPLEMENT.match(predicate[cut:]) and any(_ACTIVE.fullmatch(w) for w in words))):
            return " ".join(words)
    return predicate


def _says(words: Sequence[str], subject: str) -> bool:
    """Whether a head adds two content words to its subject besides generic, degree and kind words."""
    says = content_words(" ".join(words)) - content_words(subject) - _KIND_WORDS
    return _names_enough(" ".join(words)) and len(says - _GENERIC - _DEGREE_WORDS) >= 2


def _names_enough(phrase: str) -> bool:
    """Whether a definition's answer holds two content words besides generic and degree words: "a
    numeral system", not "a device", "a walled" (cut at the comma of "a walled, roofed structure")
    or "the most aggressive"."""
    return len(content_words(phrase) - _GENERIC - _DEGREE_WORDS) >= 2


def _circular(answer: str, subject: str) -> bool:
    """Whether more than half of a definition's answer's content words are its subject's: "A
    two-dimensional Euclidean space" / "a two-dimensional space on the plane" says the question again
    ("Another zero-width assertion" / "the lookahead assertion" does not)."""
    words = content_words(answer)
    return len(words & content_words(subject)) * 2 > len(words)


def _relational(subject: str) -> bool:
    """Whether a definite ``subject`` picks one out without naming among what: "the main inlet", "the
    largest city" (of the lake, the country the passage spoke of); "the main inlet of Lake Huron" names it."""
    words = subject.casefold().split()
    return (words[:1] == ["the"] and (bool(_RELATIONAL & set(words)) or bool(_SUPERLATIVE.search(subject)))
            and not _SCOPE.search(subject))


def _stem(word: str) -> str:
    return word.casefold().strip(".,;:!?\"'’()").removesuffix("s")


def _unresolved_definite(slot: str, named: frozenset[str]) -> bool:
    """Whether ``slot`` holds a definite noun phrase whose referent the question alone does not identify
    ("If the testing strategy changes", "if the configure test succeeds", "if the file was found in
    ...", "to the specified socket": the strategy, test, file or socket the passage introduced). A
    noun phrase is "the", its words up to the next function word, and the phrases its prepositions
    join ("the cmd argument to popen2 functions"). It is resolved when a word of it names something
    (``_NAMING_TOKEN``: "the UTC offset", "the writerow() method", "the stack pointer register (SP)"),
    when it holds a thing every reader knows ("the user", "the surface of the earth": ``_KNOWN_REFERENT``),
    when a preposition joins it to an indefinite phrase ("the local checkout of a submodule"), or when ``named``
    (the stems of the chunk's title and section path) holds its words but the last (which may be the
    clause's verb: "the connection context manager closes" under "How to use the connection context
    manager"). A phrase inside brackets ("(the default)") points at the words before it."""
    tokens = slot.split()
    depth = 0
    for index, token in enumerate(tokens):
        opened = depth + token.count("(")
        depth = max(0, opened - token.count(")"))
        if opened or token.casefold() != "the":
            continue
        core: list[str] = []
        span: list[str] = []
        joined = generic = after_preposition = False
        for word in tokens[index + 1:]:
            bare = word.casefold().strip(".,;:!?\"'’")
            generic = generic or (after_preposition and bare != "the")  # "the checkout of a submodule": any
            after_preposition = False
            if bare in ENGLISH_STOPWORDS or bare.endswith(("n't", "n’t")) or bare == "cannot":
                if bare in _NP_PREPOSITIONS or (joined and bare in {"the", "a", "an"}):
                    after_preposition = not joined
                    joined = True
                    continue
                break
            (span if joined else core).append(word)
        if (not core or generic or any(_NAMING_TOKEN.search(word) for word in core + span)
                or _KNOWN_REFERENT.search(" ".join(core + span).casefold())):
            continue
        if not {_stem(word) for word in (core[:-1] or core)} <= named:
            return True
    return False


def _unscoped(predicate: str) -> bool:
    """Whether ``predicate`` ranks without saying among what: "the most spoken language" (in
    Tunisia, which the sentence does not say), not "the fifth-smallest country in the world"."""
    return bool(match := _SUPERLATIVE.search(predicate)) and not _SCOPE.search(predicate[match.end():])


#: After the head noun of a description: a preposition, a relative pronoun or a participle.
_POSTMODIFIER = re.compile(r"\s(?:of|in|on|at|by|for|from|within|with|without|into|under|over|between|among|near"
                           r"|that|which|who|whose|where|[a-z]{3,}(?:ed|ing))\s", re.IGNORECASE)


def _described(predicate: str) -> bool:
    """Whether a known-item description tells its item from others of its kind: the kind is followed by
    what sets it apart ("the Japanese media franchise created by Akira Toriyama", "the study of the
    motion of air"); "the Old English poem" and "the Indian philosopher" name a kind with many members."""
    return bool(_POSTMODIFIER.search(predicate))


def _someone_else(first: str) -> bool:
    """Whether a how-to answer opens with a name, an article or a pronoun other than "you": it says what
    someone else does ("To prevent collisions, ATC enforces ..."), not what the reader does."""
    return (first[:1].isupper() and first.lower() != "you") or first.lower() in {"a", "an", "the"} | (_PRONOUNS - {"you"})


def _naming_options(sentence: str) -> list[_Option]:
    """The ``called`` and ``when`` options of ``sentence``: a subject that is a noun phrase (not a
    gerund) asked for its name or for the date of what happened to it."""
    options = []
    for kind, pattern in (("called", _CALLED), ("when", _WHEN)):
        if not (match := pattern.match(sentence)):
            continue
        subject = match.group("subject").strip()
        if not _subject_ok(subject, MAX_SUBJECT_WORDS) or _gerund(subject):
            continue
        asked = _lower_first(subject) if _determined(subject) else subject
        verb = match.group("verb")
        if kind == "called":
            options.append(_Option(kind, "What {verb} {subject} called?", f"What {verb} {asked} called?",
                                   match.group("name").strip(), subject))
        else:
            options.append(_Option(kind, "When {verb} {subject} {participle}?",
                                   f"When {verb} {asked} {match.group('participle')}?", match.group("date"), subject))
    return options


def _gerund(subject: str) -> bool:
    return subject.split()[0].lower().endswith("ing") and not _ARTICLE.match(subject)


def _determined(subject: str) -> bool:
    return bool(_ARTICLE.match(subject)) or subject.split()[0].lower() in _DETERMINERS


def specific_in_folder(question: str, terms: FolderTerms) -> bool:
    """Whether ``question`` points at few passages of its folder: its content words that are not
    generic hold a distinctive word (:meth:`FolderTerms.distinctive`) and are held together by at
    most :data:`MAX_MATCHING_CHUNKS` chunks (:meth:`FolderTerms.matching_chunks`)."""
    words = content_words(question) - _GENERIC
    return bool(terms.distinctive(words)) and terms.matching_chunks(words) <= MAX_MATCHING_CHUNKS


def _usable_options(chunk: Chunk, names: frozenset[str], terms: FolderTerms) -> list[_Option]:
    """The options of ``chunk`` that do not name its document, with a specific slot, a complete
    answer, no link target in their sentence, and a question specific in the folder."""
    options = [option._replace(sentence=sentence) for sentence in prose_sentences(chunk.text)
               if not terms.link_target(sentence) for option in _sentence_options(sentence)]
    named = frozenset(_stem(word) for word in content_words(str(getattr(chunk, "section", None) or "")))
    return [option for option in options
            if not names_gold(option.question, names) and complete_answer(option.answer, option.kind)
            and balanced(option.slot)
            and (option.kind in TERM_KINDS + ("known_item",) or not _unresolved_definite(option.slot, named))
            and not (option.kind == "used_for" and re.match(r"an?\s", option.answer, re.IGNORECASE)
                     and not specific_in_folder(option.answer, terms))  # "A pattern": a kind the folder speaks of
            and specific(option.slot, 1 if option.kind in TERM_KINDS else MIN_SLOT_WORDS)
            and specific_in_folder(option.question, terms)]


def template_candidate(chunk: Chunk, document: Document, rng: random.Random, terms: FolderTerms) -> Candidate | None:
    """One candidate for ``chunk`` (a seeded draw among the templates that apply, each with a
    :func:`specific` slot, a :func:`complete_answer` and a question :func:`specific_in_folder`), or None."""
    names = document_names(document.url, document.title)
    options = _usable_options(chunk, names, terms)
    if not options:
        return None
    option = rng.choice(options)
    section = str(getattr(chunk, "section", None) or "").strip()
    return Candidate(option.question, option.answer, chunk.chunk_id, chunk.url, chunk.text, option.kind,
                     {"template": option.template, **({"section": section} if section else {})},
                     gold_names=names)


def corpus_examples(chunks: Sequence[Chunk], documents: Mapping[str, Document], k: int, terms: FolderTerms,
                    max_answer_words: int = 6) -> list[tuple[str, str, str]]:
    """Up to ``k`` worked examples ``(sentence, answer, question)`` from the first chunks of ``chunks``
    (in their order) that a template applies to, one per document, each answer at most
    ``max_answer_words`` words: the LLM's few-shot turns (:mod:`rag.data.questions.llm`)."""
    examples: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for chunk in chunks:
        if len(examples) >= k:
            break
        if chunk.doc_id in seen:
            continue
        document = documents[chunk.doc_id]
        short = [o for o in _usable_options(chunk, document_names(document.url, document.title), terms)
                 if len(o.answer.split()) <= max_answer_words]
        if short:
            examples.append((short[0].sentence, short[0].answer, short[0].question))
            seen.add(chunk.doc_id)
    return examples


def template_candidates(
    chunks: list[Chunk], documents: Mapping[str, Document], rng: random.Random, terms: FolderTerms,
) -> list[Candidate | str]:
    """A candidate per chunk, or :data:`NO_TEMPLATE` where no template applies (``terms``: the
    whole folder's, :class:`FolderTerms`)."""
    return [template_candidate(chunk, documents[chunk.doc_id], rng, terms) or NO_TEMPLATE for chunk in chunks]
