"""Entry point: the ``advisor`` click group, with subcommands imported only when used.

Subcommand modules are listed here by name; ``advisor --help`` imports none of them, so it
starts without torch, pandas or cloud SDKs.
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

__all__ = ["advisor", "command_paths", "main"]

# command name -> (module, attribute, one-line help shown by --help without importing it)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "recommend": ("cli.recommend", "recommend", "Rank instances by samples per dollar for a model.yaml."),
    "pricing": ("cli.pricing", "pricing", "List, refresh and check the price catalog."),
    "probe": ("cli.probe", "probe", "Measure the training step on real instances (or locally)."),
    "probes": ("cli.probe", "probes", "List, show and garbage-collect stored probe results."),
    "model": ("cli.model", "model", "Evaluate the throughput model on your own measurements."),
    "sweep": ("cli.sweep", "sweep", "Run an Optuna sweep with pruning, a dollar cap and cleanup."),
    "report": ("cli.report", "report", "Write CSV and self-contained HTML cost reports."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002
        return sorted(n for n, (mod, _, _) in _COMMANDS.items() if _module_exists(mod))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: ARG002
        if cmd_name not in _COMMANDS:
            return None
        module_name, attribute, _ = _COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; Ctrl-C anywhere is one line and exit 130, and a stdout that
        cannot be written (a full disk, ``> /dev/full``) one line and exit 1."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted (Ctrl-C): advisor stopped; any probe it started was "
                       "ended and recorded", err=True)
            raise click.exceptions.Exit(130) from None
        except OSError as exc:
            if exc.filename is not None or exc.errno not in _OUTPUT_ERRNOS:
                raise  # a file's error (those are translated where the file is written)
            _silence_stdout()
            click.echo(f"error: cannot write the output: {exc.strerror}", err=True)
            raise click.exceptions.Exit(1) from None

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """click's ``main``, but a usage error (an unknown option or command, a missing
        argument) is one line, as every other refusal: ``error: No such option: --fo Did you
        mean --top? (see 'advisor recommend --help')``, exit 2, not click's four lines."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"error: {exc.format_message()}{where}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # a command's return value is None; an exit code comes back from ctx.exit (click.Exit)
        sys.exit(code if isinstance(code, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, _COMMANDS[n][2]) for n in self.list_commands(ctx)]
        if not rows:
            return
        with formatter.section("Commands"):
            formatter.write_dl(rows)


_YOUNG_COLLECTION_EVERY = 50_000  # allocations (Python's default: 700)

# errors of writing to a stream (stdout), which carry no file name; EPIPE (``| head``) is
# left to click, which ends quietly
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})


def _silence_stdout() -> None:
    """Point stdout at the null device, so that flushing what is still buffered at exit
    does not fail a second time (Python would print "Exception ignored")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file descriptor (a test runner's buffer)
        pass


def _module_exists(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="advisor")
def advisor() -> None:
    """Which cloud instance trains your model for the fewest dollars.

    \b
    Start with:
      advisor recommend examples/resnet50.yaml       rank offers for a model
      advisor pricing list --accelerator H100        what the catalog holds
      advisor probe examples/mlp.yaml --on local     measure the step here

    Works offline on the shipped price snapshot; no cloud account needed to rank.
    """


def command_paths() -> list[list[str]]:
    """Every command's words from the command tree: ``[]`` (the group), ``[name]`` and
    ``[name, sub]`` (imports each command's module)."""
    paths: list[list[str]] = [[]]
    ctx = click.Context(advisor)
    for name in advisor.list_commands(ctx):
        command = advisor.get_command(ctx, name)
        paths.append([name])
        if isinstance(command, click.Group):
            paths += [[name, sub] for sub in command.list_commands(ctx)]
    return paths


def main(argv: list[str] | None = None) -> Any:
    """Run the CLI (console script ``advisor``)."""
    # A command allocates a few hundred thousand objects while it imports and ranks, next to
    # none of them in reference cycles: a young-generation collection every 50,000
    # allocations instead of Python's 700 saves about 5% of a warm 'recommend' and still
    # frees a cycle moments after it is made.
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
    try:
        return advisor.main(args=argv if argv is not None else sys.argv[1:], prog_name="advisor")
    finally:
        # the process ends here and its memory with it: the collections Python runs over
        # every object at exit are skipped (about 6% of a warm 'recommend')
        gc.freeze()
