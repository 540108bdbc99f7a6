"""Languages: English and Spanish output through gettext catalogues (``locale/<lang>/LC_MESSAGES``).

Message ids are the English sentences. ``es`` has one compiled catalogue per front end (:data:`DOMAINS`):
``seqlab`` holds the words of every renderer (each command's output, the report, the notebook), ``cli`` those of
the command line itself (option help, usage errors, Click's own messages) and ``web`` those of the web lab. They
are built from the ``.po`` files with Babel (``pybabel compile -d src/seqlab/locale -D <domain>``; a test checks
every compiled file is current). :func:`translator` is the one way in; the terms the catalogues use come from
:mod:`seqlab.glossary`. Numbers are formatted per language with Babel.

:func:`N_` is the one marker of a message id translated later (a renderer's label, a web sentence, every
:class:`~seqlab.errors.SeqlabError`'s template). The language of a call is chosen once
(:func:`use_language`, a context variable set by the command line per run; English by default), so a refusal is
worded in it without a ``lang`` passed down (:meth:`seqlab.errors.SeqlabError.localized`).
"""

from __future__ import annotations

import gettext
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from functools import lru_cache
from importlib import resources

LANGUAGES = ("en", "es")
DOMAIN = "seqlab"
#: The gettext domains, one per front end: renderers (terminal, report, notebook), the command line, the web lab.
DOMAINS = ("seqlab", "cli", "web")


#: The exception this module raises on bad input: seqlab.errors.SeqlabError, which that module registers here as
#: it loads (:func:`refuse_with`). seqlab.errors sits above this module (it words its messages through these
#: catalogues), so this module imports nothing of seqlab's and no import cycle forms; the package imports
#: seqlab.errors first of all (seqlab/__init__.py), so the registration is in place before any call.
_REFUSAL: list[type[Exception]] = []


def refuse_with(error_class: type[Exception]) -> None:
    """Register the exception class this module raises on bad input (called once, by :mod:`seqlab.errors`)."""
    _REFUSAL[:] = [error_class]


def _refusal() -> type[Exception]:
    return _REFUSAL[0]  # registered by seqlab.errors, which the package loads first


def N_(message: str) -> str:
    """Mark ``message`` as a message id (gettext's ``N_``): extracted for the catalogues, returned unchanged and
    translated where it is shown. The one marker of seqlab: renderers' labels, the web lab's sentences and every
    :class:`~seqlab.errors.SeqlabError` template use it (a test extracts every marked id and requires its Spanish
    entry).

    >>> N_("not run")
    'not run'
    """
    return message


#: The language chosen for the call in progress (a CLI run, a web request), or None: see :func:`use_language`.
_CHOSEN: ContextVar[str | None] = ContextVar("seqlab_language", default=None)


@contextmanager
def use_language(lang: str) -> Iterator[None]:
    """Choose ``lang`` once for the call inside the block (a context variable: per thread and per task, restored on
    the way out, re-entrant); messages worded without a language (:meth:`seqlab.errors.SeqlabError.localized`)
    use it.

    >>> with use_language("es"):
    ...     chosen_language(), current_language()
    ('es', 'es')
    >>> chosen_language(), current_language()
    (None, 'en')

    Raises:
        SeqlabError: ``lang`` is not one of :data:`LANGUAGES`.
    """
    token = _CHOSEN.set(check_language(lang))
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def chosen_language() -> str | None:
    """The language chosen with :func:`use_language` for the call in progress, or None outside any."""
    return _CHOSEN.get()


def current_language() -> str:
    """The language of the call in progress: the one chosen with :func:`use_language`, else English."""
    return _CHOSEN.get() or "en"


def default_language() -> str:
    """The language the environment asks for (LANGUAGE, LC_ALL, LC_MESSAGES, LANG): ``es`` or ``en``.

    >>> import os; os.environ.get("SEQLAB_DOC", "") or default_language() in LANGUAGES
    True
    """
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value:
            return "es" if value.lower().startswith("es") else "en"
    return "en"


def check_language(lang: str) -> str:
    """Return ``lang`` if it is one of :data:`LANGUAGES`.

    Raises:
        SeqlabError: any other value; the message lists the languages.
    """
    if lang not in LANGUAGES:
        raise _refusal()(N_("language must be one of {languages}; received {lang!r}"), languages=", ".join(LANGUAGES),
                          lang=lang, parameter="lang")
    return lang


@lru_cache(maxsize=None)
def catalogue(lang: str, domain: str = DOMAIN) -> gettext.NullTranslations:
    """The translations of ``domain`` (one of :data:`DOMAINS`) for ``lang``: English is the message ids themselves.

    >>> catalogue("es", "cli").gettext("Usage:"), catalogue("en", "cli").gettext("Usage:")
    ('Uso:', 'Usage:')

    Raises:
        SeqlabError: unknown language, or the Spanish catalogue is missing from the package.
    """
    check_language(lang)
    if lang == "en":
        return gettext.NullTranslations()
    localedir = resources.files("seqlab") / "locale"
    try:
        return gettext.translation(domain, localedir=str(localedir), languages=[lang])
    except OSError as error:
            raise _refusal()(N_("the {lang!r} catalogue {domain!r} is missing from {localedir}: {error}"), lang=lang,
                          domain=domain, localedir=localedir, error=error) from error


def translator(lang: str, domain: str = DOMAIN) -> Callable[[str], str]:
    """The gettext function for ``lang``: English message id in, sentence in that language out.

    ``domain`` is the front end's catalogue (:data:`DOMAINS`); every renderer uses the default, ``seqlab``.

    >>> translator("es")("Measurement")
    'Medida'
    >>> translator("en")("Measurement")
    'Measurement'

    Raises:
        SeqlabError: unknown language, or the Spanish catalogue is missing from the package.
    """
    return catalogue(lang, domain).gettext


def plural_translator(lang: str, domain: str = DOMAIN) -> Callable[[str, str, int], str]:
    """The ngettext function for ``lang``: English singular and plural ids and a count in, the right form out.

    >>> plural_translator("es")("{count} thread", "{count} threads", 1).format(count=1)
    '1 hilo'
    >>> plural_translator("en")("{count} thread", "{count} threads", 2).format(count=2)
    '2 threads'

    Raises:
        SeqlabError: unknown language, or the Spanish catalogue is missing from the package.
    """
    return catalogue(lang, domain).ngettext


def format_source(source: str, lang: str) -> str:
    """Where a text came from, in ``lang``: a built-in or synthetic text in words (its label carries its message:
    :class:`seqlab.errors.Worded`), a path or ``stdin`` as is.

    >>> from seqlab.errors import Message, Worded
    >>> synthetic = Worded("synthetic (12 tokens)", Message(N_("synthetic text ({count} tokens)"), count=12))
    >>> format_source(synthetic, "es"), format_source("a.txt", "es")
    ('texto sintético (12 tokens)', 'a.txt')
    """
    localized = getattr(source, "localized", None)  # a Worded label words itself (seqlab.errors sits above us)
    return localized(lang) if localized is not None else source


def format_integer(value: int, lang: str) -> str:
    """An exact integer with the language's digit grouping.

    >>> format_integer(26214400, "en"), format_integer(26214400, "es")
    ('26,214,400', '26.214.400')
    """
    from babel.numbers import format_decimal

    return format_decimal(value, locale=check_language(lang), group_separator=True)


def format_number(value: float, lang: str, digits: int = 3) -> str:
    """A float with ``digits`` significant digits, per language; scientific outside [0.001, 10⁶).

    >>> format_number(0.09765625, "en"), format_number(0.09765625, "es"), format_number(3.2e-190, "en")
    ('0.0977', '0,0977', '3.20e-190')
    >>> format_number(0.0, "en"), format_number(1.5e7, "es"), format_number(5e-324, "en")
    ('0', '1,50e7', '4.94e-324')
    >>> format_number(999_999.7, "en")
    '1.00e6'
    """
    from babel.numbers import format_decimal

    lang = check_language(lang)
    if value == 0 or not math.isfinite(value):
        return format_decimal(value, locale=lang)
    mantissa_text, exponent_text = f"{value:.{digits - 1}e}".split("e")  # rounding done once, by Python
    exponent = int(exponent_text)
    if -3 <= exponent < 6:
        decimals = max(0, digits - 1 - exponent)
        pattern = "#,##0." + "0" * decimals if decimals else "#,##0"
        return format_decimal(round(value, decimals), format=pattern, locale=lang)
    pattern = "0." + "0" * (digits - 1)
    return f"{format_decimal(float(mantissa_text), format=pattern, locale=lang)}e{exponent}"


def format_fraction(value: Fraction, lang: str, digits: int = 3) -> str:
    """An exact ratio: an integer when it is whole, else ``digits`` significant digits.

    >>> format_fraction(Fraction(512), "en"), format_fraction(Fraction(1000, 512), "es")
    ('512', '1,95')
    """
    if value.denominator == 1:
        return format_integer(value.numerator, lang)
    return format_number(float(value), lang, digits)


def format_seconds(seconds: float, lang: str = "en") -> str:
    """A duration in engineering units (s, ms, µs, ns) with three significant digits, per language.

    >>> format_seconds(0.000812), format_seconds(0.0241), format_seconds(1.3212), format_seconds(0.0241, "es")
    ('812 µs', '24.1 ms', '1.32 s', '24,1 ms')
    >>> format_seconds(0.0009996)  # rounded first, so it reads 1.00 ms, not 1000 µs
    '1.00 ms'

    Raises:
        SeqlabError: ``seconds`` is negative or not finite.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds < 0:
            raise _refusal()(N_("seconds must be a finite number >= 0, received {seconds!r}"), seconds=seconds)
    if seconds == 0:
        return "0 s"
    rounded = float(f"{seconds:.3g}")
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
    unit, scale = next(((unit, scale) for unit, scale in units if rounded >= scale), ("ns", 1e-9))
    return f"{format_number(rounded / scale, lang)} {unit}"
