"""The laws page's grid: every law of the course's catalogue by the steps that keep it.

`grid` draws ``lessons._course.laws.LAWS`` as an HTML table, a row per law and a column per
step: a step that keeps the law, and the step before them that fails it (its test there is a
strict expected failure). Each row links to the law's entry further down the page (`ANCHORS`),
and a law with no entry there fails the docs tests.
"""

from __future__ import annotations

import html

from lessons._course import laws
from lessons._course.laws import LAWS, Law
from lessons._course.steps import steps

#: The laws page's entry (its anchor) that tells each law of the catalogue, by the law's name.
ANCHORS = {
    "PLAN_ORDER": "plan-order",
    "SERIAL_WALL_TIME": "serial-wall-time",
    "FAN_OUT_WALL_TIME": "fan-out-wall-time",
    "EVERY_SUBTASK_ANSWERED": "fan-out-wall-time",
    "GREEDY_MAKESPAN": "greedy-makespan",
    "BOUNDED": "capacity",
    "MAX_WORKERS_REFUSED": "max-workers-refused",
    "FAILURES_ISOLATED": "failing-slots",
    "CANCELLATION_PASSES_THROUGH": "cancellation",
    "HUNG_WORKER_FREES_ITS_SLOT": "hung-worker",
    "MAKESPAN_WITH_TIMEOUTS": "hung-worker",
    "EACH_CALL_IS_TIMED_ON_ITS_OWN": "timeout-placement",
    "DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK": "deadline",
    "TRANSIENT_FAILURE_RETRIED": "transient-failures",
    "SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES": "retries",
    "WAITS_ARE_SEEDED_DRAWS": "full-jitter",
    "A_WAITING_RETRY_HOLDS_NO_TOKEN": "waiting-retry",
    "AT_MOST_R_RESTARTS_IN_T": "no-intensity",
    "GIVES_UP_PAST_THE_INTENSITY": "intensity",
    "OLD_RESTARTS_ARE_FORGOTTEN": "no-intensity",
    "FIRST_RESULT_ARRIVES_WITH_SLOT_0": "nothing-until-the-end",
    "HANDED_OVER_AS_SOON_AS_POSSIBLE": "streaming",
    "LEAVING_EARLY_CANCELS_THE_REST": "leaving-early",
    "HELD_TO_THE_WINDOW": "window",
    "HEAD_OF_LINE_IS_HELD_TO_THE_WINDOW": "head-of-line",
    "A_LAZY_MILLION_IS_HELD": "lazy-input",
    "READ_AS_A_STREAM": "stream",
    "AN_ASYNC_INPUT_IS_AWAITED": "async-input",
    "AN_ENDLESS_INPUT_ENDS_AT_THE_DEADLINE": "library-keeps-the-laws",
    "THE_CALLERS_EXCEPTION_COMES_OUT_BARE": "library-keeps-the-laws",
    "STREAMED_AS_EACH_IS_FINAL": "streamed-to-the-last-step",
    "ONLY_TRANSIENT_FAILURES_ARE_RETRIED": "supervisor-retries-alone",
    "A_RETRY_WAITS_OUT_ITS_RETRY_AFTER": "retry-after",
    "THROUGH_A_SERVER_EACH_SUBTASK_IS_ANSWERED_ONCE": "through-a-server",
    "ATTEMPTS_START_AT_THE_RATE": "rate",
    "ADAPTIVE_ENDS_THE_429S": "adaptive",
    "ADAPTIVE_HOLDS_A_QUEUE_TO_ONE": "adaptive-latency",
    "ASKS_WHAT_THE_RESULTS_CALL_FOR": "replan-follow-ups",
    "EVERY_DISPATCHED_SUBTASK_IN_THE_LEDGER_ONCE": "replan-ledger",
    "ANSWERS_BY_ITS_DEADLINE": "replan-budgets",
    "ENDS_BY_THE_BUDGET_IT_WAS_GIVEN": "replan-budgets",
    "STALLS_ARE_COUNTED_UP_AND_DOWN": "replan-stalls",
    "AN_LLM_PLANS_AS_THE_RULES_DO": "replan-planner-fails",
    "A_PLANNER_THAT_FAILS_COSTS_ROUNDS": "replan-planner-fails",
    "A_COMPANY_IS_A_CHILD_SUPERVISOR": "tree-bound",
    "NO_LEAF_OUTLIVES_THE_DEADLINE": "deadlines-flow-down",
    "A_CHILD_THAT_GIVES_UP_ESCALATES": "escalation",
    "A_STRATEGY_RESTARTS_WHAT_IT_NAMES": "strategies",
    "A_CRASH_FAILS_ITS_LEAF_ALONE": "crash-contained",
    "A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN": "crash-contained",
    "A_CUT_LEAF_ENDS_ITS_CALL": "crash-killed",
    "RESUME_AFTER_A_CRASH_EQUALS_A_RUN": "resume-after-a-crash",
    "A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL": "approval-gate",
    "A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE": "hedged-requests",
    "THE_FIRST_K_LEAVES_ANSWER": "first-k-of-n",
    "THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET": "token-budget",
    "A_REPLY_IS_HELD_TO_ITS_CONTRACT": "typed-replies",
    "ONE_RUN_MANY_SUPERVISORS": "many-supervisors",
}


def names() -> dict[int, str]:
    """Each law of the catalogue's name in ``lessons._course.laws``, by the law's id."""
    return {id(value): key for key, value in vars(laws).items() if isinstance(value, Law)}


def rule(law: Law) -> str:
    """A law's rule as a row's title: its first clause, capitalised."""
    text = (
        law.rule.split(": ", 1)[1] if law.rule.startswith(("serial:", "all at once:")) else law.rule
    )
    return text[0].upper() + text[1:]


def grid() -> str:
    """The grid, as the HTML the page includes."""
    numbers = sorted(steps())
    named = names()
    head = "".join(
        f'<th scope="col"><a href="../steps/{steps()[n]}/" title="step {n}">{n}</a></th>'
        for n in numbers
    )
    rows = []
    for law in LAWS:
        anchor = ANCHORS[named[id(law)]]
        flawed = law.flaw[0] if law.flaw else None
        cells = []
        for n in numbers:
            if n in law.steps:
                cells.append(f'<td class="keeps" title="step {n} keeps it"><span>kept</span></td>')
            elif n == flawed:
                cells.append(f'<td class="fails" title="step {n} fails it"><span>fails</span></td>')
            else:
                cells.append("<td></td>")
        rows.append(
            f'<tr><th scope="row"><a href="#{anchor}">{html.escape(rule(law))}</a></th>'
            + "".join(cells)
            + "</tr>"
        )
    return (
        '<div class="law-grid" markdown="0">\n'
        f"<p>The {len(LAWS)} laws of the course by step (<code>python -m lessons check "
        'N</code> runs step N\'s): <span class="key keeps">kept</span> the step is proven to '
        'keep it, <span class="key fails">fails</span> the step before them, whose test is a '
        'strict expected failure.</p>\n<p class="scroll-hint">The grid is wider than this '
        "screen: scroll it sideways to see every step.</p>\n"
        '<table class="laws">\n'
        f'<thead><tr><th scope="col">law</th>{head}</tr></thead>\n<tbody>\n'
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n</div>\n"
    )
