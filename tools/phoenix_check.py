"""The spans of a run in a real receiver: Arize Phoenix, started here on loopback.

It starts ``phoenix serve`` (from its own virtual environment: ``make phoenix-check`` makes it)
on free loopback ports with a working directory of its own, exports a supervision tree's run
over OTLP/HTTP to it (a parent supervisor whose workers each run a child supervisor of chat
agents against the loopback chat endpoint, one request failing once and retried), then asks
Phoenix's REST API for the spans until it has them all or the deadline passes, and compares
the tree Phoenix holds with the one the run recorded: every span, its name, its parent, its
status and its key attributes. With ``--screenshot`` it saves Phoenix's page of the trace, taken
in headless Chromium. The server is always stopped, whatever happened.

Run: ``python tools/phoenix_check.py --phoenix build/phoenix-venv/bin/phoenix`` (exit 1 on a
difference, or when Phoenix does not answer in time).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import trio
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trio_supervisor import Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.otel import Spans
from trio_supervisor.testing import devserver

PROJECT = "trio-supervisor-check"
KEY = "sk-phoenix-check-never-shown-1f2e3d"
CHECKED = (  # the attributes compared span by span, where the run recorded them
    "trio_supervisor.slot",
    "trio_supervisor.attempt",
    "trio_supervisor.status",
    "error.type",
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def phoenix(executable: str, workdir: Path, deadline: float) -> Iterator[str]:
    """``phoenix serve`` on loopback, until the block ends; yields its base URL."""
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [executable, "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stopped whole
    )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"phoenix exited with {process.returncode}: {tail(workdir)}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"phoenix did not answer in time: {tail(workdir)}")
            time.sleep(0.5)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        log.close()


def tail(workdir: Path) -> str:
    path = workdir / "phoenix.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-1500:]


async def the_run(spans: Spans) -> list[str]:
    """A supervision tree: a parent's two slots each run a child supervisor of chat agents;
    the request for ``"b1"`` fails once (a 503) and is retried."""
    failed: set[str] = set()
    endpoint = devserver.app(latency=(0.01, 0.01))

    class Flaky(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if b"b1" in request.content and "b1" not in failed:
                failed.add("b1")
                return httpx2.Response(503, json={"error": {"message": "busy, try again"}})
            transport = httpx2.ASGITransport(app=endpoint)
            return await transport.handle_async_request(request)

    async with ChatAgent(
        "devserver", base_url="http://127.0.0.1:9/v1", api_key=KEY, transport=Flaky()
    ) as agent:
        child = Supervisor(agent, max_workers=2, retry=Retry(attempts=2, on=TRANSIENT), spans=spans)

        async def team(name: str) -> str:
            aggregate = await child.run([f"{name}1", f"{name}2"])
            return " / ".join(str(result.output) for result in aggregate)

        parent = Supervisor(team, max_workers=2, spans=spans)
        aggregate = await parent.run(["a", "b"])
    return [str(result.output) for result in aggregate]


def span_id(value: int) -> str:
    return f"{value:016x}"


def local_tree(spans: list[ReadableSpan]) -> dict[str, dict[str, Any]]:
    tree: dict[str, dict[str, Any]] = {}
    for span in spans:
        attributes = dict(span.attributes or {})
        tree[span_id(span.context.span_id)] = {
            "name": span.name,
            "parent": None if span.parent is None else span_id(span.parent.span_id),
            "error": span.status.status_code.name == "ERROR",
            **{key: attributes[key] for key in CHECKED if key in attributes},
        }
    return tree


def value_of(any_value: dict[str, Any]) -> Any:
    for key in ("string_value", "int_value", "double_value", "bool_value"):
        if any_value.get(key) is not None:
            found = any_value[key]
            return int(found) if key == "int_value" else found
    return None


def remote_tree(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    tree: dict[str, dict[str, Any]] = {}
    for span in spans:
        attributes = {
            item["key"]: value_of(item.get("value") or {}) for item in span.get("attributes") or []
        }
        status = (span.get("status") or {}).get("code")
        tree[span["span_id"]] = {
            "name": span["name"],
            "parent": span.get("parent_span_id") or None,
            "error": status in (2, "STATUS_CODE_ERROR", "ERROR"),
            **{key: attributes[key] for key in CHECKED if key in attributes},
        }
    return tree


def fetch_spans(base: str, trace_id: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"limit": 1000, "trace_id": trace_id})
    url = f"{base}/v1/projects/{PROJECT}/spans/otlpv1?{query}"
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            data = json.load(answer)
    except urllib.error.HTTPError as error:
        if error.code == 404:  # the project is made when its first span comes in
            return []
        raise
    found: list[dict[str, Any]] = data.get("data") or []
    return found


def project_gid(base: str) -> str | None:
    with urllib.request.urlopen(f"{base}/v1/projects", timeout=10) as answer:
        data = json.load(answer)
    for project in data.get("data") or []:
        if project.get("name") == PROJECT:
            found: str = project["id"]
            return found
    return None


def screenshot(base: str, trace_id: str, chromium: str, path: Path) -> str:
    """Phoenix's page of the trace, from headless Chromium, into ``path``; its URL."""
    from playwright.sync_api import sync_playwright

    gid = project_gid(base) or base64.b64encode(b"Project:1").decode()
    url = f"{base}/projects/{gid}/traces/{trace_id}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            page.goto(url, wait_until="networkidle", timeout=60_000)
            # the span tree renders after its query returns: wait for the run's own span
            page.get_by_text("run team").first.wait_for(timeout=30_000)
            page.get_by_text("chat devserver").first.wait_for(timeout=30_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(path))
        finally:
            browser.close()
    return url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phoenix", required=True, help="the phoenix executable")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds for everything")
    parser.add_argument("--screenshot", type=Path, help="save Phoenix's page of the trace here")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    began = time.monotonic()
    deadline = began + args.timeout
    with (
        tempfile.TemporaryDirectory(prefix="phoenix-") as tmp,
        phoenix(args.phoenix, Path(tmp), deadline) as base,
    ):
        up = time.monotonic() - began
        kept = InMemorySpanExporter()
        resource = Resource.create(
            {"service.name": "trio-supervisor", "openinference.project.name": PROJECT}
        )
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SimpleSpanProcessor(kept))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=10))
        )
        outputs = trio.run(the_run, Spans(provider.get_tracer("phoenix-check")))
        provider.force_flush()
        provider.shutdown()
        recorded = list(kept.get_finished_spans())
        expected = local_tree(recorded)
        trace_ids = {f"{span.context.trace_id:032x}" for span in recorded}
        if len(trace_ids) != 1:
            print(f"FAILED: the run made {len(trace_ids)} traces, not one")
            return 1
        (trace_id,) = trace_ids
        got: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            got = remote_tree(fetch_spans(base, trace_id))
            if len(got) >= len(expected):
                break
            time.sleep(0.5)
        received = time.monotonic() - began
        shown = ""
        if args.screenshot is not None:
            shown = screenshot(base, trace_id, args.chromium, args.screenshot)
    names = sorted({node["name"] for node in expected.values()})
    print(f"run outputs: {outputs}")
    print(
        f"phoenix up after {up:.1f}s; {len(got)} of {len(expected)} spans back after "
        f"{received:.1f}s"
    )
    print(f"span names: {', '.join(names)}")
    if shown:
        print(f"screenshot of {shown} in {args.screenshot}")
    if KEY in json.dumps(got, default=str):
        print("FAILED: the API key reached Phoenix")
        return 1
    if got != expected:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        differ = [key for key in expected if key in got and got[key] != expected[key]]
        print(f"FAILED: missing {missing[:5]}, unexpected {extra[:5]}")
        for key in differ[:5]:
            print(f"  {key}: recorded {expected[key]}, phoenix {got[key]}")
        return 1
    print(
        f"ok: Phoenix holds the run's tree of {len(expected)} spans; the check took "
        f"{time.monotonic() - began:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
