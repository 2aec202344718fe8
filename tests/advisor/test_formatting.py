"""``advisor.formatting``: one way each kind of number reads, in every output."""

from __future__ import annotations

import pytest

from advisor.formatting import fmt_bytes


@pytest.mark.parametrize(("count", "text"), [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.0 KiB"), (144_409, "141.0 KiB"),
    (5 * 1024**3 // 2, "2.5 GiB"), (3 * 1024**4, "3.0 TiB"), (2048 * 1024**4, "2,048.0 TiB"),
])
def test_sizes_read_in_binary_units(count: int, text: str) -> None:
    assert fmt_bytes(count) == text
