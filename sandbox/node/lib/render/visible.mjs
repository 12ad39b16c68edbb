// What of a server render a user would see: one linear pass over the markup's tokens (read as
// the HTML tokenizer reads them: a component can inject markup that is not React's) that
// computes every element's style
// (lib/render/visibility.mjs) from the cascade of what the markup itself carries, and reports
// each element and text run with two verdicts: `strict` (surely shown: what the spec may
// credit) and `lenient` (not surely hidden: what the empty-render check counts).
//
// The cascade: the browser's own rules that hide (`[hidden]`, a `<dialog>` without `open`, a
// `[popover]`), presentational attributes (SVG's display / visibility / opacity / font-size /
// fill / transform, width and height of replaced elements, <font color size>, bgcolor), the
// rules of every <style> element in the markup (they apply to the whole page, wherever they
// sit: lib/render/css.mjs, matched by lib/render/selectors.mjs against the page's elements
// under a synthetic <html><body>), the keyframes of an element's animation (uncertain: the
// animation may have run), and the `style` attribute, ranked as CSS ranks them (!important,
// origin, specificity, order). A rule whose selector or condition the markup does not settle
// is applied and not applied: content counts as surely shown only if it shows both ways.
// Beyond CSS: <script>, <style>, <template>, <noscript>, <title>, <datalist>, ... and
// <input type="hidden"> show nothing; a closed <details> shows its first <summary> only;
// <canvas>, <video>, <audio>, <iframe>, <progress> and <meter> do not show their fallback
// content, nor a <select> anything but its options; `aria-hidden` and `inert` content is not
// surely shown (it is drawn, but not there for every user).
import { decodeEntities } from "./entities.mjs";
import { longhands, parseDeclarations, parseStylesheet } from "./css.mjs";
import { Matcher, compare, parseSelectorList, stylesText } from "./selectors.mjs";
import { ROOT, boxShown, enter, textShown } from "./visibility.mjs";

export const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
  "track", "wbr"]);
const RAW_TEXT = new Set(["script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title", "plaintext"]);
const INVISIBLE = new Set(["script", "style", "template", "noscript", "title", "head", "link", "meta", "base", "datalist",
  "noembed", "noframes", "param"]);
const FALLBACK = new Set(["canvas", "video", "audio", "iframe", "progress", "meter"]);
const IN_SELECT = new Set(["option", "optgroup", "hr"]);
const REPLACED_SIZE = new Set(["img", "video", "canvas", "iframe", "embed", "object", "svg"]);
const SVG_ATTRIBUTES = new Map([["display", "display"], ["visibility", "visibility"], ["opacity", "opacity"],
  ["font-size", "font-size"], ["fill", "-webkit-text-fill-color"], ["transform", "transform"]]);
const FONT_SIZES = [10, 10, 13, 16, 18, 24, 32, 48];
const TEXT_PROPERTIES = new Set(["font-size", "color", "-webkit-text-fill-color", "text-shadow", "letter-spacing",
  "text-indent", "visibility", "opacity"]);
const NO_CLASSES = Object.freeze(new Set());
export const MAX_RULES = 2000;  // a style sheet of more rules decides nothing (nothing is surely shown)
export const MAX_STYLE_CHARS = 16_384;  // a longer `style` attribute is read this far, and its element is not surely shown

// as CSS ranks normal declarations (an !important one beats them all, an animation every normal one)
const ORIGIN = { agent: 0, attribute: 1, author: 2, inline: 3, animation: 4 };

/**
 * The start tag whose name begins at `at` (just after its "<"), read as the HTML tokenizer reads
 * it: attributes double-, single- or un-quoted (markup a component injects is not React's), a
 * ">" inside a quoted value not ending the tag. {name, attributes: Map name -> decoded value
 * (the first of a name wins), selfClosing, end (the index after its ">", or raw.length)}.
 */
export function readStartTag(raw, at) {
  const nameMatch = /^[A-Za-z][^\s/>]*/.exec(raw.slice(at, at + 256));
  let i = at + (nameMatch ? nameMatch[0].length : 0);
  const attributes = new Map();
  let selfClosing = false;
  const space = (c) => c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f";
  while (i < raw.length) {
    const c = raw[i];
    if (c === ">") return { name: nameMatch?.[0] ?? "", attributes, selfClosing, end: i + 1 };
    if (space(c)) { i++; continue; }
    if (c === "/") { selfClosing = raw[i + 1] === ">"; i++; continue; }
    let j = i + 1;  // an attribute name: up to whitespace, "/", ">" or "=" (a first "=" is part of it)
    while (j < raw.length && !space(raw[j]) && raw[j] !== "/" && raw[j] !== ">" && raw[j] !== "=") j++;
    const name = raw.slice(i, j).toLowerCase();
    let k = j;
    while (k < raw.length && space(raw[k])) k++;
    let value = "";
    if (raw[k] === "=") {
      k++;
      while (k < raw.length && space(raw[k])) k++;
      const quote = raw[k];
      if (quote === '"' || quote === "'") {
        const close = raw.indexOf(quote, k + 1);
        value = raw.slice(k + 1, close < 0 ? raw.length : close);
        j = close < 0 ? raw.length : close + 1;
      } else {
        let e = k;
        while (e < raw.length && !space(raw[e]) && raw[e] !== ">") e++;
        value = raw.slice(k, e);
        j = e;
      }
    }
    if (!attributes.has(name)) attributes.set(name, decodeEntities(value));
    i = j;
  }
  return { name: nameMatch?.[0] ?? "", attributes, selfClosing, end: raw.length };
}

const closers = new Map();

/** The index of the first `</name` at or after `from`, any case, or -1. */
function closingTag(raw, name, from) {
  if (!closers.has(name)) closers.set(name, new RegExp(`</${name}(?=[\\s/>]|$)`, "ig"));
  const pattern = closers.get(name);
  pattern.lastIndex = from;
  return pattern.exec(raw)?.index ?? -1;
}

/**
 * The tokens of `raw`, in order: {type: "open", name, attributes, selfClosing}, {type: "close",
 * name}, {type: "text", text} (raw: entities not decoded), {type: "comment"}; the content of a
 * raw-text element (<style>, <script>, <textarea>, ...) is one {type: "raw", text} right after
 * its "open", then its "close".
 */
export function tokenize(raw) {
  const tokens = [];
  let i = 0;
  while (i < raw.length) {
    const lt = raw.indexOf("<", i);
    if (lt < 0) { tokens.push({ type: "text", text: raw.slice(i) }); break; }
    if (lt > i) tokens.push({ type: "text", text: raw.slice(i, lt) });
    if (raw.startsWith("<!--", lt)) {
      const end = raw.indexOf("-->", lt + 4);
      i = end < 0 ? raw.length : end + 3;
      tokens.push({ type: "comment" });
    } else if (raw[lt + 1] === "/" && /[A-Za-z]/.test(raw[lt + 2] ?? "")) {
      const gt = raw.indexOf(">", lt);
      i = gt < 0 ? raw.length : gt + 1;
      tokens.push({ type: "close", name: raw.slice(lt + 2, gt < 0 ? raw.length : gt).trim().toLowerCase() });
    } else if (raw[lt + 1] === "!" || raw[lt + 1] === "?" || raw[lt + 1] === "/") {  // doctype, bogus comment
      const gt = raw.indexOf(">", lt);
      i = gt < 0 ? raw.length : gt + 1;
    } else if (/[A-Za-z]/.test(raw[lt + 1] ?? "")) {
      const start = readStartTag(raw, lt + 1);
      const name = start.name.toLowerCase();
      tokens.push({ type: "open", name, attributes: start.attributes, selfClosing: start.selfClosing });
      i = start.end;
      if (RAW_TEXT.has(name)) {
        const end = closingTag(raw, name, i);
        tokens.push({ type: "raw", text: raw.slice(i, end < 0 ? raw.length : end) });
        const gt = end < 0 ? -1 : raw.indexOf(">", end);
        i = gt < 0 ? raw.length : gt + 1;
        tokens.push({ type: "close", name });
      }
    } else {
      tokens.push({ type: "text", text: "<" });
      i = lt + 1;
    }
  }
  return tokens;
}

/** The CSS text of every <style> element, in order. */
function styleSheets(tokens) {
  const out = [];
  for (let k = 1; k < tokens.length; k++) {
    if (tokens[k].type === "raw" && tokens[k - 1].name === "style") out.push(tokens[k].text);
  }
  return out;
}

/** Declarations as the cascade ranks them: each longhand with its origin, specificity and order. */
function ranked(declarations, origin, specificity, order) {
  const out = [];
  for (const d of declarations) {
    for (const [property, value] of longhands(d.property, d.value)) out.push({ property, value, important: d.important, origin, specificity, order });
  }
  return out;
}

/** The rules of all <style> elements, indexed by the key of their subject compound. A sheet of
 * more than MAX_RULES rules, or one whose matching spends the matcher's budget, decides
 * nothing: its rules stop applying and nothing is surely shown (`exhausted`). */
class Sheet {
  constructor(tokens) {
    this.matcher = new Matcher();
    this.keyframes = new Map();
    this.byKey = new Map();
    const rules = [];
    for (const css of styleSheets(tokens)) {
      const sheet = parseStylesheet(css);
      rules.push(...sheet.rules);
      for (const [name, frames] of sheet.keyframes) this.keyframes.set(name, ranked(frames, ORIGIN.animation, [0, 0, 0], 0));
    }
    if (rules.length > MAX_RULES) {
      this.matcher.spend(Infinity);
      return;
    }
    rules.forEach((rule, order) => {
      for (const complex of parseSelectorList(rule.selector) ?? [null]) {
        const pseudo = complex?.pseudoElement ?? null;
        if (pseudo && !stylesText(pseudo)) continue;  // ::before, ::after, ...: never the element's own content
        const own = pseudo ? rule.declarations.filter((d) => TEXT_PROPERTIES.has(d.property)) : rule.declarations;
        const entry = { complex, certain: rule.certain, order,
                        declarations: ranked(own, ORIGIN.author, complex?.specificity ?? [0, 0, 0], order) };
        const key = complex ? keyOf(complex.compounds[complex.compounds.length - 1]) : "*";
        if (!this.byKey.has(key)) this.byKey.set(key, []);
        this.byKey.get(key).push(entry);
      }
    });
  }

  get exhausted() {
    return this.matcher.exhausted;
  }

  /** The rules that may apply to `element`, in source order ([] once the budget is spent);
   * each costs the budget its declarations. */
  candidates(element) {
    if (this.byKey.size === 0 || this.matcher.exhausted) return [];
    const keys = new Set(["*", element.tag, ...[...element.classes].map((c) => `.${c}`)]);
    if (element.attributes.has("id")) keys.add(`#${element.attributes.get("id")}`);
    const out = [];
    for (const key of keys) for (const entry of this.byKey.get(key) ?? []) out.push(entry);
    this.matcher.spend(out.reduce((n, entry) => n + 1 + entry.declarations.length, 0));
    return this.matcher.exhausted ? [] : out.sort((a, b) => a.order - b.order);
  }
}

function keyOf(compound) {
  if (compound.ids.length > 0) return `#${compound.ids[0]}`;
  if (compound.classes.length > 0) return `.${compound.classes[0]}`;
  return compound.tag ?? "*";
}

/** The declarations the browser itself or the element's attributes contribute (ranked). */
function intrinsic(element, inSvg) {
  const out = [];
  const a = element.attributes;
  const add = (property, value, origin) => out.push({ property, value, important: false, origin, specificity: [0, 0, 0], order: -1 });
  if (a.has("hidden")) {
    if (a.get("hidden").trim().toLowerCase() === "until-found") add("content-visibility", "hidden", ORIGIN.agent);
    else add("display", "none", ORIGIN.agent);
  }
  if (element.tag === "dialog" && !a.has("open")) add("display", "none", ORIGIN.agent);
  if ((element.tag === "audio" && !a.has("controls")) || element.tag === "rp") add("display", "none", ORIGIN.agent);
  if (a.has("popover")) add("display", "none", ORIGIN.agent);
  if (inSvg) {
    for (const [name, property] of SVG_ATTRIBUTES) {
      if (!a.has(name)) continue;
      const value = a.get(name);
      add(property, name === "fill" && value.trim().toLowerCase() === "none" ? "transparent" : value, ORIGIN.attribute);
    }
  }
  if (REPLACED_SIZE.has(element.tag) || (element.tag === "input" && (a.get("type") ?? "").toLowerCase() === "image")) {
    for (const name of ["width", "height"]) if (a.has(name)) add(name, /^\s*[\d.]+\s*$/.test(a.get(name)) ? `${a.get(name).trim()}px` : a.get(name), ORIGIN.attribute);
  }
  if (element.tag === "font") {
    if (a.has("color")) add("color", a.get("color"), ORIGIN.attribute);
    const size = Number.parseInt(a.get("size") ?? "", 10);
    if (Number.isFinite(size)) add("font-size", `${FONT_SIZES[Math.min(7, Math.max(1, size))]}px`, ORIGIN.attribute);
  }
  if (a.has("bgcolor")) add("background-color", a.get("bgcolor"), ORIGIN.attribute);
  return out;
}

/** Rank two declarations of one property as CSS does: positive when `a` wins. */
function rank(a, b) {
  return (a.important - b.important) || (a.important ? b.origin - a.origin : a.origin - b.origin)
    || compare(a.specificity, b.specificity) || a.order - b.order;
}

/** The winners of the cascade over ranked longhand declarations: Map property -> value. */
function cascade(...lists) {
  const best = new Map();
  for (const list of lists) {
    for (const d of list) {
      const current = best.get(d.property);
      if (!current || rank(d, current) >= 0) best.set(d.property, d);
    }
  }
  const out = new Map();
  for (const [property, d] of best) out.set(property, d.value);
  return out;
}

/**
 * Scan `raw` markup: `onOpen(tag, attributes, shown)` for each start tag (shown: {box: {strict,
 * lenient}, text: {strict, lenient}}; `attributes` as written, the `marker` attribute included),
 * `onClose()` at each end of an element, `onText(raw, shown)` for each run of character data
 * between tags (raw, entities not decoded), `onComment()` for React's `<!-- -->` separators.
 * Returns {exhausted}: true when the style sheet was too costly to match in full (nothing is
 * surely shown then, whatever the verdicts said before the budget ran out).
 */
export function scanVisible(raw, { marker = null, onOpen = () => {}, onClose = () => {}, onText = () => {}, onComment = () => {} } = {}) {
  const tokens = tokenize(raw);
  const sheet = new Sheet(tokens);
  // Elements keep what selectors need: their parent chain and earlier siblings. A closed
  // element drops its children (`lastChild`, `tagCounts`), so memory follows the open path and
  // the siblings along it, and an element with nothing to compute shares its parent's states.
  const make = (tag, attributes, parent) => {
    const prev = parent?.lastChild ?? null;
    if (parent) parent.tagCounts ??= new Map();
    const typeIndex = parent ? (parent.tagCounts.get(tag) ?? 0) + 1 : 1;
    parent?.tagCounts.set(tag, typeIndex);
    const cls = attributes.get("class");
    const element = {
      tag, attributes, parent, prev, index: (prev?.index ?? 0) + 1, typeIndex, memo: null, lastChild: null, tagCounts: null,
      classes: cls ? new Set(cls.split(/\s+/).filter(Boolean)) : NO_CLASSES,
    };
    if (parent) parent.lastChild = element;
    return element;
  };
  const close = (element) => {
    element.lastChild = null;
    element.tagCounts = null;
    onClose();
  };
  let top = null;
  for (const tag of ["html", "body"]) {
    const element = make(tag, new Map(), top);
    element.states = statesOf(element, top?.states ?? null, sheet, false);
    element.flags = { hard: false, soft: false, fallback: false, inSvg: false, closedDetails: false, summarySeen: false };
    top = element;
  }
  const stack = [];  // open elements
  const current = () => stack[stack.length - 1] ?? top;
  // Past an end tag that does not close the innermost open element the markup is malformed
  // (React's never is; injected markup can be), and a browser repairs it in ways this scan does
  // not follow (a formatting element such as <b style="display:none"> left open is re-opened
  // around the text after it): from there on nothing is surely shown.
  let malformed = false;
  const verdict = (element, forText) => {
    const [certain, uncertain] = element.states;
    const f = element.flags;
    const check = forText ? textShown : boxShown;
    const lenient = !f.hard && check(certain, false);
    const strict = lenient && !f.soft && !malformed && !sheet.exhausted && check(certain, true) && check(uncertain, true);
    return { strict, lenient };
  };
  const textVerdict = () => {
    const element = current();
    if (element.flags.closedDetails || element.flags.fallback || element.tag === "select") return { strict: false, lenient: false };
    return verdict(element, true);
  };
  for (const token of tokens) {
    if (token.type === "text" || (token.type === "raw" && current().tag === "textarea")) {
      onText(token.text, textVerdict());
    } else if (token.type === "comment") {
      onComment();
    } else if (token.type === "close") {
      let k = stack.length - 1;
      while (k >= 0 && stack[k].tag !== token.name) k--;
      if (k !== stack.length - 1) malformed = true;
      if (k >= 0) {
        for (let m = stack.length - 1; m >= k; m--) close(stack[m]);
        stack.length = k;
      }
    } else if (token.type === "open") {
      const parent = current();
      let attributes = token.attributes;
      if (marker !== null && attributes.has(marker)) {
        attributes = new Map(attributes);
        attributes.delete(marker);
      }
      const element = make(token.name, attributes, parent);
      element.flags = flagsOf(element, parent);
      element.states = statesOf(element, parent.states, sheet, element.flags.inSvg);
      onOpen(token.name, token.attributes, { box: verdict(element, false), text: verdict(element, true) });
      // HTML honours "/>" on void elements only; SVG (foreign content) on any
      if (VOID.has(token.name) || (token.selfClosing && element.flags.inSvg)) close(element);
      else stack.push(element);
    }
  }
  for (let m = stack.length - 1; m >= 0; m--) close(stack[m]);
  return { exhausted: sheet.exhausted };
}

/** What hides an element beyond CSS: `hard` (not shown), `soft` (not surely shown). */
function flagsOf(element, parent) {
  const a = element.attributes;
  const p = parent.flags;
  const firstSummary = p.closedDetails && element.tag === "summary" && !p.summarySeen;
  if (firstSummary) p.summarySeen = true;
  const hard = p.hard || p.fallback || (p.closedDetails && !firstSummary) || INVISIBLE.has(element.tag)
    || (parent.tag === "select" && !IN_SELECT.has(element.tag))
    || (element.tag === "input" && (a.get("type") ?? "").trim().toLowerCase() === "hidden");
  return {
    hard,
    soft: p.soft || (a.get("aria-hidden") ?? "").trim().toLowerCase() === "true" || a.has("inert")
      || (a.get("style") ?? "").length > MAX_STYLE_CHARS,
    fallback: FALLBACK.has(element.tag),
    inSvg: element.tag === "svg" || (p.inSvg && element.tag !== "foreignobject"),
    closedDetails: element.tag === "details" && !a.has("open"),
    summarySeen: false,
  };
}

/** [certain, with-uncertain] states of `element` from its parent's. */
function statesOf(element, parentStates, sheet, inSvg) {
  const sure = intrinsic(element, inSvg);
  const unsure = [];
  for (const entry of sheet.candidates(element)) {
    const m = entry.complex === null ? null : sheet.matcher.match(entry.complex, element);
    if (m === false) continue;
    (m === true && entry.certain ? sure : unsure).push(...entry.declarations);
  }
  const style = element.attributes.get("style");
  if (style !== undefined) sure.push(...ranked(parseDeclarations(style.slice(0, MAX_STYLE_CHARS)), ORIGIN.inline, [0, 0, 0], 0));
  if (sure.length === 0 && unsure.length === 0 && parentStates) return parentStates;  // nothing of its own
  if (sheet.keyframes.size > 0) for (const name of animationNames(sure, unsure)) unsure.push(...(sheet.keyframes.get(name) ?? []));
  const [certainParent, uncertainParent] = parentStates ?? [ROOT, ROOT];
  const certain = enter(certainParent, cascade(sure), element);
  if (unsure.length === 0 && certainParent === uncertainParent) return [certain, certain];  // one way only
  return [certain, enter(uncertainParent, cascade(sure, unsure), element)];
}

/** The keyframes names an element's `animation` / `animation-name` declarations may use. */
function animationNames(...lists) {
  const names = new Set();
  for (const d of lists.flat()) {
    if (d.property !== "animation" && d.property !== "animation-name") continue;
    for (const part of d.value.split(/[\s,]+/)) if (part) names.add(part.replace(/^["']|["']$/g, ""));
  }
  return names;
}
