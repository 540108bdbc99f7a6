"""The one exception class of seqlab.

Every bad input the library refuses raises :class:`SeqlabError` with a one-line message
that names the bad value and the accepted range. Front ends (CLI, web) catch it and turn
it into exit code 2 or HTTP 422.
"""


class SeqlabError(ValueError):
    """Bad input to a seqlab function: the message names the value and what was expected.

    ``parameter``, when given, names the argument at fault (``"d_model"``, ``"T"``...), so a front
    end can point at its own option or field.

    >>> raise SeqlabError("T must be an integer >= 1, received 0", parameter="T")
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: T must be an integer >= 1, received 0
    """

    def __init__(self, message: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


def require_positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer in ``[1, maximum]``, else raise :class:`SeqlabError`.

    >>> require_positive_int("T", 8)
    8

    Raises:
        SeqlabError: ``value`` is not an int (bools are refused), is < 1, or is > ``maximum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise SeqlabError(f"{name} must be an integer >= 1, received {value!r}", parameter=name)
    if value < 1:
        raise SeqlabError(f"{name} must be an integer >= 1, received {value}", parameter=name)
    if maximum is not None and value > maximum:
        raise SeqlabError(f"{name} must be an integer in [1, {maximum}], received {value}", parameter=name)
    return value


def check_form(form: object, forms: tuple[str, ...]) -> str:
    """``form`` if it is one of ``forms``, else a :class:`SeqlabError` naming both.

    >>> check_form("scan", ("loop", "scan"))
    'scan'
    """
    if form not in forms:
        raise SeqlabError(f"form must be one of {', '.join(forms)}; received {form!r}", parameter="form")
    return form
