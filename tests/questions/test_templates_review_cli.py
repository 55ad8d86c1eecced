"""Template questions (deterministic by seed, stratified over documents), the review round trip, and the
``rag-bench questions`` command through to a smoke run that reads the made file."""

from __future__ import annotations

import csv
import json
import os
import random
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from rag.cli import main
from rag.chunking import cached_chunks
from rag.config import load_config
from rag.resources import builtin_config
from rag.data import load_dataset
from rag.runner.questions import chunk_order, make_questions
from rag.data.questions.specificity import FolderTerms
from rag.data.questions.templates import complete_answer, corpus_examples, prose_sentences, template_candidate
from rag.types import Chunk, Document

from .conftest import SMOKE_CONFIG


def _chunk(doc_id: str, position: int, text: str = "x") -> Chunk:
    return Chunk(f"{doc_id}#{position}", doc_id, doc_id, text, position, 1)


def test_chunk_order_takes_one_chunk_of_every_document_before_a_second_of_any():
    chunks = [_chunk(d, p) for d, n in (("a", 3), ("b", 1), ("c", 2)) for p in range(n)]
    order = chunk_order(chunks, seed=5)
    assert sorted(c.chunk_id for c in order) == sorted(c.chunk_id for c in chunks)
    assert {c.doc_id for c in order[:3]} == {"a", "b", "c"} and {c.doc_id for c in order[3:5]} == {"a", "c"}
    assert chunk_order(list(reversed(chunks)), seed=5) == order  # input order does not matter
    assert any(chunk_order(chunks, seed=s) != order for s in range(6, 12))


def _options(text: str, title: str = "Field notes", url: str = "docs/notes.md",
             folder: Sequence[Chunk] = (), pages: Sequence[str] = ()) -> dict[str, tuple[str, str]]:
    """Every (question, answer) the templates make from ``text``, by kind, over 60 seeded draws; the
    folder holds the chunk, the chunks ``folder`` and empty documents at the URLs ``pages``."""
    document = Document("Volcano", url, title, "")
    chunk = _chunk("Volcano", 0, text)
    others = {c.doc_id: Document(c.doc_id, c.url, c.doc_id, "") for c in folder if c.doc_id != document.doc_id}
    terms = FolderTerms.from_chunks([chunk, *folder], [document, *others.values(), *(Document(p, p, p, "") for p in pages)])
    made = {}
    for seed in range(60):
        candidate = template_candidate(chunk, document, random.Random(seed), terms)
        if candidate is not None:
            made[candidate.kind] = (candidate.question, candidate.answer)
    return made


@pytest.mark.parametrize("sentence, kind, question, answer", [
    ("A stratovolcano is a conical volcano built up by many layers of hardened lava, tephra and ash.",
     "definition", "What is a stratovolcano?", "a conical volcano built up by many layers of hardened lava"),
    ("Mount Fuji is the highest volcano in Japan, and it is active.", "known_item",
     "What is the name of the highest volcano in Japan?", "Mount Fuji"),
    ("To measure gas emissions from a crater, scientists fly drones over the vent.", "purpose",
     "How do you measure gas emissions from a crater?", "scientists fly drones over the vent"),
    ("If you want to watch an eruption safely, stay upwind of the ash plume.", "wish",
     "How do you watch an eruption safely?", "stay upwind of the ash plume"),
    ("When magma reaches the surface of the earth, it is called lava.", "condition",
     "What happens when magma reaches the surface of the earth?", "it is called lava"),
    ("A seismometer is used to record tremors beneath the summit of volcanoes.", "used_for",
     "What is used to record tremors beneath the summit of volcanoes?", "A seismometer"),
    # Python's regex HOWTO: a determiner starts the subject like an article
    ("Another zero-width assertion is the lookahead assertion.", "definition",
     "What is another zero-width assertion?", "the lookahead assertion"),
])
def test_each_template_by_hand(sentence, kind, question, answer):
    assert _options(sentence)[kind] == (question, answer)


@pytest.mark.parametrize("text", [
    "If enabled, the crater glows at night.",                        # no subject in the condition
    "When installing the sensor network, engineers wear masks.",     # a participle, no subject
    "If this option is omitted, the default is used.",               # anaphora and generic words only
    "It is a rupture in the crust of a planet.",                     # a pronoun subject
    "The following function is used to compute lava viscosity.",     # an answer that points elsewhere
    "what is a volcano is not clear from this lower-case fragment.",  # a chunk cut inside a sentence
    "```\nA stratovolcano is a conical volcano built by layers of lava.\n```",  # code, not prose
    "## A stratovolcano is a conical volcano built by layers of lava.",        # a heading
    "A stratovolcano is a <b>conical</b> volcano built by layers of lava.",    # markup left over
])
def test_templates_make_nothing_from_fragments_markup_or_vague_sentences(text):
    assert _options(text) == {}


SUBMODULES = "If --recurse-submodules is given on the command line, submodule content is also restored to match the target."


def test_a_question_whose_words_many_documents_hold_is_not_made():
    # the condition holds on many pages of a manual: in a folder of 40 pages, 20 that take the option and
    # 20 that speak of the command line (so no other chunk holds all its words), no word of it is
    # distinctive; in a folder where only this page has them, it is asked
    pages = [_chunk(f"page{i}", 0, f"Pass --recurse-submodules to update submodules of page {i}.") for i in range(20)]
    pages += [_chunk(f"line{i}", 0, f"Type it on the command line of shell {i}.") for i in range(20)]
    assert _options(SUBMODULES, folder=pages) == {}
    assert _options(SUBMODULES, folder=[_chunk("other", 0, "Nothing about the matter here.")])["condition"] == (
        "What happens if --recurse-submodules is given on the command line?",
        "submodule content is also restored to match the target")


def test_a_question_whose_words_many_chunks_of_its_document_hold_is_not_made():
    # "the return value" is on every function of a library manual: one document, many chunks
    sentence = "The return value is the number of output bytes generated by the cipher."
    same_page = [Chunk(f"Volcano#{i}", "Volcano", "docs/notes.md", f"The return value of hash_{i} is its length.", i, 9)
                 for i in range(1, 5)]
    assert "definition" not in _options(sentence, folder=same_page)
    assert _options(sentence, folder=same_page[:2])["definition"] == (
        "What is the return value?", "the number of output bytes generated by the cipher")


def test_a_sentence_with_a_link_target_left_in_it_makes_nothing():
    sentence = "Requirements files are used to hold the result from pip freeze for achieving topics/repeatable-installs."
    assert _options(sentence, pages=["topics/repeatable-installs.md"]) == {}
    assert "used_for" in _options(sentence, pages=["topics/caching.md"])  # a path that names no page of the folder


@pytest.mark.parametrize("sentence, kind", [
    ("Verifying signatures is a little easier than making them.", "definition"),  # a degree, not a definition
    ("The CCM mode is a bit special in that it requires the message lengths up front.", "definition"),
    ("When the pack index is written, objects are sorted by their.", "condition"),  # an answer ending in "their"
    ("To store the packed objects, Git writes them to a pack file in the.", "purpose"),  # ending in an article
])
def test_degree_predicates_and_unfinished_answers_make_no_question(sentence, kind):
    assert kind not in _options(sentence)


@pytest.mark.parametrize("sentence, kind", [
    # answers that continue the sentence instead of completing it
    ("If you didn't map the crater directly in the lava survey, automatically saving it in your notes.", "condition"),
    ("The observatory community is a widely distributed, diverse, ever-changing group of scientists.", "definition"),
    ("If someone else has updated the crater map more recently, git push, like cvs commit, will complain.",
     "condition"),
    ("To keep the lava model simple, the survey will thus not map the vents.", "purpose"),
    ("If you are on a POSIX operating system, one can be added by running touch.", "condition"),
    ("To catch lava flow problems early, safety triggers.", "purpose"),  # no instruction
    # questions that do not stand alone
    ("When the command enters the interactive mode, it shows the crater files to be cleaned.", "condition"),
    ("If a helper receives any other operation, it should silently ignore the request.", "condition"),
    ("If Alice has made her own crater maps in the meantime, she may need to fix conflicts.", "condition"),
    ("If you supply directories, they will be treated as Maildirs.", "condition"),  # three words
    ("When left unconfigured by the observatory, the crater log has no size limit.", "condition"),  # no subject
    ("If you don't want to use a custom memory allocator, set the bzalloc field to NULL.", "condition"),
    ("If you just want a makefile for Visual C, have a look at makefile.msc.", "condition"),
    ("Supplying --prune-tags is a shorthand for providing the tag refspec.", "definition"),  # a gerund
    # a condition cut at the comma inside its aside: "What happens if ... by the server (e.g.?" (PostgreSQL's
    # protocol chapter)
    ("If the minor version requested by the client is not supported by the server (e.g., the client requests "
     "version 3.1, but the server supports only 3.0), the server may either reject the connection or respond "
     "with a NegotiateProtocolVersion message.", "condition"),
    ("Perhaps the most important metacharacter is the backslash.", "definition"),  # Python's regex HOWTO
    # a subject holding a verb is no noun phrase (PostgreSQL's pg_sequences view)
    ("The sequence is unlogged and the server is a standby.", "definition"),
    # a judgement is no definition
    ("Interviews are a great way to have in-depth conversations with users.", "definition"),
    ("Interviews are a great way to have in-depth conversations with users.", "known_item"),
])
def test_answers_that_continue_and_questions_that_need_their_passage_are_not_made(sentence, kind):
    assert kind not in _options(sentence)


def test_an_answer_opening_like_an_example_is_a_fragment():
    assert not complete_answer("e.g. if you need non-secret randomness", "condition")
    assert complete_answer("you need non-secret randomness", "condition")


def test_a_wish_with_an_adverb_is_a_how_to_question():
    made = _options("If you only want to remove the local checkout of a submodule, use its deinit command instead.")
    assert made == {"wish": ("How do you remove the local checkout of a submodule?", "use its deinit command instead")}


def test_a_template_question_never_names_its_page():
    # "Volcano is ..." makes "What is Volcano?" (names the page); only its reverse, which does not, survives
    made = _options("Volcano is a rupture in the crust of a planet through which lava escapes.", "Volcano", "docs/volcano.md")
    assert made == {"known_item": ("What is the name of the rupture in the crust of a planet through which lava escapes?",
                                   "Volcano")}
    assert _options("The volcano summit is the highest point in Japan.", "Volcano", "docs/volcano.md") == {}
    assert make_filtered("What is Volcano?", "docs/volcano.md", "Volcano") == "names_gold_document"


def make_filtered(question: str, url: str, title: str) -> str | None:
    from rag.data.questions.filters import Candidate, rejection
    from rag.data.questions.leak import document_names

    return rejection(Candidate(question, "a rupture in the crust", "d#0", url, "a rupture in the crust", "definition",
                               gold_names=document_names(url, title)))


def test_prose_sentences_join_wrapped_lines_and_leave_out_code_headings_and_lists_markers():
    text = ("## Eruptions\n\nUse `fissure` vents when you want to see\nlava fountains at close range.\n\n"
            "```\nA code line that looks like a sentence here.\n```\n\n- The *summit* crater holds a lake of lava.\n\n"
            ".. note:: A directive line that looks like a sentence.\n\n    An indented literal block line here.\n")
    assert prose_sentences(text) == ["Use fissure vents when you want to see lava fountains at close range.",
                                     "The summit crater holds a lake of lava."]


def test_a_numbered_heading_of_a_pdf_is_no_sentence_start():
    # Valgrind's Helgrind manual (hg-manual.html) printed to PDF by Chromium, as PDFium reads it: the
    # heading is a line of its own, with no blank line after it
    text = ("To use this tool, you must specify --tool=helgrind on the Valgrind command line.\n7.1. Overview\n"
            "Helgrind is a Valgrind tool for detecting synchronisation errors in C, C++ and Fortran programs that "
            "use the\nPOSIX pthreads threading primitives.\nHelgrind can detect three classes of errors, which are "
            "discussed in detail in the next three sections:\n1. Misuses of the POSIX pthreads API.\n"
            "2. Potential deadlocks arising from lock\nordering problems.\n")
    sentences = prose_sentences(text)
    assert "Helgrind is a Valgrind tool for detecting synchronisation errors in C, C++ and Fortran programs that " \
           "use the POSIX pthreads threading primitives." in sentences
    assert not any("Overview" in sentence for sentence in sentences)
    assert "Potential deadlocks arising from lock ordering problems." in sentences  # a list item is no heading



@pytest.mark.parametrize(("line", "sentence"), [
    # Python's tutorial (tutorial/classes.html) as the HTML converter writes it: a name in a code span
    ("When a class defines an `__init__()` method, class instantiation invokes `__init__()`.",
     "When a class defines an __init__() method, class instantiation invokes __init__()."),
    ("Set the `XDG_CONFIG_HOME` variable to a *new* folder and __save__ the _file_ there.",
     "Set the XDG_CONFIG_HOME variable to a new folder and save the file there."),
    ("The ``a `b` c`` form holds backticks and the `*args` form a star.",
     "The a `b` c form holds backticks and the *args form a star."),
    # GLib's reference (gtk-doc, glib-Data-Checksums.html): a parameter is <em><code>, emphasis around a span
    ("If the *`checksum_type`*\nis not known, `NULL` is returned.", "If the checksum_type is not known, NULL is returned."),
])
def test_prose_sentences_keep_the_text_of_code_spans_as_it_is(line, sentence):
    assert prose_sentences(line + "\n") == [sentence]

def test_template_questions_are_deterministic_by_seed_and_cached(tmp_path):
    def made(cache: str, seed: int):
        config = load_config(SMOKE_CONFIG, [f"cache_dir={tmp_path / cache}"])
        return make_questions(config, n=4, generator="template", seed=seed, progress=False)

    first, again, other = made("a", 0), made("b", 0), made("a", 1)
    assert first.path.read_bytes() == again.path.read_bytes() and not again.cached
    assert first.path.read_bytes() != other.path.read_bytes()
    assert made("a", 0).cached
    assert len({q.gold_urls[0][0] for q in first.questions}) == len(first.questions)  # one per document first
    made_ = first.provenance
    assert made_["written"] == len(first.questions) == 4 and made_["generator"] == "template" and made_["model"] is None
    assert made_["leak"] == {"questions": 4, "leaked": 0, "share": 0.0}
    seen = made_["filters"][0]["in"]
    assert made_["candidates"] == seen + sum(made_["failures"].values()) + made_["not_needed"]


def test_review_round_trip_keeps_only_accepted_questions_with_their_corrections(tmp_path):
    out = tmp_path / "q.jsonl"
    assert main(["questions", "--config", str(SMOKE_CONFIG), "--out", str(out), "--n", "4", "--generator", "template",
                 "--set", f"cache_dir={tmp_path / 'cache'}", "--quiet"]) == 0
    review = tmp_path / "q.review.csv"
    html = (tmp_path / "q.review.html").read_text()
    assert "<script" not in html and "apply-review" in html
    with review.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and all(row["accept"] == "" and row["chunk_text"] for row in rows)
    rows[0]["accept"], rows[1]["accept"], rows[2]["accept"] = "yes", "No", "x"
    rows[2]["question"] = "=Which edited question is this?"  # a formula-like start is kept as text
    with review.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    reviewed = tmp_path / "reviewed.jsonl"
    assert main(["questions", "--apply-review", str(review), "--out", str(reviewed)]) == 0
    dataset = load_dataset({"format": "jsonl", "corpus": str(SMOKE_CONFIG.parent / "../data/smoke/corpus.jsonl"),
                            "questions": str(reviewed)})
    questions = dataset.question_sets["reviewed"]
    assert [q.qid for q in questions] == [rows[0]["id"], rows[2]["id"]]
    assert questions[1].text == "=Which edited question is this?"
    assert questions[0].metadata["chunk_id"] == rows[0]["chunk_id"]
    review_counts = dataset.question_provenance["reviewed"]["review"]
    assert review_counts == {"accepted": 2, "rejected": 1, "unreviewed": 1, "edited": 1, "file": "q.review.csv"}
    assert "leak" not in dataset.question_provenance["reviewed"]  # stale after a review; a run computes it


@pytest.mark.parametrize("argv, expected", [
    (["questions", "--out", "x.jsonl"], "--config"),
    (["questions", "--apply-review", "missing.review.csv", "--out", "x.jsonl"], "missing.review.csv: file not found"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and expected in err and "Traceback" not in err


def test_a_bad_accept_value_names_the_line(tmp_path, capsys):
    review = tmp_path / "q.review.csv"
    review.write_text("id,accept,question,answer,gold_url\nq1,yes,What?,a,u\nq2,maybe,Why?,b,u\n")
    assert main(["questions", "--apply-review", str(review), "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and ":3:" in err and "'maybe'" in err and not (tmp_path / "r.jsonl").exists()


def test_a_made_file_runs_through_the_smoke_config_with_its_provenance(tmp_path, capsys):
    out = tmp_path / "made.jsonl"
    cache = f"cache_dir={tmp_path / 'cache'}"
    assert main(["questions", "--config", str(SMOKE_CONFIG), "--out", str(out), "--n", "4", "--generator", "template",
                 "--set", cache, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "4 of 4 questions written" in printed and "lexical bias" in printed and "answer_unsupported" in printed
    assert "leak (questions naming their gold document's title, file or page name): 0% (0 of 4)" in printed
    run = tmp_path / "run"
    given = SMOKE_CONFIG.parent.parent / "data" / "smoke" / "questions.jsonl"
    assert main(["--config", str(SMOKE_CONFIG), "--set", f"dataset.questions={{made: {out}, given: {given}}}", "--set",
                 cache, "--methods", "bm25,dense", "--no-generation", "--quiet", "--output-dir", str(run)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    made = manifest["data"]["question_provenance"]["made"]
    assert made["generator"] == "template" and made["written"] == 4 and "lexical_bias" in made
    assert manifest["data"]["question_sets"]["made"] == {**manifest["data"]["question_sets"]["made"], "questions": 4,
                                                         "leak": {"questions": 4, "leaked": 0, "share": 0.0}}
    report = (run / "report.html").read_text()
    assert "questions of made: made by template" in report and "leak (questions naming their gold document" in report
    # a made set beside a given one: the run compares their method rankings (rag.results.validity)
    (row,) = manifest["question_validity"]
    assert (row["synthetic"], row["third-party"], row["metric"]) == ("made", "given", "ndcg@10")
    assert "validity of the made questions against the given ones: made vs given on ndcg@10" in report


def test_corpus_examples_are_template_questions_with_their_sentence_one_per_document():
    documents = {d: Document(d, f"docs/{d}.md", d.title(), "") for d in ("a", "b")}
    chunks = [Chunk("a#0", "a", "docs/a.md", "A seismometer is used to record tremors beneath the summit of volcanoes.", 0, 12),
              Chunk("a#1", "a", "docs/a.md", "Mount Fuji is the highest volcano in Japan.", 1, 9),
              Chunk("b#0", "b", "docs/b.md", "It erupts.", 0, 3),
              Chunk("b#1", "b", "docs/b.md", "To measure gas emissions from a crater, fly drones over the vent.", 1, 14)]
    assert corpus_examples(chunks, documents, k=3, terms=FolderTerms.from_chunks(chunks, documents.values())) == [
        ("A seismometer is used to record tremors beneath the summit of volcanoes.", "A seismometer",
         "What is used to record tremors beneath the summit of volcanoes?"),
        ("To measure gas emissions from a crater, fly drones over the vent.", "fly drones over the vent",
         "How do you measure gas emissions from a crater?"),
    ]


# Wikipedia prose (issue 43): past-tense definitions, appositions, names and dates, and long leads
# answered with their head noun phrase.
@pytest.mark.parametrize("sentence, kind, question, answer", [
    ("Isis was a major goddess in ancient Egyptian religion.", "definition",
     "What was Isis?", "a major goddess in ancient Egyptian religion"),
    ("Geoffrey Chaucer, author of The Canterbury Tales, was a poet of vernacular Middle English.", "definition",
     "What was Geoffrey Chaucer?", "a poet of vernacular Middle English"),
    ("The scientific study of birds is called ornithology.", "called",
     "What is the scientific study of birds called?", "ornithology"),
    ("The Lisbon cathedral was rebuilt in 1755 after the earthquake.", "when",
     "When was the Lisbon cathedral rebuilt?", "1755"),
    ("The Dead Sea Scrolls were discovered near Qumran on 4 March 1947.", "when",
     "When were the Dead Sea Scrolls discovered?", "4 March 1947"),
    # 22 words of predicate: the head before its relative clause answers "What is ...?"
    ("A syndrome is a set of medical signs and symptoms which are correlated with each other and often associated "
     "with a particular disease or disorder.", "definition",
     "What is a syndrome?", "a set of medical signs and symptoms"),
    # a long lead: the head ends before a prepositional phrase or a participle when the shorter head says
    # too little ("a significant figure", "a device", "a form of literature")
    ("Geoffrey Chaucer was a significant figure developing the legitimacy of vernacular Middle English at a time "
     "when the dominant literary languages in England were still French and Latin.", "definition",
     "What was Geoffrey Chaucer?", "a significant figure developing the legitimacy of vernacular Middle English"),
    ("A lawn mower is a device utilizing one or more revolving blades to cut a grass surface to an even height.",
     "definition", "What is a lawn mower?", "a device utilizing one or more revolving blades"),
    ("English literature is a form of literature written in the English language from the English-speaking world.",
     "definition", "What is English literature?", "a form of literature written in the English language"),
    # "of ..." belongs to its noun; a head does not end in a participle ("... Delta formed")
    ("A Fourier series is a series expansion of a periodic function into a sum of trigonometric functions.",
     "definition", "What is a Fourier series?", "a series expansion of a periodic function"),
    ("Sundarbans is a mangrove forest area in the Ganges Delta formed by the confluence of three rivers in the Bay "
     "of Bengal.", "definition", "What is Sundarbans?", "a mangrove forest area in the Ganges Delta"),
    # "such as" points nowhere; a ranking with its scope; "the name of" is not asked twice
    ("A compound eye is a visual organ found in arthropods such as insects and crustaceans.", "definition",
     "What is a compound eye?", "a visual organ found in arthropods such as insects and crustaceans"),
    ("San Marino is the fifth-smallest country in the world.", "definition",
     "What is San Marino?", "the fifth-smallest country in the world"),
    ("Valgrind is the name of the main entrance to Valhalla.", "known_item",
     "What is the name of the main entrance to Valhalla?", "Valgrind"),
])
def test_wikipedia_prose_templates_by_hand(sentence, kind, question, answer):
    assert _options(sentence)[kind] == (question, answer)


@pytest.mark.parametrize("sentence", [
    # a head that adds nothing to its subject but "type": the whole predicate stays, too long to ask
    "Tenpin bowling is a type of bowling in which a bowler rolls a bowling ball down a wood or synthetic lane "
    "toward ten pins.",
    "Melanomas are the most aggressive.",  # a degree, no noun
    # not cut before the relative clause that says which rhythms ("a broad term for many of the rhythms")
    "Samba is a broad term for many of the rhythms that compose the better known Brazilian music genres that "
    "originated in the Afro-Brazilian communities of Bahia.",
    "A residential garage is a walled, roofed structure with a door for storing a vehicle.",  # "a walled"
])
def test_definitions_whose_answer_names_too_little_are_not_made(sentence):
    made = _options(sentence)
    assert "definition" not in made or len(made["definition"][1].split()) > 12  # dropped by answer_length


# Issue 43, the six documents of Wikipedia prose, the Python library and Valgrind's manual: shapes rated
# awkward or nonsense (docs/data.md, "Small folders of prose"), each a sentence written by hand in that shape.
@pytest.mark.parametrize("sentence, kind", [
    # a bare passive: "What happens when difference equations are employed?" (employed for what?)
    ("When difference equations are employed, the theory is called discrete dynamical systems.", "condition"),
    ("When understood in a more restricted sense, only sensory consciousness counts.", "condition"),  # no subject
    ("When one wants to match a literal backslash, it must be escaped in the pattern.", "condition"),  # a wish
    ("If you are interested in simulating a cache, it is not hard to write your own simulator.", "condition"),
    ("If instead the thread broadcasts on a condition variable, all of the waiting threads wake.", "condition"),
    # the first item of a list cut at its comma: only part of the answer
    ("The Austroasiatic languages are a large language family spoken throughout Mainland Southeast Asia, South Asia,"
     " and East Asia.", "definition"),
    ("Sundarbans is a mangrove forest area formed by the confluence of the Ganges, Brahmaputra and Meghna Rivers.",
     "known_item"),
    # a kind with many members: "What is the name of the Old English poem?" (several are)
    ("Beowulf is an Old English poem, an epic in the tradition of Germanic heroic legend.", "known_item"),
    ("Madhvacharya was an Indian philosopher, theologian and proponent of the Dvaita school.", "known_item"),
    # the answer says the question again
    ("A two-dimensional Euclidean space is a two-dimensional space on the plane.", "definition"),
    # a subject that picks one out of what the passage spoke of: "What is the main inlet?" (of which lake?)
    ("The main inlet is the St. Marys River from Lake Superior.", "definition"),
    ("The largest city is a port on the Karnaphuli River.", "definition"),
    # a ranking that does not say among what, a place the passage named before
    ("Vernacular Tunisian Arabic is the most spoken language, and French serves in administration.", "definition"),
    ("Vernacular Tunisian Arabic is the most spoken language, and French serves in administration.", "known_item"),
    ("Chittagong is the second-largest city and the busiest port of the country.", "definition"),
    # what someone else does is not how you do it
    ("To prevent collisions, ATC enforces traffic separation rules around each aircraft.", "purpose"),
    # answers pointing back or opening with an aside
    ("If the ordinary character is not an ASCII digit, the resulting pattern will match that character.", "condition"),
    ("If discovery is started in a directory holding a package, either from the command line or by a call.",
     "condition"),
])
def test_shapes_rated_awkward_on_prose_and_manuals_are_not_made(sentence, kind):
    assert kind not in _options(sentence)



def _all_made(text: str, section: str = "") -> set[tuple[str, str, str]]:
    """Every (kind, question, answer) the templates make from ``text`` in a chunk under ``section`` (the
    chunk's title and section path), over 60 seeded draws; the folder holds 40 other pages."""
    document = Document("Manual", "manual.html", "Manual", "")
    chunk = Chunk("Manual#0", "Manual", "manual.html", text, 0, 1, section)
    pages = [Document(f"p{i}", f"p{i}.html", f"p{i}", "") for i in range(40)]
    terms = FolderTerms.from_chunks([chunk], [document, *pages])
    made = (template_candidate(chunk, document, random.Random(seed), terms) for seed in range(60))
    return {(candidate.kind, candidate.question, candidate.answer) for candidate in made if candidate is not None}


def _made(sentence: str, kind: str, section: str = "") -> tuple[str, str] | None:
    """The (question, answer) of ``kind`` made from ``sentence`` (:func:`_all_made`), or None."""
    return next(((question, answer) for made, question, answer in _all_made(sentence, section) if made == kind), None)


# Python 3.11's library reference and Valgrind's manual (docs/data.md#template-ratings, third round): a
# condition naming a definite thing the passage introduced ("the testing strategy", "the configure test",
# "the specified socket"), an answer that only says such a thing is done ("the graph is updated"), a
# comparison with nothing compared ("Memcheck can do better"), a kind for a name ("A pattern"), the reader's
# wish inside a condition, a condition in the past perfect. Sentences written by hand in those shapes.
@pytest.mark.parametrize("sentence, kind, section", [
    ("If the testing strategy changes, there is no need to change the source code.", "condition",
     "unittest — Unit testing framework › Organizing test code"),
    ("If the configure test succeeds, continue in the usual way with make and make install.", "condition",
     "Debugging MPI Parallel Programs › Building and installing the wrappers"),
    ("If a connection cannot be made to the specified socket, Valgrind falls back to writing to stderr.",
     "condition", "Core Command-line Options › Basic Options"),
    ("If the body of the with statement finishes without exceptions, nothing is rolled back by sqlite.",
     "condition", "sqlite3 › How to use the connection context manager"),
    ("When a thread acquires a new lock, the graph is updated.", "condition", "Helgrind › Lock orderings"),
    ("If you describe your allocator with client requests, Memcheck can do better.", "condition", "Limitations"),
    ("If a tuple does not suit your needs, you can use the Row class or a custom row factory.", "condition",
     "sqlite3 › How to create and use row factories"),
    ("If you ever meet a situation where you need to prevent vfork from being used, set the attribute to false.",
     "condition", "subprocess › Disabling use of vfork"),
    ("When most everything in optparse had been copied over, it no longer seemed practical to keep compatibility.",
     "condition", "argparse › Upgrading optparse code"),
])
def test_shapes_rated_awkward_on_library_manuals_are_not_made(sentence, kind, section):
    assert _made(sentence, kind, section) is None


# The same shapes with what names their thing: an identifier, an option, a capitalized name or acronym, the
# section path ("the pool" under "Memory Pools"), a thing every reader knows ("the user"), an aside in
# brackets ("(the default)"), the thing named in the question ("a transaction ..., the transaction is").
@pytest.mark.parametrize("sentence, kind, section, question", [
    ("If the dictionary passed to the writerow() method holds an unknown key, the extrasaction parameter decides.",
     "condition", "csv › Module Contents",
     "What happens if the dictionary passed to the writerow() method holds an unknown key?"),
    ("When the stack pointer register (SP) moves up or down, A bits are set.", "condition",
     "Memcheck › Valid-address (A) bits", "What happens when the stack pointer register (SP) moves up or down?"),
    ("If the module-level attribute raiseExceptions is False, exceptions get silently ignored.", "condition",
     "logging › Handler Objects", "What happens if the module-level attribute raiseExceptions is False?"),
    ("If missing_ok is false (the default), FileNotFoundError is raised if the path does not exist.", "condition",
     "pathlib › Methods", "What happens if missing_ok is false (the default)?"),
    ("If the pool was created with the is_zeroed argument set, Memcheck marks each chunk as defined.", "condition",
     "Memcheck › Memory Pools: describing and working with custom allocators",
     "What happens if the pool was created with the is_zeroed argument set?"),
    ("If the user interrupts a running test twice, the unittest runner exits at once.", "condition",
     "unittest › Signal Handling", "What happens if the user interrupts a running test twice?"),
    ("When a transaction holds an exclusive lock, the transaction is serialized.", "condition", "sqlite3",
     "What happens when a transaction holds an exclusive lock?"),
])
def test_definite_phrases_that_name_their_thing_still_make_questions(sentence, kind, section, question):
    made = _made(sentence, kind, section)
    assert made is not None and made[0] == question


def test_a_kind_many_pages_speak_of_is_not_what_is_used():
    # "What is used to match multiple library sonames?" / "A pattern" (Valgrind's manual): a kind of thing
    # that five pages of the folder speak of; "A seismometer" (test_each_template_by_hand) is asked
    sentence = "A pattern can be used to match multiple library sonames."
    pages = [_chunk(f"page{i}", 0, f"Each pattern of page {i} is matched in turn.") for i in range(5)]
    assert "used_for" not in _options(sentence, folder=pages, pages=[f"p{i}" for i in range(40)])
    assert _options(sentence, pages=[f"p{i}" for i in range(40)])["used_for"] == (
        "What is used to match multiple library sonames?", "A pattern")


def test_the_pool_is_named_by_its_section_path_only():
    sentence = "If the pool was created with the is_zeroed argument set, Memcheck marks each chunk as defined."
    assert _made(sentence, "condition", "Memcheck › Memory Pools: custom allocators") is not None
    assert _made(sentence, "condition", "Memcheck › Client requests") is None


HG_MANUAL = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty" / "questions" / "hg-manual.html"


def test_valgrinds_real_lock_order_paragraph_makes_no_condition(tmp_path):
    # Helgrind's manual as Valgrind 3.19 ships it: "When a thread acquires a new lock, the graph is updated,
    # and then checked to see if it now contains a cycle." (the graph the sentence before introduced).
    config = load_config(builtin_config("documents"), [f"dataset.path={HG_MANUAL.parent}",
                                                         f"cache_dir={tmp_path / 'cache'}"])
    dataset = load_dataset(config.dataset, cache_dir=config.cache_dir)
    chunks, _ = cached_chunks(dataset.documents, config.chunking, config.cache_dir, False)
    [chunk] = [c for c in chunks if "When a thread acquires a new" in c.text]
    assert any(s.startswith("When a thread acquires a new lock, the graph is updated") for s in prose_sentences(chunk.text))
    assert not [made for made in _all_made(chunk.text, chunk.section) if "graph" in made[2]]


COPYRIGHT = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty" / "debian-copyright"


def test_a_folder_without_template_questions_ends_on_lines_of_at_most_100_columns(tmp_path, capsys):
    # Debian copyright files (license notices in a machine-readable layout): no prose sentence a template
    # reads. The error names the problem on its first line, wraps, and ends with the exact command.
    argv = ["questions", "--config", "documents", "--set", f"dataset.path={COPYRIGHT}", "--set",
            f"cache_dir={tmp_path / 'cache'}", "--question-generator", "template", "--out", str(tmp_path / "q.jsonl")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err[err.index("error: "):].strip().splitlines()  # after the progress bars
    tried = re.fullmatch(r"error: no question survived from (\d+) chunks tried", lines[0]).group(1)
    assert max(len(line) for line in lines) <= 100 and "Traceback" not in err
    assert lines[1] == f'    failures: {{"no_template": {tried}}}; filtered: {{}}'
    assert lines[-2:] == [f"    rag-bench run --docs {os.path.relpath(COPYRIGHT)} --questions mine.txt",
                          "    then: rag-bench judge <new run dir>"]
