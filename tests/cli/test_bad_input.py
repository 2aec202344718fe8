"""The malformed inputs of issue 17, exactly: each is one line on stderr naming the field,
exit code 2, no traceback, and fast (no hang, no 3,000-line RecursionError): bounded work,
``tests.work_budget``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cli.main import advisor
from cli.options import spec_file_argument
from tests.work_budget import at_most_calls

MODEL = "model: {builtin: mlp}\ndata: {total_samples: 100}\n"
SWEEP = "entrypoint: train:objective\nbudget: {max_trials: 3}\n"
LOL = '["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'
# billion laughs in flow style: 9 anchors, each nine aliases of the one before (9**9 leaves)
BOMB = "[" + f"&a {LOL}, " + ", ".join(
    f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
) + "]"
DEEP = "[" * 20_000 + "]" * 20_000
# about 15x the dearest case here (133k calls, modules imported on the first run included)
_CLI_CALLS = 2_000_000


def _run(args: list[str]) -> Result:
    with at_most_calls(_CLI_CALLS):
        return CliRunner().invoke(advisor, args)


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines[:5]
    assert "Traceback" not in result.output
    assert len(lines[0]) < 300 and "\x1b" not in lines[0]
    return lines[0]


# (model.yaml text, field named, what the error says)
BAD_MODELS = [
    # alias bomb as name
    ("batch_size: 8\n" + MODEL + f"name: {BOMB}\n", "name[5]", "an alias bomb"),
    # alias bomb as batch_size
    ("name: m\n" + MODEL + f"batch_size: {BOMB}\n", "batch_size[5]", "an alias bomb"),
    # alias bomb as clouds
    ("name: m\nbatch_size: 8\n" + MODEL + f"constraints: {{clouds: {BOMB}}}\n",
     "constraints.clouds[5]", "an alias bomb"),
    # nesting 20,000 deep
    ("name: m\nbatch_size: 8\n" + MODEL + f"constraints: {DEEP}\n", "constraints",
     "nests deeper than 64 levels"),
    # data: {samples: 1e308} (was an OverflowError in ranking)
    ("name: m\nbatch_size: 8\nmodel: {builtin: mlp}\ndata: {samples: 1e308}\n", "data.samples",
     "must be at most 1e+15, got 1e+308"),
    # batch_size: 1e29
    ("name: m\nbatch_size: 1e29\n" + MODEL, "batch_size", "must be at most 16,777,216, got 1e+29"),
    # max_accelerators: 1e30
    ("name: m\nbatch_size: 8\n" + MODEL + "constraints: {max_accelerators: 1e30}\n",
     "constraints.max_accelerators", "must be at most 1,024, got 1e+30"),
    # clouds: []
    ("name: m\nbatch_size: 8\n" + MODEL + "constraints: {clouds: []}\n", "constraints.clouds",
     "give at least one cloud or leave it out"),
    # image_size: 100000 of a built-in
    ("name: m\nbatch_size: 8\nmodel: {builtin: resnet50, options: {image_size: 100000}}\n"
     "data: {total_samples: 100}\n", "model.options.image_size",
     "must be at most 4,096 for resnet50, got 100000"),
    # duplicate key: the last one used to win silently
    ("name: m\nbatch_size: 8\n" + MODEL + "batch_size: 16\n", "batch_size",
     "appears twice in one mapping (lines 2 and 5); keep one"),
    # a 100,000-character name
    ("name: " + "x" * 100_000 + "\nbatch_size: 8\n" + MODEL, "name",
     "is 100,000 characters long, at most 200 allowed"),
    # a name with a terminal escape sequence (printed escaped, never raw)
    ('name: "\\x1b[31mred"\nbatch_size: 8\n' + MODEL, "name",
     "contains the control character '\\x1b'"),
    # a raw control character in the file
    ("name: m\x1b[31m\nbatch_size: 8\n" + MODEL, "file", "has the control character '\\x1b'"),
    # an empty file, and one of comments only: it said "must be a YAML mapping ..., got null"
    ("", "file", "is empty (or holds only comments); write its fields"),
    ("# to do\n\n", "file", "is empty (or holds only comments); write its fields"),
]
# (sweep.yaml text, field named, what the error says)
BAD_SWEEPS = [
    # alias bomb as study
    (SWEEP + f"study: {BOMB}\n", "study[5]", "an alias bomb"),
    # alias bomb as categorical choices
    ("study: s\n" + SWEEP + f"search_space:\n  opt:\n    type: categorical\n    choices: {BOMB}\n",
     "search_space.opt.choices[5]", "an alias bomb"),
    # nesting 20,000 deep
    ("study: s\n" + SWEEP + f"search_space: {DEEP}\n", "search_space", "nests deeper"),
    # a 100,000-character study name
    ("study: " + "s" * 100_000 + "\n" + SWEEP, "study", "at most 200 allowed"),
    # duplicate key
    ("study: s\n" + SWEEP + "study: t\n", "study", "appears twice"),
    # a seed numpy cannot take
    ("study: s\n" + SWEEP + "sampler: {type: tpe, seed: 1e30}\n", "sampler.seed", "at most"),
    # an empty file
    ("", "file", "is empty (or holds only comments)"),
]


@pytest.mark.parametrize(("command", "text", "field", "says"),
                         [("recommend", *case) for case in BAD_MODELS]
                         + [("sweep", *case) for case in BAD_SWEEPS])
def test_bad_spec_yaml_is_one_line(tmp_path: Path, command: str, text: str, field: str,
                                   says: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    line = _one_error_line(_run([command, str(path)]))
    assert line.startswith(f"error: {path}: {field}: "), line
    assert says in line


def test_a_50_mb_model_yaml_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    with path.open("wb") as handle:
        handle.write(b"name: m\n")
        handle.truncate(50 * 1000 * 1000)  # sparse: 50 MB without writing them
    line = _one_error_line(_run(["recommend", str(path)]))
    assert line == (f"error: {path}: file: is 47.7 MiB; spec files are limited to 1 MiB "
                    "(a spec is a few dozen lines)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("command", ["recommend", "sweep"])
def test_a_fifo_is_refused_without_opening_it(tmp_path: Path, command: str) -> None:
    path = tmp_path / "model.yaml"
    os.mkfifo(path)  # opening it would block until a writer came
    line = _one_error_line(_run([command, str(path)]))
    assert line == (f"error: {path}: file: is not a regular file (a pipe, device or socket); "
                    "give the path of a YAML file")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_without_reading_it() -> None:
    line = _one_error_line(_run(["recommend", "/dev/zero"]))
    assert line.startswith("error: /dev/zero: file: is not a regular file")


@pytest.fixture
def spec_command() -> click.Command:
    """A command declaring its spec argument the shared way (cli.options.spec_file_argument)."""

    @click.command()
    @spec_file_argument("model_yaml")
    def command(model_yaml: Path) -> None:
        click.echo(f"read {model_yaml.name}")

    return command


@pytest.mark.parametrize(("make", "says"), [
    # a directory
    (lambda p: p, "{path} is a directory; give the path of a YAML file in it"),
    # a missing file
    (lambda p: p / "missing.yaml", "cannot read {path}: No such file or directory"),
])
def test_spec_file_argument_refuses_with_one_line(tmp_path: Path, spec_command: click.Command,
                                                  make: object, says: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = CliRunner().invoke(spec_command, [str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: MODEL_YAML: {says.format(path=path)}"]


def test_spec_file_argument_passes_a_regular_file(tmp_path: Path,
                                                  spec_command: click.Command) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("name: m\n")
    result = CliRunner().invoke(spec_command, [str(path)])
    assert (result.exit_code, result.output) == (0, "read model.yaml\n")


@pytest.mark.parametrize("command", [["recommend"], ["sweep"], ["probe"], ["report", "recommend"]])
def test_a_directory_as_the_spec_is_one_line(tmp_path: Path, command: list[str]) -> None:
    line = _one_error_line(_run([*command, str(tmp_path)]))
    assert "is a directory" in line


def test_pricing_refresh_without_the_gcp_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("google", "google.api_core", "google.api_core.exceptions", "google.auth",
                 "google.auth.exceptions", "google.cloud"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ModuleNotFoundError
    line = _one_error_line(_run(["pricing", "refresh", "--cloud", "gcp"]))
    assert line.startswith("error: gcp refresh needs the gcp SDK (google")
    assert line.endswith("is not installed); run: pip install 'advisor[gcp]'")
