"""Report writers create missing folders and turn path problems into one-line ReportErrors."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_samples import GENERATED_AT, sample_recommendation, sample_sweep

from reports.errors import ReportError
from reports.output import check_output_path, ensure_folder, write_text
from reports.recommendation import write_recommendation_html, write_recommendation_report
from reports.recommendation_csv import write_recommendation_csv
from reports.sweep import write_sweep_report


def test_csv_and_html_writers_create_missing_folders(tmp_path: Path) -> None:
    csv_path, doc = write_recommendation_csv(sample_recommendation(), tmp_path / "a" / "r.csv")
    html = write_recommendation_html(sample_recommendation(), tmp_path / "b" / "c" / "r.html",
                                     generated_at=GENERATED_AT)
    assert csv_path.exists() and doc == tmp_path / "a" / "r.columns.md" and html.exists()


@pytest.mark.parametrize("write", [
    lambda out: write_recommendation_report(sample_recommendation(), out),  # recommendation
    lambda out: write_sweep_report(sample_sweep(), out),                     # sweep
])
def test_report_folder_inside_a_file_is_a_report_error(tmp_path: Path, write) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ReportError, match="afile is a file"):
        write(tmp_path / "afile" / "sub")


def test_write_text_into_a_file_path_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ReportError, match=r"cannot create folder .*afile is a file"):
        write_text(tmp_path / "afile" / "r.csv", "a,b\n")


def test_ensure_folder_on_a_file_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ReportError, match="is a file"):
        ensure_folder(tmp_path / "afile")


@pytest.mark.parametrize(("relative", "folder", "message"), [
    ("afile/r.csv", False, "--x: {tmp}/afile is a file, not a folder"),   # a file on the way
    ("afile/deeper/r.csv", False, "afile is a file, not a folder"),       # further down
    ("afile", True, "is a file; give a folder"),                          # --out names a file
    ("adir", False, "is a folder; give a file name"),                     # --csv names a folder
])
def test_check_output_path_names_the_option(tmp_path: Path, relative: str, folder: bool,
                                            message: str) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    with pytest.raises(ReportError, match="^--x: ") as info:
        check_output_path(tmp_path / relative, option="--x", folder=folder)
    assert message.format(tmp=tmp_path) in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("relative", "folder"), [
    ("new/deeper/r.csv", False),   # missing folders are created later
    ("r.csv", False),              # a plain file name
    ("adir", True),                # an existing folder
    ("new/out", True),             # a new folder
])
def test_check_output_path_accepts_writable_paths(tmp_path: Path, relative: str,
                                                  folder: bool) -> None:
    (tmp_path / "adir").mkdir()
    check_output_path(tmp_path / relative, option="--x", folder=folder)
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_an_existing_report_file_can_be_written_again(tmp_path: Path) -> None:
    # a file is never executable: the folder decides, not the file's own mode bits
    path = write_text(tmp_path / "r.csv", "a,b\n")
    check_output_path(path, option="--csv")
    assert write_text(path, "c,d\n").read_text() == "c,d\n"


def test_written_files_get_the_umasks_mode_not_a_private_one(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        path = write_text(tmp_path / "r.csv", "a,b\n")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]  # no temporary file left
