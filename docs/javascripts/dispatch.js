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

  /* The index of the span that says how a slot ended, as the library's SlotTrace.deciding
   * picks it: the last attempt's; of a hedged race (the spans from the last one not a hedge
   * on) one still open if any, else the one that succeeded, else the one that ended last. */
  function deciding(spans) {
    if (!spans.length) return null;
    let first = spans.length - 1;
    while (first > 0 && spans[first].hedge) first -= 1;
    const race = [...spans.keys()].slice(first);
    const open = race.find((index) => spans[index].end === null);
    if (open !== undefined) return open;
    const won = race.find((index) => spans[index].status === "ok" && !spans[index].lost);
    if (won !== undefined) return won;
    return race.reduce((best, index) => (spans[index].end >= spans[best].end ? index : best));
  }

  /* What a slot is at virtual time t of a run that ends at `end`: its card's state (idle,
   * running, ok, failed, crashed, timed out, cancelled) and a few words on its times. Its
   * deciding attempt's ending is the slot's status as the run reported it (a timeout, not the
   * cancellation the worker saw), shown once the slot is over; an attempt a retry followed is
   * shown as it ended; while any attempt runs (a hedged slot runs several), the slot runs. */
  function slotAt(slot, t, end) {
    const spans = slot.spans;
    if (slot.journaled && !spans.length) {  /* a resumed run took it from the journal */
      return { state: slot.status || "ok", when: "↺ from the journal, not run again" };
    }
    for (let index = spans.length - 1; index >= 0; index -= 1) {
      const span = spans[index];
      if (span.start <= t && (span.end === null || t < span.end)) {
        const attempt = index > 0 ? `attempt ${index + 1}, ` : "";
        const when = t >= end ? "still running" : `running ${seconds(t - span.start)}`;
        return { state: "running", when: `${attempt}from ${seconds(span.start)} · ${when}` };
      }
    }
    const decided = deciding(spans);
    if (decided !== null && slot.finished !== null && t >= slot.finished) {
      const span = spans[decided];
      return {
        state: shownStatus(slot.status || span.status, span.error),
        when: `${seconds(slot.started)} → ${seconds(slot.finished)}`,
      };
    }
    let ended = null; /* the attempt that ended last by t: a retry follows it */
    spans.forEach((span, index) => {
      if (span.end !== null && span.end <= t && (ended === null || span.end >= spans[ended].end)) {
        ended = index;
      }
    });
    if (ended !== null) {
      const state = shownStatus(spans[ended].status, spans[ended].error);
      return { state, when: `attempt ${ended + 1} ${state}, to retry` };
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

  /* The timeline at virtual time t, as SVG markup, from the run's drawing (the rows the site's
   * SVG timelines are drawn from: a tree's child runs under their parents, each bar's class its
   * ending's or its mark's, a hedge's bar its number k after it): every stretch clipped to t,
   * an attempt still running at t drawn as running, a hedged row's k-th hedge as a lower bar
   * (the row's bar height split in lanes, the attempt on top), then the grid, the ticks and the
   * clock's line. `endings` is the file's table: each bar is filled with its ending's colour. */
  function timeline(drawing, t, wall, endings) {
    const rows = drawing.rows;
    const right = Math.max(wall, 0.01);
    const chars = Math.max(7, ...rows.map((row) => row.label.length));
    const [left, width, top, row] = [8 + (chars + 5) * 7.3, 450, 22, 24];
    const x = (time) => left + (Math.min(time, t) / right) * width;
    const bottom = top + row * rows.length;
    const height = bottom + 24;
    const fill = (css) => (endings[css] && endings[css].fill) || "";
    const parts = [];
    for (const tick of drawing.ticks) {
      const at = left + (tick / right) * width;
      parts.push(`<line class="dt-grid" x1="${at}" y1="${top - 4}" x2="${at}" y2="${bottom}"/>`);
      if (left + width - at >= 44) {
        parts.push(`<text class="dt-tick" x="${at}" y="${bottom + 16}" text-anchor="middle">` +
          `${Number(tick.toFixed(6))}s</text>`);
      }
    }
    parts.push(`<text class="dt-tick dt-wall" x="${left + width}" y="${bottom + 16}" ` +
      `text-anchor="middle">${seconds(right)}</text>`);
    rows.forEach((drawn, index) => {
      const y = top + index * row;
      parts.push(`<text class="dt-label" x="4" y="${y + 16}" xml:space="preserve">` +
        `<title>${escape(drawn.title)}</title>${escape(`${drawn.slot}`.padStart(3))}  ` +
        `${escape(drawn.label)}</text>`);
      const lanes = 1 + Math.max(0, ...drawn.bars.map((bar) => bar[3] || 0));
      const tall = 14 / lanes;
      /* each lane's right edge of the attempt before: two never touch */
      const after = Array(lanes).fill(-Infinity);
      for (const [start, end, css, hedge = 0] of drawn.bars) {
        if (start > t) continue;
        const from = x(start);
        if (css === "ts-waiting" || css === "ts-asked") {
          const thick = css === "ts-waiting" ? 2 : 4;
          parts.push(`<rect class="dt-${css.slice(3)}" x="${from}" y="${y + 12 - thick / 2}" ` +
            `width="${Math.max(x(end) - from, 0)}" height="${thick}"/>`);
        } else if (css === "ts-held") {
          parts.push(`<rect class="dt-held" x="${from}" y="${y + 5}" ` +
            `width="${Math.max(x(end) - from, 0)}" height="14"/>`);
        } else {
          const start_x = Math.max(from, after[hedge] + 2);
          const w = Math.max(x(end) - start_x, 2);
          after[hedge] = start_x + w;
          const shown = end <= t ? css : "ts-running";
          const lane = hedge ? " dt-hedge" : "";
          parts.push(`<rect class="dt-bar ${shown}${lane}" fill="${fill(shown)}" ` +
            `x="${start_x}" y="${y + 5 + hedge * tall}" width="${w}" height="${tall}" rx="2"/>`);
        }
      }
    });
    const now = left + (Math.min(t, right) / right) * width;
    parts.push(`<line class="dt-now" x1="${now}" y1="${top - 4}" x2="${now}" y2="${bottom}"/>`);
    return { markup: parts.join(""), height, width: left + width + 24 };
  }

  /* The legend under the player's timeline: each key of the run's drawing, a swatch in its
   * colour (an ending's from the table, a mark's from the stylesheet) and its words. */
  function legendItems(drawing, endings) {
    const keys = drawing.legend.slice();
    const running = endings["ts-running"];
    if (running && !keys.some(([css]) => css === "ts-running")) {
      keys.push(["ts-running", `${running.glyph} running`]); /* every attempt, while it runs */
    }
    return keys.map(([css, text]) => {
      const swatch = make("span", { class: `dispatch-swatch dt-${css.slice(3)}` });
      if (endings[css] && endings[css].fill) swatch.style.background = endings[css].fill;
      if (css === "ts-blank") swatch.hidden = true;
      return make("li", { "data-key": css }, swatch, make("span", { text }));
    });
  }

  class Player {
    constructor(root, recorded) {
      this.root = root;
      this.scenarios = recorded.scenarios;
      this.endings = recorded.endings || {};
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
      /* every label the button takes, stacked in one place, only the current one visible: the
       * button is as wide as its widest label, so no control moves as its text changes */
      this.button = make("button", { type: "button", class: "dispatch-play" },
        ...Object.entries(BUTTON).map(([state, text]) =>
          make("span", { "data-label": state, text })));
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
      this.legend = make("ul", { class: "dispatch-legend", "aria-label": "legend" });
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
        this.chart, this.legend, this.outcome);
      root.querySelector(".dispatch-fallback")?.setAttribute("hidden", "");
      root.prepend(player);
      this.load(chosen);
    }

    /* Show scenario `key` at virtual time 0, paused. */
    load(key) {
      const scenario = this.scenarios.find((item) => item.key === key);
      this.run = scenario.run;
      this.drawing = scenario.drawing;
      this.legend.replaceChildren(...legendItems(this.drawing, this.endings));
      /* the clock as wide as its widest reading, so that nothing beside it moves */
      this.clock.style.minWidth = `${2 * seconds(this.run.trace.wall).length + 3}ch`;
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
          style: `--dispatch-colour: ${this.colour(shownStatus(result.status, result.error))}`,
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

    /* The colour of a card's or a result's state, from the table of endings (a state is an
     * ending's word: ok, failed, crashed...); idle takes the stylesheet's. */
    colour(state) {
      const drawn = this.endings[`ts-${state.replace(/ /g, "-")}`];
      return drawn && drawn.ink ? drawn.ink : "var(--dispatch-idle)";
    }

    /* Draw the run at this.time, the player being in `state`. */
    show(state) {
      const run = this.run;
      const [t, end] = [this.time, run.trace.wall];
      this.root.dataset.player = state;
      for (const label of this.button.children) {
        const current = label.dataset.label === state;
        label.classList.toggle("dispatch-shown", current);
        label.setAttribute("aria-hidden", current ? "false" : "true");
      }
      this.clock.textContent = `${seconds(t)} / ${seconds(end)}`;
      run.trace.slots.forEach((slot, index) => {
        const card = this.cards.children[index];
        /* before it is dispatched, nothing has run: every card idle */
        const now = state === "ready" ? { state: "idle", when: "not dispatched yet" }
          : slotAt(slot, t, end);
        card.dataset.state = now.state;
        card.style.setProperty("--dispatch-colour", this.colour(now.state));
        card.querySelector(".dispatch-state").textContent = now.state;
        card.querySelector(".dispatch-when").textContent = now.when;
        const tried = state === "ready" ? 0 : slot.spans.filter((span) => span.start <= t).length;
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
      const { markup, height, width } = timeline(this.drawing, t, end, this.endings);
      // drawn at its own size, one unit a pixel: its 12 px text stays 12 px at any width of
      // the page (a narrow one scrolls it sideways, as every timeline)
      this.chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
      this.chart.setAttribute("width", width);
      this.chart.setAttribute("height", height);
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
