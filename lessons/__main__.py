"""``python -m lessons``: list the steps, or run one (``3``), by name, or ``all``.

A small front door, written for any Python from 3.8 on: Ctrl-C is handled from the first line on
(the runner's imports take a while, and an interrupt during them ends as one during a run does:
``interrupted``, exit 130), and an interpreter without the project's dependencies is told which
interpreter to use instead of a traceback.
"""

import sys

VENV = ".venv/bin/python"
NEEDS = (
    "python -m lessons needs the project's dependencies, and {python} lacks {missing}: "
    "run `{command}` instead (`make lessons` makes .venv)"
)


def main() -> int:
    """Run the command line with the runner (imported here, inside the interrupt's handler)."""
    try:
        try:
            from lessons._course.runner import main as run
        except ImportError as exc:
            missing = (exc.name or "").partition(".")[0]
            if missing in ("", "lessons"):
                raise
            import shlex  # only now: every import before the handler above is a window

            command = shlex.join([VENV, "-m", "lessons", *sys.argv[1:]])
            said = NEEDS.format(python=sys.executable, missing=missing, command=command)
            print(said, file=sys.stderr)
            return 1
        status: int = run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
