"""seqlab.errors: the one exception class and the validators every module uses (boundaries of each)."""

from __future__ import annotations

import pytest

from seqlab.errors import SeqlabError, check_form, require_positive_int


def test_seqlab_error_is_a_value_error_that_names_its_parameter():
    error = SeqlabError("T must be an integer >= 1, received 0", parameter="T")
    assert isinstance(error, ValueError)
    assert str(error) == "T must be an integer >= 1, received 0"
    assert error.parameter == "T"
    assert SeqlabError("no parameter").parameter is None


@pytest.mark.parametrize("value", [1, 2, 10**12])
def test_require_positive_int_returns_the_value(value):
    assert require_positive_int("T", value) == value


@pytest.mark.parametrize("value, message", [
    (0, "T must be an integer >= 1, received 0"),
    (-3, "T must be an integer >= 1, received -3"),
    (True, "T must be an integer >= 1, received True"),
    (False, "T must be an integer >= 1, received False"),
    (2.0, "T must be an integer >= 1, received 2.0"),
    ("3", "T must be an integer >= 1, received '3'"),
    (None, "T must be an integer >= 1, received None"),
])
def test_require_positive_int_refuses_with_the_value(value, message):
    with pytest.raises(SeqlabError) as error:
        require_positive_int("T", value)
    assert str(error.value) == message and error.value.parameter == "T"


def test_require_positive_int_boundary_of_the_maximum():
    assert require_positive_int("d_model", 8, maximum=8) == 8
    assert require_positive_int("d_model", 1, maximum=1) == 1
    with pytest.raises(SeqlabError) as error:
        require_positive_int("d_model", 9, maximum=8)
    assert str(error.value) == "d_model must be an integer in [1, 8], received 9"
    assert error.value.parameter == "d_model"


def test_check_form():
    assert check_form("scan", ("loop", "scan")) == "scan"
    with pytest.raises(SeqlabError) as error:
        check_form("fast", ("loop", "scan"))
    assert str(error.value) == "form must be one of loop, scan; received 'fast'"
    assert error.value.parameter == "form"
    with pytest.raises(SeqlabError):
        check_form(None, ("loop",))
