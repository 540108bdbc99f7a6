"""The lesson's four self-check questions, their answers decided by measurements, and a grader (L12).

Data flows one way: a :class:`~seqlab.studies.quiz_prompts.Prompt` (what is asked: key, kind, text, hint, the
lettered options' labels, from :mod:`seqlab.studies.quiz_prompts`, with no measured figure) and the
:class:`~seqlab.studies.quiz_facts.QuizFacts` (measured by :func:`measure_facts`) give a :class:`Ruling` (what the
facts decide: a :class:`Verdict` per option, right or not and why, and the overall explanation); the prompt and
its ruling make the graded :class:`Question`, and :func:`grade` marks an answer against it. Kinds: ``single``
(one letter), ``numeric`` (a whole number), ``multiple`` (every true letter). The right answers are not typed in:
every ``correct`` flag follows from a figure:

* q1 (L1) — span (:mod:`seqlab.measure.trace`) at two lengths of the Elman loop, of its W_xh x_t half
  done as one product, of a row softmax and of the token lookup: only the chain of states grows with T;
* q2 (L7) — :func:`seqlab.cost.crossover_length` with every width 512;
* q3 (L10) — :func:`seqlab.measure.order.measure_order` on self-attention: shuffled rows in, the same
  rows shuffled alike out; also how far the outputs are from the unshuffled ones, and whether the call
  raised;
* q4 (L3, L4) — least products from position 1 to T (:mod:`seqlab.measure.paths`) on the loop and on
  self-attention at two lengths, and the gradient's reach back to position 1
  (:mod:`seqlab.measure.reach`).

:func:`prompts` gives the questions as asked, at once and without PyTorch; :func:`build_questions` joins them with
measured facts and :func:`questions` with :func:`measure_facts`'s (cached), in English or Spanish (gettext domain
``seqlab``); :func:`grade` marks an answer and explains every option. For a numeric question the options are the
right value and common slips (2d, d/2, d², one past the crossing), each with its explanation; they are
feedback, not choices to show. :func:`measure_in_background` starts the measurement in a thread and returns a
:class:`~concurrent.futures.Future`, so a front end asks while it measures; :func:`parse_answer` reads an answer
before the facts are known. The measuring lives in :mod:`seqlab.studies.quiz_facts`, the texts asked in
:mod:`seqlab.studies.quiz_prompts` and the reading of answers in :mod:`seqlab.studies.quiz_answers`; their public
names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from seqlab import cost
from seqlab.i18n import check_language, format_fraction, format_integer, format_number, plural_translator, translator
from seqlab.studies.quiz_answers import parse_answer, parse_choice, parse_number
from seqlab.studies.quiz_facts import FACT_WIDTH, LENGTHS, WIDTH, QuizFacts, measure_facts, measure_in_background
from seqlab.studies.quiz_prompts import DOMAIN, KEYS, KINDS, Choice, Prompt, prompt, prompts

__all__ = ["DOMAIN", "FACT_WIDTH", "KEYS", "KINDS", "LENGTHS", "WIDTH", "Choice", "Grade", "Option", "OptionFeedback",
           "Prompt", "Question", "QuizFacts", "Ruling", "Verdict", "build_questions", "grade", "measure_facts",
           "measure_in_background", "parse_answer", "parse_choice", "parse_number", "pose", "prompt", "prompts",
           "question", "questions", "rule"]


@dataclass(frozen=True)
class Option:
    """One answer a reader may give: its key (a letter, or the number for numeric questions), its text,
    whether it is right, and why."""

    key: str
    text: str
    correct: bool
    explanation: str


@dataclass(frozen=True)
class Question:
    """A self-check question (L12), graded: its :class:`~seqlab.studies.quiz_prompts.Prompt` joined with what the
    facts decide. ``answer`` is the right answer as a reader would type it (``"c"``, ``"512"``, ``"a, b, c"``);
    ``claims`` are the lesson claims it checks."""

    key: str
    kind: str
    prompt: str
    hint: str
    options: tuple[Option, ...]
    explanation: str
    answer: str
    claims: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """What the facts decide about one option: its key (a letter, or a value for numeric questions), whether it
    is right, and why (the explanation carries the figures measured)."""

    key: str
    correct: bool
    explanation: str


@dataclass(frozen=True)
class Ruling:
    """What the facts decide about one question: a :class:`Verdict` per option (lettered: one per choice of its
    prompt; numeric: the right value, then the common slips) and the explanation shown after any answer."""

    key: str
    verdicts: tuple[Verdict, ...]
    explanation: str


@dataclass(frozen=True)
class OptionFeedback:
    """How one option fared: chosen by the reader or not, right or not, and why."""

    key: str
    text: str
    chosen: bool
    correct: bool
    explanation: str


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer: ``correct``, the answer as understood (``"b"``, ``"512"``, ``"a, c"``),
    the right answer, feedback per option (numeric: one entry, for the value given) and the explanation."""

    key: str
    correct: bool
    answer: str
    right_answer: str
    feedback: tuple[OptionFeedback, ...]
    explanation: str


#: How each question is ruled from the facts, by key: ``(gettext, facts, lang) -> Ruling``.
_RULES: dict[str, Callable[..., Ruling]] = {}


def _rules(key: str) -> Callable[[Callable[..., Ruling]], Callable[..., Ruling]]:
    """Register the function that rules question ``key`` (a test checks one per key of the prompts)."""
    def register(function: Callable[..., Ruling]) -> Callable[..., Ruling]:
        _RULES[key] = function
        return function
    return register


def _grows_with_T(pair: tuple[int, int], lengths: tuple[int, int]) -> bool:
    """The measured chain equals T at both lengths: one step per position."""
    return tuple(pair) == tuple(lengths)


@_rules("q1")
def _q1(_, f: QuizFacts, lang: str) -> Ruling:
    T1, T2 = (format_integer(T, lang) for T in f.lengths)
    ngettext = plural_translator(lang)  # the chains are measured: "1 op", "0 compute ops"
    token, inputs, softmax = (format_integer(span[0], lang) for span in (f.token_span, f.input_span, f.softmax_span))
    verdicts = (
        Verdict("a", _grows_with_T(f.token_span, f.lengths),
                _("The question hands you the tokens ready-made, and the step that follows, looking up each token's "
                  "row, is a gather with no chain: measured, {ops} in a row at T = {T1} and {b} at "
                  "T = {T2}.").format(
                    ops=ngettext("{count} compute op", "{count} compute ops", f.token_span[0]).format(count=token),
                    b=f.token_span[1], T1=T1, T2=T2)),
        Verdict("b", _grows_with_T(f.input_span, f.lengths),
                _("Each W_xh x_t reads only its own token, so all T fit in one matrix product: measured, that "
                  "half is a chain of {products} at T = {T1} and {b} at T = {T2}.").format(
                    products=ngettext("{count} product", "{count} products", f.input_span[0]).format(count=inputs),
                    b=f.input_span[1], T1=T1, T2=T2)),
        Verdict("c", _grows_with_T(f.recurrence_span, f.lengths),
                _("h_t cannot start until h_{{t-1}} is done, and that one waits for h_{{t-2}}: measured, the loop is "
                  "a chain of {a} products at T = {T1} and {b} at T = {T2}, one per position.").format(
                    a=f.recurrence_span[0], b=f.recurrence_span[1], T1=T1, T2=T2)),
        Verdict("d", _grows_with_T(f.softmax_span, f.lengths),
                _("The recurrence has no softmax, and attention's normalises each row by itself without waiting "
                  "for the others: measured, a row softmax is a chain of {ops} at T = {T1} and {b} at "
                  "T = {T2}.").format(
                    ops=ngettext("{count} op", "{count} ops", f.softmax_span[0]).format(count=softmax),
                    b=f.softmax_span[1], T1=T1, T2=T2)),
    )
    return Ruling(
        "q1", verdicts,
        _("Only W_hh h_{t-1} waits: each state needs the one before it, so the states form a chain T long that "
          "no number of processors shortens. The W_xh x_t half spreads over processors like any matrix "
          "product."))


@_rules("q2")
def _q2(_, f: QuizFacts, lang: str) -> Ruling:
    d = WIDTH
    crossing = f.crossover

    def at(T: int) -> str:
        return format_fraction(cost.work_ratio(T, d, d, d, d), lang)

    slips = (
        (2 * d, _("{value} is 2d. The factor 2 sits in both counts, 2Td² and 2T²d, and cancels: at T = {value} "
                  "attention already does {ratio} times the recurrence's multiplications.")),
        (d // 2, _("{value} is d/2. There attention does {ratio} times the recurrence's multiplications: still "
                   "cheaper.")),
        (d * d, _("{value} is d², a cost per step rather than a length; at T = {value} attention does {ratio} "
                  "times the recurrence's multiplications.")),
        (int(crossing) + 1, _("At T = {value} attention already does more, {attention} multiplications against "
                              "{recurrence}, but the two counts meet one position earlier, where they are equal.")),
    )

    def counts(T: int) -> dict[str, str]:
        return {"attention": format_integer(cost.attention_multiplications(T, d, d), lang),
                "recurrence": format_integer(cost.recurrence_multiplications(T, d, d), lang)}

    right = Verdict(str(int(crossing)), True,
                    _("At T = {value} both machines do {count} multiplications; one position later attention does "
                      "more.").format(value=format_integer(int(crossing), lang),
                                      count=format_integer(f.crossover_count, lang)))
    verdicts = (right,) + tuple(
        Verdict(str(value), Fraction(value) == crossing,
                text.format(value=format_integer(value, lang), ratio=at(value), **counts(value)))
        for value, text in slips if Fraction(value) != crossing)  # a slip that is the crossing is the right option
    return Ruling(
        "q2", verdicts,
        _("With one width d the recurrence does 2Td² multiplications and attention 2T²d, so attention does T/d "
          "times as many: the counts meet at T = d = {value}, and past it attention is the expensive one.").format(
            value=format_integer(int(crossing), lang)))


@_rules("q3")
def _q3(_, f: QuizFacts, lang: str) -> Ruling:
    equivariant = f.shuffled_change <= f.shuffled_tolerance
    verdicts = (
        Verdict("a", f.unshuffled_change <= f.shuffled_tolerance,
                _("Each output row belongs to its query, so moving the queries moves their outputs: measured, the "
                  "shuffled call differs from the original outputs by up to {change}.").format(
                    change=format_number(f.unshuffled_change, lang))),
        Verdict("b", equivariant,
                _("Measured on a self-attention layer: shuffling the input rows and shuffling the output rows give "
                  "outputs that differ by at most {change}, within rounding ({tolerance}).").format(
                    change=format_number(f.shuffled_change, lang), tolerance=format_number(f.shuffled_tolerance, lang))),
        Verdict("c", not equivariant,
                _("A score e_ij = a(q_i, k_j) reads two vectors and no position, and the mix is a sum, which does "
                  "not care about the order of its terms.")),
        Verdict("d", f.shuffled_call_raised,
                _("Nothing in the call reads a position number, so it takes the rows in any order without "
                  "complaint; the measurement above ran it on shuffled rows.")),
    )
    return Ruling(
        "q3", verdicts,
        _("The indices only pick vectors and the mix is a sum, so attention sees a set of rows, not a sequence: "
          "the outputs come out shuffled exactly as the inputs were. 'el perro muerde al cartero' and 'al "
          "cartero muerde el perro' reach it as the same vectors; positional encoding, later, adds where each "
          "row was."))


@_rules("q4")
def _q4(_, f: QuizFacts, lang: str) -> Ruling:
    T1, T2 = (format_integer(T, lang) for T in f.lengths)
    steps = tuple(p - 1 for p in f.recurrence_path)  # W_xh once, then W_hh at every later step
    flat = f.attention_path[0] == f.attention_path[1]
    verdicts = (
        Verdict("a", steps == tuple(T - 1 for T in f.lengths),
                _("Measured on the Elman loop: x_1 reaches h_T after {a} products at T = {T1} and {b} at T = {T2}, "
                  "one by W_xh and the rest by W_hh.").format(a=f.recurrence_path[0], b=f.recurrence_path[1],
                                                             T1=T1, T2=T2)),
        Verdict("b", flat,
                _("Measured on self-attention: position 1 reaches position T in {a} products at T = {T1} and {b} "
                  "at T = {T2}, the value projection and then the weighted sum, whatever lies between.").format(
                    a=f.attention_path[0], b=f.attention_path[1], T1=T1, T2=T2)),
        Verdict("c", flat and max(f.attention_path) < min(f.lengths) - 1,
                _("No W_hh sits on attention's path and its length does not grow with T, so nothing is multiplied "
                  "over and over on the way.")),
        Verdict("d", f.attention_path[1] == f.lengths[1] - 1,
                _("The gradient goes back along the path the signal came forward on, just as short: measured by "
                  "autograd at T = {T}, it reaches position 1 with {ratio} times the strength it has at position "
                  "T itself.").format(T=T2, ratio=format_number(f.attention_reach_ratio, lang))),
    )
    return Ruling(
        "q4", verdicts,
        _("The recurrence carries position 1 through every state in between, T-1 products by the same W_hh, "
          "and that repetition shrinks or blows up the gradient. Attention adds α_T1 v_1 straight into c_T: one "
          "weight whatever T is, and the gradient returns along that same short path."))


def rule(prompt_: Prompt, facts: QuizFacts, lang: str = "en") -> Ruling:
    """What ``facts`` decide about the question ``prompt_`` asks, in ``lang``: a verdict per option and the
    explanation (the figures in them are the measured ones, formatted the language's way).

    >>> ruling = rule(prompt("q1"), measure_facts())
    >>> [(v.key, v.correct) for v in ruling.verdicts]
    [('a', False), ('b', False), ('c', True), ('d', False)]

    Raises:
        SeqlabError: ``lang`` is not ``en`` or ``es``.
    """
    return _RULES[prompt_.key](translator(check_language(lang), DOMAIN), facts, lang)


def pose(prompt_: Prompt, ruling: Ruling, lang: str = "en") -> Question:
    """The graded question: ``prompt_`` (what is asked) joined with ``ruling`` (what the facts decide).

    A lettered question's options are its choices, in order, each with its verdict; a numeric question's are the
    ruling's values, written the language's way. ``answer`` lists the keys of every right option (``"a, b, c"``).

    >>> q = pose(prompt("q2"), rule(prompt("q2"), measure_facts()))
    >>> q.answer, [o.text for o in q.options][:2]
    ('512', ['512', '1,024'])
    """
    if prompt_.kind == "numeric":
        options = tuple(Option(v.key, format_integer(int(v.key), lang), v.correct, v.explanation)
                        for v in ruling.verdicts)
    else:
        verdicts = {v.key: v for v in ruling.verdicts}
        options = tuple(Option(c.key, c.text, verdicts[c.key].correct, verdicts[c.key].explanation)
                        for c in prompt_.options)
    answer = ", ".join(option.key for option in options if option.correct)
    return Question(prompt_.key, prompt_.kind, prompt_.text, prompt_.hint, options, ruling.explanation, answer,
                    prompt_.claims)


def build_questions(facts: QuizFacts, lang: str = "en") -> tuple[Question, ...]:
    """The four questions in ``lang`` with every ``correct`` flag and answer computed from ``facts`` (uncached;
    ``seqlab check`` judges L12 with it, so a patched fact reaches the answer): each prompt posed with its ruling.

    >>> from dataclasses import replace
    >>> facts = measure_facts()
    >>> [q.answer for q in build_questions(replace(facts, recurrence_span=(1, 1), input_span=facts.lengths))][:1]
    ['b']

    Raises:
        SeqlabError: ``lang`` is not ``en`` or ``es``.
    """
    return tuple(pose(p, rule(p, facts, lang), lang) for p in prompts(lang))


@cache
def questions(lang: str = "en") -> tuple[Question, ...]:
    """The four questions in ``lang``, their right answers computed from :func:`measure_facts` (cached).

    >>> [(q.key, q.kind, q.answer) for q in questions("en")]
    [('q1', 'single', 'c'), ('q2', 'numeric', '512'), ('q3', 'single', 'b'), ('q4', 'multiple', 'a, b, c')]

    Raises:
        SeqlabError: ``lang`` is not ``en`` or ``es``.
    """
    return build_questions(measure_facts(), lang)


def question(key: str, lang: str = "en", facts: QuizFacts | None = None) -> Question:
    """One question by key (``q1`` … ``q4``), from ``facts`` when given (else :func:`measure_facts`'s). An unknown
    key or language is refused before anything is measured.

    Raises:
        SeqlabError: an unknown key (the message lists the keys) or language.
    """
    asked = prompt(key, lang)
    if facts is None:
        return next(q for q in questions(lang) if q.key == asked.key)
    return pose(asked, rule(asked, facts, lang), lang)


def grade(key: str, answer: object, lang: str = "en", facts: QuizFacts | None = None) -> Grade:
    """Mark ``answer`` to question ``key`` and explain every option (L12).

    >>> grade("q2", " 512.0 ").correct, grade("q4", "a,b").correct, grade("q3", "B").correct
    (True, False, True)

    Args:
        key: ``q1`` … ``q4``.
        answer: a letter (single), letters (multiple: ``"a, c"``, ``"ac"`` or a list), or a whole number
            (numeric: int, float or text; see :func:`parse_number`).
        lang: language of the feedback.
        facts: the measured facts to grade against (default: :func:`measure_facts`, measured here).

    Returns:
        A :class:`Grade`.

    Raises:
        SeqlabError: an unknown key or language, or an answer that cannot be read (the message shows it).
    """
    q = question(key, lang, facts)
    _ = translator(lang, DOMAIN)
    if q.kind == "numeric":
        value = parse_number(answer, lang)
        right = next(option for option in q.options if option.correct)
        match = next((option for option in q.options if option.key == str(value)), None)
        if match is None:
            ratio = format_fraction(cost.work_ratio(value, WIDTH, WIDTH, WIDTH, WIDTH), lang)
            text = (_("At T = {value} attention does {ratio} times the recurrence's multiplications: less work, "
                      "so the counts have not met yet.") if value < int(right.key) else
                    _("At T = {value} attention does {ratio} times the recurrence's multiplications: the counts "
                      "met earlier.")).format(value=format_integer(value, lang), ratio=ratio)
            match = Option(str(value), format_integer(value, lang), False, text)
        feedback = (OptionFeedback(match.key, match.text, True, match.correct, match.explanation),)
        return Grade(q.key, match.correct, str(value), q.answer, feedback, q.explanation)
    chosen = parse_choice(q, answer)
    feedback = tuple(OptionFeedback(o.key, o.text, o.key in chosen, o.correct, o.explanation) for o in q.options)
    right = tuple(o.key for o in q.options if o.correct)
    return Grade(q.key, chosen == right, ", ".join(chosen), q.answer, feedback, q.explanation)
