"""The quiz split in two (L12): what is asked (prompts, no figure) and what the facts decide (rulings), joined.

The prompts come from the registry of texts alone, with no measurement; posed with the rulings they give the
graded questions exactly as before the split (the expected texts below were written by the code before it, on two
fixed sets of facts, so no test here measures or depends on rounding); every prompt has its ruling and every choice
its verdict, in both languages and whatever the facts say.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from seqlab.errors import SeqlabError
from seqlab.studies import quiz, quiz_facts, quiz_prompts
from seqlab.studies.quiz import (KEYS, QuizFacts, build_questions, grade, parse_answer, pose, prompt, prompts,
                                 question, rule)

#: Facts as measured (seed 0), with round figures for the floats: nothing here is measured.
FIXED = dict(lengths=(8, 16), recurrence_span=(8, 16), input_span=(1, 1), softmax_span=(1, 1), token_span=(0, 0),
             crossover=Fraction(512), crossover_count=268_435_456, shuffled_change=2.5e-16, shuffled_tolerance=1e-12,
             unshuffled_change=1.5, shuffled_call_raised=False, recurrence_path=(8, 16), attention_path=(2, 2),
             attention_reach_ratio=0.75)
#: Facts that contradict the lesson wherever they can: most verdicts flip.
CONTRARY = {**FIXED, "recurrence_span": (1, 1), "input_span": (8, 16), "crossover": Fraction(1024),
            "shuffled_change": 1.0, "shuffled_call_raised": True, "attention_path": (7, 15)}
FACTS = {"fixed": FIXED, "contrary": CONTRARY}
LANGS = ("en", "es")


@pytest.fixture
def no_measuring(monkeypatch):
    """Any measurement raises: what runs under it needs none."""
    def refuse(seed=0):
        raise AssertionError("measured")

    monkeypatch.setattr(quiz_facts, "measure_facts", refuse)
    monkeypatch.setattr(quiz, "measure_facts", refuse)
    quiz_prompts.prompts.cache_clear()
    yield
    quiz_prompts.prompts.cache_clear()


# --- The prompts: asked without measuring ---------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_prompts_need_no_measurement(no_measuring, lang):
    asked = prompts(lang)
    assert [p.key for p in asked] == list(KEYS) == ["q1", "q2", "q3", "q4"]
    assert [p.kind for p in asked] == ["single", "numeric", "single", "multiple"]
    assert [[c.key for c in p.options] for p in asked] == [list("abcd"), [], list("abcd"), list("abcd")]
    assert [p.claims for p in asked] == [("L1",), ("L7", "L9"), ("L10",), ("L3", "L4")]
    assert all(p.text and p.hint and all(c.text for c in p.options) for p in asked)
    assert prompt("q3", lang) == asked[2]
    assert parse_answer(asked[3], "c, a", lang) == ("a", "c")  # an answer is read without the facts too


def test_prompt_refuses_an_unknown_key_or_language(no_measuring):
    with pytest.raises(SeqlabError, match="'q5'"):
        prompt("q5")
    with pytest.raises(SeqlabError, match="'q5'"):
        question("q5", "en", QuizFacts(**FIXED))  # refused before any ruling
    with pytest.raises(SeqlabError, match="'fr'"):
        prompts("fr")


def test_the_one_given_of_a_prompt_is_the_width():
    assert "d_v = 512." in prompts("en")[1].text and "d_v = 512." in prompts("es")[1].text  # WIDTH, not measured
    assert quiz_facts.WIDTH == 512


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(FACTS))
def test_posed_questions_ask_what_the_prompts_ask(name, lang):
    """Two routes to what a reader sees before answering: the prompt alone, and the graded question."""
    for p, q in zip(prompts(lang), build_questions(QuizFacts(**FACTS[name]), lang), strict=True):
        assert (q.key, q.kind, q.prompt, q.hint, q.claims) == (p.key, p.kind, p.text, p.hint, p.claims)
        if p.kind != "numeric":
            assert [(o.key, o.text) for o in q.options] == [(c.key, c.text) for c in p.options]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(FACTS))
def test_every_prompt_has_its_ruling_and_every_choice_its_verdict(name, lang):
    assert set(quiz._RULES) == set(KEYS)
    for p in prompts(lang):
        ruling = rule(p, QuizFacts(**FACTS[name]), lang)
        assert ruling.key == p.key and ruling.explanation
        keys = [v.key for v in ruling.verdicts]
        if p.kind == "numeric":
            assert sum(v.correct for v in ruling.verdicts) == 1 and len(set(keys)) == len(keys)
        else:
            assert keys == [c.key for c in p.options]


def test_a_numeric_question_writes_its_values_the_languages_way():
    facts = QuizFacts(**FIXED)
    english, spanish = (pose(prompt("q2", lang), rule(prompt("q2", lang), facts, lang), lang) for lang in LANGS)
    assert [o.key for o in english.options] == [o.key for o in spanish.options] == ["512", "1024", "256", "262144",
                                                                                     "513"]
    assert [o.text for o in english.options][1:4] == ["1,024", "256", "262,144"]
    assert [o.text for o in spanish.options][1:4] == ["1.024", "256", "262.144"]


# --- Graded as before the split ---------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FACTS))
def test_graded_exactly_as_before_the_split(name):
    """Answers, verdicts and explanations in English, as the code before the split wrote them for these facts."""
    got = {q.key: (q.answer, tuple((o.key, o.correct, o.explanation) for o in q.options), q.explanation)
           for q in build_questions(QuizFacts(**FACTS[name]), "en")}
    assert got == BEFORE[name]


@pytest.mark.parametrize("name", list(FACTS))
def test_spanish_rules_alike(name):
    facts = QuizFacts(**FACTS[name])
    for en, es in zip(build_questions(facts, "en"), build_questions(facts, "es"), strict=True):
        assert en.answer == es.answer and [o.correct for o in en.options] == [o.correct for o in es.options]
        assert [o.key for o in en.options] == [o.key for o in es.options]
        assert all(a.explanation != b.explanation for a, b in zip(en.options, es.options, strict=True))


@pytest.mark.parametrize("name", list(FACTS))
def test_grade_follows_the_posed_question(name):
    facts = QuizFacts(**FACTS[name])
    for q in build_questions(facts, "en"):
        if q.kind == "single" and "," in q.answer:
            continue  # facts that make two letters right (CONTRARY's q3): no single answer is right
        result = grade(q.key, q.answer, "en", facts)
        assert result.correct and result.right_answer == q.answer and result.explanation == q.explanation


def test_every_option_flip_rules_as_the_full_question():
    """A patched fact reaches the ruling and the posed question alike (seqlab check judges L12 this way)."""
    facts = QuizFacts(**FIXED)
    for change in ({"recurrence_span": (1, 1)}, {"crossover": Fraction(256)}, {"shuffled_call_raised": True}):
        patched = replace(facts, **change)
        for p, q in zip(prompts("en"), build_questions(patched, "en"), strict=True):
            verdicts = rule(p, patched, "en").verdicts
            assert [(v.key, v.correct, v.explanation) for v in verdicts] == [
                (o.key, o.correct, o.explanation) for o in q.options]


#: What the code before the split gave for FIXED and CONTRARY in English: {key: (answer, options, explanation)}.
BEFORE = {'contrary': {'q1': ('b',
                     (('a',
                       False,
                       'The question hands you the tokens ready-made, and the step that follows, looking up each '
                       "token's row, is a gather with no chain: measured, 0 compute ops in a row at T = 8 and 0 at "
                       'T = 16.'),
                      ('b',
                       True,
                       'Each W_xh x_t reads only its own token, so all T fit in one matrix product: measured, that '
                       'half is a chain of 8 products at T = 8 and 16 at T = 16.'),
                      ('c',
                       False,
                       'h_t cannot start until h_{t-1} is done, and that one waits for h_{t-2}: measured, the loop '
                       'is a chain of 1 products at T = 8 and 1 at T = 16, one per position.'),
                      ('d',
                       False,
                       "The recurrence has no softmax, and attention's normalises each row by itself without "
                       'waiting for the others: measured, a row softmax is a chain of 1 op at T = 8 and 1 at T = '
                       '16.')),
                     'Only W_hh h_{t-1} waits: each state needs the one before it, so the states form a chain T '
                     'long that no number of processors shortens. The W_xh x_t half spreads over processors like '
                     'any matrix product.'),
              'q2': ('1024',
                     (('1024',
                       True,
                       'At T = 1,024 both machines do 268,435,456 multiplications; one position later attention '
                       'does more.'),
                      ('256',
                       False,
                       "256 is d/2. There attention does 0.500 times the recurrence's multiplications: still "
                       'cheaper.'),
                      ('262144',
                       False,
                       '262,144 is d², a cost per step rather than a length; at T = 262,144 attention does 512 '
                       "times the recurrence's multiplications."),
                      ('1025',
                       False,
                       'At T = 1,025 attention already does more, 1,075,840,000 multiplications against '
                       '537,395,200, but the two counts meet one position earlier, where they are equal.')),
                     'With one width d the recurrence does 2Td² multiplications and attention 2T²d, so attention '
                     'does T/d times as many: the counts meet at T = d = 1,024, and past it attention is the '
                     'expensive one.'),
              'q3': ('c, d',
                     (('a',
                       False,
                       'Each output row belongs to its query, so moving the queries moves their outputs: measured, '
                       'the shuffled call differs from the original outputs by up to 1.50.'),
                      ('b',
                       False,
                       'Measured on a self-attention layer: shuffling the input rows and shuffling the output rows '
                       'give outputs that differ by at most 1.00, within rounding (1.00e-12).'),
                      ('c',
                       True,
                       'A score e_ij = a(q_i, k_j) reads two vectors and no position, and the mix is a sum, which '
                       'does not care about the order of its terms.'),
                      ('d',
                       True,
                       'Nothing in the call reads a position number, so it takes the rows in any order without '
                       'complaint; the measurement above ran it on shuffled rows.')),
                     'The indices only pick vectors and the mix is a sum, so attention sees a set of rows, not a '
                     "sequence: the outputs come out shuffled exactly as the inputs were. 'el perro muerde al "
                     "cartero' and 'al cartero muerde el perro' reach it as the same vectors; positional encoding, "
                     'later, adds where each row was.'),
              'q4': ('a, d',
                     (('a',
                       True,
                       'Measured on the Elman loop: x_1 reaches h_T after 8 products at T = 8 and 16 at T = 16, '
                       'one by W_xh and the rest by W_hh.'),
                      ('b',
                       False,
                       'Measured on self-attention: position 1 reaches position T in 7 products at T = 8 and 15 at '
                       'T = 16, the value projection and then the weighted sum, whatever lies between.'),
                      ('c',
                       False,
                       "No W_hh sits on attention's path and its length does not grow with T, so nothing is "
                       'multiplied over and over on the way.'),
                      ('d',
                       True,
                       'The gradient goes back along the path the signal came forward on, just as short: measured '
                       'by autograd at T = 16, it reaches position 1 with 0.750 times the strength it has at '
                       'position T itself.')),
                     'The recurrence carries position 1 through every state in between, T-1 products by the same '
                     'W_hh, and that repetition shrinks or blows up the gradient. Attention adds α_T1 v_1 straight '
                     'into c_T: one weight whatever T is, and the gradient returns along that same short path.')},
 'fixed': {'q1': ('c',
                  (('a',
                    False,
                    'The question hands you the tokens ready-made, and the step that follows, looking up each '
                    "token's row, is a gather with no chain: measured, 0 compute ops in a row at T = 8 and 0 at T "
                    '= 16.'),
                   ('b',
                    False,
                    'Each W_xh x_t reads only its own token, so all T fit in one matrix product: measured, that '
                    'half is a chain of 1 product at T = 8 and 1 at T = 16.'),
                   ('c',
                    True,
                    'h_t cannot start until h_{t-1} is done, and that one waits for h_{t-2}: measured, the loop is '
                    'a chain of 8 products at T = 8 and 16 at T = 16, one per position.'),
                   ('d',
                    False,
                    "The recurrence has no softmax, and attention's normalises each row by itself without waiting "
                    'for the others: measured, a row softmax is a chain of 1 op at T = 8 and 1 at T = 16.')),
                  'Only W_hh h_{t-1} waits: each state needs the one before it, so the states form a chain T long '
                  'that no number of processors shortens. The W_xh x_t half spreads over processors like any '
                  'matrix product.'),
           'q2': ('512',
                  (('512',
                    True,
                    'At T = 512 both machines do 268,435,456 multiplications; one position later attention does '
                    'more.'),
                   ('1024',
                    False,
                    '1,024 is 2d. The factor 2 sits in both counts, 2Td² and 2T²d, and cancels: at T = 1,024 '
                    "attention already does 2 times the recurrence's multiplications."),
                   ('256',
                    False,
                    "256 is d/2. There attention does 0.500 times the recurrence's multiplications: still "
                    'cheaper.'),
                   ('262144',
                    False,
                    '262,144 is d², a cost per step rather than a length; at T = 262,144 attention does 512 times '
                    "the recurrence's multiplications."),
                   ('513',
                    False,
                    'At T = 513 attention already does more, 269,485,056 multiplications against 268,959,744, but '
                    'the two counts meet one position earlier, where they are equal.')),
                  'With one width d the recurrence does 2Td² multiplications and attention 2T²d, so attention does '
                  'T/d times as many: the counts meet at T = d = 512, and past it attention is the expensive one.'),
           'q3': ('b',
                  (('a',
                    False,
                    'Each output row belongs to its query, so moving the queries moves their outputs: measured, '
                    'the shuffled call differs from the original outputs by up to 1.50.'),
                   ('b',
                    True,
                    'Measured on a self-attention layer: shuffling the input rows and shuffling the output rows '
                    'give outputs that differ by at most 2.50e-16, within rounding (1.00e-12).'),
                   ('c',
                    False,
                    'A score e_ij = a(q_i, k_j) reads two vectors and no position, and the mix is a sum, which '
                    'does not care about the order of its terms.'),
                   ('d',
                    False,
                    'Nothing in the call reads a position number, so it takes the rows in any order without '
                    'complaint; the measurement above ran it on shuffled rows.')),
                  'The indices only pick vectors and the mix is a sum, so attention sees a set of rows, not a '
                  "sequence: the outputs come out shuffled exactly as the inputs were. 'el perro muerde al "
                  "cartero' and 'al cartero muerde el perro' reach it as the same vectors; positional encoding, "
                  'later, adds where each row was.'),
           'q4': ('a, b, c',
                  (('a',
                    True,
                    'Measured on the Elman loop: x_1 reaches h_T after 8 products at T = 8 and 16 at T = 16, one '
                    'by W_xh and the rest by W_hh.'),
                   ('b',
                    True,
                    'Measured on self-attention: position 1 reaches position T in 2 products at T = 8 and 2 at T = '
                    '16, the value projection and then the weighted sum, whatever lies between.'),
                   ('c',
                    True,
                    "No W_hh sits on attention's path and its length does not grow with T, so nothing is "
                    'multiplied over and over on the way.'),
                   ('d',
                    False,
                    'The gradient goes back along the path the signal came forward on, just as short: measured by '
                    'autograd at T = 16, it reaches position 1 with 0.750 times the strength it has at position T '
                    'itself.')),
                  'The recurrence carries position 1 through every state in between, T-1 products by the same '
                  'W_hh, and that repetition shrinks or blows up the gradient. Attention adds α_T1 v_1 straight '
                  'into c_T: one weight whatever T is, and the gradient returns along that same short path.')}}
