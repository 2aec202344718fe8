"""atomic_open: the whole new file or the old one, never a part; no temporary file left."""

from __future__ import annotations

from pathlib import Path

import pytest

from pricing.files import atomic_open, atomic_write


def test_a_block_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = atomic_write(tmp_path / "out.csv", "old\n")
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write("half of the new")
        raise RuntimeError("the writer failed")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_text_is_written_as_it_goes_and_replaces_the_file_at_the_end(tmp_path: Path) -> None:
    path = atomic_write(tmp_path / "sub" / "out.csv", b"old\n")
    with atomic_open(path) as handle:
        handle.write("é,1\n")
        assert path.read_text() == "old\n"  # readers see the old file until the end
    assert path.read_bytes() == "é,1\n".encode()


def test_only_write_modes_are_accepted(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"), atomic_open(tmp_path / "x", "a"):
        pass
