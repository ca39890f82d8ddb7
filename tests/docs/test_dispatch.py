"""The "dispatch" player's recorded runs: real, deterministic, and what the player reads.

The player (docs/javascripts/dispatch.js) replays ``generated/steps/<step>/dispatch.json`` in the
browser; ``make docs-check`` replays every scenario there and compares the finished player with
the file. These tests hold the file itself to the runs: each scenario is a fresh virtual run of
the step, the same on every build, and carries every field the player reads.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from lessons._course.demos import FIVE
from lessons._course.recording import run_dict
from lessons._course.steps import part_two, step, steps
from tools.docs import dispatch
from tools.docs import hook as docs_hook
from trio_supervisor import Hedge, Status, Trace
from trio_supervisor.timeline import ENDINGS, LABEL, MARKS

STEPS = list(steps().values())
STATUSES = {status.value for status in Status}
# one worker runs the module when the tests run on several cores: its one recording of every
# step's scenarios (``recorded``) is made once
pytestmark = pytest.mark.xdist_group("dispatch")


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    """Each step's ``dispatch.json`` as the docs hook writes it, read back."""
    return {name: json.loads(dispatch.to_json(dispatch.recorded(name)[0])) for name in STEPS}


@pytest.mark.parametrize("name", STEPS)
def test_each_recorded_run_is_a_fresh_virtual_run_of_its_scenario(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """Run again, on a new MockClock, every scenario gives the run the file holds, to the
    byte: a page replays what the step does, and two builds write the same file."""
    scenarios = dispatch.scenarios(name)
    assert [item["key"] for item in recorded[name]["scenarios"]] == [s.key for s in scenarios]
    for scenario, item in zip(scenarios, recorded[name]["scenarios"], strict=True):
        fresh = json.loads(json.dumps(run_dict(scenario.run(name))))
        assert item["run"] == fresh, scenario.key
        assert item["label"] == scenario.label
    again = dispatch.to_json(dispatch.recorded(name)[0])
    assert again == dispatch.to_json(recorded[name])


def _time(value: Any, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0


@pytest.mark.parametrize("name", STEPS)
def test_each_recorded_run_has_the_fields_the_player_reads(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """The fields dispatch.js reads, with the types and links it relies on: results name
    slots of the trace, a run with an error has no results, a stopped run has an error."""
    data = recorded[name]
    assert data["step"] == name
    keys = [item["key"] for item in data["scenarios"]]
    assert len(set(keys)) == len(keys)
    assert data["default"] in keys
    for item in data["scenarios"]:
        assert isinstance(item["label"], str)
        assert item["label"]
        run = item["run"]
        assert isinstance(run["task"], str)
        assert isinstance(run["options"], dict)
        assert _time(run["stopped"], optional=True)
        assert run["error"] is None or isinstance(run["error"], str)
        trace = run["trace"]
        assert _time(trace["wall"])
        assert [slot["slot"] for slot in trace["slots"]] == list(range(len(trace["slots"])))
        for slot in trace["slots"]:
            assert isinstance(slot["subtask"], str)
            assert slot["status"] is None or slot["status"] in STATUSES
            for field in ("planned", "started", "finished", "delivered"):
                assert _time(slot[field], optional=field != "planned"), field
            for span in slot["spans"]:
                assert _time(span["start"])
                assert _time(span["end"], optional=True)
                assert span["status"] is None or span["status"] in STATUSES
                assert span["start"] <= trace["wall"]
        aggregate = run["aggregate"]
        if run["error"] is not None:
            assert aggregate is None, "a run that raised or never returned returned nothing"
        if run["stopped"] is not None:
            assert run["error"] is not None
            continue
        if aggregate is None:
            continue
        assert isinstance(aggregate["degraded"], bool)
        assert aggregate["succeeded"] + aggregate["failed"] == len(aggregate["results"])
        for result in aggregate["results"]:
            assert 0 <= result["slot"] < len(trace["slots"])
            assert result["status"] in STATUSES
            assert isinstance(
                result["error"] if result["error"] is not None else result["output"], str
            )
            assert _time(result["finished"], optional=True)


def test_scenarios_are_offered_only_where_the_step_can_tell_them_apart() -> None:
    """A step without ``max_workers`` gets one workers scenario, one without ``attempts`` no
    retried one; each workers scenario runs with its number of workers."""
    keys = {name: [s.key for s in dispatch.scenarios(name)] for name in STEPS}
    assert keys["step01_serial"] == ["workers", "fails", "hangs"]
    assert keys["step02_fan_out"] == ["workers", "fails", "hangs"]
    workers = ["workers-1", "workers-2", "workers-3", "workers-4"]
    assert keys["step03_capacity_limiter"] == [*workers, "fails", "hangs"]
    assert keys["step08_retries"] == [*workers, "fails", "retried", "hangs", "deadline"]
    for scenario in dispatch.scenarios("step04_ordered_slots")[:4]:
        assert scenario.run("step04_ordered_slots").options == {"max_workers": scenario.workers}


OWN = (
    "deadline",
    "gives-up",
    "left",
    "window",
    "lazy",
    "arriving",
    "rate",
    "adaptive",
    "adaptive-queued",
    "rounds",
    "budgets",
    "llm",
    "tree",
    "strategy",
    "crashes",
    "killed",
    "hedged",
    "first-k",
    "token-budget",
    "typed",
    "shared",
)
"""The keys of the scenarios built on a step's own ideas, in the order a menu lists them."""


def offered(name: str) -> list[str]:
    """The scenarios of its own ideas step ``name``'s record says it can show."""
    record = step(name)
    flat = record.replans and not (record.records_trace and record.check_task is not None)
    takes = {
        "deadline": record.takes("deadline") and not record.replans and not record.streams,
        # a library stream (step 16) cannot restart: only a hand-written one gives up
        "gives-up": record.takes("intensity")
        and record.takes("attempts")
        and not (record.streams and part_two(name))
        and not record.replans,
        "left": record.streams,
        "window": record.takes("window") and not record.lazy,
        "lazy": record.lazy and record.takes("window"),
        "arriving": record.awaits and record.takes("window"),
        "rate": record.takes("rate") and not record.replans,
        "adaptive": record.takes("adaptive") and not record.replans,
        "adaptive-queued": record.takes("adaptive") and not record.replans,
        "rounds": flat and record.takes("max_rounds"),
        "budgets": flat and record.takes("max_subtasks"),
        "llm": flat and record.takes("planner"),
        "tree": record.records_trace and record.check_task is not None,
        "strategy": record.takes("strategy"),
        "crashes": record.takes_crash,
        "killed": record.journals,
        "hedged": record.takes("hedge"),
        "first-k": record.takes("need"),
        "token-budget": record.takes("budget_tokens") and not record.typed,
        "typed": record.typed,
        "shared": record.takes("lease"),
    }
    return [key for key in OWN if takes[key]]


def test_each_part_one_step_gets_the_scenarios_of_the_ideas_it_has() -> None:
    """The generic runs for every step, then one per idea the step has: an intensity that gives
    up from step 9, a caller that leaves early from step 11 (the first step that streams), a
    window that fills from step 13, a lazy feed at step 14 (its window shown there by the feed), a
    feed that arrives as it is made at step 15."""
    generic = ["workers-1", "workers-2", "workers-3", "workers-4", "fails", "retried", "hangs"]
    own = {
        number: [s.key for s in dispatch.scenarios(name)][len(generic) :]
        for number, name in steps().items()
        if 8 <= number <= 15
    }
    assert own == {
        8: ["deadline"],
        9: ["deadline", "gives-up"],
        10: ["deadline", "gives-up"],
        11: ["gives-up", "left"],
        12: ["gives-up", "left"],
        13: ["gives-up", "left", "window"],
        14: ["gives-up", "left", "lazy"],
        15: ["gives-up", "left", "lazy", "arriving"],
    }
    for number in range(1, 7):
        assert not set(OWN) & {s.key for s in dispatch.scenarios(steps()[number])}
    assert [s.key for s in dispatch.scenarios(steps()[7])][-1] == "deadline"  # its own idea


@pytest.mark.parametrize("name", STEPS)
def test_a_step_gets_a_scenario_of_an_idea_exactly_when_its_record_takes_it(name: str) -> None:
    """Keyed on the step's record, never its number: a step that does not take an option (or
    stream, pull lazily, nest, run processes) gets no scenario for it, whatever Part II holds."""
    keys = [s.key for s in dispatch.scenarios(name)]
    assert [key for key in keys if key in OWN] == offered(name)
    assert keys[-len(offered(name)) :] == offered(name) or not offered(name)


@pytest.mark.parametrize("name", [name for name in STEPS if "hedged" in offered(name)])
def test_the_hedge_scenario_draws_the_hedge_that_won(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "hedged")
    company = next(s for s in run["trace"]["slots"] if s["subtask"].startswith("globex"))
    spans = next(s for s in company["child"]["slots"] if s["subtask"] == dispatch.STRAGGLER)[
        "spans"
    ]
    assert [span.get("hedge", False) for span in spans][-2:] == [False, True]
    assert spans[-2].get("lost")  # the straggling first request, cancelled as its hedge won
    assert run["trace"]["wall"] < 12


@pytest.mark.parametrize("name", [name for name in STEPS if "first-k" in offered(name)])
def test_the_first_k_scenario_keeps_the_first_leaves_and_cancels_the_straggler(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "first-k")
    (company,) = run["trace"]["slots"]
    ended = {s["subtask"]: s["spans"][-1]["status"] for s in company["child"]["slots"]}
    assert ended[dispatch.SOURCE_STRAGGLER] == "cancelled"
    assert sum(status == "ok" for status in ended.values()) == dispatch.NEED
    assert run["trace"]["wall"] < 12


@pytest.mark.parametrize("name", [name for name in STEPS if "token-budget" in offered(name)])
def test_the_token_budget_scenario_ends_the_leaves_it_cannot_afford(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "token-budget")
    spans = [
        span
        for company in run["trace"]["slots"]
        for leaf in company["child"]["slots"]
        for span in leaf["spans"]
    ]
    assert any(span["status"] == "over budget" for span in spans)
    assert any(span["status"] == "ok" for span in spans)


def _item(recorded: dict[str, Any], key: str) -> dict[str, Any]:
    run: dict[str, Any] = next(i["run"] for i in recorded["scenarios"] if i["key"] == key)
    return run


@pytest.mark.parametrize("name", [name for name in STEPS if "gives-up" in offered(name)])
def test_the_intensity_scenario_gives_up(name: str, recorded: dict[str, dict[str, Any]]) -> None:
    run = _item(recorded[name], "gives-up")
    assert run["options"]["intensity"] == list(dispatch.INTENSITY)
    errors = [result["error"] or "" for result in run["aggregate"]["results"]]
    said = f"gave up: more than {dispatch.INTENSITY[0]} restarts within"
    assert any(said in error for error in errors), errors


@pytest.mark.parametrize("name", [name for name in STEPS if "left" in offered(name)])
def test_the_caller_leaves_after_its_results_and_from_step_12_the_rest_is_cancelled(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "left")
    assert len(run["aggregate"]["results"]) == dispatch.TAKEN
    leave = run["trace"]["slots"][dispatch.TAKEN - 1]["delivered"]
    ran_on = run["trace"]["wall"] > leave
    assert ran_on == (name == "step11_streaming"), "step 11 waits its workers out; 12 on, not"


@pytest.mark.parametrize(
    ("name", "key"), [(n, k) for n in STEPS for k in ("window", "lazy") if k in offered(n)]
)
def test_the_window_fills_behind_the_slow_slot_and_a_lazy_feed_is_pulled_as_it_has_room(
    name: str, key: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """While the slow slot runs, at most ``window`` slots are started and not yet handed over,
    the window is full, and nothing more starts; a lazy feed's slots are planned (pulled) only
    when a place is free, not all at the start."""
    run = _item(recorded[name], key)
    assert run["options"]["window"] == dispatch.WINDOW
    slots = run["trace"]["slots"]
    slow = slots[dispatch.SLOW]
    assert [result["status"] for result in run["aggregate"]["results"]] == ["ok"] * len(slots)
    for slot in slots:  # at each start, the slots started and not yet handed over
        at = slot["spans"][0]["start"]
        ahead = [o for o in slots if o["spans"][0]["start"] <= at and o["delivered"] > at]
        assert len(ahead) <= dispatch.WINDOW
    early = [slot for slot in slots if slot["spans"][0]["start"] < slow["finished"]]
    assert len(early) == dispatch.WINDOW + 1, "slot 0, then the window behind the slow one"
    pulled_late = [slot for slot in slots if slot["planned"] > 0]
    assert bool(pulled_late) == (key == "lazy")
    if key == "lazy":
        for slot in slots:
            at = slot["planned"]
            held = [o for o in slots if o["planned"] <= at and o["delivered"] > at]
            assert len(held) <= dispatch.WINDOW


@pytest.mark.parametrize("name", [name for name in STEPS if "crashes" in offered(name)])
def test_the_crash_scenario_records_a_worker_crashed_the_player_draws_as_a_crash(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "crashes")
    slot = run["trace"]["slots"][dispatch.FAILING]
    assert slot["status"] == "failed"
    if "child" in slot:  # a tree: the leaf's process died, and its company escalated it
        assert slot["child"]["slots"][0]["spans"][-1]["error"].startswith("WorkerCrashed: ")
        assert "WorkerCrashed: " in slot["spans"][-1]["error"]
    else:
        assert slot["spans"][-1]["error"].startswith("WorkerCrashed: ")


def _429s(run: dict[str, Any]) -> int:
    return sum(
        1
        for slot in run["trace"]["slots"]
        for span in slot["spans"]
        if "429" in (span["error"] or "")
    )


@pytest.mark.parametrize("name", [name for name in STEPS if "rate" in offered(name)])
def test_the_rate_scenario_starts_the_calls_a_token_apart(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "rate")
    assert run["options"]["rate"] == dispatch.RATE
    starts = sorted(span["start"] for s in run["trace"]["slots"] for span in s["spans"])
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert min(gaps) >= 1 / dispatch.RATE - 1e-9, "no two calls closer than the bucket allows"


@pytest.mark.parametrize("name", [name for name in STEPS if "adaptive" in offered(name)])
def test_the_adaptive_scenario_is_refused_at_first_and_every_result_comes_back(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """More workers than the server takes: the first calls are refused (429), the workers
    allowed are fitted to the server, and every result comes back ok."""
    run = _item(recorded[name], "adaptive")
    assert run["options"]["adaptive"] is True
    assert _429s(run) > 0
    assert [result["status"] for result in run["aggregate"]["results"]] == ["ok"] * 5


@pytest.mark.parametrize("name", [name for name in STEPS if "tree" in offered(name)])
def test_the_tree_scenario_nests_a_child_run_under_each_company(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    run = _item(recorded[name], "tree")
    companies = run["trace"]["slots"]
    assert len(companies) == 2
    assert all(company["child"]["slots"] for company in companies)
    leaves = [leaf for company in companies for leaf in company["child"]["slots"]]
    assert "failed" in {leaf["spans"][-1]["status"] for leaf in leaves}, "a leaf fails"


def test_the_player_and_its_styles_draw_a_crash_as_a_crash() -> None:
    """The player tells a failure whose process died (``WorkerCrashed``) from an exception: its
    card and its result say ``crashed``; their colours, and its bar's, come from the table of
    endings the data carries, never from colours of the player's own."""
    root = Path(__file__).resolve().parents[2] / "docs"
    script = (root / "javascripts" / "dispatch.js").read_text()
    styles = (root / "stylesheets" / "dispatch.css").read_text()
    assert 'const CRASH = "WorkerCrashed";' in script
    assert 'status === "failed" && crashed(error) ? "crashed" : status' in script
    assert script.count("shownStatus(") >= 4  # the card, its retried attempts, its result
    table = dispatch.endings()
    assert table["ts-crashed"]["fill"] != table["ts-failed"]["fill"]
    # one source: the stylesheet holds no ending's colour and no rule per state
    assert "data-state=" not in styles
    for drawn in ENDINGS.values():
        assert f"--dispatch-{drawn.css[3:]}" not in styles, drawn.word
        assert drawn.ink not in styles, drawn.word


def test_the_players_table_of_endings_is_the_timelines() -> None:
    table = dispatch.endings()
    for drawn in ENDINGS.values():
        assert table[drawn.css] == {
            "word": drawn.word,
            "glyph": drawn.glyph,
            "fill": drawn.fill,
            "ink": drawn.ink,
            "night": drawn.night,
            "legend": drawn.legend,
        }


def _rows(trace: dict[str, Any]) -> int:
    """A row per slot, and each child run's rows under their parent's."""
    return sum(
        1 + sum(_rows(child) for child in slot.get("children", [])) for slot in trace["slots"]
    )


@pytest.mark.parametrize("name", STEPS)
def test_the_players_drawing_has_every_row_and_a_legend_of_what_it_draws(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """The player draws the site's timeline rows: every slot and every child run's, each bar
    an attempt's ending or a mark, and its legend lists each ending it draws (bars and rows),
    no other; its axis has ticks."""
    endings = {drawn.css for drawn in ENDINGS.values()}
    for item in recorded[name]["scenarios"]:
        drawing = item["drawing"]
        assert len(drawing["rows"]) == _rows(item["run"]["trace"]), item["key"]
        used = {row["ending"] for row in drawing["rows"]}
        used |= {bar[2] for row in drawing["rows"] for bar in row["bars"] if bar[2] in endings}
        listed = {css for css, _ in drawing["legend"]}
        assert listed & endings == used, item["key"]
        assert len(drawing["ticks"]) >= 3, item["key"]
        for row in drawing["rows"]:
            assert len(row["label"]) <= LABEL
            assert row["title"].startswith(row["label"].rstrip("…"))
            if row["depth"]:
                assert row["label"][2 * row["depth"] - 2] in "├└", row["label"]


@pytest.mark.parametrize("name", [name for name in STEPS if "tree" in offered(name)])
def test_the_players_tree_draws_each_leaf_with_the_trees_connectors(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    drawing = next(item for item in recorded[name]["scenarios"] if item["key"] == "tree")
    labels = [row["label"] for row in drawing["drawing"]["rows"]]
    assert labels == [
        "acme: pricing, reviews",
        "├ acme pricing",
        "└ acme reviews",
        "globex: pricing, reviews failing",
        "├ globex pricing",
        "└ globex reviews failing",
    ]


@pytest.mark.parametrize("name", STEPS)
def test_no_two_scenarios_of_a_step_are_the_same_run(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    runs = [
        json.dumps([item["run"]["options"], item["run"]["trace"]], sort_keys=True)
        for item in recorded[name]["scenarios"]
    ]
    assert len(set(runs)) == len(runs)


@pytest.mark.parametrize("name", STEPS)
def test_a_hang_never_returns_without_a_timeout_and_times_out_with_one(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """The hanging slot is shown honestly: a step without a timeout never returns (the
    runner's guard stops the run, the slot still running); a step with one times the slot out
    and returns every other result."""
    run = next(item["run"] for item in recorded[name]["scenarios"] if item["key"] == "hangs")
    hung = run["trace"]["slots"][dispatch.HANGING]
    if not step(name).takes("worker_timeout"):
        assert run["stopped"] == run["trace"]["wall"]
        assert re.fullmatch(r"never returns: .+", run["error"])
        assert hung["spans"][-1]["end"] is None
        assert hung["status"] is None
    else:
        assert run["stopped"] is None
        assert run["error"] is None
        statuses = [result["status"] for result in run["aggregate"]["results"]]
        if "child" in hung:  # a tree: the leaf timed out
            assert hung["child"]["slots"][0]["spans"][-1]["status"] == "timed out"
            # escalation (step 24, whose module defines Escalated, and every step with a
            # strategy after it): its company's slot fails
            if hasattr(step(name).load(), "Escalated") or step(name).takes("strategy"):
                assert statuses[dispatch.HANGING] == "failed"
                assert statuses.count("ok") == len(statuses) - 1
            else:  # step 23's flaw: the child hands its missing leaf up as an answer
                assert statuses.count("ok") == len(statuses)
        else:
            assert statuses.count("ok") == len(statuses) - 1
            assert statuses[dispatch.HANGING] == "timed out"


def test_no_two_sets_of_the_scenario_latencies_add_up_to_the_same_time() -> None:
    """What keeps a step that appends results (2, 3) deterministic: a slot ends at the sum of
    the latencies run one after another on its worker, and no two such sums are equal."""
    latencies = list(dispatch.LATENCIES.values())
    sums = [
        sum(chosen)
        for size in range(1, len(latencies) + 1)
        for chosen in itertools.combinations(latencies, size)
    ]
    assert len(set(sums)) == len(sums)
    assert all(round(latency * 32) == latency * 32 for latency in latencies)


@pytest.mark.parametrize("name", STEPS)
def test_the_page_holds_the_player_its_data_link_and_its_timeline_without_javascript(
    name: str,
) -> None:
    data, first = dispatch.recorded(name)
    markdown = dispatch.fragment(name, first)
    assert f'<div class="dispatch" data-step="{name}" markdown>' in markdown
    assert f"(../generated/steps/{name}/dispatch.json){{ .dispatch-data }}" in markdown
    svg = re.search(r"<svg .*?</svg>", markdown, re.DOTALL)
    assert svg is not None
    rows = [
        group
        for group in ET.fromstring(svg[0]).iter("{http://www.w3.org/2000/svg}g")
        if group.get("class") == "ts-row"
    ]
    default = next(item for item in data["scenarios"] if item["key"] == data["default"])

    assert len(rows) == _rows(default["run"]["trace"])


def test_editing_the_course_that_records_the_runs_regenerates_the_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build regenerates the pages only when the digest of their inputs changes: the
    scenarios live in ``tools/docs``, so an edit there must change it (else a page would
    replay runs of scenarios that no longer exist), as must an edit of the course."""
    tools = tmp_path / "tools" / "docs"
    tools.mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "lessons").mkdir()
    step = tmp_path / "lessons" / "step01_serial.py"
    step.write_text("# a step\n")
    scenarios = tools / "dispatch.py"
    scenarios.write_text("LATENCIES = {0: 0.5}\n")
    monkeypatch.setattr(docs_hook, "ROOT", tmp_path)
    monkeypatch.setattr(docs_hook, "LESSONS", tmp_path / "lessons")
    monkeypatch.setattr(docs_hook, "TOOLS", tmp_path / "tools")
    before = docs_hook.inputs_digest()
    assert docs_hook.inputs_digest() == before
    scenarios.write_text("LATENCIES = {0: 0.75}\n")
    assert docs_hook.inputs_digest() != before
    edited = docs_hook.inputs_digest()
    step.write_text("# a step, edited\n")
    assert docs_hook.inputs_digest() != edited


HARNESS = """
const fs = require("fs");
let source = fs.readFileSync(process.argv[2], "utf8");
source = source.replace(/  const all = \\(\\) =>[\\s\\S]*\\}\\)\\(\\);\\s*$/,
  "  globalThis.player = { slotAt, outcome, timeline, shownStatus };\\n})();\\n");
eval(source);
const { run, drawing, endings } = JSON.parse(fs.readFileSync(0, "utf8"));
const { slotAt, outcome, timeline, shownStatus } = globalThis.player;
const end = run.trace.wall;
const markup = timeline(drawing, end, end, endings).markup;
console.log(JSON.stringify({
  cards: run.trace.slots.map((slot) => slotAt(slot, end, end).state),
  results: run.aggregate.results.map((result) => shownStatus(result.status, result.error)),
  bars: (markup.match(/dt-bar ts-crashed/g) || []).length,
  rows: (markup.match(/class="dt-label"/g) || []).length,
  ticks: (markup.match(/class="dt-tick"/g) || []).length,
  fills: [...markup.matchAll(/class="dt-bar (ts-[a-z-]+)" fill="(#[0-9a-f]{6})"/g)]
    .map((m) => [m[1], m[2]]),
  outcome: outcome(run),
}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the player's script")
def test_the_player_shows_a_recorded_crash_as_crashed_on_its_card_result_and_bar(
    tmp_path: Path,
) -> None:
    """The player's own functions, run by node on a recorded crash: the dead process's card,
    result and bar say crashed, the exception's say failed, and the outcome counts the crash."""
    (name,) = [name for name in STEPS if "crashes" in offered(name)][-1:]
    data = json.loads(dispatch.to_json(dispatch.recorded(name)[0]))
    harness = tmp_path / "harness.cjs"
    harness.write_text(HARNESS)
    script = Path(__file__).resolve().parents[2] / "docs" / "javascripts" / "dispatch.js"
    shown = []
    for key in ("crashes", "fails"):
        item = next(item for item in data["scenarios"] if item["key"] == key)
        done = subprocess.run(
            ["node", str(harness), str(script)],
            input=json.dumps({**item, "endings": data["endings"]}),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        shown.append(json.loads(done.stdout))
        crashes = [css for row in item["drawing"]["rows"] for *_, css in row["bars"]]
        assert shown[-1]["bars"] == crashes.count("ts-crashed")
        assert (key == "crashes") == (shown[-1]["bars"] > 0)
        assert shown[-1]["rows"] == len(item["drawing"]["rows"])
        assert shown[-1]["ticks"] >= 3, "the player's axis has ticks, not just its two ends"
        fills = dict(shown[-1]["fills"])
        assert fills == {css: data["endings"][css]["fill"] for css in fills}
    crashed, failed = shown
    assert crashed["cards"][dispatch.FAILING] == "crashed"
    assert crashed["results"][dispatch.FAILING] == "crashed"
    assert "(1 of them crashed: the process died)" in crashed["outcome"]
    assert failed["cards"][dispatch.FAILING] == "failed"
    assert "crashed" not in failed["outcome"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the player's script")
def test_the_player_shows_a_resumed_run_with_what_came_from_the_journal(tmp_path: Path) -> None:
    """The player's own functions, run by node on a recorded resume: a slot that came from the
    journal is ok on its card, and the outcome says the supervisor was killed and resumed."""
    (name,) = [name for name in STEPS if "killed" in offered(name)][:1]
    killed = next(s for s in dispatch.scenarios(name) if s.key == "killed")
    ran = killed.run(name)
    item = json.loads(
        dispatch.to_json(
            {"run": run_dict(ran), "drawing": dispatch.drawing(ran), "endings": dispatch.endings()}
        )
    )
    run = item["run"]
    kept = [slot["slot"] for slot in run["trace"]["slots"] if slot.get("journaled")]
    assert kept  # the kill left something finished
    harness = tmp_path / "harness.cjs"
    harness.write_text(HARNESS)
    script = Path(__file__).resolve().parents[2] / "docs" / "javascripts" / "dispatch.js"
    done = subprocess.run(
        ["node", str(harness), str(script)],
        input=json.dumps(item),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    shown = json.loads(done.stdout)
    assert [shown["cards"][slot] for slot in kept] == ["ok"] * len(kept)
    assert f"killed at {dispatch.KILLED_AT:.2f}s" in shown["outcome"]
    assert f"{len(kept)} slot" in shown["outcome"]


# --- a hedged slot: the player draws its hedges as the site's timelines do ------------------

#: Hedged races of slot 3 among ten: the hedge wins; the first attempt wins; the hedge fails
#: while the first attempt runs on to win; both fail; three hedges, the last one winning.
RACES = {
    "hedge-wins": ({3: [(10.0, False), (1.0, False)]}, 1),
    "first-wins": ({3: [(2.5, False), (5.0, False)]}, 1),
    "hedge-fails-first": ({3: [(10.0, False), (1.0, True)]}, 1),
    "both-fail": ({3: [(3.0, True), (2.0, True)]}, 1),
    "three-hedges": ({3: [(10.0, False), (10.0, False), (10.0, False), (1.0, False)]}, 3),
}


def _hedged(race: str) -> tuple[Trace, dict[str, Any]]:
    """Race ``race`` run, and the player's data of it: the trace's slots as the runner's JSON
    holds them (with each slot's status, start and finish), its drawing, and the endings."""
    from tests.library.test_hedge import ten

    script, extra = RACES[race]
    _, trace, _ = ten(script, hedge=Hedge(2.0, max_extra=extra, throttle=1.0))
    slots = trace.to_dict()["slots"]
    for slot, traced in zip(slots, trace.slots, strict=True):
        slot["status"] = None if traced.status is None else traced.status.value
        slot["started"] = None if traced.started is None else traced.started - trace.origin
        slot["finished"] = None if traced.ended is None else traced.ended - trace.origin
    run = {"trace": {"wall": trace.wall, "slots": slots}}
    data = {"run": run, "drawing": dispatch.trace_drawing(trace), "endings": dispatch.endings()}
    return trace, json.loads(dispatch.to_json(data))


@pytest.mark.parametrize("race", RACES)
def test_the_players_drawing_of_a_hedged_slot_numbers_its_hedges_and_lists_them(
    race: str,
) -> None:
    trace, data = _hedged(race)
    row = data["drawing"]["rows"][3]
    running = [bar for bar in row["bars"] if bar[2] not in ("ts-waiting", "ts-asked", "ts-held")]
    spans = trace.slots[3].spans
    assert [bar[3] if len(bar) > 3 else 0 for bar in running] == [
        0 if not span.hedge else index for index, span in enumerate(spans)
    ]
    assert ["ts-hedge", MARKS["hedge"].pictured] in data["drawing"]["legend"]
    assert data["endings"]["ts-hedge"]["fill"] == MARKS["hedge"].fill
    deciding = trace.slots[3].deciding
    assert deciding is not None
    assert dispatch.deciding(data["run"]["trace"]["slots"][3]["spans"]) == spans.index(deciding)
    assert row["ending"] == f"ts-{deciding.status.value.replace(' ', '-')}"  # type: ignore[union-attr]
    assert not any(len(bar) > 3 for other in data["drawing"]["rows"][:3] for bar in other["bars"])


HEDGE_HARNESS = """
const fs = require("fs");
let source = fs.readFileSync(process.argv[2], "utf8");
source = source.replace(/  const all = \\(\\) =>[\\s\\S]*\\}\\)\\(\\);\\s*$/,
  "  globalThis.player = { slotAt, timeline, deciding };\\n})();\\n");
eval(source);
const { run, drawing, endings, times } = JSON.parse(fs.readFileSync(0, "utf8"));
const { slotAt, timeline, deciding } = globalThis.player;
const end = run.trace.wall;
const slot = run.trace.slots[3];
const markup = timeline(drawing, end, end, endings).markup;
const label = markup.indexOf(">  3  3<");
const row = markup.slice(label, markup.indexOf('class="dt-label"', label + 1));
console.log(JSON.stringify({
  cards: times.map((t) => slotAt(slot, t, end)),
  deciding: deciding(slot.spans),
  bars: [...row.matchAll(new RegExp('class="dt-bar ([a-z -]+)" fill="([^"]*)" x="[^"]*" ' +
    'y="([^"]*)" width="[^"]*" height="([^"]*)"', "g"))]
    .map((m) => [m[1], m[2], Number(m[3]), Number(m[4])]),
}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the player's script")
@pytest.mark.parametrize("race", RACES)
def test_the_player_draws_a_hedge_as_a_lower_bar_and_its_card_follows_the_deciding_attempt(
    race: str, tmp_path: Path
) -> None:
    """The player's own functions, run by node on a hedged race: each hedge a bar of its own,
    under its attempt's, in its ending's colour; the card running while any attempt runs, then
    how the deciding attempt ended (not the last one drawn, which may have lost)."""
    trace, data = _hedged(race)
    slot = trace.slots[3]
    assert slot.ended is not None
    assert slot.status is not None
    origin = trace.origin
    times = sorted({span.start - origin + 0.25 for span in slot.spans} | {trace.wall})
    harness = tmp_path / "harness.cjs"
    harness.write_text(HEDGE_HARNESS)
    script = Path(__file__).resolve().parents[2] / "docs" / "javascripts" / "dispatch.js"
    done = subprocess.run(
        ["node", str(harness), str(script)],
        input=json.dumps({**data, "times": times}),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    shown = json.loads(done.stdout)
    assert shown["deciding"] == slot.spans.index(slot.deciding)  # type: ignore[arg-type]
    bars = shown["bars"]
    assert len(bars) == len(slot.spans), "one bar per attempt, hedges apart"
    lanes = 1 + max(index for index, span in enumerate(slot.spans) if span.hedge)
    for index, (span, (css, fill, y, height)) in enumerate(zip(slot.spans, bars, strict=True)):
        ending = css.split()[0]
        assert ("dt-hedge" in css) == span.hedge
        assert ending == f"ts-{span.status.value.replace(' ', '-')}"  # type: ignore[union-attr]
        assert fill == data["endings"][ending]["fill"]
        assert height == pytest.approx(14 / lanes)
        assert y == pytest.approx(bars[0][2] + (index if span.hedge else 0) * 14 / lanes)
    for t, card in zip(times, shown["cards"], strict=True):
        running = any(
            span.start - origin <= t < (math.inf if span.end is None else span.end - origin)
            for span in slot.spans
        )
        if running:
            assert card["state"] == "running", (t, card)
        elif t >= slot.ended - origin:
            assert card["state"] == slot.status.value, (t, card)
            assert card["when"] == f"0.00s → {slot.ended - origin:.2f}s"


@pytest.mark.parametrize("name", STEPS)
def test_the_player_starts_with_a_scenario_of_the_steps_own_idea(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """A scenario that sets an option the step adds wherever one does (step 8's retried slot,
    step 29's hedge), else one the step before does not offer: every page opened on "slot 1
    fails, 2 workers" before, so step 8 played it with one attempt and step 29 without a hedge."""
    data = recorded[name]
    assert data["default"] == dispatch.default(name)
    assert dispatch.unset_idea(name, data) == []


@pytest.mark.parametrize(
    "name", ["step08_retries", "step29_hedging", "step30_first_k", "step31_token_budget"]
)
def test_a_player_opening_on_a_run_without_its_idea_is_told(
    name: str, recorded: dict[str, dict[str, Any]]
) -> None:
    assert dispatch.unset_idea(name, {**recorded[name], "default": dispatch.DEFAULT}) != []


def test_each_page_opens_on_the_scenario_of_its_own_idea() -> None:
    """Steps 4 and 5 add no option, so their players opened on "slot 1 fails": step 4's
    (which raises) showed no order, and steps 20-22's opened without rounds, a budget or a model.
    Now step 4 opens where its returned order differs from step 3's, step 5 where step 4 raises
    and it answers, and steps 20-22 on a scenario that sets the option each adds."""
    opens = {name: dispatch.default(name) for name in STEPS}
    assert opens["step04_ordered_slots"] == "workers-2"
    assert opens["step05_fault_isolation"] == "fails"
    assert opens["step18_rate"] == "rate"
    assert opens["step19_adaptive"] == "adaptive"
    assert opens["step20_rounds"] == "rounds"
    assert opens["step21_budgets"] == "budgets"
    assert opens["step22_llm_planner"] == "llm"
    assert opens["step25_strategies"] == "strategy"
    assert opens["step29_hedging"] == "hedged"
    assert opens["step30_first_k"] == "first-k"
    assert opens["step31_token_budget"] == "token-budget"


def test_step_4s_first_scenario_returns_another_order_than_on_step_3() -> None:
    (scenario,) = [s for s in dispatch.scenarios("step04_ordered_slots") if s.key == "workers-2"]
    orders = [
        [result.subtask for result in run.aggregate.results]
        for run in (scenario.run("step03_capacity_limiter"), scenario.run("step04_ordered_slots"))
        if run.aggregate is not None
    ]
    assert orders[1] == [s.strip() for s in FIVE.split(";")]
    assert orders[0] != orders[1]


@pytest.mark.parametrize(
    ("name", "key", "reason"),
    [
        ("step20_rounds", "rounds", "the planner is done after 2 rounds"),
        ("step21_budgets", "budgets", "max_subtasks (6) reached in round 2"),
        ("step22_llm_planner", "llm", "the planner is done after 2 rounds"),
    ],
)
def test_the_replanning_scenarios_play_their_rounds(
    name: str, key: str, reason: str, recorded: dict[str, dict[str, Any]]
) -> None:
    (item,) = [item for item in recorded[name]["scenarios"] if item["key"] == key]
    assert reason in item["run"]["replan"]["reason"]
    assert item["run"]["replan"]["rounds"][1]["subtasks"] > 0
