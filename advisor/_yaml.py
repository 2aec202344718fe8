"""The one safe reader of user YAML files (model.yaml, sweep.yaml): bounded before it is trusted.

What a hostile or mistaken file cannot do here, each refused with one SpecError line:

- be anything but a regular file (a directory, a FIFO that never ends, ``/dev/zero``): checked
  with ``stat`` before opening;
- be larger than ``MAX_FILE_BYTES`` (1 MiB; a spec is a few dozen lines);
- nest deeper than ``MAX_DEPTH`` levels (deep nesting would exhaust Python's recursion limit);
- expand to more than ``MAX_VALUES`` values once aliases are followed: a YAML alias bomb
  ("billion laughs", anchors referencing anchors) loads as a small graph but expands
  exponentially when validated or printed, so the expanded size is counted while composing;
  an alias inside its own anchor (a cycle) is refused too;
- repeat a key in one mapping (YAML would silently keep the last one).

``shown`` (from ``advisor._fields``, which imports no YAML parser) prints a user value safely
in an error message: bounded, escaped, one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from advisor._fields import decode_utf8, shown
from advisor.errors import SpecError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_VALUES",
    "decode_utf8",
    "load_yaml_mapping",
    "shown",
]

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 100_000


class _Limit(Exception):
    """A bound of this module was passed at ``field``; carries the one-line problem."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def _key_text(key: ScalarNode) -> str:
    text = str(key.value)
    return text if len(text) <= 40 and text.isprintable() else shown(text)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts depth and expanded values while composing, refuses duplicate
    keys, and knows the dotted field path it is composing (for the error message)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._path: list[str] = []
        self._weights: dict[int, int] = {}  # id(node) -> values it expands to
        self._aliases = 0

    def _field(self, *, top: bool = False) -> str:
        if top:  # the top-level key under which it happened
            return next((p for p in self._path if p), "file")
        text = "".join(p if p.startswith("[") else f".{p}" for p in self._path if p).lstrip(".")
        return (text if len(text) <= 60 else f"{text[:57]}...") or "file"

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
        elif len(self._path) >= MAX_DEPTH:
            raise _Limit(self._field(top=True), f"nests deeper than {MAX_DEPTH} levels at line "
                         f"{_line(event)}; a spec needs a few levels")
        if isinstance(index, ScalarNode):  # a mapping value: index is its key
            self._path.append(_key_text(index))
        elif isinstance(index, int):  # a list item
            self._path.append(f"[{index}]")
        else:  # the document (no parent) or a mapping key
            self._path.append("" if parent is None else "(key)")
        try:
            node = super().compose_node(parent, index)
            if node is not None:
                self._weigh(node, event)
        finally:
            self._path.pop()
        return node

    def _weigh(self, node: Node, event: yaml.Event) -> None:
        if isinstance(event, yaml.AliasEvent):
            if id(node) not in self._weights:
                raise _Limit(self._field(), f"alias *{shown(event.anchor)[1:-1]} at line "
                             f"{_line(event)} is inside its own anchor; a value cannot "
                             "contain itself")
            return
        weight = 1
        if isinstance(node, SequenceNode):
            weight += sum(self._weights[id(child)] for child in node.value)
        elif isinstance(node, MappingNode):
            weight += sum(self._weights[id(k)] + self._weights[id(v)] for k, v in node.value)
            self._check_duplicates(node)
        if weight > MAX_VALUES:
            why = (" once its YAML aliases are expanded (an alias bomb); write the values "
                   "out instead of nesting aliases" if self._aliases
                   else "; a spec is far smaller")
            raise _Limit(self._field(), f"holds more than {MAX_VALUES:,} values at line "
                         f"{_line(node)}{why}")
        self._weights[id(node)] = weight

    def _check_duplicates(self, node: MappingNode) -> None:
        first: dict[tuple[str, str], int] = {}
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            line = _line(key)
            if (key.tag, key.value) in first:
                self._path.append(_key_text(key))
                raise _Limit(self._field(), f"appears twice in one mapping (lines "
                             f"{first[(key.tag, key.value)]} and {line}); keep one")
            first[(key.tag, key.value)] = line


def _line(item: yaml.Event | Node) -> int:
    return item.start_mark.line + 1 if item.start_mark is not None else 0


def _read_bounded(path: Path) -> bytes:
    source = str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise SpecError("file", f"cannot read {shown(source)}: {exc.strerror}",
                        source=source) from exc
    if stat.S_ISDIR(info.st_mode):
        raise SpecError("file", "is a directory; give the path of a YAML file inside it",
                        source=source)
    if not stat.S_ISREG(info.st_mode):
        raise SpecError("file", "is not a regular file (a pipe, device or socket); "
                        "give the path of a YAML file", source=source)
    if info.st_size > MAX_FILE_BYTES:
        raise SpecError("file", f"is {info.st_size / 2**20:.1f} MiB; spec files are limited "
                        f"to {MAX_FILE_BYTES // 2**20} MiB (a spec is a few dozen lines)",
                        source=source)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError("file", f"cannot read {shown(source)}: {exc.strerror}",
                        source=source) from exc
    if len(data) > MAX_FILE_BYTES:  # grew after stat
        raise SpecError("file", f"is larger than the {MAX_FILE_BYTES // 2**20} MiB limit of "
                        "spec files", source=source)
    return data


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file whose top level must be a mapping, within this module's bounds.

    Raises SpecError (field ``file``) with one line naming what is wrong and how to fix it.
    """
    source = str(path)
    try:
        text = decode_utf8(_read_bounded(path))
    except ValueError as exc:
        if isinstance(exc, SpecError):
            raise
        raise SpecError("file", str(exc), source=source) from exc
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters here already
        mapping = loader.get_single_data()
    except _Limit as exc:
        raise SpecError(exc.field, exc.problem, source=source) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
        raise SpecError("file", f"has the control character {shown(char)} at line {line}; "
                        "YAML allows printable text only, delete it", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError("file", f"not valid YAML{at}; check indentation and quoting",
                        source=source) from exc
    except RecursionError:  # belt and braces: MAX_DEPTH should stop it first
        raise SpecError("file", f"nests too deep; keep it under {MAX_DEPTH} levels",
                        source=source) from None
    finally:
        if loader is not None:
            loader.dispose()  # type: ignore[no-untyped-call]
    if mapping is None:  # nothing but blank lines and comments
        raise SpecError("file", "is empty (or holds only comments); write its fields as "
                        "'key: value' lines, as in the README", source=source)
    if not isinstance(mapping, dict):
        raise SpecError("file", "must be a YAML mapping of keys to values, got "
                        f"{type(mapping).__name__}", source=source)
    return mapping
