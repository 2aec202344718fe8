"""Shared YAML field getters: numbers YAML 1.1 leaves as strings, and non-UTF-8 files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor._fields import Fields, decode_utf8
from advisor._yaml import load_yaml_mapping
from advisor.errors import SpecError
from advisor.sweep.spec import parse_sweep_spec


def test_pyyaml_reads_exponents_without_a_dot_as_strings() -> None:
    # the reason for the getter's leniency: YAML 1.1 needs "2.45e+10" to see a float
    assert yaml.safe_load("a: 2.45e10\nb: 1e-4") == {"a": "2.45e10", "b": "1e-4"}


@pytest.mark.parametrize(("text", "expected"), [
    ("2.45e10", 2.45e10),  # a mantissa with a dot, unsigned exponent
    ("1e-4", 1e-4),        # no dot, signed exponent
    ("3E5", 3e5),          # upper-case E
    ("-1.5e2", -150.0),    # a sign
    (".5e1", 5.0),         # no digit before the dot
    (" 1e3 ", 1000.0),     # surrounding blanks
])
def test_number_accepts_strings_that_spell_a_number(text: str, expected: float) -> None:
    assert Fields({"x": text}).number("x", positive=False) == expected


def test_integer_accepts_a_whole_exponent_string() -> None:
    assert Fields({"n": "1e3"}).integer("n") == 1000


@pytest.mark.parametrize(("value", "message"), [
    ("fast", "x: must be a number, got str 'fast'"),       # words stay an error
    ("nan", "x: must be a number, got str 'nan'"),         # not a finite number
    ("inf", "x: must be a number, got str 'inf'"),         # float() would take it; we do not
    ("1_000", "x: must be a number, got str '1_000'"),     # not how YAML 1.2 spells numbers
    ("1e400", "x: must be a finite number, got '1e400'"),  # overflows to infinity
    ("2.5e0", "x: must be a whole number, got 2.5"),       # integer field, fractional value
    ("-1e-4", "x: must be greater than 0, got -0.0001"),   # the other checks still apply
])
def test_number_rejects_other_strings_with_the_field(value: Any, message: str) -> None:
    fields = Fields({"x": value})
    with pytest.raises(SpecError, match=re.escape(message)):
        fields.number("x", integer=value == "2.5e0")


def test_sweep_spec_reads_exponent_bounds_from_yaml() -> None:
    data = yaml.safe_load("study: s\nentrypoint: m:f\nbudget: {max_trials: 5}\nsearch_space:\n"
                          "  lr: {type: float, low: 1e-4, high: 1e-1, log: true}\n")
    lr = parse_sweep_spec(data).search_space[0]
    assert (lr.low, lr.high) == (1e-4, 1e-1)


@pytest.mark.parametrize(("data", "message"), [
    (b"name: r\xe9snet\n", "not UTF-8 at line 1 (byte 0xe9)"),       # Latin-1
    (b"a: 1\nb: \xff\n", "not UTF-8 at line 2 (byte 0xff)"),          # the line of the byte
    ("a: 1\n".encode("utf-16"), "is UTF-16 text"),                    # UTF-16 with its BOM
    ("a: 1\n".encode("utf-16-le"), "NUL character at line 1"),        # UTF-16 without a BOM
])
def test_decode_utf8_names_the_line_and_the_fix(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        decode_utf8(data)
    assert str(info.value).endswith("save the file as UTF-8")


def test_decode_utf8_drops_a_byte_order_mark() -> None:
    assert decode_utf8("\ufeffa,b\n".encode()) == "a,b\n"


def test_non_utf8_yaml_is_a_spec_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_bytes(b"name: r\xe9snet\n")
    with pytest.raises(SpecError, match=r"model.yaml: file: not UTF-8 at line 1"):
        load_yaml_mapping(path)
