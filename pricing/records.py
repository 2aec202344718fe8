"""One serialization convention for the records that cross a file, a database or ``--json``.

``to_dict()`` gives the record as JSON-ready plain values (dicts with str keys, lists, str,
int, float, bool, None); ``to_json()`` is that dict as JSON text, keys sorted. A
:class:`Record` also reads itself back: ``from_dict(data)`` validates and raises the
record's package error (its ``_error``) with a message naming the record and the field;
``from_json(text)`` parses the text first. A :class:`JsonView` is one-way: a ``--json``
summary with derived figures (rounded, rendered) that nothing reads back.

Both directions are generic over a frozen dataclass's fields, by each field's declared type:

    a Record or dataclass   <-> a dict of its fields (a nested Record by its own to_dict)
    an Enum                 <-> its value
    datetime                <-> ISO 8601 text
    Path                    <-> text
    tuple[...] / list[...]  <-> a list
    dict / Mapping          <-> a dict with str keys
    X | None                <-> null or X
    str, int, float, bool   <-> themselves (an int is read as a float where one is declared)

A record whose stored shape differs (renamed keys, a version, defaults left out, rounding)
overrides ``to_dict`` / ``from_dict``; ``to_json`` / ``from_json`` are defined here only.
This module sits in ``pricing``, the lowest package, so every package can use it; it
imports nothing else of ours.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import re
import types
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import PurePath
from typing import Any, ClassVar, Literal, Self, Union, get_args, get_origin, get_type_hints

from pricing.errors import PricingError

__all__ = ["JsonView", "Record", "to_plain"]


class _Mismatch(Exception):
    """A value that does not fit its field's type (internal; becomes the record's error)."""


class JsonView:
    """A record written as JSON: ``to_dict()`` JSON-ready plain values (generic over the
    dataclass fields; override for another shape) and ``to_json()`` that dict as text with
    sorted keys. Never read back: a :class:`Record` is."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready plain values, one key per dataclass field."""
        return _field_values(self)

    def to_json(self) -> str:
        """The record as a JSON document (``to_dict``, keys sorted)."""
        return json.dumps(self.to_dict(), sort_keys=True)


class Record(JsonView):
    """A :class:`JsonView` that reads itself back: ``from_dict(to_dict(x)) == x`` and
    ``from_json(to_json(x)) == x``.

    ``from_dict`` rejects what is not a JSON object, unknown keys, missing required keys
    and values of the wrong type, raising ``_error`` (the package's exception root; set it
    in the subclass) as ``"<what>: bad JSON (<field and why>)"``; a key left out takes the
    field's default. ``_what`` names the record in messages (default: the class name in
    words, ``ProbeResult`` -> ``probe result``). The constructor's own checks run as usual.
    """

    __slots__ = ()

    _error: ClassVar[type[Exception]] = PricingError
    _what: ClassVar[str] = ""

    @classmethod
    def record_name(cls) -> str:
        """The record's name in messages."""
        return cls._what or re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The record back from ``to_dict`` output; raises ``_error`` naming what is wrong."""
        record: Self = cls._parse(lambda: _from_fields(cls, data, ""))
        return record

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """The record back from a JSON document ``to_json`` wrote."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise cls._error(f"{cls.record_name()}: not JSON ({exc})") from exc
        return cls.from_dict(data)

    @classmethod
    def _parse(cls, build: Callable[[], Self]) -> Self:
        """``build()``, its type and value errors raised as ``_error`` naming the record
        (for an override of ``from_dict`` that reads another shape)."""
        try:
            return build()
        except cls._error:
            raise
        except (_Mismatch, KeyError, IndexError, TypeError, ValueError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise cls._error(f"{cls.record_name()}: bad JSON ({detail})") from exc


def to_plain(value: Any) -> Any:
    """``value`` as JSON-ready plain values, by the table in the module docstring."""
    if isinstance(value, JsonView):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _field_values(value)
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list | frozenset | set):
        return [to_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def _field_values(record: Any) -> dict[str, Any]:
    """A dataclass's init fields as plain values, by name."""
    return {f.name: to_plain(getattr(record, f.name)) for f in _fields(type(record))}


def _fields(cls: Any) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.init)


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return get_type_hints(cls)


def _from_fields(cls: type, data: object, path: str) -> Any:
    """An instance of dataclass ``cls`` from the dict ``data`` (``path``: where, for messages)."""
    where = f"{path}: " if path else ""
    if not isinstance(data, Mapping):
        raise _Mismatch(f"{where}expected a JSON object, got {type(data).__name__}")
    known = _fields(cls)
    unknown = set(data) - {f.name for f in known}
    if unknown:
        raise _Mismatch(f"{where}unknown keys {sorted(unknown)}; known are "
                        f"{sorted(f.name for f in known)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in known:
        if f.name in data:
            values[f.name] = _decode(hints[f.name], data[f.name], f"{path}.{f.name}" if path else f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _Mismatch(f"missing key {(path + '.' if path else '') + f.name!r}")
    return cls(**values)


def _decode(hint: Any, value: Any, path: str) -> Any:
    """``value`` read from JSON as the type ``hint``."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is object:
        return value
    if origin in (Union, types.UnionType):
        return _decode_union(args, value, path)
    if origin is Literal:
        if value not in args:
            raise _Mismatch(f"{path} {value!r} is not one of {', '.join(map(str, args))}")
        return value
    if origin in (tuple, list) or hint in (tuple, list):
        return _decode_sequence(tuple if tuple in (origin, hint) else list, args, value, path)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _Mismatch(f"{path}: expected a JSON object, got {value!r}")
        key_hint, value_hint = args or (str, Any)
        return {_decode(key_hint, k, path): _decode(value_hint, v, f"{path}.{k}")
                for k, v in value.items()}
    if isinstance(hint, type):
        return _decode_class(hint, value, path)
    raise TypeError(f"{path}: cannot read the type {hint!r} from JSON")


def _decode_union(args: tuple[Any, ...], value: Any, path: str) -> Any:
    if value is None and type(None) in args:
        return None
    options = [a for a in args if a is not type(None)]
    for option in options[:-1]:
        try:
            return _decode(option, value, path)
        except _Mismatch:
            continue
    return _decode(options[-1], value, path)


def _decode_sequence(kind: type, args: tuple[Any, ...], value: Any, path: str) -> Any:
    if not isinstance(value, list | tuple):
        raise _Mismatch(f"{path}: expected a JSON list, got {value!r}")
    if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(args) != len(value):
            raise _Mismatch(f"{path}: expected {len(args)} items, got {len(value)}")
        return tuple(_decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    item = args[0] if args else Any
    return kind(_decode(item, v, f"{path}[{i}]") for i, v in enumerate(value))


def _own_shape(cls: type[Record]) -> bool:
    """True when ``cls`` reads another shape than its fields (it overrides ``from_dict``)."""
    below = cls.__mro__[:cls.__mro__.index(Record)]
    return any("from_dict" in vars(c) for c in below)


def _decode_class(hint: type, value: Any, path: str) -> Any:
    if issubclass(hint, Record) and _own_shape(hint):
        return hint.from_dict(value)
    if dataclasses.is_dataclass(hint):
        return _from_fields(hint, value, path)
    if issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in hint)
            raise _Mismatch(f"{path} {value!r} is not one of {choices}") from None
    if hint is type(None):
        if value is not None:
            raise _Mismatch(f"{path}: expected null, got {value!r}")
        return None
    if issubclass(hint, datetime | PurePath):
        if not isinstance(value, str):
            raise _Mismatch(f"{path}: expected text, got {value!r}")
        if issubclass(hint, PurePath):
            return hint(value)
        try:
            return datetime.fromisoformat(value)
        except ValueError as exc:
            raise _Mismatch(f"{path}: {exc}") from None
    return _decode_scalar(hint, value, path)


def _decode_scalar(hint: type, value: Any, path: str) -> Any:
    fits = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool),
        str: isinstance(value, str),
    }
    if hint not in fits:
        raise TypeError(f"{path}: cannot read the type {hint.__name__} from JSON")
    if not fits[hint]:
        raise _Mismatch(f"{path}: expected {hint.__name__}, got {value!r}")
    return float(value) if hint is float else value
