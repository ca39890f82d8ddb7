"""``python -m lessons``: list the steps, or run one (``3``), by name, or ``all``.

A small front door, written for any Python from 3.8 on: Ctrl-C is handled from the first line on
(the runner's imports take a while, and an interrupt during them ends as one during a run does:
``interrupted``, exit 130), and an interpreter older than the course's (3.11), or one without the
project's dependencies, is told which interpreter to use instead of a traceback. Nothing here
uses newer syntax, and the runner, which does, is imported only once the version is known.
"""

import sys

VENV = ".venv/bin/python"
NEEDS = "python -m lessons needs {what}, and {python} {lacks}: run `{command}` instead{hint}"
MAKES = " (`make lessons` makes .venv)"
OLDEST = (3, 11)
"""The oldest Python the course runs on (``except*``, ``Self``, ...)."""


def told(what: str, lacks: str) -> int:
    """Say, in one line on stderr, that this interpreter cannot run the course and which one
    to run the same command with; the exit status, 1."""
    import shlex  # only now: every import before the handler in main is a window

    command = " ".join(map(shlex.quote, [VENV, "-m", "lessons", *sys.argv[1:]]))
    said = NEEDS.format(what=what, python=sys.executable, lacks=lacks, command=command, hint=MAKES)
    print(said, file=sys.stderr)
    return 1


def main() -> int:
    """Run the command line with the runner (imported here, inside the interrupt's handler)."""
    try:
        if sys.version_info < OLDEST:
            version = ".".join(map(str, sys.version_info[:3]))
            return told(f"Python {OLDEST[0]}.{OLDEST[1]} or newer", f"is Python {version}")
        try:
            from lessons._course.runner import main as run
        except ImportError as exc:
            missing = (exc.name or "").partition(".")[0]
            if missing in ("", "lessons"):
                raise
            return told("the project's dependencies", f"lacks {missing}")
        status: int = run()
        from lessons._course.ending import leaving

        leaving()  # Ctrl-C no longer breaks into the worker processes' end at exit
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
