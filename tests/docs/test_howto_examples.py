"""Every how-to guide's example runs, as a reader runs it: ``python docs/examples/howto_*.py``
from the repository, in a process of its own, with no endpoint or key in its environment (an
example that needs a server starts the loopback one itself). Each example checks what its guide
says with its own asserts, so a run that exits 0 is a guide that holds. The guides include their
example (``--8<--``) and never paste code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("howto_*.py"))
GUIDES = sorted((ROOT / "docs" / "how-to").glob("*.md"))
TIMEOUT = 300  # seconds: an example on virtual time takes well under one; processes a few
INCLUDE = re.compile(r'--8<-- "(?P<path>docs/examples/howto_[a-z_]+\.py)(?::[^"]*)?"')
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```$", re.DOTALL | re.MULTILINE
)


def clean_environment() -> dict[str, str]:
    """This environment without any endpoint, key or proxy, the repository importable."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "OTEL_", "RAY_ADDRESS")) and "PROXY" not in key.upper()
    }
    kept["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    kept["NO_PROXY"] = "127.0.0.1,localhost"
    return kept


def run_example(
    example: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python docs/examples/<example>`` from the repository, as a reader runs it (with ``env``
    added to a clean environment)."""
    return subprocess.run(
        [sys.executable, str(example.relative_to(ROOT))],
        cwd=ROOT,
        env={**clean_environment(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


# the Ray guide's example starts a cluster: test_howto_ray.py runs it once, this same way, and
# holds what it prints line by line (which says more than an exit status and some output)
RUN_HERE = [path for path in EXAMPLES if path.stem != "howto_ray"]


@pytest.fixture(scope="module")
def collector() -> Iterator[tuple[str, list[str]]]:
    """A stand-in for Phoenix's span collector on loopback, as the OpenTelemetry guide has the
    reader start: its address, and the path of each request it took (each answered 200). With
    no collector, the guide's example spent 7 s retrying its export before it gave up."""
    posted: list[str] = []

    class Collect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            posted.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collect)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", posted
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("example", RUN_HERE, ids=[path.stem for path in RUN_HERE])
def test_the_example_runs_and_its_checks_hold(
    example: Path, collector: tuple[str, list[str]]
) -> None:
    address, posted = collector
    before = len(posted)
    ran = run_example(example, {"PHOENIX_COLLECTOR_ENDPOINT": address})
    assert ran.returncode == 0, f"{example.name} exited {ran.returncode}:\n{ran.stderr[-3000:]}"
    assert ran.stdout.strip(), f"{example.name} printed nothing: a guide shows what it prints"
    if example.stem == "howto_otel":  # its spans went to the collector the guide names
        assert posted[before:], "the example exported no span"
        assert set(posted[before:]) == {"/v1/traces"}, posted[before:]


def included(guide: Path) -> set[str]:
    return {match["path"] for match in INCLUDE.finditer(guide.read_text())}


def test_there_are_how_to_examples_and_guides() -> None:
    assert EXAMPLES, "docs/examples/ holds no howto_*.py"
    assert GUIDES, "docs/how-to/ holds no guide"


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_each_example_is_included_by_a_guide(example: Path) -> None:
    path = example.relative_to(ROOT).as_posix()
    assert any(path in included(guide) for guide in GUIDES), f"no how-to guide includes {path}"


@pytest.mark.parametrize("guide", GUIDES, ids=[path.stem for path in GUIDES])
def test_a_guide_includes_real_files_and_pastes_no_python(guide: Path) -> None:
    for path in included(guide):
        assert (ROOT / path).is_file(), f"{guide.name} includes {path}, which does not exist"
    for fence in FENCE.finditer(guide.read_text()):
        if fence["info"].split()[:1] in (["python"], ["py"], ["pycon"]):
            lines = [line for line in fence["body"].splitlines() if line.strip()]
            pasted = [line for line in lines if "--8<--" not in line]
            assert lines, f"{guide.name} has an empty Python block"
            assert not pasted, f"{guide.name} pastes Python ({pasted[0]!r}): include the example"


def test_the_include_pattern_finds_an_include_and_the_fence_pattern_a_pasted_block() -> None:
    text = (
        '```python title="x"\n--8<-- "docs/examples/howto_x.py"\n```\n\n```python\nprint(1)\n```\n'
    )
    assert [match["path"] for match in INCLUDE.finditer(text)] == ["docs/examples/howto_x.py"]
    bodies = [fence["body"] for fence in FENCE.finditer(text)]
    assert bodies == ['--8<-- "docs/examples/howto_x.py"\n', "print(1)\n"]
