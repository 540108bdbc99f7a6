"""seqlab.factory: reading ``module.path:attribute`` and ``path/to/file.py:attribute`` without importing."""

from __future__ import annotations

import os
import sys

import pytest

from seqlab.errors import SeqlabError
from seqlab.factory import FactorySpec, parse_factory

EXPECTED = "expected module.path:factory or path/to/file.py:factory"


@pytest.mark.parametrize("spec, module, attribute", [
    ("torch.nn:Identity", "torch.nn", "Identity"),
    ("mylayers:Layers.make", "mylayers", "Layers.make"),
    ("a.b.c:_private", "a.b.c", "_private"),
])
def test_a_dotted_module_is_read_without_a_file(spec, module, attribute):
    assert parse_factory(spec) == FactorySpec(module, attribute, None)


def test_a_module_that_does_not_exist_is_not_imported_here():
    assert parse_factory("no_such_module_anywhere:make").file is None  # importing is load_factory's job


def test_a_file_is_read_and_checked(tmp_path):
    layer = tmp_path / "layers.py"
    layer.write_text("def make(d): pass\n")
    spec = parse_factory(f"{layer}:make")
    assert spec == FactorySpec(str(layer), "make", layer)


def test_the_last_colon_splits(tmp_path):
    folder = tmp_path / "a:b"
    folder.mkdir()
    layer = folder / "layers.py"
    layer.write_text("")
    spec = parse_factory(f"{layer}:make")
    assert spec.module == str(layer) and spec.attribute == "make" and spec.file == layer


@pytest.mark.parametrize("spec", ["torch.nn", ":make", "torch.nn:", "torch.nn:1make", "torch.nn:a-b", "m:a..b", "", 3])
def test_a_text_that_is_not_module_colon_attribute_is_refused(spec):
    with pytest.raises(SeqlabError) as error:
        parse_factory(spec)
    assert str(error.value) == f"{EXPECTED}, received {spec!r}"
    assert error.value.parameter == "factory"


def test_a_missing_file_is_refused_with_its_name(tmp_path):
    missing = tmp_path / "nope.py"
    with pytest.raises(SeqlabError) as error:
        parse_factory(f"{missing}:make")
    assert str(error.value) == f"the factory file {str(missing)!r} does not exist (from '{missing}:make'); {EXPECTED}"


def test_a_relative_path_names_a_file_by_its_separator(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "layers.py").write_text("")
    assert parse_factory("sub/layers.py:make").file is not None
    with pytest.raises(SeqlabError, match="does not exist"):
        parse_factory("layers.py:make")  # .py alone names a file too, and this one is missing here


@pytest.mark.parametrize("name", ["folder.py", "notes.txt"])
def test_a_folder_or_a_file_that_is_not_python_is_refused(tmp_path, name):
    target = tmp_path / name
    target.mkdir() if name.endswith(".py") else target.write_text("")
    with pytest.raises(SeqlabError) as error:
        parse_factory(f"{target}:make")
    assert f"the factory file {str(target)!r} is not a Python file" in str(error.value)


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root (and Windows) read any file")
def test_an_unreadable_file_is_refused(tmp_path):
    layer = tmp_path / "layers.py"
    layer.write_text("")
    layer.chmod(0)
    try:
        with pytest.raises(SeqlabError, match="cannot be read"):
            parse_factory(f"{layer}:make")
    finally:
        layer.chmod(0o644)
