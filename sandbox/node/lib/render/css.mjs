// CSS as the render check reads it (lib/render/visible.mjs): declaration lists (a `style`
// attribute, a rule's block), style sheets (rules in source order, CSS nesting flattened, each
// rule marked `certain` or not: inside `@media`, `@supports`, `@container`, `@layer` or
// `@scope` whether it applies depends on what the check cannot see; `@media print` never
// applies on screen; keyframes by name), and the values the visibility rules read: numbers,
// lengths ({px, pct}: a pixel part and a percentage of something unknown), colours, and
// `calc()`, `min()`, `max()`, `clamp()` of them. Every scan is linear and iterative, nothing
// here throws, and what it cannot read is null: the caller decides what unknown means.
import { NAMED_COLORS } from "./colors.mjs";

export const MAX_NESTING = 16;  // deeper nested rules apply to every element, uncertainly
export const FONT_PX = 16;  // the root font size
export const VIEWPORT = Object.freeze({ width: 800, height: 600 });  // what vw and vh are taken from
const MAX_CALC_DEPTH = 32;

/** `text` with comments replaced by a space (strings kept whole). */
export function stripComments(text) {
  let out = "";
  let i = 0;
  let from = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") {
      i = stringEnd(text, i);
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      out += `${text.slice(from, i)} `;
      i = end < 0 ? text.length : end + 2;
      from = i;
    } else i++;
  }
  return out + text.slice(from);
}

/** The index after the string that opens at `i` (an unterminated one runs to the end of its line). */
function stringEnd(text, i) {
  const quote = text[i];
  let j = i + 1;
  while (j < text.length && text[j] !== quote && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
  return Math.min(j + 1, text.length);
}

/** The index of the first of `stops` at nesting depth 0 at or after `from` (strings and (), []
 * skipped), or text.length. */
export function findTopLevel(text, from, stops) {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'") { i = stringEnd(text, i) - 1; continue; }
    if (c === "\\") { i++; continue; }
    if (c === "(" || c === "[") depth++;
    else if ((c === ")" || c === "]") && depth > 0) depth--;
    else if (depth === 0 && stops.includes(c)) return i;
  }
  return text.length;
}

const IMPORTANT = /!\s*important\s*$/i;

/** One declaration `property: value` (without its `;`), or null. */
function declaration(chunk) {
  const colon = findTopLevel(chunk, 0, ":");
  if (colon >= chunk.length) return null;
  const property = chunk.slice(0, colon).trim().toLowerCase();
  if (!/^(?:--|-?[a-z_])[\w-]*$/.test(property)) return null;
  let value = chunk.slice(colon + 1).trim();
  const important = IMPORTANT.test(value);
  if (important) value = value.replace(IMPORTANT, "").trim();
  return { property, value, important };
}

/** The declarations of a declaration list (a `style` attribute, comments already allowed). */
export function parseDeclarations(text) {
  const clean = stripComments(String(text ?? ""));
  const out = [];
  for (let i = 0; i <= clean.length;) {
    const end = findTopLevel(clean, i, ";");
    const d = declaration(clean.slice(i, end));
    if (d) out.push(d);
    i = end + 1;
  }
  return out;
}

// ---- style sheets ------------------------------------------------------------------------------

const GROUPS = new Set(["media", "supports", "container", "layer", "scope", "document", "-moz-document", "starting-style"]);

/** Whether a media query list applies on a screen: true, false (print only) or null (it depends). */
export function mediaApplies(query) {
  const q = query.trim().toLowerCase();
  if (q === "" || /^(?:only\s+)?(?:all|screen)$/.test(q)) return true;
  const parts = q.split(",").map((p) => p.trim());
  if (parts.some((p) => /^(?:only\s+)?(?:all|screen)$/.test(p))) return true;  // a list applies when one query does
  if (parts.every((p) => /^(?:only\s+)?print\b/.test(p) && !/\band\b.*\bscreen\b/.test(p))) return false;
  return null;
}

/** Combine a nested rule's selector list with its parent's (`&` is the parent, else a descendant). */
function nestSelector(parent, child) {
  if (parent === null) return child;
  const is = `:is(${parent})`;
  return splitList(child).map((s) => (s.includes("&") ? s.split("&").join(is) : `${is} ${s}`)).join(", ");
}

/** A comma-separated list split at its top level. */
export function splitList(text) {
  const out = [];
  for (let i = 0; i <= text.length;) {
    const end = findTopLevel(text, i, ",");
    const part = text.slice(i, end).trim();
    if (part) out.push(part);
    i = end + 1;
  }
  return out;
}

/**
 * The rules of a style sheet: {rules: [{selector, declarations, certain, order}], keyframes:
 * Map(name -> declarations of all its frames)}. Nesting deeper than MAX_NESTING is read as
 * rules for every element (`*`), uncertain.
 */
export function parseStylesheet(text) {
  const css = stripComments(String(text ?? ""));
  const rules = [];
  const keyframes = new Map();
  const stack = [{ kind: "top", selector: null, certain: true, skip: false, rule: null }];
  let i = 0;
  while (i < css.length) {
    while (i < css.length && /\s/.test(css[i])) i++;
    if (i >= css.length) break;
    const top = stack[stack.length - 1];
    if (css[i] === "}") {
      if (stack.length > 1) stack.pop();
      i++;
      continue;
    }
    const stop = findTopLevel(css, i, "{;}");
    const prelude = css.slice(i, stop).trim();
    if (css[stop] !== "{") {  // a declaration, or an at-statement (@import, @layer a, b;)
      if (top.rule && !prelude.startsWith("@")) {
        const d = declaration(prelude);
        if (d) top.rule.declarations.push(d);
      }
      i = css[stop] === ";" ? stop + 1 : stop;
      continue;
    }
    if (prelude.startsWith("@")) {
      const name = /^@([\w-]+)/.exec(prelude)?.[1]?.toLowerCase() ?? "";
      const condition = prelude.slice(name.length + 1);
      if (/keyframes$/.test(name)) {
        const end = blockEnd(css, stop);
        const frames = keyframes.get(condition.trim()) ?? [];
        for (const inner of parseStylesheet(`x{${innerBlocks(css.slice(stop + 1, end - 1))}}`).rules) frames.push(...inner.declarations);
        keyframes.set(condition.trim().replace(/^["']|["']$/g, ""), frames);
        i = end;
      } else if (GROUPS.has(name)) {
        const applies = name === "media" ? mediaApplies(condition) : null;
        stack.push({ kind: "group", selector: top.selector, certain: top.certain && applies === true,
                     skip: top.skip || applies === false, rule: null });
        i = stop + 1;
      } else i = blockEnd(css, stop);  // @font-face, @page, @property, ...: nothing shown or hidden
      continue;
    }
    const deep = stack.length > MAX_NESTING;
    const selector = deep ? "*" : nestSelector(top.selector, prelude);
    const rule = { selector, declarations: [], certain: top.certain && !deep, order: rules.length };
    if (!top.skip) rules.push(rule);
    stack.push({ kind: "rule", selector, certain: rule.certain, skip: top.skip, rule });
    i = stop + 1;
  }
  return { rules, keyframes };
}

/** The index after the block whose `{` is at `open` (or the end of the text). */
function blockEnd(css, open) {
  let depth = 0;
  for (let i = open; i < css.length; i++) {
    const c = css[i];
    if (c === '"' || c === "'") { i = stringEnd(css, i) - 1; continue; }
    if (c === "\\") { i++; continue; }
    if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return css.length;
}

/** A keyframes block's frames' contents, one after the other (`from {a} to {b}` -> `a;b`). */
function innerBlocks(body) {
  const out = [];
  for (let i = 0; i < body.length;) {
    const open = findTopLevel(body, i, "{");
    if (open >= body.length) break;
    const end = blockEnd(body, open);
    out.push(body.slice(open + 1, end - 1));
    i = end;
  }
  return out.join(";");
}

// ---- values ------------------------------------------------------------------------------------

/** A value's top-level space-separated parts (a function call stays one part). */
export function parts(value) {
  const out = [];
  const text = String(value).trim();
  for (let i = 0; i < text.length;) {
    while (i < text.length && /\s/.test(text[i])) i++;
    if (i >= text.length) break;
    const end = findTopLevel(text, i, " \t\n\r\f/,");
    if (end === i) { out.push(text[i]); i++; continue; }
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

const ABSOLUTE = { px: 1, pt: 4 / 3, pc: 16, in: 96, cm: 96 / 2.54, mm: 96 / 25.4, q: 96 / 101.6 };

/** A number (`0.5`), or null. */
export function number(text) {
  const t = String(text).trim();
  return /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i.test(t) ? Number(t) : null;
}

/** An alpha or opacity: `0.5` or `50%`, else null. */
export function fraction(text) {
  const t = String(text).trim();
  if (t.endsWith("%")) {
    const n = number(t.slice(0, -1));
    return n === null ? null : n / 100;
  }
  return number(t);
}

/**
 * A length as {px, pct} (`-2em` -> {px: -32, pct: 0} at a 16px font; `50%` -> {px: 0, pct: 50}),
 * through calc(), min(), max() and clamp() where they combine known parts; null when unknown
 * (var(), env(), attr(), a unit it does not know). `fontPx` is the font size em is taken from.
 */
export function length(text, fontPx = FONT_PX) {
  return lengthOf(String(text).trim().toLowerCase(), fontPx, 0);
}

function lengthOf(t, fontPx, depth) {
  if (depth > MAX_CALC_DEPTH) return null;
  const plain = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)$/.exec(t);
  if (plain) {
    const n = Number(plain[1]);
    const unit = plain[2];
    if (unit === "%") return { px: 0, pct: n };
    if (unit === "" ) return n === 0 ? { px: 0, pct: 0 } : null;
    if (unit in ABSOLUTE) return { px: n * ABSOLUTE[unit], pct: 0 };
    const em = { em: fontPx, rem: FONT_PX, ex: fontPx / 2, ch: fontPx / 2, cap: fontPx * 0.7, ic: fontPx, lh: fontPx * 1.2,
                 rlh: FONT_PX * 1.2, vw: VIEWPORT.width / 100, vh: VIEWPORT.height / 100,
                 vmin: Math.min(VIEWPORT.width, VIEWPORT.height) / 100, vmax: Math.max(VIEWPORT.width, VIEWPORT.height) / 100 }[
      unit.replace(/^(?:s|l|d)(?=v)/, "")];
    return em === undefined ? null : { px: n * em, pct: 0 };
  }
  const call = /^(calc|min|max|clamp|-webkit-calc)\((.*)\)$/s.exec(t);
  if (!call) return null;
  if (call[1] === "calc" || call[1] === "-webkit-calc") return calc(call[2], fontPx, depth + 1);
  const args = splitList(call[2]).map((a) => calc(a, fontPx, depth + 1));
  if (args.some((a) => a === null) || args.length === 0) return null;
  // a percentage of an unknown size: min() keeps the smallest pixel part, max() the largest
  if (call[1] === "min") return args.reduce((a, b) => (b.px < a.px ? b : a));
  if (call[1] === "max") return args.reduce((a, b) => (b.px > a.px ? b : a));
  if (args.length !== 3) return null;
  const [low, mid, high] = args;
  const capped = high.px < mid.px ? high : mid;
  return low.px > capped.px ? low : capped;
}

/** calc(): sums and differences of lengths, products and quotients with plain numbers. */
function calc(expression, fontPx, depth) {
  const tokens = expression.match(/[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?[a-z%]*|[a-z-]+\([^()]*(?:\([^()]*\)[^()]*)*\)|[()*/+-]|\S+/gi) ?? [];
  let pos = 0;
  const term = (d) => {
    if (d > MAX_CALC_DEPTH) return null;
    let left = factor(d + 1);
    while (left && (tokens[pos] === "*" || tokens[pos] === "/")) {
      const op = tokens[pos++];
      const right = factor(d + 1);
      if (!right) return null;
      if (op === "*") {
        if (left.num !== undefined) left = scaleBy(right, left.num);
        else if (right.num !== undefined) left = scaleBy(left, right.num);
        else return null;
      } else {
        if (right.num === undefined || right.num === 0) return null;
        left = scaleBy(left, 1 / right.num);
      }
    }
    return left;
  };
  const sum = (d) => {
    let left = term(d + 1);
    while (left) {
      const t = tokens[pos];
      const signed = t && /^[+-]./.test(t) && t !== "+" && t !== "-";
      if (t !== "+" && t !== "-" && !signed) break;
      if (!signed) pos++;
      const right = term(d + 1);
      if (!right || (left.num !== undefined) !== (right.num !== undefined)) return null;
      const sign = t === "-" ? -1 : 1;
      left = left.num !== undefined ? { num: left.num + sign * right.num }
        : { px: left.px + sign * right.px, pct: left.pct + sign * right.pct };
    }
    return left;
  };
  const factor = (d) => {
    const t = tokens[pos++];
    if (t === undefined || d > MAX_CALC_DEPTH) return null;
    if (t === "(") {
      const inner = sum(d + 1);
      return tokens[pos++] === ")" ? inner : null;
    }
    const n = number(t);
    if (n !== null) return { num: n };
    return lengthOf(t.toLowerCase(), fontPx, depth + 1);
  };
  const value = sum(0);
  return value && pos === tokens.length && value.num === undefined ? value : value && value.num === 0 ? { px: 0, pct: 0 } : null;
}

const scaleBy = (v, k) => (v.num !== undefined ? { num: v.num * k } : { px: v.px * k, pct: v.pct * k });

// ---- colours -----------------------------------------------------------------------------------

const SYSTEM_COLORS = { canvas: 0xffffff, canvastext: 0x000000, buttonface: 0xefefef, buttontext: 0x000000,
  field: 0xffffff, fieldtext: 0x000000, graytext: 0x808080, linktext: 0x0000ee, visitedtext: 0x551a8b };

const rgbOf = (hex, a = 1) => ({ r: (hex >> 16) & 255, g: (hex >> 8) & 255, b: hex & 255, a });

/** A colour as {r, g, b, a} (0-255, alpha 0-1), "currentcolor", or null (unknown: var(), lab(), ...). */
export function color(text) {
  const t = String(text).trim().toLowerCase();
  if (t === "transparent") return { r: 0, g: 0, b: 0, a: 0 };
  if (t === "currentcolor") return "currentcolor";
  if (t in NAMED_COLORS) return rgbOf(NAMED_COLORS[t]);
  if (t in SYSTEM_COLORS) return rgbOf(SYSTEM_COLORS[t]);
  const hex = /^#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/.exec(t);
  if (hex) {
    const h = hex[1].length <= 4 ? [...hex[1]].map((c) => c + c).join("") : hex[1];
    return { r: parseInt(h.slice(0, 2), 16), g: parseInt(h.slice(2, 4), 16), b: parseInt(h.slice(4, 6), 16),
             a: h.length === 8 ? parseInt(h.slice(6, 8), 16) / 255 : 1 };
  }
  const fn = /^(rgba?|hsla?)\((.*)\)$/s.exec(t);
  if (!fn) return null;
  const args = fn[2].split(/[\s,/]+/).filter(Boolean);
  if (args.length < 3 || args.length > 4) return null;
  const alpha = args.length === 4 ? fraction(args[3]) : 1;
  if (alpha === null) return null;
  if (fn[1].startsWith("rgb")) {
    const channel = (s) => (s.endsWith("%") ? (number(s.slice(0, -1)) ?? NaN) * 2.55 : number(s) ?? NaN);
    const [r, g, b] = args.slice(0, 3).map(channel);
    return [r, g, b].some(Number.isNaN) ? null : { r: clamp255(r), g: clamp255(g), b: clamp255(b), a: clamp01(alpha) };
  }
  const h = number(args[0].replace(/deg$/, ""));
  const s = fraction(args[1].endsWith("%") ? args[1] : `${args[1]}%`);
  const l = fraction(args[2].endsWith("%") ? args[2] : `${args[2]}%`);
  if (h === null || s === null || l === null) return null;
  const k = (n) => (n + h / 30) % 12;
  const a = Math.min(Math.max(s, 0), 1) * Math.min(l, 1 - l);
  const f = (n) => 255 * (l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1)));
  return { r: clamp255(f(0)), g: clamp255(f(8)), b: clamp255(f(4)), a: clamp01(alpha) };
}

const clamp255 = (x) => Math.min(255, Math.max(0, x));
const clamp01 = (x) => Math.min(1, Math.max(0, x));

/** `top` drawn over the opaque `bottom`: an opaque colour. */
export function over(top, bottom) {
  const a = top.a;
  return { r: top.r * a + bottom.r * (1 - a), g: top.g * a + bottom.g * (1 - a), b: top.b * a + bottom.b * (1 - a), a: 1 };
}

/** The WCAG contrast ratio of two opaque colours (1: the same, 21: black on white). */
export function contrast(x, y) {
  const lum = ({ r, g, b }) => {
    const lin = (c) => { const s = c / 255; return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const [hi, lo] = [lum(x), lum(y)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}

// ---- shorthands --------------------------------------------------------------------------------

/** The four sides of a box shorthand (`margin: 0 auto` -> [top, right, bottom, left]). */
function sides(value) {
  const p = parts(value).filter((x) => x !== "/" && x !== ",");
  if (p.length === 0 || p.length > 4) return null;
  return [p[0], p[1] ?? p[0], p[2] ?? p[0], p[3] ?? p[1] ?? p[0]];
}

const SIDES = ["top", "right", "bottom", "left"];

/** The longhands a declaration sets, as [property, value] pairs: `overflow`, `inset`, `margin`,
 * `background` and `font` are expanded (the cascade then settles each longhand on its own);
 * other properties are themselves. */
export function longhands(property, value) {
  switch (property) {
    case "overflow": {
      const [x, y = x] = parts(value);
      return x === undefined ? [] : [["overflow-x", x], ["overflow-y", y]];
    }
    case "inset": {
      const four = sides(value);
      return four ? SIDES.map((side, i) => [side, four[i]]) : [];
    }
    case "margin": {
      const four = sides(value);
      return four ? SIDES.map((side, i) => [`margin-${side}`, four[i]]) : [];
    }
    case "margin-inline-start": return [["margin-left", value]];
    case "margin-block-start": return [["margin-top", value]];
    case "background": {
      const p = parts(value);
      const image = p.find((x) => /\(/.test(x) && !/^(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color|color-mix)\(/i.test(x));
      const paint = [...p].reverse().find((x) => color(x) !== null) ?? (p.some((x) => /^var\(/i.test(x)) ? p.find((x) => /^var\(/i.test(x)) : "transparent");
      return [["background-color", paint], ["background-image", image ?? "none"]];
    }
    case "font": {
      const p = parts(value);
      const slash = p.indexOf("/");
      const size = slash > 0 ? p[slash - 1]
        : p.find((x) => length(x) !== null || /^(?:xx?x?-(?:small|large)|small|medium|large|smaller|larger)$/i.test(x));
      return size === undefined ? [] : [["font-size", size]];
    }
    default: return [[property, value]];
  }
}
