/* The "dispatch" player of every step page.
 *
 * Trio does not run in a browser, so the player runs nothing: it replays runs of the step that
 * were recorded on virtual time when the site was built (lessons/_course/dispatch.py writes them,
 * as the runner's --json data, to the file the container's .dispatch-data link points to). At
 * each instant of the player's clock, every card, result and bar is read off the recorded trace.
 * Without JavaScript the container keeps what it holds: the first scenario's timeline, as an SVG.
 */
(() => {
  "use strict";

  const SPEEDS = [0.25, 0.5, 1, 2, 4, 10, 50]; // virtual seconds per real second
  const SVG_NS = "http://www.w3.org/2000/svg";
  const SAID = { ready: "Press Dispatch to run it.", playing: "Running…", paused: "Paused." };
  const BUTTON = { ready: "Dispatch", playing: "Pause", paused: "Resume", done: "Dispatch again" };
  /* Seconds with two decimals, a tie rounded to even as Python's format does: the player shows
   * the times the terminal and the timelines show. */
  function seconds(t) {
    const scaled = t * 100;
    let rounded = Math.round(scaled);
    if (Math.abs(scaled % 1) === 0.5 && rounded % 2 !== 0) rounded -= 1;
    return `${(rounded / 100).toFixed(2)}s`;
  }
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  /* A failure whose worker process died (its error a WorkerCrashed) is shown as a crash, apart
   * from an exception the worker raised: the timelines of the site tell them apart too. */
  const CRASH = "WorkerCrashed";
  const crashed = (error) =>  /* its kind, or the kind of the failure it reports (escalated) */
    typeof error === "string" && error.split(":").some((part) => part.trim() === CRASH);
  const shownStatus = (status, error) =>
    status === "failed" && crashed(error) ? "crashed" : status;

  const escape = (text) =>
    text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  /* An element with attributes ("text" sets its text) and children. */
  function make(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  /* What a slot is at virtual time t of a run that ends at `end`: its card's state (idle,
   * running, ok, failed, crashed, timed out, cancelled) and a few words on its times. The last attempt's
   * ending is the slot's status as the run reported it (a timeout, not the cancellation the
   * worker saw); an attempt a retry followed is shown as it ended. */
  function slotAt(slot, t, end) {
    const spans = slot.spans;
    if (slot.journaled && !spans.length) {  /* a resumed run took it from the journal */
      return { state: slot.status || "ok", when: "↺ from the journal, not run again" };
    }
    for (let index = spans.length - 1; index >= 0; index -= 1) {
      const span = spans[index];
      if (span.start > t) continue;
      if (span.end === null || t < span.end) {
        const attempt = index > 0 ? `attempt ${index + 1}, ` : "";
        const when = t >= end ? "still running" : `running ${seconds(t - span.start)}`;
        return { state: "running", when: `${attempt}from ${seconds(span.start)} · ${when}` };
      }
      if (index < spans.length - 1) {
        const state = shownStatus(span.status, span.error);
        return { state, when: `attempt ${index + 1} ${state}, to retry` };
      }
      return {
        state: shownStatus(slot.status || span.status, span.error),
        when: `${seconds(slot.started)} → ${seconds(span.end)}`,
      };
    }
    if (t >= end) return { state: slot.status || "idle", when: "never ran" };
    return { state: "idle", when: t < slot.planned ? "not pulled yet" : "waiting for a worker" };
  }

  /* When result `result` (of slot `slot`) is in the list the run returns: when the caller was
   * handed it (a stream), else when its slot ended, else when the run returned. */
  function resultTime(result, slot, end) {
    if (slot.journaled && !slot.spans.length) return 0; /* in from the journal at once */
    const time = slot.delivered ?? result.finished ?? end;
    return Math.min(time, end);
  }

  function outcome(run) {
    const end = seconds(run.trace.wall);
    if (run.stopped !== null) {
      const guard = `the runner's guard stopped it at ${end}`;
      return `The run ${run.error}. It would wait forever: ${guard}.`;
    }
    if (run.error !== null) return `The run raised ${run.error} at ${end}.`;
    const got = run.aggregate;
    const degraded = got.degraded ? ", degraded" : "";
    const died = got.results.filter((result) => crashed(result.error)).length;
    const of = died ? ` (${died} of them crashed: the process died)` : "";
    const kept = run.trace.slots.filter((slot) => slot.journaled).length;
    const resumed =
      run.killed_at != null
        ? ` It is the resume of a run whose supervisor was killed at ${seconds(run.killed_at)}` +
          ` (simulated): ${plural(kept, "slot")} came from the journal.`
        : "";
    return (
      `The run returned ${plural(got.results.length, "result")} at ${end}: ` +
      `${got.succeeded} ok, ${got.failed} failed${of}${degraded}.${resumed}`
    );
  }

  /* The timeline at virtual time t, as SVG markup: a row per slot, waiting (a thin line) then
   * each attempt (a bar, blue while it runs, coloured by how it ended), then held (pale: done,
   * not yet handed over), and the clock's line. */
  function timeline(run, t) {
    const slots = run.trace.slots;
    const right = Math.max(run.trace.wall, 0.01);
    const [left, width, top, row] = [170, 450, 22, 24];
    const x = (time) => left + (Math.min(time, t) / right) * width;
    const height = top + row * slots.length + 6;
    const parts = [
      `<text class="dt-tick" x="${left}" y="14">0s</text>`,
      `<text class="dt-tick" x="${left + width}" y="14" text-anchor="end">${seconds(right)}</text>`,
    ];
    slots.forEach((slot, index) => {
      const y = top + index * row;
      const name = String(slot.subtask);
      const label = `${slot.slot}  ${name.length > 18 ? `${name.slice(0, 17)}…` : name}`;
      parts.push(`<text class="dt-label" x="4" y="${y + 16}" xml:space="preserve">` +
        `${escape(label)}</text>`);
      if (t < slot.planned) return;
      let from = slot.planned;
      for (const span of slot.spans) {
        if (span.start > t) break;
        if (span.start > from) {
          parts.push(`<rect class="dt-waiting" x="${x(from)}" y="${y + 11}" ` +
            `width="${x(span.start) - x(from)}" height="2"/>`);
        }
        const ended = span.end !== null && span.end <= t;
        const last = span === slot.spans[slot.spans.length - 1];
        const state = !ended ? "running"
          : shownStatus(last ? slot.status || span.status : span.status, span.error);
        const stop = span.end === null ? t : span.end;
        parts.push(`<rect class="dt-bar dt-${state.replace(" ", "-")}" x="${x(span.start)}" ` +
          `y="${y + 5}" width="${Math.max(x(stop) - x(span.start), 1)}" height="14"/>`);
        from = stop;
      }
      const next = slot.spans.find((span) => span.start > t);
      const over = slot.spans.length && !next; // its last attempt has started
      if (!over && x(t) > x(from)) {
        parts.push(`<rect class="dt-waiting" x="${x(from)}" y="${y + 11}" ` +
          `width="${x(t) - x(from)}" height="2"/>`);
      }
      if (slot.delivered !== null && slot.finished !== null && slot.delivered > slot.finished &&
          t > slot.finished) {
        parts.push(`<rect class="dt-held" x="${x(slot.finished)}" y="${y + 5}" ` +
          `width="${x(slot.delivered) - x(slot.finished)}" height="14"/>`);
      }
    });
    const now = left + (Math.min(t, right) / right) * width;
    parts.push(`<line class="dt-now" x1="${now}" y1="${top - 4}" x2="${now}" y2="${height}"/>`);
    return { markup: parts.join(""), height };
  }

  class Player {
    constructor(root, recorded) {
      this.root = root;
      this.scenarios = recorded.scenarios;
      this.speed = 1;
      this.playing = false;
      this.frame = null;
      this.build(recorded.default);
    }

    build(chosen) {
      const root = this.root;
      this.choice = make("select", { class: "dispatch-scenario" });
      for (const scenario of this.scenarios) {
        this.choice.append(make("option", { value: scenario.key, text: scenario.label }));
      }
      this.choice.value = chosen;
      this.choice.addEventListener("change", () => this.load(this.choice.value));
      this.speeds = make("select", { class: "dispatch-speed" });
      for (const speed of SPEEDS) {
        this.speeds.append(make("option", { value: String(speed), text: `${speed}×` }));
      }
      this.speeds.value = String(this.speed);
      this.speeds.addEventListener("change", () => { this.speed = Number(this.speeds.value); });
      const button = (css, text) => make("button", { type: "button", class: css, text });
      this.button = button("dispatch-play", "Dispatch");
      this.button.addEventListener("click", () => this.toggle());
      const restart = button("dispatch-restart", "Restart");
      restart.addEventListener("click", () => { this.reset(); this.play(); });
      this.clock = make("span", { class: "dispatch-clock" });
      this.options = make("p", { class: "dispatch-options" });
      this.cards = make("ul", { class: "dispatch-cards" });
      this.results = make("ol", { class: "dispatch-results", "aria-live": "polite" });
      this.nothing = make("p", { class: "dispatch-nothing" });
      this.chart = document.createElementNS(SVG_NS, "svg");
      this.chart.setAttribute("class", "dispatch-timeline");
      this.chart.setAttribute("role", "img");
      this.outcome = make("p", { class: "dispatch-outcome", role: "status" });
      const player = make("div", { class: "dispatch-player" },
        make("div", { class: "dispatch-controls" },
          make("label", {}, "Scenario ", this.choice), this.button, restart,
          make("label", {}, "Speed ", this.speeds), this.clock),
        this.options,
        make("div", { class: "dispatch-board" },
          make("section", { "aria-label": "sub-agents" },
            make("h4", { text: "The sub-agents" }), this.cards),
          make("section", { "aria-label": "results" },
            make("h4", { text: "What the run returns, in its order" }), this.results,
            this.nothing)),
        this.chart, this.outcome);
      root.querySelector(".dispatch-fallback")?.setAttribute("hidden", "");
      root.prepend(player);
      this.load(chosen);
    }

    /* Show scenario `key` at virtual time 0, paused. */
    load(key) {
      this.run = this.scenarios.find((scenario) => scenario.key === key).run;
      this.root.dataset.scenario = key;
      const shown = (value) =>
        value === null ? "none" : Array.isArray(value) ? `(${value.join(", ")})` : value;
      const options = Object.entries(this.run.options)
        .map(([name, value]) => `${name}=${shown(value)}`).join(", ");
      this.options.textContent = `${this.run.task} · ${options || "no options"}`;
      this.cards.replaceChildren(...this.run.trace.slots.map((slot) => make("li",
        { class: "dispatch-card", "data-slot": slot.slot },
        make("span", { class: "dispatch-name", text: `${slot.slot} · ${slot.subtask}` }),
        make("span", { class: "dispatch-state" }),
        make("span", { class: "dispatch-when" }),
        make("span", { class: "dispatch-attempts" }))));
      const results = this.run.aggregate ? this.run.aggregate.results : [];
      this.results.replaceChildren(...results.map((result) => make("li",
        { class: "dispatch-result", "data-slot": result.slot, hidden: "" },
        make("span", { class: "r-slot", text: `slot ${result.slot}` }),
        make("span", {
          class: `r-status dispatch-${shownStatus(result.status, result.error).replace(" ", "-")}`,
          text: shownStatus(result.status, result.error) }),
        make("span", { class: "r-text", text: result.error ?? result.output }))));
      this.reset();
    }

    reset() {
      this.pause();
      this.time = 0;
      this.said = null;
      this.show("ready");
    }

    toggle() {
      if (this.playing) this.pause();
      else {
        if (this.time >= this.run.trace.wall) this.reset();
        this.play();
      }
    }

    play() {
      this.playing = true;
      let last = null;
      const step = (now) => {
        if (last !== null) this.time += ((now - last) / 1000) * this.speed;
        last = now;
        const end = this.run.trace.wall;
        if (this.time >= end) {
          this.time = end;
          this.playing = false;
          this.frame = null;
          this.show("done");
          return;
        }
        this.show("playing");
        this.frame = requestAnimationFrame(step);
      };
      this.frame = requestAnimationFrame(step);
      this.show("playing");
    }

    pause() {
      if (this.frame !== null) cancelAnimationFrame(this.frame);
      this.frame = null;
      this.playing = false;
      if (this.time > 0) this.show("paused");
    }

    /* Draw the run at this.time, the player being in `state`. */
    show(state) {
      const run = this.run;
      const [t, end] = [this.time, run.trace.wall];
      this.root.dataset.player = state;
      this.button.textContent = BUTTON[state];
      this.clock.textContent = `${seconds(t)} / ${seconds(end)}`;
      run.trace.slots.forEach((slot, index) => {
        const card = this.cards.children[index];
        const now = slotAt(slot, t, end);
        card.dataset.state = now.state;
        card.querySelector(".dispatch-state").textContent = now.state;
        card.querySelector(".dispatch-when").textContent = now.when;
        const tried = slot.spans.filter((span) => span.start <= t).length;
        card.querySelector(".dispatch-attempts").textContent = tried > 1 ? `${tried} attempts` : "";
      });
      const results = run.aggregate ? run.aggregate.results : [];
      const shown = results.map((result) =>
        t >= end || t >= resultTime(result, run.trace.slots[result.slot], end));
      const reached = shown.lastIndexOf(true); // a hole before it: an earlier slot still going
      this.nothing.hidden = reached >= 0;
      this.nothing.textContent = state !== "done" ? "Nothing yet."
        : run.stopped !== null ? "Nothing: the run never returns."
          : run.error !== null ? "Nothing: the run raised." : "An empty list.";
      results.forEach((result, index) => {
        const item = this.results.children[index];
        item.hidden = index > reached;
        item.classList.toggle("dispatch-hole", !shown[index]);
      });
      const { markup, height } = timeline(run, t);
      this.chart.setAttribute("viewBox", `0 0 630 ${height}`);
      this.chart.setAttribute("aria-label", `timeline of the run at ${seconds(t)}`);
      this.chart.innerHTML = markup;
      const said = state === "done" ? outcome(run) : SAID[state];
      if (said !== this.said) this.outcome.textContent = this.said = said;
    }
  }

  function start(root) {
    const link = root.querySelector("a.dispatch-data");
    if (!link) return;
    root.dataset.player = "loading";
    fetch(link.href)
      .then((response) => {
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        return response.json();
      })
      .then((recorded) => new Player(root, recorded))
      .catch((error) => {
        root.dataset.player = "unloaded";
        root.prepend(make("p", { class: "dispatch-outcome",
          text: `The recorded runs could not be loaded (${error.message}): the timeline below ` +
            "is the first scenario's." }));
      });
  }

  const all = () => document.querySelectorAll(".dispatch").forEach(start);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();
