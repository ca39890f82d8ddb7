"""The library's generic types flow through under mypy --strict, and its misuses are refused."""

from __future__ import annotations

import re
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ROOT / "tests" / "library" / "typing" / "generics.py"
MARK = re.compile(r"#\s*(?:R:\s*(?P<revealed>.+?)|(?P<error>E))\s*$")
REPORT = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<message>.*)$")


def expected() -> tuple[dict[int, str], set[int]]:
    """The revealed type each ``# R:`` line must show (builtins unqualified), and the ``# E``
    lines."""
    revealed: dict[int, str] = {}
    errors: set[int] = set()
    for number, line in enumerate(CHECKED.read_text().splitlines(), start=1):
        mark = MARK.search(line)
        if mark is None:
            continue
        if mark["error"]:
            errors.add(number)
        else:
            revealed[number] = mark["revealed"]
    return revealed, errors


def test_generic_types_flow_through_and_misuses_are_type_errors() -> None:
    stdout, stderr, _ = api.run(
        [
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--hide-error-context",
            "--no-error-summary",
            "--no-pretty",
            "--show-absolute-path",
            str(CHECKED),
        ]
    )
    assert stderr == ""
    revealed: dict[int, str] = {}
    errors: dict[int, list[str]] = {}
    for report in stdout.splitlines():
        parsed = REPORT.match(report)
        assert parsed is not None, f"unexpected mypy output: {report}"
        assert Path(parsed["file"]) == CHECKED, report
        line = int(parsed["line"])
        message = parsed["message"]
        if parsed["kind"] == "note":
            shown = re.fullmatch(r'Revealed type is "(?P<type>.*)"', message)
            if shown is not None:
                revealed[line] = shown["type"].replace("builtins.", "")
            # other notes explain an error on the same line
        else:
            errors.setdefault(line, []).append(message)
    want_revealed, want_errors = expected()
    assert want_revealed
    assert want_errors
    assert revealed == want_revealed
    assert set(errors) == want_errors, errors
