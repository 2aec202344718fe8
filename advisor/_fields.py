"""Small validators for user YAML files: each names the field path and the fix.

Used by the workload spec and the sweep spec so both speak the same error style; they read
the file with ``advisor._yaml.load_yaml_mapping``. This module imports no YAML parser, so the
commands' options (``MAX_NUMBER``) and ``shown`` cost nothing to import.
"""

from __future__ import annotations

import difflib
import enum
import math
import re
import reprlib
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from advisor.errors import SpecError

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_NUMBER",
    "MAX_STRING_CHARS",
    "Fields",
    "decode_utf8",
    "shown",
]

E = TypeVar("E", bound=enum.Enum)

MAX_NUMBER = 1e18  # default bound of every number: no product of two overflows a float
MAX_STRING_CHARS = 1000  # any string field (paths, URLs)
MAX_NAME_CHARS = 200  # names: the workload, the study, clouds, regions, accelerators
_MAX_KEY_CHARS = 60
_SHOWN_CHARS = 60
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxlist, _repr.maxtuple, _repr.maxdict = 2, 4, 4, 4
_repr.maxstring, _repr.maxother, _repr.maxlong = _SHOWN_CHARS, _SHOWN_CHARS, 40


def shown(value: object) -> str:
    """``repr(value)`` for an error message: escaped (no terminal escapes or newlines),
    nested containers elided and the result cut to about 60 characters."""
    text = _repr.repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS - 3]}..."


def decode_utf8(data: bytes) -> str:
    """The text of a user file: UTF-8, a leading byte-order mark (Excel's "CSV UTF-8") dropped.

    Raises ValueError with one line saying where the text is not UTF-8 and how to fix it.
    """
    fix = "save the file as UTF-8"
    if data.startswith(_UTF16_BOMS):
        raise ValueError(f"is UTF-16 text, not UTF-8; {fix}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"not UTF-8 at line {line} (byte 0x{data[exc.start]:02x}); "
                         f"{fix}") from exc
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise ValueError(f"has a NUL character at line {line} (UTF-16 text?); {fix}")
    return text


# A decimal number as YAML 1.2 writes it; PyYAML (YAML 1.1) reads 1e-4 and 2.45e10 as strings.
_NUMBER_TEXT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _number_text(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e9 else f"{value:g}"


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


class Fields:
    """A view of one YAML mapping at a field path, with typed getters that raise SpecError.

    Call ``done()`` after reading every key to reject unknown ones (with a suggestion).
    """

    def __init__(self, data: object, path: str = "", *, source: str = "") -> None:
        if not isinstance(data, Mapping):
            raise SpecError(path or "file", f"must be a mapping of keys to values, got "
                            f"{_type_name(data)}", source=source)
        self.data: Mapping[Any, Any] = data
        self.path = path
        self.source = source
        self._seen: set[str] = set()

    def field(self, key: str) -> str:
        """The dotted path of a key under this mapping (a long or unprintable key shown safely)."""
        name = key if len(key) <= _MAX_KEY_CHARS and key.isprintable() else shown(key)
        return f"{self.path}.{name}" if self.path else name

    def error(self, key: str, problem: str) -> SpecError:
        """A SpecError for ``key`` of this mapping."""
        return SpecError(self.field(key), problem, source=self.source)

    def has(self, key: str) -> bool:
        """True when the key is present and not null."""
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as YAML gave it (marks the key as read)."""
        self._seen.add(key)
        value = self.data.get(key)
        return default if value is None else value

    def required(self, key: str) -> Any:
        """The value, or a SpecError saying the key is missing."""
        if not self.has(key):
            raise self.error(key, "is required" + self._misspelt(key))
        return self.raw(key)

    def _misspelt(self, key: str) -> str:
        """A hint naming a key of this mapping that looks like ``key`` misspelt (or '')."""
        others = [k for k in self.data if isinstance(k, str) and k != key
                  and len(k) <= _MAX_KEY_CHARS]
        # a close cutoff: 'log' is a key of its own beside a missing 'low', not a typo of it
        close = difflib.get_close_matches(key, others, n=1, cutoff=0.75) or [
            k for k in others if k.lower() == key.lower()]
        return f"; is {close[0]!r} a misspelling of it?" if close else ""

    def sub(self, key: str, *, required: bool = False) -> Fields:
        """The nested mapping under ``key`` (empty when absent and not required)."""
        if required:
            return Fields(self.required(key), self.field(key), source=self.source)
        return Fields(self.raw(key, {}), self.field(key), source=self.source)

    def string(self, key: str, default: str | None = None, *, required: bool = False,
               max_chars: int = MAX_STRING_CHARS) -> str:
        """A non-empty string (stripped) of at most ``max_chars`` characters, none of them
        control or format characters (a terminal escape in a name would reach every table)."""
        value = self.required(key) if required else self.raw(key, default)
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, got {shown(value)}")
        return self.checked_text(key, value.strip(), max_chars)

    def checked_text(self, key: str, text: str, max_chars: int = MAX_NAME_CHARS) -> str:
        """``text`` (the value of, or a name under, ``key``) if it is at most ``max_chars``
        long and free of control characters; else a SpecError."""
        if len(text) > max_chars:
            raise self.error(key, f"is {len(text):,} characters long, at most {max_chars:,} "
                             f"allowed; shorten it (starts {shown(text[:20])})")
        bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf")), None)
        if bad is not None:
            raise self.error(key, f"contains the control character {bad!r}; use printable "
                             f"characters only, got {shown(text)}")
        return text

    def opt_string(self, key: str) -> str | None:
        """A non-empty string, or None when absent."""
        return self.string(key) if self.has(key) else self.raw(key)

    def number(
        self, key: str, default: float | None = None, *, required: bool = False,
        positive: bool = True, integer: bool = False, minimum: float | None = None,
        maximum: float = MAX_NUMBER,
    ) -> float:
        """A finite number; positive unless ``positive=False``; whole when ``integer``; at most
        ``maximum`` in size (default 1e18, so no product of two fields overflows a float).

        A string that spells a decimal number (``1e-4``, which YAML 1.1 leaves a string)
        counts as that number.
        """
        value = self.required(key) if required else self.raw(key, default)
        kind = "a whole number" if integer else "a number"
        if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
            text, value = value, float(value)
            if not math.isfinite(value):
                raise self.error(key, f"must be a finite number, got {shown(text)}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"must be {kind}, got {_type_name(value)} {shown(value)}")
        if isinstance(value, int) and abs(value) > maximum:  # before float(): 10**400 overflows
            raise self.error(key, f"must be at most {_number_text(maximum)}, got {shown(value)}")
        if not math.isfinite(value):
            raise self.error(key, f"must be a finite number, got {shown(value)}")
        if integer and not float(value).is_integer():
            raise self.error(key, f"must be a whole number, got {shown(value)}")
        if positive and value <= 0:
            raise self.error(key, f"must be greater than 0, got {shown(value)}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum:g}, got {shown(value)}")
        if abs(value) > maximum:
            raise self.error(key, f"must be at most {_number_text(maximum)}, got {shown(value)}")
        return value

    def opt_number(self, key: str, **kwargs: Any) -> float | None:
        """``number`` or None when absent."""
        return self.number(key, **kwargs) if self.has(key) else self.raw(key)

    def integer(self, key: str, default: int | None = None, *, required: bool = False,
                positive: bool = True, maximum: float = MAX_NUMBER) -> int:
        """A whole number (positive unless ``positive=False``), at most ``maximum`` in size."""
        return int(self.number(key, default, required=required, positive=positive, integer=True,
                               maximum=maximum))

    def opt_integer(self, key: str, *, maximum: float = MAX_NUMBER) -> int | None:
        """A positive whole number, or None when absent."""
        return self.integer(key, maximum=maximum) if self.has(key) else self.raw(key)

    def boolean(self, key: str, default: bool) -> bool:
        """true or false (no truthy strings)."""
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {shown(value)}")
        return value

    def choice(self, key: str, enum_type: type[E], default: E | None = None) -> E:
        """One of an enum's values (case-insensitive); required when no default."""
        value = self.required(key) if default is None else self.raw(key, default)
        if isinstance(value, enum_type):
            return value
        allowed = [str(m.value) for m in enum_type]
        if isinstance(value, str):
            for member in enum_type:
                if str(member.value) == value.strip().lower():
                    return member
        raise self.error(key, f"must be one of {', '.join(allowed)}, got {shown(value)}")

    def string_list(self, key: str) -> tuple[str, ...]:
        """A list of names (a single string counts as a list of one)."""
        value = self.raw(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Sequence) or not all(
            isinstance(v, str) and v.strip() for v in value
        ):
            raise self.error(key, f"must be a list of names, got {shown(value)}")
        return tuple(self.checked_text(key, v.strip(), MAX_NAME_CHARS) for v in value)

    def done(self) -> None:
        """Reject keys that no getter read."""
        for key in self.data:
            if not isinstance(key, str):
                raise SpecError(self.path or "file", f"keys must be strings, got {shown(key)}",
                                source=self.source)
            if key not in self._seen:
                close = difflib.get_close_matches(key[:_MAX_KEY_CHARS], sorted(self._seen), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else (
                    f"; allowed keys: {', '.join(sorted(self._seen))}")
                raise self.error(key, f"unknown key{hint}")
