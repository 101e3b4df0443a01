// The rating form of the queue pages, in the browser: choices, criteria, comment, flag, buttons.
//
// Everything the rater does before Submit stays in this page: a score key or a click
// changes the form at once, with no message to the server. Back, Skip, Forward and Submit
// send one trigger ("action") with the values and the active seconds; the server answers
// with the next item's data. Shortcuts are read on the whole document, so they work
// whatever has focus; inside a text box only Ctrl+Enter and Escape do something.
//
// No key is lost: while an action is on its way ("busy") the form's keys wait in a queue
// and are replayed on the item that comes; a key that cannot be acted on (a refusal came
// back, no answer came within GIVE_UP_MS, F on a new item) is named in the message at the
// Submit button. One timer per action, cleared by the answer, so an old action's timer
// never touches a later one's keys.
//
// A rubric that rates each assistant turn adds one score row per turn ("turns"): they travel
// with the criteria (ids "#turn-<n>"), are walked like criterion rows (arrows, digits), never
// follow the overall score, and are all required; T jumps to the first one without a score, and
// the row with focus scrolls its turn into view in the transcript and marks it there. Each turn's
// heading in the transcript also gets the same score as buttons (decorateTurns), beside the turn.
//
// Unsent work survives a reload: the values of an item the rater changed are kept in the
// browser's localStorage (keyed by the server's per-link scope and the item key, which
// names the label the form showed), restored when the item is drawn again, and removed
// once a submit of it is answered.

const forms = new WeakMap();
// The rater's values per item key, kept for the page's life: going back and forth
// between items in one session never loses an unsent edit, and the item's clock
// keeps counting only while it is on screen.
const drafts = new Map();

const IDLE_EVENTS = ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "input"];
// After WAIT_MS without the server's answer the form says it is still saving (the keys stay
// queued: a loaded server answers late, not never); after GIVE_UP_MS it gives up, names
// the queued keys as not used, and lets the rater act again.
const WAIT_MS = 8000;
const GIVE_UP_MS = 60000;
// A scale with more levels than digits takes two keys ("1" then "0" is 10): after a digit that
// starts a longer key, the form waits this long for the second one.
const DIGIT_MS = 900;
const DRAFT_PREFIX = "judgelab-draft:";
// Drafts older than this are dropped when a form starts (an item labelled elsewhere since).
const DRAFT_DAYS = 30;

// The browser's storage of unsent drafts; every call tolerates a browser that refuses it.
const stored = {
  key: (scope, item) => `${DRAFT_PREFIX}${scope}:${item}`,
  load(scope, item) {
    try { const raw = localStorage.getItem(this.key(scope, item)); return raw ? JSON.parse(raw).values : null; }
    catch (e) { return null; }
  },
  save(scope, item, values) {
    try { localStorage.setItem(this.key(scope, item), JSON.stringify({ at: Date.now(), values })); }
    catch (e) { /* full or disabled: the in-page draft still holds the values */ }
  },
  remove(scope, item) { try { localStorage.removeItem(this.key(scope, item)); } catch (e) { /* as above */ } },
  prune() {
    try {
      const old = Date.now() - DRAFT_DAYS * 86400000;
      for (let i = localStorage.length - 1; i >= 0; i--) {
        const k = localStorage.key(i);
        if (!k || !k.startsWith(DRAFT_PREFIX)) continue;
        let at = 0;
        try { at = JSON.parse(localStorage.getItem(k)).at || 0; } catch (e) { at = 0; }
        if (at < old) localStorage.removeItem(k);
      }
    } catch (e) { /* as above */ }
  },
};
let pruned = false;

// A key as the rater would name it in a message.
function keyName(k) {
  return k === "submit" ? "Ctrl+Enter" : k.length === 1 ? k.toUpperCase() : k;
}

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
    releaseHeld(this);
    clearTimeout(this.timer);
    clearTimeout(this.decorateTimer);
    document.removeEventListener("keydown", this.onKey, true);
    for (const name of IDLE_EVENTS) document.removeEventListener(name, this.onActivity, true);
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  update(data, send) {
    this.send = send;
    if (this.data && this.data.item === data.item && this.data.rev === data.rev) return;
    if (!pruned) { pruned = true; stored.prune(); }
    // A new form first takes the keys the key catcher held before its script ran.
    const first = !this.data;
    let early = first ? adoptHeld(this) : this.early || [];
    const moved = !this.data || this.data.item !== data.item;
    const pending = this.pending;
    clearTimeout(this.timer);  // the answer is here: this action's timer must not fire later
    this.timer = null;
    this.pending = null;
    this.early = [];
    // A submit answered with another item (saved, or refused because another tab labelled
    // it): its kept draft is done with. A refusal on the same item keeps it.
    if (pending && pending.what === "submit" && moved) stored.remove(pending.scope, pending.item);
    this.data = data;
    let draft = drafts.get(data.item);
    let restored = false;
    if (!draft) {
      const fresh = this.initial(data);
      const kept = data.draft_scope ? stored.load(data.draft_scope, data.item) : null;
      restored = !!kept;
      draft = { values: kept ? { cut: {}, ...kept, touched: new Set(kept.touched || []) } : fresh, clock: new Clock(1000 * data.idle_cap) };
      drafts.set(data.item, draft);
    }
    if (this.clock && this.clock !== draft.clock) this.clock.visibility();  // stop the old item's clock
    this.values = draft.values;
    this.clock = draft.clock;
    this.clock.resume();
    this.busy = false;
    this.render();
    const back = restored ? "Your unsent changes to this item are back (kept in this browser)." : "";
    // Keys given up on before this (late) answer came: still said, not overwritten by it.
    const lost = this.lost ? `${this.lost} ` : "";
    this.lost = "";
    this.say(lost + (data.error || data.notice || back), !!(data.error || lost));
    if (this.historyStep(data, first, early)) return;
    if (!early.length) return;
    if (data.error) {
      // The server refused the action (or the item changed under it): the keys pressed
      // meanwhile were meant for another screen than this one. Say so; act on none.
      this.refuseKeys(early, `${data.error} Keys pressed while it was saving were not used:`);
      return;
    }
    // Keys pressed while this item was on its way are for it, in order; an action among
    // them sends again, and the keys after it wait for the item that one brings. On a scale
    // with two-digit keys, a digit that starts a longer key and the digit after it are one
    // key ("1" then "0" held is 10), as they are when typed on the live form in time.
    early = joinDigits(early, data.choice.options);
    for (let i = 0; i < early.length; i++) {
      // A lone first digit held last ("1" of 10) waits for its second as if typed now: the
      // item may have come between the two presses, and the "0" is still on its way.
      if (i === early.length - 1 && this.heldFirstDigit(early[i])) return;
      this.press(early[i]);
      if (this.busy) { this.early = early.slice(i + 1); this.queued(); return; }
    }
  }

  /** The form's values as the server sent them (the rater's current label, or none). */
  initial(data) {
    const rows = [...(data.criteria || []), ...(data.turns || [])];
    return {
      choice: data.choice.value,
      criteria: Object.fromEntries(rows.map((c) => [c.id, c.value])),
      touched: new Set(rows.filter((c) => c.value !== null).map((c) => c.id)),
      comment: data.comment.value || "",
      // Text box -> length of the text before it was cut to max_chars (see textBox).
      cut: {},
      flag: !!(data.flag && data.flag.value),
      reason: (data.flag && data.flag.reason) || "",
    };
  }

  /** Keep this item's values in the browser when they differ from what the server sent. */
  keep() {
    const d = this.data;
    if (!d || !d.draft_scope) return;
    const plain = (v) => JSON.stringify({ ...v, touched: [...v.touched].sort() });
    const now = { ...this.values, touched: [...this.values.touched].sort() };
    if (plain(this.values) === plain(this.initial(d))) stored.remove(d.draft_scope, d.item);
    else stored.save(d.draft_scope, d.item, now);
  }

  // -- drawing ------------------------------------------------------------------------------

  render() {
    const d = this.data;
    const v = this.values;
    // The guide's toggle event comes a task later than the click: read it off the page.
    const shown = this.root.querySelector("details.jl-guide");
    if (shown) this.guideOpen = shown.open;
    this.root.replaceChildren();
    const wide = (d.criteria || []).length > 0 || (d.turns || []).length > 0;
    const form = el("div", { cls: wide ? "jl-form" : "jl-form narrow", role: "form", "aria-label": d.title });
    const main = el("div", { cls: "jl-main" });
    main.appendChild(this.choiceGroup(d.choice));
    if ((d.criteria || []).length) {
      const crit = el("div", { cls: "jl-criteria" });
      for (const c of d.criteria) crit.appendChild(this.criterion(c));
      main.appendChild(crit);
    }
    if ((d.turns || []).length) {
      main.appendChild(el("div", { cls: "jl-heading", text: `Each assistant turn (${d.turns.length})` }));
      const turns = el("div", { cls: "jl-turns", role: "group", "aria-label": "Each assistant turn" });
      for (const t of d.turns) turns.appendChild(this.criterion(t));
      main.appendChild(turns);
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
    this.decorateTurns();
  }

  /**
   * A score control beside each scored turn in the transcript: buttons in the turn's heading
   * (the page draws it with ``data-jl-turn``), showing and setting the same value as the turn's
   * row here. The value lives in this form only (drafts, submit, keys: the row's); the buttons
   * are drawn again with every redraw, and once more shortly after, for a transcript drawn later.
   */
  decorateTurns() {
    const turns = this.data.turns || [];
    if (!turns.length) return;
    const draw = () => {
      for (const t of turns) {
        const head = document.querySelector(`[data-jl-turn="${t.turn}"]`);
        if (!head) continue;
        let box = head.querySelector(".jl-turn-control");
        if (!box) {
          box = el("span", { cls: "jl-turn-control", role: "radiogroup", "aria-label": `${t.name} score`,
            style: "margin-left: .6rem; display: inline-flex; gap: 3px; vertical-align: middle" });
          head.appendChild(box);
        }
        box.replaceChildren();
        for (const o of this.data.criterion_options) {
          const on = this.values.criteria[t.id] === o.value;
          const b = el("button", { type: "button", role: "radio", "aria-checked": on ? "true" : "false",
            tabindex: "-1", title: `${t.name}: ${o.label}`,
            style: "min-width: 1.7em; padding: 0 4px; border-radius: 5px; cursor: pointer; font: inherit; "
              + "font-size: 12px; border: 1px solid var(--st-primary-color, #ff4b4b); "
              + (on ? "background: var(--st-primary-color, #ff4b4b); color: #fff" : "background: transparent") },
          el("span", { text: o.label }));
          b.addEventListener("click", (e) => { e.preventDefault(); this.setCriterion(t.id, o.value, false); });
          box.appendChild(b);
        }
      }
    };
    draw();
    clearTimeout(this.decorateTimer);
    this.decorateTimer = setTimeout(draw, 400);
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
    if (c.turn) row.addEventListener("focus", () => showTurn(c.turn));
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
    const max = this.data.max_chars;
    const wrap = el("div", { cls: "jl-text" });
    // The counter shares the label's line: the form still fits a laptop screen without scrolling.
    const count = tag === "textarea" ? el("span", { cls: "jl-count", "aria-live": "polite" }) : null;
    wrap.appendChild(el("div", { cls: "jl-label-row" }, el("label", { for: id, text: label }), count));
    const box = el(tag, { id, cls, "aria-label": label });
    if (tag === "textarea") box.rows = 2;
    box.value = value;
    // The store keeps at most max_chars (MAX_COMMENT_CHARS); longer text is cut here, never sent (a
    // pasted page must not make a message past Streamlit's cap and hang the page), and the cut is
    // said at once under the box and again in the message after the submit. Not maxLength: the
    // browser would cut a paste without a word.
    // Characters are counted as the server counts them (code points: an emoji is one, not the two
    // UTF-16 units of String.length), so the counter, the cut and the stored text agree.
    const show = () => {
      const cut = this.values.cut[cls];
      const line = cut
        ? `Cut to ${num(max)} characters: the text you pasted had ${num(cut)}; only the first ${num(max)} are kept.`
        : `${num(codePoints(box.value))} / ${num(max)} characters`;
      if (count) {
        count.textContent = line;
        count.classList.toggle("error", !!cut);
      } else if (cut) {
        this.say(line, true);
      }
    };
    box.addEventListener("input", () => {
      const length = box.value.length > max ? codePoints(box.value) : box.value.length;
      if (length > max) {
        this.values.cut[cls] = Math.max(this.values.cut[cls] || 0, length);
        box.value = box.value.slice(0, unitsOf(box.value, max));
      } else if (!box.value) {
        delete this.values.cut[cls];  // emptied: nothing of the cut text is left to warn about
      }
      set(box.value);
      this.keep();
      show();
    });
    wrap.appendChild(box);
    if (count) show();
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
    if (d.reveals) {
      // The rater's own flag: the answer says who wrote it (the comment box, if filled, says how).
      const own = el("div", { cls: "jl-buttons" }, mk(d.reveals.label, "W", "reveals", true, false));
      own.firstChild.title = d.reveals.help;
      wrap.appendChild(own);
    }
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
    this.keep();
    this.redraw();
  }

  setCriterion(id, value, advance) {
    this.values.criteria[id] = value;
    this.values.touched.add(id);
    this.keep();
    this.redraw(id, advance);
  }

  setFlag(on, focusReason) {
    this.values.flag = on;
    this.keep();
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
    if (!this.data || !this.root.isConnected || !ownsPage(this)) return;
    const path = e.composedPath();
    const target = path[0];
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      // Busy: the submit waits for the item that comes, like the keys before it.
      return this.consume(e, () => (this.busy ? this.wait("submit") : this.act("submit")));
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
    const options = this.data.choice.options;
    const scoreKey = options.some((o) => o.key === k) || (/^[0-9]$/.test(k) && twoDigitScale(options));
    if (this.busy && k === "w" && this.data.reveals) {
      // W speaks of the answer on screen: never kept for one the rater has not read yet.
      return this.consume(e, () => this.refuseKeys(["w"], "Not used while saving (it is for the answer on screen):"));
    }
    if (this.busy && (scoreKey || ["b", "s", "f", "u", "c", "t"].includes(k))) {
      // Sent, and the answer is not here yet: a score key is kept for the item that comes,
      // and so are Back, Skip, Forward, the flag and the comment (B at once after a submit
      // goes back to that item).
      return this.consume(e, () => this.wait(k));
    }
    const crit = path.find((n) => n.getAttribute && n.getAttribute("data-criterion"));
    if (this.criterionKey(e, k, crit)) return;
    if (this.twoDigits(e, k, options, "overall", (value) => this.pick(value))) return;
    const option = options.find((o) => o.key === k);
    if (option) return this.consume(e, () => this.pick(option.value));
    const go = this.navigation(k);
    if (go) return this.consume(e, () => this.act(go));
    if (k === "s" || k === "f") return this.consume(e, () => this.refuseKeys([k], "Not used on this item:"));
    if (k === "u" && this.data.flag) return this.consume(e, () => this.setFlag(!this.values.flag, true));
    if (k === "w" && this.data.reveals) return this.consume(e, () => this.act("reveals"));
    if (k === "c") return this.consume(e, () => this.root.querySelector(".jl-comment").focus());
    if (k === "t" && (this.data.turns || []).length) return this.consume(e, () => this.focusTurn());
    if ((k === "ArrowDown" || k === "ArrowUp") && (this.data.criteria || []).length) {
      return this.consume(e, () => {
        const rows = [...this.root.querySelectorAll("[data-criterion]")];
        (k === "ArrowDown" ? rows[0] : rows[rows.length - 1]).focus();
      });
    }
    if (k === "Escape" && this.shadow.activeElement) this.shadow.activeElement.blur();
  }

  /**
   * A digit on a scale whose keys are two digits: the level its digits name (alone or after the first).
   *
   * The overall score and each criterion row read digits alike; ``where`` names which one the
   * digits are for ("overall", or "criterion:<id>") and ``set`` sets the level's value there.
   */
  twoDigits(e, k, options, where, set) {
    if (!/^[0-9]$/.test(k) || !twoDigitScale(options)) return false;
    // A first digit still waiting for its second on another row counts alone, as its timer would have had it.
    if (this.digits && this.digitsFor !== where) this.flushDigits();
    const typed = (this.digits || "") + k;
    clearTimeout(this.digitsTimer);
    this.digits = "";
    this.digitsDone = null;
    const exact = options.find((o) => o.key === typed);
    if (options.some((o) => o.key.length > typed.length && o.key.startsWith(typed))) {
      // "1" may be 1 or the start of 10: the second digit decides; without one, the first counts.
      this.digits = typed;
      this.digitsFor = where;
      this.digitsDone = () => { this.digits = ""; this.digitsDone = null; if (exact) set(exact.value); };
      this.digitsTimer = setTimeout(() => { if (this.digitsDone) this.digitsDone(); }, DIGIT_MS);
      this.consume(e, () => this.say(`${typed}…`, false));
    } else if (exact) {
      this.consume(e, () => set(exact.value));
    } else {
      this.consume(e, () => this.refuseKeys([typed], "No score has the keys"));
    }
    return true;
  }

  /** Focus the first turn row without a score (the first row when every turn has one). */
  focusTurn() {
    const turns = this.data.turns || [];
    const open = turns.find((t) => this.values.criteria[t.id] === null || this.values.criteria[t.id] === undefined);
    const row = this.root.querySelector(`[data-criterion="${(open || turns[0]).id}"]`);
    if (row) row.focus();
  }

  /** Act now on a first digit that was waiting for a second one (as if its wait were over). */
  flushDigits() {
    clearTimeout(this.digitsTimer);
    const done = this.digitsDone;
    this.digits = "";
    this.digitsDone = null;
    if (done) done();
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
    // On a scale with two-digit keys a criterion row reads digits as the overall score does.
    if (this.twoDigits(e, k, options, `criterion:${id}`, (value) => this.setCriterion(id, value, true))) return true;
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

  /** A key pressed while busy: queued for the item that comes, and shown as waiting. */
  wait(k) {
    this.early.push(k);
    this.queued();
  }

  queued() {
    if (this.early.length) this.say(`Saving… then ${this.early.map(keyName).join(", ")}`, false);
  }

  /** A held digit on a scale with two-digit keys, read as typed now (it may wait for a second digit). */
  heldFirstDigit(k) {
    const none = { preventDefault() {}, stopPropagation() {} };
    const focused = this.shadow.activeElement;
    const row = focused && focused.getAttribute ? focused.getAttribute("data-criterion") : null;
    if (row) {
      const set = (value) => this.setCriterion(row, value, true);
      return this.twoDigits(none, k, this.data.criterion_options, `criterion:${row}`, set);
    }
    return this.twoDigits(none, k, this.data.choice.options, "overall", (value) => this.pick(value));
  }

  /** A queued key acted on now, on the item just drawn (as its keydown would have been). */
  press(k) {
    if (k === "submit") return this.act("submit");
    // A score key for the row with focus (T, then digits, held while the form loaded) scores that row.
    const focused = this.shadow.activeElement;
    const row = focused && focused.getAttribute ? focused.getAttribute("data-criterion") : null;
    const byKey = row ? this.data.criterion_options.find((o) => o.key === k) : null;
    if (byKey) return this.setCriterion(row, byKey.value, true);
    const option = this.data.choice.options.find((o) => o.key === k);
    if (option) return this.pick(option.value);
    const go = this.navigation(k);
    if (go) return this.act(go);
    if (k === "u" && this.data.flag) return this.setFlag(!this.values.flag, true);
    if (k === "w" && this.data.reveals) return this.act("reveals");  // held before the form: the text was on screen
    if (k === "c") return this.root.querySelector(".jl-comment").focus();
    if (k === "t" && (this.data.turns || []).length) return this.focusTurn();
    return this.refuseKeys([k], "Not used on this item:");  // e.g. F on an item not done yet
  }

  /** Say which keys were not acted on, at the Submit button. */
  refuseKeys(keys, why) {
    this.say(`${why} ${keys.map(keyName).join(", ")}.`, true);
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
    const open = (d.turns || []).filter((t) => v.criteria[t.id] === null || v.criteria[t.id] === undefined);
    if (open.length) {
      const shown = open.slice(0, 8).map((t) => t.turn).join(", ") + (open.length > 8 ? " …" : "");
      return [`Score every assistant turn first (${open.length} without a score: turn ${shown}; T goes to the first), `
        + "or flag the item. Nothing you gave is lost.", `[data-criterion="${open[0].id}"]`];
    }
    return null;
  }

  act(what, to = "") {
    if (this.busy) return what === "reveals" ? null : this.wait(what === "submit" ? "submit" : what[0]);
    if (what === "submit") {
      const problem = this.missing();
      if (problem) {
        this.say(problem[0], true);
        if (problem[1]) { const t = this.root.querySelector(problem[1]); if (t) t.focus(); }
        return;
      }
    }
    if (what === "back" && !this.data.can_back) return this.refuseKeys(["b"], "This is the first item: nothing to go back to with");
    this.busy = true;
    this.early = [];
    const sent = (this.sent = (this.sent || 0) + 1);
    this.pending = { what, item: this.data.item, scope: this.data.draft_scope };
    // The server answers with the next item; should the answer never come, let the rater
    // retry, and say which keys pressed meanwhile were not used. One timer per action,
    // cleared when the answer comes (update) or another action starts.
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.slow(sent), WAIT_MS);
    const v = this.values;
    this.send({
      do: what,
      item: this.data.item,
      choice: v.choice,
      criteria: v.criteria,
      comment: v.comment,
      cut: v.cut,
      flag: v.flag,
      reason: v.reason,
      seconds: this.clock ? this.clock.seconds() : null,
      to,
      nonce: Math.random(),
    });
    // "Saving…" only after Streamlit's send (its own zero-delay timer, queued first): a page
    // changed before the send is laid out and painted before the message leaves.
    setTimeout(() => {
      if (!this.busy || this.sent !== sent) return;
      if (this.early.length) this.queued();
      else this.say(what === "submit" ? "Saving…" : "", false);
      // A click while busy would do nothing: the buttons say so by being disabled.
      for (const b of this.root.querySelectorAll(".jl-buttons button")) b.disabled = true;
      for (const t of this.root.querySelectorAll("textarea, input:not([type=checkbox])")) t.readOnly = true;
    }, 0);
  }

  /** No answer to action ``sent`` within WAIT_MS: say so; the keys stay queued. */
  slow(sent) {
    if (!this.busy || this.sent !== sent) return;
    const waiting = this.early.length ? ` Keys waiting: ${this.early.map(keyName).join(", ")}.` : "";
    this.say(`Still saving: the server is slow right now.${waiting}`, false);
    this.timer = setTimeout(() => this.noAnswer(sent), GIVE_UP_MS - WAIT_MS);
  }

  /** No answer to action ``sent`` within GIVE_UP_MS: let the rater act again; name the unused keys. */
  noAnswer(sent) {
    if (!this.busy || this.sent !== sent) return;
    this.busy = false;
    this.timer = null;
    const early = this.early;
    this.early = [];
    this.render();
    const slow = "No answer from the server: press again (or reload the page).";
    // Kept until the next answer's message, which then says it too.
    this.lost = early.length ? `${slow} Not used: ${early.map(keyName).join(", ")}.` : slow;
    this.say(this.lost, true);
  }
}

// -- two-digit keys ------------------------------------------------------------------------------

/** Whether a scale's keys include two-digit ones (more levels than digits, e.g. 0-10). */
function twoDigitScale(options) {
  return options.some((o) => o.key.length > 1);
}

/**
 * Held or queued keys with each two-digit key joined: a digit that starts a longer key and the
 * digit after it become that key when it is one ("1", "0" -> "10" on 0-10; "1", "s" stay).
 */
function joinDigits(keys, options) {
  if (!twoDigitScale(options)) return keys;
  const out = [];
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const pair = k + (keys[i + 1] || "");
    if (/^[0-9]$/.test(k) && /^[0-9]$/.test(keys[i + 1] || "") && options.some((o) => o.key === pair)) {
      out.push(pair);
      i += 1;
    } else {
      out.push(k);
    }
  }
  return out;
}

// -- the key catcher's hand-over (_catcher.js) ---------------------------------------------------

function catcher() {
  return window.judgelabKeys || (window.judgelabKeys = { held: [], form: null, holding: false, show: null });
}

/** Register ``form`` as the page's live form; the keys held before it ran, in order. */
function adoptHeld(form) {
  const shared = catcher();
  shared.form = form;
  const held = shared.held;
  shared.held = [];
  if (shared.show) shared.show();
  return held;
}

/** Whether ``form`` belongs to the page now loading or shown (not a page being left). */
function ownsPage(form) {
  const here = catcher().here;
  return !here || !here.scope || here.scope === form.data.draft_scope;
}

function releaseHeld(form) {
  const shared = catcher();
  if (shared.form === form) shared.form = null;
}

// -- the browser's history: one entry per item (see _catcher.js) ----------------------------------

/** The queue position an item key names: the key without its label part (as place_of in _form.py). */
function placeOf(item) {
  return item.slice(0, item.lastIndexOf(":"));
}

/** Once per scope: the entry a reload or the browser's Back/Forward asked this page to show. */
function takeWanted(scope) {
  const shared = catcher();
  if (!shared.navChecked) {
    shared.navChecked = true;
    const nav = performance.getEntriesByType("navigation")[0];
    const st = history.state && history.state.judgelab;
    if (nav && (nav.type === "reload" || nav.type === "back_forward") && st) shared.wanted = st;
  }
  const wanted = shared.wanted;
  if (!wanted || wanted.scope !== scope) return null;
  shared.wanted = null;
  return wanted;
}

Object.assign(RatingForm.prototype, {
  /**
   * After drawing an item: record it in the browser's history, or go where the history asks.
   * Returns true when it sent a "goto" (the keys in ``early`` then wait for the item it brings).
   */
  historyStep(data, first, early) {
    const scope = data.draft_scope;
    if (!scope || !data.position) return false;
    const place = placeOf(data.item);
    let to = this.popTo || null;
    this.popTo = null;
    if (!to && first) {
      const wanted = takeWanted(scope);
      if (wanted && wanted.place !== place) to = wanted.place;
    }
    if (to && to !== place) {
      if (this.poppedWhileBusy && early.length) {
        // Said now and again with the answer to the "goto" (its send clears the message).
        this.lost = `You went back or forward in the browser while it was saving; keys not used: ${early.map(keyName).join(", ")}.`;
        this.say(this.lost, true);
        early = [];
      }
      this.poppedWhileBusy = false;
      this.traversing = true;
      this.act("goto", to);
      this.early = early;
      this.queued();
      return true;
    }
    const cur = history.state && history.state.judgelab;
    const entry = { judgelab: { scope, place } };
    const url = `${location.pathname}${location.search}#item-${data.position}`;
    try {
      // A new item after one of this page's entries is a new entry; otherwise the entry is
      // this one (the answer to Back/Forward, a refusal, the page's first item).
      if (!this.traversing && cur && cur.scope === scope && cur.place !== place) history.pushState(entry, "", url);
      else history.replaceState(entry, "", url);
    } catch (err) { /* a browser refusing history changes: Back then leaves the page, as before */ }
    this.traversing = false;
    return false;
  },

  /** The browser's Back or Forward landed on this page's entry for ``place``: show that item. */
  traverse(place) {
    if (!this.data || place === placeOf(this.data.item)) return;
    if (this.busy) {
      // The answer on its way brings another item; the form then goes to ``place``.
      this.popTo = place;
      this.poppedWhileBusy = true;
      return;
    }
    this.traversing = true;
    this.act("goto", place);
  },
});

/**
 * Scroll assistant turn ``n`` of the transcript into view and mark it (the page draws each turn's
 * heading with ``data-jl-turn``); the mark moves with the focused turn row.
 */
function showTurn(n) {
  for (const old of document.querySelectorAll("[data-jl-turn].jl-turn-on")) {
    old.classList.remove("jl-turn-on");
    old.style.outline = "";
  }
  const head = document.querySelector(`[data-jl-turn="${n}"]`);
  if (!head) return;
  head.classList.add("jl-turn-on");
  head.style.outline = "2px solid var(--st-primary-color, #ff4b4b)";
  head.scrollIntoView({ block: "nearest" });
}

/** Whether UTF-16 unit ``i`` of ``s`` starts a character written as two units (a surrogate pair). */
function pairAt(s, i) {
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
}

/** Characters in ``s`` as Python's ``len`` counts them (code points; a lone surrogate is one). */
function codePoints(s) {
  let n = 0;
  for (let i = 0; i < s.length; i += pairAt(s, i) ? 2 : 1) n += 1;
  return n;
}

/** The UTF-16 length of the first ``max`` characters (code points) of ``s``: never half an emoji. */
function unitsOf(s, max) {
  let i = 0;
  for (let n = 0; n < max && i < s.length; n += 1) i += pairAt(s, i) ? 2 : 1;
  return i;
}

/** A count as the rater reads it: 1048576 -> "1,048,576". */
function num(n) {
  return Number(n).toLocaleString("en-US");
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
