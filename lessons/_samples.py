"""The sample runs in the steps' docstrings: made by running them, never typed by hand.

``python -m lessons._samples`` reruns the command each docstring names and writes its output back;
the tests check that every sample still matches what its command prints.
"""

from __future__ import annotations

import io
import re
import shlex

from rich.console import Console

from lessons._runner import main, step_path, steps

WIDTH = 88
SAMPLE = re.compile(
    r"(?P<head>Sample run \(``python -m lessons (?P<args>[^`]+)``\)::\n\n)"
    r"(?P<body>(?:    .*\n|\n)*?)"
    r'(?P<tail>""")'
)


def run_sample(args: str) -> str:
    """What ``python -m lessons <args>`` prints on a plain terminal WIDTH columns wide."""
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system=None, highlight=False)
    status = main(shlex.split(args), console=console)
    if status != 0:
        raise RuntimeError(f"python -m lessons {args} exited {status}")
    lines = [line.rstrip() for line in out.getvalue().strip("\n").splitlines()]
    return "".join(f"    {line}\n" if line else "\n" for line in lines) + "\n"


def sample_of(source: str) -> tuple[str, str]:
    """The (args, body) of the sample run in a step's source."""
    match = SAMPLE.search(source)
    if match is None:
        raise ValueError("no 'Sample run (``python -m lessons ...``)::' block in the docstring")
    return match["args"], match["body"]


def write_samples() -> None:
    """Rerun every step's sample command and write its output into the docstring."""
    for name in steps().values():
        path = step_path(name)
        source = path.read_text()
        args, _ = sample_of(source)
        match = SAMPLE.search(source)
        assert match is not None
        body = run_sample(args)
        path.write_text(source[: match.start("body")] + body + source[match.end("body") :])


if __name__ == "__main__":
    write_samples()
