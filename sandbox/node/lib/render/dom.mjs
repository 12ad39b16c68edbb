// What the user would see of a server render, read by the host from React's own markup: the
// visible host elements (with the props React received, from the record each carries:
// lib/render/prelude.js, hostHooks) and the visible text. The record is
// an attribute named with this render's nonce, which model code never sees, so markup the
// component writes itself (dangerouslySetInnerHTML) can add elements and text but never a
// handler; the records are stripped from the markup that leaves the sandbox.
//
// React's markup is regular (attributes double-quoted and escaped, void elements
// self-closed), so one linear scan reads it. Hidden subtrees (script, style, template,
// `hidden`, display:none, visibility:hidden) show nothing and count for nothing.

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
  "source", "track", "wbr"]);
const INVISIBLE = new Set(["script", "style", "template", "noscript", "title", "head", "link", "meta", "base"]);
const HIDDEN_STYLE = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:;|$)/i;
const ATTRIBUTE = /\s([^\s=/>"]+)(?:="([^"]*)")?/g;
const LABELLED_INPUT = new Set(["button", "submit", "reset"]);
export const MAX_ELEMENTS = 200;  // distinct (tag, props) entries kept
export const MAX_TEXTS = 200;
const MAX_TEXT_CHARS = 300;
const MAX_ALL_TEXT = 20_000;

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

/** Text with React's character references decoded. */
export function decodeEntities(text) {
  return text.replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, (all, name) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
    }
    return ENTITIES[name.toLowerCase()] ?? all;
  });
}

function attributesOf(text) {
  const out = new Map();
  for (const match of text.matchAll(ATTRIBUTE)) {
    const name = match[1].toLowerCase();
    if (!out.has(name)) out.set(name, match[2] ?? "");
  }
  return out;
}

function hidden(tag, attributes) {
  if (INVISIBLE.has(tag) || attributes.has("hidden")) return true;
  return attributes.has("style") && HIDDEN_STYLE.test(attributes.get("style"));
}

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
 * {html, elements, texts} of raw server markup: `html` without the records, `elements` the
 * visible host elements [{tag, props, recorded}] (recorded: false for markup React did not
 * start itself, i.e. injected HTML), `texts` the visible text runs plus, last, all of it joined.
 */
export function readDom(raw, nonce) {
  const marker = typeof nonce === "string" && nonce ? `data-botgrpo-${nonce}` : null;
  const stripPattern = marker ? new RegExp(` ${marker}="[^"]*"`, "g") : null;
  const elements = new Map();  // distinct entries; past MAX_ELEMENTS only those with a new tag or prop
  const seen = new Map();  // tag -> prop names seen on it
  const texts = [];
  let all = "";
  let run = "";
  let hiddenDepth = 0;
  const stack = [];  // [tag, hidden]
  const endRun = () => {
    const text = decodeEntities(run).replace(/\s+/g, " ").trim();
    run = "";
    if (!text) return;
    if (texts.length < MAX_TEXTS) texts.push(text.slice(0, MAX_TEXT_CHARS));
    if (all.length < MAX_ALL_TEXT) all = `${all}${all ? " " : ""}${text}`.slice(0, MAX_ALL_TEXT);
  };
  const addText = (text) => { if (hiddenDepth === 0) run += text; };
  let i = 0;
  while (i < raw.length) {
    const lt = raw.indexOf("<", i);
    if (lt < 0) { addText(raw.slice(i)); break; }
    if (lt > i) addText(raw.slice(i, lt));
    if (raw.startsWith("<!--", lt)) {  // React's separator between adjacent text nodes: same run
      const end = raw.indexOf("-->", lt + 4);
      i = end < 0 ? raw.length : end + 3;
      continue;
    }
    const gt = raw.indexOf(">", lt);
    if (gt < 0) { addText(raw.slice(lt)); break; }
    const inner = raw.slice(lt + 1, gt);
    i = gt + 1;
    endRun();
    if (inner.startsWith("/")) {
      const name = inner.slice(1).trim().toLowerCase();
      for (let k = stack.length - 1; k >= 0; k--) {
        if (stack[k][0] === name) {
          for (let m = stack.length - 1; m >= k; m--) if (stack[m][1]) hiddenDepth--;
          stack.length = k;
          break;
        }
      }
      continue;
    }
    if (inner.startsWith("!") || inner.startsWith("?")) continue;
    const match = /^([A-Za-z][\w:.-]*)/.exec(inner);
    if (!match) { addText(`<${inner}>`); continue; }
    const tag = match[1].toLowerCase();
    const attributes = attributesOf(inner.slice(match[1].length));
    const isHidden = hidden(tag, attributes);
    if (hiddenDepth === 0 && !isHidden) {
      const recorded = marker !== null && attributes.has(marker);
      const props = parseRecord(recorded ? attributes.get(marker) : undefined);
      const key = `${tag}|${props.join(",")}|${recorded}`;
      if (!elements.has(key) && (elements.size < MAX_ELEMENTS || (elements.size < 2 * MAX_ELEMENTS && adds(seen, tag, props)))) {
        elements.set(key, { tag, props, recorded });
      }
      note(seen, tag, props);
      const label = tag === "input" && LABELLED_INPUT.has(attributes.get("type") ?? "") ? attributes.get("value")
        : attributes.get("placeholder");
      if (label) { run = label; endRun(); }
    }
    const selfClosing = VOID.has(tag) || inner.trimEnd().endsWith("/");
    if (!selfClosing) {
      stack.push([tag, isHidden]);
      if (isHidden) hiddenDepth++;
    }
  }
  endRun();
  if (all && texts.length > 1) texts.push(all);
  return { html: stripPattern ? raw.replace(stripPattern, "") : raw, elements: [...elements.values()], texts };
}
