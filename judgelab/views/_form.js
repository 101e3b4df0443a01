// The rating form of the queue pages, in the browser: choices, criteria, comment, flag, buttons.
//
// Everything the rater does before Submit stays in this page: a score key or a click
// changes the form at once, with no message to the server. Back, Skip, Forward and Submit
// send one trigger ("action") with the values and the active seconds; the server answers
// with the next item's data. Shortcuts are read on the whole document, so they work
// whatever has focus; inside a text box only Ctrl+Enter and Escape do something.

const forms = new WeakMap();
// The rater's values per item key, kept for the page's life: going back and forth
// between items in one session never loses an unsent edit, and the item's clock
// keeps counting only while it is on screen.
const drafts = new Map();

const IDLE_EVENTS = ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "input"];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "cls") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c) node.appendChild(c);
  return node;
}

function typing(target) {
  const t = target && target.tagName;
  return t === "TEXTAREA" || (t === "INPUT" && target.type !== "checkbox");
}

// Active time: visible, and not idle beyond the cap since the last input.
class Clock {
  constructor(capMs) {
    this.capMs = capMs;
    this.activeMs = 0;
    this.last = performance.now();
    this.lastInput = this.last;
    this.visible = document.visibilityState === "visible";
  }
  tick() {
    const now = performance.now();
    if (this.visible) {
      // Idle beyond the cap does not count: only up to capMs after the last input.
      const until = Math.min(now, this.lastInput + this.capMs);
      if (until > this.last) this.activeMs += until - this.last;
    }
    this.last = now;
  }
  input() { this.tick(); this.lastInput = performance.now(); }
  // Back on screen: count from now, not from when the rater left it.
  resume() { this.last = performance.now(); this.lastInput = this.last; this.visible = document.visibilityState === "visible"; }
  visibility() { this.tick(); this.visible = document.visibilityState === "visible"; this.lastInput = performance.now(); }
  seconds() { this.tick(); return Math.round(this.activeMs) / 1000; }
}

class RatingForm {
  constructor(shadow, send) {
    this.shadow = shadow;
    this.root = shadow.querySelector(".jl-mount") || shadow;
    this.send = send;
    this.onKey = (e) => this.key(e);
    this.onActivity = () => this.clock && this.clock.input();
    this.onVisibility = () => this.clock && this.clock.visibility();
    document.addEventListener("keydown", this.onKey, true);
    for (const name of IDLE_EVENTS) document.addEventListener(name, this.onActivity, true);
    document.addEventListener("visibilitychange", this.onVisibility);
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey, true);
    for (const name of IDLE_EVENTS) document.removeEventListener(name, this.onActivity, true);
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  update(data, send) {
    this.send = send;
    if (this.data && this.data.item === data.item && this.data.rev === data.rev) return;
    const early = this.early || [];
    const moved = !this.data || this.data.item !== data.item;
    this.early = [];
    this.data = data;
    let draft = drafts.get(data.item);
    if (!draft) {
      draft = {
        values: {
          choice: data.choice.value,
          criteria: Object.fromEntries((data.criteria || []).map((c) => [c.id, c.value])),
          touched: new Set((data.criteria || []).filter((c) => c.value !== null).map((c) => c.id)),
          comment: data.comment.value || "",
          flag: !!(data.flag && data.flag.value),
          reason: (data.flag && data.flag.reason) || "",
        },
        clock: new Clock(1000 * data.idle_cap),
      };
      drafts.set(data.item, draft);
    }
    if (this.clock && this.clock !== draft.clock) this.clock.visibility();  // stop the old item's clock
    this.values = draft.values;
    this.clock = draft.clock;
    this.clock.resume();
    this.busy = false;
    this.render();
    this.say(data.error || data.notice || "", !!data.error);
    // Score keys pressed while the next item was on its way are its score; when the
    // server kept the rater on the same item (a refusal), they are dropped.
    if (moved && !data.error) {
      for (const k of early) {
        const option = data.choice.options.find((o) => o.key === k);
        if (option) this.pick(option.value);
        const go = this.navigation(k);
        if (go) { this.act(go); break; }  // the next answer brings the next item; later keys wait for it
      }
    }
  }

  // -- drawing ------------------------------------------------------------------------------

  render() {
    const d = this.data;
    const v = this.values;
    // The guide's toggle event comes a task later than the click: read it off the page.
    const shown = this.root.querySelector("details.jl-guide");
    if (shown) this.guideOpen = shown.open;
    this.root.replaceChildren();
    const wide = (d.criteria || []).length > 0;
    const form = el("div", { cls: wide ? "jl-form" : "jl-form narrow", role: "form", "aria-label": d.title });
    const main = el("div", { cls: "jl-main" });
    main.appendChild(this.choiceGroup(d.choice));
    if ((d.criteria || []).length) {
      const crit = el("div", { cls: "jl-criteria" });
      for (const c of d.criteria) crit.appendChild(this.criterion(c));
      main.appendChild(crit);
    }
    const side = el("div", { cls: "jl-side" });
    if ((d.levels || []).length) {
      side.appendChild(el("div", { cls: "jl-heading", text: d.levels_title }));
      const list = el("ol", { cls: "jl-levels", "aria-label": "Score levels" });
      for (const [level, text] of d.levels) {
        list.appendChild(el("li", {}, el("span", { cls: "jl-level", text: level }), document.createTextNode(" " + text)));
      }
      side.appendChild(list);
    }
    if (d.pass_rule) side.appendChild(el("p", { cls: "jl-rule", text: d.pass_rule }));
    side.appendChild(this.textBox("textarea", d.comment.label, v.comment, (x) => { v.comment = x; }, "jl-comment"));
    if (d.flag) {
      const box = el("input", { type: "checkbox", id: "jl-flag" });
      box.checked = v.flag;
      box.addEventListener("change", () => this.setFlag(box.checked, false));
      side.appendChild(el("label", { cls: "jl-flag", for: "jl-flag" }, box,
        document.createTextNode(" " + d.flag.label + " "), el("kbd", { text: "U" })));
      if (v.flag) {
        side.appendChild(this.textBox("input", d.flag.reason_label, v.reason, (x) => { v.reason = x; }, "jl-reason"));
      }
    }
    side.appendChild(this.buttons());
    side.appendChild(el("p", { cls: "jl-keys", text: d.keys_help }));
    if (d.guide) {
      // The rubric's instructions, folded; redraws keep it open or closed as the rater left it.
      const guide = el("details", { cls: "jl-guide" }, el("summary", { text: d.guide.title }),
        el("p", { text: d.guide.text }));
      guide.open = !!this.guideOpen;
      side.appendChild(guide);
    }
    form.append(main, side);
    this.root.appendChild(form);
  }

  verdict() {
    const v = this.values.choice;
    if (v === null || v === undefined) return "Overall: not given yet · Pass: —";
    const passes = this.data.verdict.binary ? v >= 1 : v >= this.data.verdict.threshold;
    return `Overall: ${fmt(v)} · Pass: ${passes ? "pass" : "fail"}`;
  }

  choiceGroup(choice) {
    const box = el("div", { cls: "jl-choice" });
    const heading = el("div", { cls: "jl-heading", text: choice.label });
    if (this.data.verdict) {
      heading.appendChild(el("span", { cls: "jl-verdict", "aria-live": "polite", text: this.verdict() }));
    }
    box.appendChild(heading);
    const row = el("div", { cls: "jl-options wide", role: "radiogroup", "aria-label": choice.label, tabindex: "-1" });
    for (const o of choice.options) {
      const on = this.values.choice === o.value;
      const b = el("button", { type: "button", role: "radio", "aria-checked": on ? "true" : "false",
        cls: on ? "on" : "", tabindex: on || (this.values.choice === null && o === choice.options[0]) ? "0" : "-1",
        title: `key ${o.key.toUpperCase()}` }, el("span", { text: o.label }));
      b.addEventListener("click", () => this.pick(o.value));
      row.appendChild(b);
    }
    box.appendChild(row);
    return box;
  }

  criterion(c) {
    const wrap = el("div", { cls: "jl-crit" });
    wrap.appendChild(el("div", { cls: "jl-crit-name", text: c.name }));
    if (c.description) wrap.appendChild(el("div", { cls: "jl-crit-desc", text: c.description }));
    const row = el("div", { cls: "jl-options", role: "radiogroup", "aria-label": c.name, tabindex: "0",
      "data-criterion": c.id });
    for (const o of this.data.criterion_options) {
      const on = this.values.criteria[c.id] === o.value;
      const b = el("button", { type: "button", role: "radio", "aria-checked": on ? "true" : "false",
        cls: on ? "on" : "", tabindex: "-1" }, el("span", { text: o.label }));
      b.addEventListener("click", (e) => { e.stopPropagation(); this.setCriterion(c.id, o.value, false); row.focus(); });
      row.appendChild(b);
    }
    wrap.appendChild(row);
    return wrap;
  }

  textBox(tag, label, value, set, cls) {
    const id = `jl-${cls}`;
    const wrap = el("div", { cls: "jl-text" });
    wrap.appendChild(el("label", { for: id, text: label }));
    const box = el(tag, { id, cls, "aria-label": label });
    if (tag === "textarea") box.rows = 2;
    box.value = value;
    box.addEventListener("input", () => set(box.value));
    wrap.appendChild(box);
    return wrap;
  }

  buttons() {
    const d = this.data;
    const row = el("div", { cls: "jl-buttons" });
    const mk = (name, key, what, enabled, primary) => {
      const b = el("button", { type: "button", cls: primary ? "primary" : "", disabled: !enabled,
        "aria-keyshortcuts": key }, el("span", { text: name }), el("kbd", { text: key }));
      b.addEventListener("click", () => this.act(what));
      return b;
    };
    row.appendChild(mk("Back", "B", "back", d.can_back, false));
    if (d.editing) row.appendChild(mk("Forward", "F", "forward", true, false));
    else row.appendChild(mk("Skip", "S", "skip", true, false));
    row.appendChild(mk("Submit", "Ctrl+Enter", "submit", true, true));
    const wrap = el("div", { cls: "jl-submit" }, row);
    this.message = el("p", { cls: "jl-message", role: "alert" });
    wrap.appendChild(this.message);
    return wrap;
  }

  say(text, isError) {
    if (!this.message) return;
    this.message.textContent = text;
    this.message.classList.toggle("error", !!isError);
  }

  // -- changing values ------------------------------------------------------------------------

  pick(value) {
    const v = this.values;
    v.choice = value;
    if (this.data.follow) {
      // Untouched criteria follow the overall score.
      for (const c of this.data.criteria || []) if (!v.touched.has(c.id)) v.criteria[c.id] = value;
    }
    this.redraw();
  }

  setCriterion(id, value, advance) {
    this.values.criteria[id] = value;
    this.values.touched.add(id);
    this.redraw(id, advance);
  }

  setFlag(on, focusReason) {
    this.values.flag = on;
    this.redraw();
    if (on && focusReason !== false) {
      const reason = this.root.querySelector(".jl-reason");
      if (reason) reason.focus();
    }
  }

  redraw(focusCriterion, advance) {
    const active = this.shadow.activeElement;
    const activeCls = active && active.className;
    const activeCrit = active && active.getAttribute && active.getAttribute("data-criterion");
    this.render();
    this.say("", false);
    let target = null;
    if (focusCriterion !== undefined) {
      const rows = [...this.root.querySelectorAll("[data-criterion]")];
      const i = rows.findIndex((r) => r.getAttribute("data-criterion") === focusCriterion);
      target = advance && i + 1 < rows.length ? rows[i + 1] : rows[i];
    } else if (activeCrit) {
      target = this.root.querySelector(`[data-criterion="${activeCrit}"]`);
    } else if (activeCls && (activeCls === "jl-comment" || activeCls === "jl-reason")) {
      target = this.root.querySelector("." + activeCls);
    }
    if (target) target.focus();
  }

  // -- keys -------------------------------------------------------------------------------------

  key(e) {
    if (!this.data || !this.root.isConnected) return;
    const path = e.composedPath();
    const target = path[0];
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      e.stopPropagation();
      this.act("submit");
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(target)) {
      if (e.key === "Escape") target.blur();
      return;  // plain keys type in text boxes
    }
    // Keys aimed at a Streamlit widget outside the form (e.g. the menu) are not ours.
    const inside = path.includes(this.shadow);
    if (!inside && target && target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (this.busy && (this.data.choice.options.some((o) => o.key === k) || ["b", "s", "f"].includes(k))) {
      // Sent, and the answer is not here yet: a score key is kept for the item that comes,
      // and so is Back, Skip or Forward (B at once after a submit goes back to that item).
      return this.consume(e, () => this.early.push(k));
    }
    const crit = path.find((n) => n.getAttribute && n.getAttribute("data-criterion"));
    if (this.criterionKey(e, k, crit)) return;
    const option = this.data.choice.options.find((o) => o.key === k);
    if (option) return this.consume(e, () => this.pick(option.value));
    const go = this.navigation(k);
    if (go) return this.consume(e, () => this.act(go));
    if (k === "u" && this.data.flag) return this.consume(e, () => this.setFlag(!this.values.flag, true));
    if (k === "c") return this.consume(e, () => this.root.querySelector(".jl-comment").focus());
    if ((k === "ArrowDown" || k === "ArrowUp") && (this.data.criteria || []).length) {
      return this.consume(e, () => {
        const rows = [...this.root.querySelectorAll("[data-criterion]")];
        (k === "ArrowDown" ? rows[0] : rows[rows.length - 1]).focus();
      });
    }
    if (k === "Escape" && this.shadow.activeElement) this.shadow.activeElement.blur();
  }

  /** The action a navigation key asks for on this item (Skip on new items, Forward on done ones). */
  navigation(k) {
    const nav = { b: "back", s: this.data.editing ? null : "skip", f: this.data.editing ? "forward" : null };
    return nav[k] || null;
  }

  criterionKey(e, k, crit) {
    if (!crit) return false;
    const id = crit.getAttribute("data-criterion");
    const options = this.data.criterion_options;
    const rows = [...this.root.querySelectorAll("[data-criterion]")];
    const i = rows.indexOf(crit);
    const byKey = options.find((o) => o.key === k);
    if (byKey) { this.consume(e, () => this.setCriterion(id, byKey.value, true)); return true; }
    if (k === "ArrowLeft" || k === "ArrowRight") {
      const now = options.findIndex((o) => o.value === this.values.criteria[id]);
      const next = Math.max(0, Math.min(options.length - 1,
        now < 0 ? (k === "ArrowRight" ? 0 : options.length - 1) : now + (k === "ArrowRight" ? 1 : -1)));
      this.consume(e, () => this.setCriterion(id, options[next].value, false));
      return true;
    }
    if (k === "ArrowDown" || k === "ArrowUp") {
      const j = i + (k === "ArrowDown" ? 1 : -1);
      if (j >= 0 && j < rows.length) this.consume(e, () => rows[j].focus());
      else this.consume(e, () => crit.blur());
      return true;
    }
    if (k === "Escape") { this.consume(e, () => crit.blur()); return true; }
    return false;
  }

  consume(e, run) {
    e.preventDefault();
    e.stopPropagation();
    run();
  }

  // -- sending ----------------------------------------------------------------------------------

  missing() {
    const d = this.data;
    const v = this.values;
    if (d.flag && v.flag) {
      return v.reason.trim() ? null : ["Say why it cannot be rated, or untick the flag.", ".jl-reason"];
    }
    if (v.choice === null || v.choice === undefined) return [d.choice.missing, null];
    const blank = (d.criteria || []).filter((c) => v.criteria[c.id] === null || v.criteria[c.id] === undefined);
    if (blank.length) {
      const names = blank.map((c) => c.name).join(", ");
      return [`Score every criterion first (missing: ${names}), or flag the item.`,
        `[data-criterion="${blank[0].id}"]`];
    }
    return null;
  }

  act(what) {
    if (this.busy) return;
    if (what === "submit") {
      const problem = this.missing();
      if (problem) {
        this.say(problem[0], true);
        if (problem[1]) { const t = this.root.querySelector(problem[1]); if (t) t.focus(); }
        return;
      }
    }
    if (what === "back" && !this.data.can_back) return;
    this.busy = true;
    this.early = [];
    // The server answers with the next item; should the answer never come, let the rater retry.
    setTimeout(() => { this.busy = false; this.early = []; }, 8000);
    const v = this.values;
    const sent = (this.sent = (this.sent || 0) + 1);
    this.send({
      do: what,
      item: this.data.item,
      choice: v.choice,
      criteria: v.criteria,
      comment: v.comment,
      flag: v.flag,
      reason: v.reason,
      seconds: this.clock ? this.clock.seconds() : null,
      nonce: Math.random(),
    });
    // "Saving…" only after Streamlit's send (its own zero-delay timer, queued first): a page
    // changed before the send is laid out and painted before the message leaves.
    setTimeout(() => {
      if (this.busy && this.sent === sent) this.say(what === "submit" ? "Saving…" : "", false);
    }, 0);
  }
}

function fmt(v) {
  return Number.isInteger(v) ? String(v) : String(+v.toFixed(2));
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let form = forms.get(parentElement);
  const send = (payload) => setTriggerValue("action", payload);
  if (!form) {
    form = new RatingForm(parentElement, send);
    forms.set(parentElement, form);
  }
  form.update(data, send);
  return () => {
    form.destroy();
    forms.delete(parentElement);
  };
}
