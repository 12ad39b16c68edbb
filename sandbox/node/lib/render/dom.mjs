// What the user would see of a server render, read by the host from React's own markup: the
// visible host elements (with the props React received, from the record each carries:
// lib/render/prelude.js, hostHooks) and the visible text. The record is
// an attribute named with this render's nonce, which model code never sees, so markup the
// component writes itself (dangerouslySetInnerHTML) can add elements and text but never a
// handler; the records are stripped from the markup that leaves the sandbox.
//
// Visibility is lib/render/visible.mjs's: the spec is judged on what is surely shown (its
// strict verdict), the empty-render check and the render's details on what is not surely
// hidden (`stats`, lib/render/html.mjs).
import { decodeEntities } from "./entities.mjs";
import { Stats } from "./html.mjs";
import { scanVisible } from "./visible.mjs";

export { decodeEntities };

const LABELLED_INPUT = new Set(["button", "submit", "reset"]);
export const MAX_ELEMENTS = 200;  // distinct (tag, props) entries kept
export const MAX_TEXTS = 200;
const MAX_TEXT_CHARS = 300;
const MAX_ALL_TEXT = 20_000;

/** The prop names of a record "name,name". */
function parseRecord(value) {
  return typeof value === "string" && value ? value.split(",").slice(0, 24) : [];
}

/** Whether an element of `tag` with `props` shows a tag or a prop of that tag not seen yet. */
function adds(seen, tag, props) {
  const known = seen.get(tag);
  return known === undefined || props.some((p) => !known.has(p));
}

function note(seen, tag, props) {
  if (!seen.has(tag)) seen.set(tag, new Set());
  for (const p of props) seen.get(tag).add(p);
}

/**
 * {html, elements, texts, stats} of raw server markup: `html` without the records, `elements`
 * the visible host elements [{tag, props, recorded}] (recorded: false for markup React did not
 * start itself, i.e. injected HTML), `texts` the visible text runs plus, last, all of it
 * joined, `stats` the counts of lib/render/html.mjs.
 */
export function readDom(raw, nonce) {
  const marker = typeof nonce === "string" && nonce ? `data-botgrpo-${nonce}` : null;
  const stripPattern = marker ? new RegExp(` ${marker}="[^"]*"`, "g") : null;
  const elements = new Map();  // distinct entries; past MAX_ELEMENTS only those with a new tag or prop
  const seen = new Map();  // tag -> prop names seen on it
  const texts = [];
  const stats = new Stats();
  let all = "";
  let run = "";
  const endRun = (decoded = false) => {
    const text = (decoded ? run : decodeEntities(run)).replace(/\s+/g, " ").trim();
    run = "";
    if (!text) return;
    if (texts.length < MAX_TEXTS) texts.push(text.slice(0, MAX_TEXT_CHARS));
    if (all.length < MAX_ALL_TEXT) all = `${all}${all ? " " : ""}${text}`.slice(0, MAX_ALL_TEXT);
  };
  const { exhausted } = scanVisible(raw, {
    marker,
    onText(text, shown) {
      if (shown.lenient) stats.addText(text);
      if (shown.strict) run += text;
    },
    onOpen(tag, attributes, shown) {
      endRun();
      if (shown.box.lenient) stats.addElement(tag);
      if (!shown.box.strict) return;
      const recorded = marker !== null && attributes.has(marker);
      const props = parseRecord(recorded ? attributes.get(marker) : undefined);
      const key = `${tag}|${props.join(",")}|${recorded}`;
      if (!elements.has(key) && (elements.size < MAX_ELEMENTS || (elements.size < 2 * MAX_ELEMENTS && adds(seen, tag, props)))) {
        elements.set(key, { tag, props, recorded });
      }
      note(seen, tag, props);
      const label = tag === "input" && LABELLED_INPUT.has(attributes.get("type") ?? "") ? attributes.get("value")
        : attributes.get("placeholder");
      if (label && shown.text.strict) { run = label; endRun(true); }
    },
    onClose() { endRun(); },
  });
  endRun();
  if (all && texts.length > 1) texts.push(all);
  const html = stripPattern ? raw.replace(stripPattern, "") : raw;
  // a style sheet too costly to match in full decides nothing: nothing is surely shown
  if (exhausted) return { html, elements: [], texts: [], stats: stats.result() };
  return { html, elements: [...elements.values()], texts, stats: stats.result() };
}
