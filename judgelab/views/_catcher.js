// The queue pages' key catcher: keys pressed before the rating form's script is running.
//
// A loaded server can send an item's text seconds before the form that rates it (the form
// is drawn after the text, in the same script run). This element comes first, before the
// progress line and the text, and its script is tiny: from the moment it runs until a
// rating form is live on the page, every form key (a letter, a digit, Ctrl+Enter) outside a
// text box is held, in order, and the hold is shown ("Loading the form… keys held: 4,
// Ctrl+Enter"). The form takes the held keys when it starts and acts on them, or names the
// ones it cannot use, as it does with keys pressed while a submit is on its way
// (_form.js). On a screen without a form (the finished screen) held keys are named as
// not used. Keys are held one by one as pressed; on a scale with two-digit keys (0-10) the
// form joins a held digit that starts a longer key with the digit after it ("1", "0" is 10),
// the rule it applies to digits typed on the live form.
//
// The hand-over is one object on the window, shared with _form.js: the form registers
// itself there (shared.form) and takes shared.held.

const shared = window.judgelabKeys || (window.judgelabKeys = { held: [], form: null, holding: false, show: null });

// A key as the rater would name it in a message (as _form.js names them).
function keyName(k) {
  return k === "submit" ? "Ctrl+Enter" : k.length === 1 ? k.toUpperCase() : k;
}

// A form of another page still on screen while the next page loads (Streamlit replaces the
// old page's elements only as the new ones come) is not this page's: its keys are held too.
function formLive() {
  const f = shared.form;
  const here = shared.here;
  return !!(f && f.data && f.root && f.root.isConnected && (!here || !here.scope || here.scope === f.data.draft_scope));
}

function editable(target) {
  if (!target || !target.closest) return false;
  const t = target.tagName;
  if (t === "TEXTAREA" || (t === "INPUT" && target.type !== "checkbox")) return true;
  return !!target.closest("input, textarea, select, [contenteditable]");
}

/** The form key ``e`` stands for ("submit" for Ctrl+Enter), or null for any other key. */
function formKey(e) {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) return "submit";
  if (e.ctrlKey || e.metaKey || e.altKey) return null;
  return /^[0-9a-z]$/i.test(e.key) ? e.key.toLowerCase() : null;
}

function onKey(e) {
  // Only while a catcher is on screen (not on the admin pages after it), and a live form reads its own keys.
  if (!shared.holding || !shared.here || !shared.here.connected() || formLive()) return;
  if (editable(e.composedPath()[0])) return;
  const k = formKey(e);
  if (!k) return;
  e.preventDefault();
  e.stopPropagation();
  shared.held.push(k);
  if (shared.show) shared.show();
}

if (!shared.listening) {
  shared.listening = true;
  // Capture phase on the document, registered before any form's: the first to see a key.
  document.addEventListener("keydown", onKey, true);
}

// -- the browser's history -------------------------------------------------------------------------
//
// Each item a queue page shows is an entry in the browser's history (state.judgelab =
// {scope, place}, URL "#item-N"), so the browser's Back and Forward step through the items
// the rater saw. Streamlit leaves a same-page entry with a "#" to the page (it reruns the
// page only when the path or the query differs); this listener hands such a Back or Forward
// to the live form (form.traverse), or, with no form on screen (the finished screen), asks
// the server itself (the "goto" trigger). An entry of another page (Streamlit switches to
// that page) is remembered, and that page's form goes to its item when it starts.

function ours(state) {
  return state && state.judgelab && typeof state.judgelab.place === "string" ? state.judgelab : null;
}

/** Once per document: a reload, or Back/Forward into this document, starts at the entry's item. */
function checkNavigation() {
  if (shared.navChecked) return;
  shared.navChecked = true;
  const nav = performance.getEntriesByType("navigation")[0];
  if (nav && (nav.type === "reload" || nav.type === "back_forward") && ours(history.state)) shared.wanted = ours(history.state);
}

function onPop(e) {
  const entry = ours(e.state);
  if (!entry) return;  // Streamlit's own entries (page switches): Streamlit's router handles them
  const form = formLive() ? shared.form : null;
  if (form && form.data.draft_scope === entry.scope) return form.traverse(entry.place);
  const here = shared.here;
  if (here && here.scope === entry.scope && here.connected()) {
    if (entry.place !== here.place) here.send(entry.place);
    return;
  }
  shared.wanted = entry;
}

if (!shared.popping) {
  shared.popping = true;
  checkNavigation();
  window.addEventListener("popstate", onPop);
}

/** The finished screen's entry: pushed after the item the rater came from, replaced otherwise. */
function rememberDone(scope) {
  const cur = ours(history.state);
  const entry = { judgelab: { scope, place: "done" } };
  const url = `${location.pathname}${location.search}#done`;
  try {
    if (cur && cur.scope === scope && cur.place !== "done") history.pushState(entry, "", url);
    else history.replaceState(entry, "", url);
  } catch (err) { /* a browser refusing history changes: Back then leaves the page, as before */ }
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const send = (place) => setTriggerValue("goto", { to: place, nonce: Math.random() });
  shared.here = { scope: data.scope, place: data.hold ? null : "done", send,
    connected: () => parentElement.isConnected };
  if (data.scope && !data.hold) {
    const wanted = shared.wanted && shared.wanted.scope === data.scope ? shared.wanted : null;
    shared.wanted = null;
    // Reloaded (or come back) on an item's entry, the server showed the finished screen: go there.
    if (wanted && wanted.place !== "done") send(wanted.place);
    else rememberDone(data.scope);
  }
  const box = parentElement.querySelector(".jl-held");
  const show = () => {
    if (!box.isConnected) return;
    if (!shared.held.length) { box.textContent = ""; box.hidden = true; return; }
    const keys = shared.held.map(keyName).join(", ");
    box.hidden = false;
    box.classList.toggle("refused", !data.hold);
    box.textContent = data.hold
      ? `Loading the form… keys held for it: ${keys}`
      : `Not used (there is no item to rate here): ${keys}.`;
  };
  shared.show = show;
  shared.holding = !!data.hold;
  if (!data.hold && shared.held.length) {
    // No form will come on this screen: say which keys were not used, then forget them.
    show();
    shared.held = [];
  } else {
    show();
  }
  const here = shared.here;
  return () => {
    if (shared.show === show) shared.show = null;
    if (shared.here === here) shared.holding = false;
  };
}
