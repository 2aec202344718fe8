"""echo_json writes iterator values row by row and the document is the same JSON."""

from __future__ import annotations

import json

import pytest

from cli.render import echo_json


@pytest.mark.parametrize("rows", [
    [{"a": 1, "b": [1, 2]}, {"a": 2.5, "b": None}],  # several rows
    [],                                               # an empty listing is []
])
def test_a_streamed_document_is_the_same_json(rows: list[dict[str, object]],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = {"head": "x", "rows": iter(rows), "tail": {"k": [1]}, "more": iter(["s"])}
    echo_json(data)
    assert json.loads(capsys.readouterr().out) == {"head": "x", "rows": rows,
                                                   "tail": {"k": [1]}, "more": ["s"]}


def test_each_streamed_row_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    echo_json({"rows": iter([{"a": 1}, {"a": 2}])})
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ['    {"a":1},', '    {"a":2}']  # compact, one per line


def test_streamed_rows_write_what_json_cannot_by_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import date

    echo_json({"rows": iter([{"day": date(2026, 1, 2), "inf": None}])})
    assert json.loads(capsys.readouterr().out) == {"rows": [{"day": "2026-01-02", "inf": None}]}
