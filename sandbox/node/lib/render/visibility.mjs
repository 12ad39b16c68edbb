// What an element's computed style does to what a user sees of it: one State per element,
// computed from its parent's and the declarations that won the cascade (lib/render/visible.mjs).
// Two verdicts: `hides` (it is not shown: display none, zero opacity, ...) and `mayHide` (it
// might not be: the check cannot tell, e.g. a clip-path, a value it cannot read, a shift out of
// the page by more than a line). The spec counts only what neither hides; the empty-render
// check counts what nothing `hides` (it does not fail an honest render on a maybe). Text has
// its own verdicts on top of its box's: font size, colour against the background, indent.
//
// Decided, per property (the registry PROPERTIES):
//   display: none | visibility: hidden, collapse (a descendant can be visible again) |
//   content-visibility: hidden | opacity and filter: opacity() below MIN_OPACITY (multiplied
//   down the tree) | transform, scale, zoom: a scale below MIN_SCALE (multiplied down; text
//   is also scaled) | font-size, font: below MIN_FONT_PX after scaling (text only; a child with
//   an absolute size shows again) | width, height, max-*: at most 1px with overflow clipped,
//   or on a replaced element (img, video, svg, ...) | off the page: left/top (or right/bottom,
//   inset, translate, margin-left/top) moving a box left or up by a line or more, right or
//   bottom pushing it past the viewport or 100%, a fixed box beyond FAR_PX; text-indent out
//   by a line or more (text only) | color, and
//   -webkit-text-fill-color: transparent or with a contrast below MIN_CONTRAST against the
//   background it is drawn on (text only; gradient text and text-shadow count as shown).
// Might hide: clip, clip-path, a blur or a brightness/contrast extreme, mix-blend-mode other
// than normal/multiply/darken, rotateX/rotateY, a negative z-index, `contain: strict` without
// a size, letter-spacing below -0.4em, font-size-adjust near 0, and any value of these
// properties the check cannot read (var(), calc() of unknowns, an unknown unit or colour).
// Not decided (shown): overlap by another box, a colour drawn on a background image.
import { FONT_PX, VIEWPORT, color, contrast, fraction, length, number, over, parts } from "./css.mjs";

export const MIN_OPACITY = 0.1;
export const MIN_SCALE = 0.2;
export const MIN_FONT_PX = 6;
export const MIN_CONTRAST = 1.2;
export const LINE = 1.2;  // a line is 1.2 font sizes: a box moved out by that much may be gone
export const FAR_PX = 4000;  // a fixed box this far right or down is off any screen
const WHITE = Object.freeze({ r: 255, g: 255, b: 255, a: 1 });
const BLACK = Object.freeze({ r: 0, g: 0, b: 0, a: 1 });
const REPLACED = new Set(["img", "video", "canvas", "iframe", "embed", "object", "svg", "input", "textarea", "select",
  "meter", "progress", "audio", "picture"]);
const BLENDS_SHOWN = new Set(["normal", "multiply", "darken"]);

/** The state of the page itself: everything shown, black text on white at 16px. */
export const ROOT = Object.freeze({
  hides: false, mayHide: false, invisible: false, opacity: 1, scale: 1,
  fontPx: FONT_PX, fontKnown: true, adjustMaybe: false, color: BLACK, fill: undefined, background: WHITE,
  gradientText: false, shadow: false, indentOut: false, indentMaybe: false, letterMaybe: false,
});

const hide = (s) => { s.hides = true; };
const maybe = (s) => { s.mayHide = true; };
const keyword = (value) => String(value).trim().toLowerCase();
const unreadable = (value) => /\b(?:var|env|attr)\(/i.test(value);

/** Whether a left / top / margin value moves a box out of the page to the left or up: "out" (by
 * a line or more), "maybe" (by a share of a size the check does not know, or unreadable), or null. */
function outward(value, s) {
  const v = keyword(value);
  if (v === "auto" || v === "" || v === "initial" || v === "unset" || v === "inherit") return null;
  const l = length(v, s.fontPx);
  if (l === null || l.pct < 0) return "maybe";
  return -l.px >= LINE * s.fontPx * s.scale ? "out" : null;
}

/** `right` / `bottom`: "out" when the box is pushed past the whole page (100% or the viewport's
 * size), "maybe" when unknown, else null (a right or bottom offset is ordinary layout). */
function beyond(value, viewport, s) {
  if (value === undefined || keyword(value) === "auto") return null;
  const l = length(keyword(value), s.fontPx);
  if (l === null) return "maybe";
  return l.pct >= 100 || l.px >= viewport ? "out" : null;
}

/** A size of at most 1px (true), more (false), or unknown (null). */
function tiny(value, s) {
  const v = keyword(value);
  if (v === "auto" || v === "none" || v === "" || /^(?:fit|min|max)-content|stretch|initial|unset|inherit/.test(v)) return false;
  const l = length(v, s.fontPx);
  if (l === null) return null;
  if (l.pct > 0) return false;
  return l.px * s.scale <= 1;
}

/** Apply a scale factor (transform, scale, zoom): below MIN_SCALE the box is gone. */
function scaled(s, k) {
  s.scale *= Math.abs(k);
  if (s.scale < MIN_SCALE) hide(s);
}

/** The transform functions of `transform` (or SVG's attribute) on the state. */
function transform(value, s) {
  const v = keyword(value);
  if (v === "none" || v === "") return;
  if (unreadable(v)) return maybe(s);
  const calls = [...v.matchAll(/([a-z0-9]+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)/g)];
  if (calls.length === 0 || calls.map((c) => c[0]).join("").replace(/\s/g, "") !== v.replace(/\s/g, "")) return maybe(s);
  for (const [, name, args] of calls) {
    const a = args.split(/\s*,\s*|\s+/).filter(Boolean);
    const n = a.map(number);
    if (name === "scale" || name === "scalex" || name === "scaley" || name === "scale3d") {
      const factors = a.map(fraction);
      if (factors.some((f) => f === null)) return maybe(s);
      scaled(s, name === "scalex" || name === "scaley" ? factors[0] : Math.min(...factors.slice(0, 2).map(Math.abs)));
    } else if (name.startsWith("translate")) {
      const [x, y] = name === "translatey" ? [null, a[0]] : [a[0], name === "translatex" ? null : a[1]];
      for (const part of [x, y]) {
        if (part === undefined || part === null) continue;
        const l = length(/^-?[\d.]+$/.test(part) ? `${part}px` : part, s.fontPx);
        if (l === null) return maybe(s);
        if (l.pct <= -100 || (l.pct <= 0 && -l.px >= LINE * s.fontPx)) return hide(s);
      }
    } else if (name === "rotatex" || name === "rotatey") {
      const deg = angle(a[0]);
      if (deg === null || Math.abs(Math.cos((deg * Math.PI) / 180)) < 0.5) return maybe(s);
    } else if (name === "matrix") {
      if (n.length !== 6 || n.some((x) => x === null)) return maybe(s);
      const det = Math.abs(n[0] * n[3] - n[1] * n[2]);
      if (det < MIN_SCALE * MIN_SCALE) return hide(s);
      if (-n[4] >= LINE * s.fontPx || -n[5] >= LINE * s.fontPx) return hide(s);
    } else if (!["rotate", "rotatez", "skew", "skewx", "skewy"].includes(name)) {
      return maybe(s);  // matrix3d, perspective, rotate3d, ...
    }
  }
}

function angle(text) {
  const m = /^(-?[\d.]+)(deg|rad|turn|grad)?$/.exec(String(text ?? "").trim());
  if (!m) return null;
  const x = Number(m[1]);
  return { deg: x, rad: (x * 180) / Math.PI, turn: x * 360, grad: x * 0.9 }[m[2] ?? "deg"];
}

/** A colour value, `inherit`/`currentcolor` resolved against `inherited`; null when unknown. */
function colorValue(value, inherited, current) {
  const v = keyword(value);
  if (v === "inherit" || v === "unset") return inherited;
  if (v === "initial") return BLACK;
  const c = color(v);
  return c === "currentcolor" ? current : c;
}

/** The font size a `font-size` value gives, from the parent's; null when unknown. */
function fontSize(value, parentPx) {
  const v = keyword(value);
  const named = { "xx-small": 9, "x-small": 10, small: 13, medium: 16, large: 18, "x-large": 24, "xx-large": 32,
                  "xxx-large": 48, smaller: parentPx / 1.2, larger: parentPx * 1.2, inherit: parentPx, unset: parentPx,
                  initial: FONT_PX, math: parentPx }[v];
  if (named !== undefined) return named;
  const l = length(v, parentPx);
  if (l === null) return null;
  return Math.max(0, l.px + (l.pct * parentPx) / 100);
}

const OVERFLOW_CLIPS = (v) => /\b(?:hidden|clip|scroll|auto)\b/.test(keyword(v));

/**
 * The properties that decide visibility, in the order they apply (font size first: lengths in
 * em use it). Each takes (value, state, declarations, element).
 */
export const PROPERTIES = new Map([
  ["font-size", (v, s) => {
    const px = unreadable(v) ? null : fontSize(v, s.fontPx);
    if (px === null) s.fontKnown = false;
    else {
      s.fontPx = px;
      if (!/em|%|ex|ch|cap|ic|lh|smaller|larger|inherit|unset/.test(keyword(v))) s.fontKnown = true;  // absolute: known again
    }
  }],
  ["display", (v, s) => { const k = keyword(v); if (k === "none") hide(s); else if (unreadable(k)) maybe(s); }],
  ["visibility", (v, s) => {
    const k = keyword(v);
    if (k === "hidden" || k === "collapse") s.invisible = true;
    else if (k === "visible") s.invisible = false;
    else if (unreadable(k)) maybe(s);
  }],
  ["content-visibility", (v, s) => { if (keyword(v) === "hidden") hide(s); else if (unreadable(v)) maybe(s); }],
  ["opacity", (v, s) => {
    const k = keyword(v);
    if (k === "inherit" || k === "initial" || k === "unset") return;
    const f = fraction(k);
    if (f === null) return maybe(s);
    s.opacity *= Math.max(0, Math.min(1, f));
    if (s.opacity < MIN_OPACITY) hide(s);
  }],
  ["filter", (v, s) => {
    const k = keyword(v);
    if (k === "none" || k === "") return;
    for (const [, name, arg] of k.matchAll(/([a-z-]+)\(([^()]*)\)/g)) {
      const f = fraction(arg || "1");
      if (name === "opacity") {
        if (f === null) return maybe(s);
        s.opacity *= Math.max(0, Math.min(1, f));
        if (s.opacity < MIN_OPACITY) return hide(s);
      } else if (name === "blur") {
        const l = length(arg || "0", s.fontPx);
        if (l === null || l.px >= 4) return maybe(s);
      } else if (name === "brightness" || name === "contrast") {
        if (f === null || f < 0.2 || (name === "brightness" && f > 3)) return maybe(s);
      } else if (!["grayscale", "sepia", "saturate", "hue-rotate", "invert", "drop-shadow"].includes(name)) return maybe(s);
    }
    if (/url\(/.test(k) || unreadable(k)) maybe(s);
  }],
  ["transform", transform],
  ["translate", (v, s) => { if (keyword(v) !== "none") transform(`translate(${parts(v).slice(0, 2).join(",")})`, s); }],
  ["scale", (v, s) => {
    const k = keyword(v);
    if (k === "none") return;
    const factors = parts(k).map(fraction);
    if (factors.length === 0 || factors.some((f) => f === null)) return maybe(s);
    scaled(s, Math.min(...factors.slice(0, 2).map(Math.abs)));
  }],
  ["rotate", (v, s) => { if (/\b[xy]\b/.test(keyword(v)) || unreadable(v)) maybe(s); }],
  ["zoom", (v, s) => {
    const k = keyword(v);
    if (k === "normal" || k === "reset") return;
    const f = fraction(k);
    if (f === null) return maybe(s);
    if (f > 0) scaled(s, f);
  }],
  ["clip", (v, s) => { if (keyword(v) !== "auto") maybe(s); }],
  ["clip-path", (v, s) => {
    const k = keyword(v);
    if (k === "none") return;
    const inset = /^inset\(([^()]*)\)$/.exec(k);
    const small = inset && inset[1].split(/\s+/).filter((x) => x && x !== "round").every((x) => {
      const l = length(x, s.fontPx);
      return l !== null && l.pct < 50 && l.px < LINE * s.fontPx;
    });
    if (!small) maybe(s);
  }],
  ["mix-blend-mode", (v, s) => { if (!BLENDS_SHOWN.has(keyword(v))) maybe(s); }],
  ["z-index", (v, s) => { const n = number(v); if (n !== null && n < 0) maybe(s); }],
  ["content", (v, s) => { if (/url\(|image/i.test(v)) maybe(s); }],
  ["letter-spacing", (v, s) => {
    const k = keyword(v);
    const l = length(k, s.fontPx);
    s.letterMaybe = k !== "normal" && k !== "inherit" && (l === null || l.px <= -0.4 * s.fontPx);
  }],
  ["font-size-adjust", (v, s) => { const n = number(v); s.adjustMaybe = n !== null && n < 0.1; }],
  ["text-indent", (v, s) => {
    const l = length(keyword(v).split(/\s+/)[0], s.fontPx);
    if (l === null) { s.indentMaybe = true; return; }
    // out of the line box to the left by a line or more, or pushed right past any screen
    s.indentOut = -l.px >= LINE * s.fontPx || l.px >= FAR_PX || l.pct <= -100;
    s.indentMaybe = !s.indentOut && l.pct < 0;
  }],
]);

/** The box-level checks that need several properties at once: size with clipping, offsets. */
function geometry(s, d, element) {
  const get = (name) => d.get(name);
  const [ox = "", oy = ""] = [get("overflow-x"), get("overflow-y")];
  const contain = keyword(get("contain") ?? "");
  const paint = /\b(?:strict|content|paint)\b/.test(contain);
  const clipsX = OVERFLOW_CLIPS(ox) || paint || REPLACED.has(element.tag);
  const clipsY = OVERFLOW_CLIPS(oy) || paint || REPLACED.has(element.tag);
  for (const [clips, names] of [[clipsX, ["width", "max-width", "inline-size", "max-inline-size"]],
    [clipsY, ["height", "max-height", "block-size", "max-block-size"]]]) {
    if (!clips) continue;
    for (const name of names) {
      if (!d.has(name)) continue;
      const t = tiny(get(name), s);
      if (t === true) hide(s);
      else if (t === null) maybe(s);
    }
  }
  if (/\bstrict\b|\bsize\b/.test(contain) && !d.has("height") && !d.has("block-size")) maybe(s);
  const position = keyword(get("position") ?? "static");
  if (position !== "static") {
    const [left = "auto", top = "auto"] = [get("left"), get("top")];
    const verdicts = [outward(left, s), outward(top, s)];
    if (keyword(left) === "auto") verdicts.push(beyond(get("right"), VIEWPORT.width, s));
    if (keyword(top) === "auto") verdicts.push(beyond(get("bottom"), VIEWPORT.height, s));
    if (verdicts.includes("out")) hide(s);
    else if (verdicts.includes("maybe")) maybe(s);
    if (position === "fixed") {
      for (const name of ["left", "top"]) {
        const l = d.has(name) ? length(keyword(get(name)), s.fontPx) : null;
        if (l && l.px >= FAR_PX) hide(s);
      }
    }
  }
  for (const name of ["margin-left", "margin-top"]) {
    const value = get(name);
    if (value === undefined) continue;
    const verdict = outward(value, s);
    if (verdict === "out") hide(s);
    else if (verdict === "maybe" && keyword(value) !== "auto") maybe(s);
  }
}

/** The text colour checks: transparent, or too close to the background it is drawn on. */
function colors(s, d, parent) {
  const current = d.has("color") ? colorValue(d.get("color"), parent.color, parent.color) : parent.color;
  s.color = current;
  if (d.has("-webkit-text-fill-color")) s.fill = colorValue(d.get("-webkit-text-fill-color"), parent.fill ?? current, current);
  if (d.has("text-shadow")) s.shadow = keyword(d.get("text-shadow")) !== "none";
  const image = d.get("background-image");
  if (image !== undefined && keyword(image) !== "none" && keyword(image) !== "initial") s.background = null;
  else if (d.has("background-color")) {
    const c = colorValue(d.get("background-color"), null, current);
    s.background = c && parent.background ? over(c, parent.background) : null;  // unknown: not decided
  }
  const clip = d.get("background-clip") ?? d.get("-webkit-background-clip");
  if (clip !== undefined && keyword(clip) === "text" && s.background === null) s.gradientText = true;
}

/**
 * The state of an element: `parent` is its parent's state, `declarations` a Map property ->
 * value of the cascade's winners, `element` {tag}.
 */
export function enter(parent, declarations, element) {
  const s = { ...parent, hides: parent.hides, mayHide: parent.mayHide };
  for (const [name, apply] of PROPERTIES) if (declarations.has(name)) apply(declarations.get(name), s, declarations, element);
  geometry(s, declarations, element);
  colors(s, declarations, parent);
  return s;
}

/** Whether the state's text is shown: `strict` also refuses what might be hidden. */
export function textShown(s, strict) {
  if (!boxShown(s, strict)) return false;
  if (s.fontPx * s.scale < MIN_FONT_PX || s.indentOut) return false;
  const { known, visible, legible } = look(s);
  if (strict) return known && visible && legible && s.fontKnown && !s.adjustMaybe && !s.indentMaybe && !s.letterMaybe;
  return !known || (visible && legible);
}

const looks = new WeakMap();

/** How a state's text colour looks (remembered per state; states are shared down the tree):
 * {known: the colour could be read, visible: not transparent, legible: not its background's}. */
function look(s) {
  let answer = looks.get(s);
  if (answer) return answer;
  const ink = s.fill === undefined ? s.color : s.fill;  // a text fill, when set, paints the text
  const shown = s.gradientText || s.shadow;
  answer = {
    known: ink !== null,
    visible: ink !== null && (ink.a * s.opacity >= MIN_OPACITY || shown),
    legible: ink === null || s.background === null || shown || contrast(over(ink, s.background), s.background) >= MIN_CONTRAST,
  };
  looks.set(s, answer);
  return answer;
}

/** Whether the state's box (an element) is shown: `strict` also refuses what might be hidden. */
export function boxShown(s, strict) {
  if (s.hides || s.invisible) return false;
  return !(strict && s.mayHide);
}
