"""What the self-check asks, before anything is measured: each question's text, hint and option labels (L12).

A :class:`Prompt` is everything a reader sees before answering — the key (``q1`` … ``q4``), the kind
(``single``: one letter, ``numeric``: a whole number, ``multiple``: every true letter), the question, the hint,
the lettered options' keys and labels, and the lesson claims it checks — and no measured figure. It comes from
the registry :data:`PROMPTS` alone (English message ids, translated by gettext, domain ``seqlab``), without
PyTorch, so ``seqlab quiz`` shows a question at once and measures while the reader reads. What the
measurements decide — which options are right, and the explanations with their figures — is
:mod:`seqlab.studies.quiz`'s: it joins a prompt and the facts of :mod:`seqlab.studies.quiz_facts` into a graded
:class:`~seqlab.studies.quiz.Question`. The one number a prompt shows, q2's width d = 512, is the question's
given (:data:`~seqlab.studies.quiz_facts.WIDTH`), not a measurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from seqlab.errors import SeqlabError
from seqlab.i18n import N_, check_language, translator
from seqlab.studies.quiz_facts import WIDTH

__all__ = ["DOMAIN", "KEYS", "KINDS", "PROMPTS", "Choice", "Prompt", "prompt", "prompts"]

DOMAIN = "seqlab"
KINDS = ("single", "numeric", "multiple")


@dataclass(frozen=True)
class Choice:
    """One lettered option as the reader sees it before answering: its key (``"a"``) and its label."""

    key: str
    text: str


@dataclass(frozen=True)
class Prompt:
    """A self-check question as asked (L12): no figure that a measurement decides.

    ``text`` is the question and ``hint`` what ``?`` shows; ``options`` are the choices shown for ``single``
    and ``multiple`` questions, in order (empty for a ``numeric`` one, whose right value and common slips are
    feedback decided by the facts); ``claims`` are the lesson claims it checks. :data:`PROMPTS` holds the English
    message ids; :func:`prompts` gives them in a language.
    """

    key: str
    kind: str
    text: str
    hint: str
    options: tuple[Choice, ...]
    claims: tuple[str, ...]
    #: Named values the text is formatted with (the question's givens, never a measurement); none: not formatted.
    givens: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)


def _choices(*pairs: tuple[str, str]) -> tuple[Choice, ...]:
    return tuple(Choice(key, text) for key, text in pairs)


#: The four questions as asked, in English message ids (the registry every language is read from).
PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "q1", "single",
        N_("You have as many processors as you want and the text is already tokenised. In an Elman "
           "recurrence, what still takes T steps that cannot overlap?"),
        N_("Look at h_t = tanh(W_hh h_{t-1} + W_xh x_t + b). Which of the two terms needs the result of the "
           "previous step?"),
        _choices(("a", N_("Splitting the text into tokens")),
                 ("b", N_("The products W_xh x_t, one per token")),
                 ("c", N_("The states h_t, each waiting for h_{t-1}")),
                 ("d", N_("A softmax over the positions"))),
        ("L1",)),
    Prompt(
        "q2", "numeric",
        N_("Take d_h = d_model = d_k = d_v = {d}. At which length T do the two counts meet, so that from there "
           "on attention's grid costs more multiplications than the recurrence?"),
        N_("Write both counts with one width d: the recurrence does T(d² + d·d), attention T²(d + d). Divide one "
           "by the other."),
        (),
        ("L7", "L9"), givens={"d": WIDTH}),
    Prompt(
        "q3", "single",
        N_("You give the attention call the same rows as before, in another order. What comes out?"),
        N_("In e_ij = a(q_i, k_j), do i and j enter the arithmetic, or do they only pick which vectors go in?"),
        _choices(("a", N_("The same outputs, in the original order")),
                 ("b", N_("The same output rows, shuffled the same way")),
                 ("c", N_("Different numbers: the new order changes the scores")),
                 ("d", N_("An error: the call needs the positions in order"))),
        ("L10",)),
    Prompt(
        "q4", "multiple",
        N_("About the path from position 1 to position T, which statements are true? Give every true letter."),
        N_("Follow x_1 forward. In the recurrence, through how many states does it pass before h_T? In attention, "
           "what multiplies v_1 inside c_T?"),
        _choices(("a", N_("In the recurrence it crosses T-1 products by W_hh")),
                 ("b", N_("In attention it carries a single weight, α_T1, however large T is")),
                 ("c", N_("The repeated product by one matrix behind vanishing gradients is gone from that path")),
                 ("d", N_("The backward path still has length T-1, because gradients go back step by step"))),
        ("L3", "L4")),
)

KEYS = tuple(p.key for p in PROMPTS)


@cache
def prompts(lang: str = "en") -> tuple[Prompt, ...]:
    """The four questions as asked in ``lang``: text, hint and option labels, with no measured figure (cached).

    >>> [(p.key, p.kind, [c.key for c in p.options]) for p in prompts("en")][:2]
    [('q1', 'single', ['a', 'b', 'c', 'd']), ('q2', 'numeric', [])]
    >>> prompts("es")[1].text[:37]
    'Toma d_h = d_model = d_k = d_v = 512.'

    Raises:
        SeqlabError: ``lang`` is not ``en`` or ``es``.
    """
    _ = translator(check_language(lang), DOMAIN)

    def text(message: str, givens: Mapping[str, int]) -> str:
        return _(message).format(**givens) if givens else _(message)

    return tuple(Prompt(p.key, p.kind, text(p.text, p.givens), _(p.hint),
                        tuple(Choice(c.key, _(c.text)) for c in p.options), p.claims)
                 for p in PROMPTS)


def prompt(key: str, lang: str = "en") -> Prompt:
    """One question as asked, by key (``q1`` … ``q4``), in ``lang``.

    Raises:
        SeqlabError: an unknown key (the message lists the keys) or language.
    """
    for p in prompts(lang):
        if p.key == key:
            return p
    raise SeqlabError(N_("question must be one of {keys}; received {key!r}"), keys=", ".join(KEYS), key=key,
                      parameter="key")
