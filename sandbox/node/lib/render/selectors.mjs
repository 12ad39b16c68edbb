// Selectors of a component's own <style> rules, matched against the elements of its server
// markup with three answers: true, false, or null (it depends on something the markup does
// not settle). Decided: type, universal, #id, .class, attribute selectors (all operators, `i`),
// all four combinators (descendant, child, next and subsequent sibling), :not(), :is(),
// :where(), :root, :scope, :first-child, :nth-child(An+B), :first-of-type, :nth-of-type(An+B),
// :checked, :disabled, :enabled, :link, :any-link, :open, :defined, and the pseudo-classes of
// states no one is in before any interaction (:hover, :focus, :active, :target, :visited,
// :popover-open, ...: false). Undecided (null): what depends on later siblings or on content
// (:last-child, :only-child, :nth-last-child, :empty, :has()), :lang(), :dir(), validity and
// other states, `of S` in :nth-child, namespaces. Pseudo-elements: ::first-line, ::first-letter and ::placeholder style the
// element's own text (`textOnly`); the others (::before, ::after, ::marker, ...) never hide
// it. Matching costs at most `budget` compound tests per style sheet; past it every answer is
// null (a style sheet built to be slow decides nothing).
export const MAX_COMPOUNDS = 16;
export const MATCH_BUDGET = 100_000;

const NEVER_NOW = new Set(["hover", "active", "focus", "focus-visible", "focus-within", "target", "target-within",
  "visited", "popover-open", "modal", "fullscreen", "picture-in-picture", "user-invalid", "user-valid", "autofill",
  "-webkit-autofill", "playing", "paused", "seeking", "buffering", "stalled", "muted", "volume-locked", "current",
  "past", "future", "drop", "blank", "closed"]);
const TEXT_ELEMENTS = new Set(["first-line", "first-letter", "placeholder"]);
const LEGACY_ELEMENTS = new Set(["before", "after", "first-line", "first-letter"]);
const FORM = new Set(["button", "input", "select", "textarea", "optgroup", "option", "fieldset"]);

/** Three-valued and / or. */
export const and = (a, b) => (a === false || b === false ? false : a === null || b === null ? null : true);
export const or = (a, b) => (a === true || b === true ? true : a === null || b === null ? null : false);

const IDENT = /^-?(?:[_a-z\u00a0-\uffff]|\\.)(?:[\w\u00a0-\uffff-]|\\.)*/i;

function unescape(text) {
  return text.replace(/\\([0-9a-f]{1,6}\s?|.)/gi, (_, e) => (/^[0-9a-f]/i.test(e) && e.trim().length <= 6 && /^[0-9a-f]+\s?$/i.test(e)
    ? String.fromCodePoint(Math.min(parseInt(e, 16), 0x10ffff) || 0xfffd) : e));
}

/** The argument of a functional pseudo-class starting after its "(" at `i`: [text, index after ")"]. */
function argument(text, i) {
  let depth = 1;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") { j++; continue; }
    if (c === '"' || c === "'") { const end = text.indexOf(c, j + 1); j = end < 0 ? text.length : end; continue; }
    if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return [text.slice(i, j), j + 1];
  }
  return [text.slice(i), text.length];
}

/**
 * A selector list parsed: [{compounds, combinators, specificity: [a, b, c], pseudoElement}],
 * or null when it cannot be read (the caller treats such a rule as undecided everywhere).
 * `depth` bounds the nesting of :not() / :is().
 */
export function parseSelectorList(text, depth = 0) {
  if (depth > 8) return null;
  const out = [];
  for (const part of splitTop(text)) {
    const complex = parseComplex(part.trim(), depth);
    if (complex === null) return null;
    out.push(complex);
  }
  return out.length > 0 ? out : null;
}

function splitTop(text) {
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") { i++; continue; }
    if (c === '"' || c === "'") { const end = text.indexOf(c, i + 1); i = end < 0 ? text.length : end; continue; }
    if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) { out.push(text.slice(start, i)); start = i + 1; }
  }
  out.push(text.slice(start));
  return out;
}

function parseComplex(text, depth) {
  const compounds = [];
  const combinators = [];
  let pseudoElement = null;
  let i = 0;
  let pending = null;  // the combinator before the next compound
  while (i < text.length) {
    const ws = /^\s+/.exec(text.slice(i));
    if (ws) { i += ws[0].length; if (compounds.length > 0 && pending === null) pending = " "; continue; }
    const c = text[i];
    if (c === ">" || c === "+" || c === "~" || (c === "|" && text[i + 1] === "|")) {
      if (compounds.length === 0) return null;
      pending = c === "|" ? "||" : c;
      i += c === "|" ? 2 : 1;
      continue;
    }
    if (pseudoElement !== null) return null;  // nothing may follow a pseudo-element's compound
    const compound = { tag: null, ids: [], classes: [], attributes: [], pseudos: [], pseudoElement: null, namespaced: false };
    const start = i;
    i = parseCompound(text, i, compound, depth);
    if (i === null || i === start) return null;
    if (compounds.length > 0) combinators.push(pending ?? " ");
    pending = null;
    compounds.push(compound);
    if (compound.pseudoElement) pseudoElement = compound.pseudoElement;
  }
  if (compounds.length === 0 || pending !== null || compounds.length > MAX_COMPOUNDS) return null;
  return { compounds, combinators, pseudoElement, specificity: specificityOf(compounds) };
}

function parseCompound(text, start, compound, depth) {
  let i = start;
  const type = /^(?:(\*|[\w-]*)\|)?(\*|-?[_a-z][\w-]*)/i.exec(text.slice(i));
  if (type) {
    if (type[1] !== undefined) compound.namespaced = true;
    compound.tag = type[2] === "*" ? null : type[2].toLowerCase();
    i += type[0].length;
  }
  while (i < text.length) {
    const c = text[i];
    if (c === "#" || c === ".") {
      const name = IDENT.exec(text.slice(i + 1));
      if (!name) return null;
      (c === "#" ? compound.ids : compound.classes).push(unescape(name[0]));
      i += 1 + name[0].length;
    } else if (c === "[") {
      const end = text.indexOf("]", i);
      if (end < 0) return null;
      const attribute = parseAttribute(text.slice(i + 1, end));
      if (!attribute) return null;
      compound.attributes.push(attribute);
      i = end + 1;
    } else if (c === ":") {
      const element = text[i + 1] === ":";
      const name = IDENT.exec(text.slice(i + (element ? 2 : 1)));
      if (!name) return null;
      const lower = name[0].toLowerCase();
      i += (element ? 2 : 1) + name[0].length;
      let arg = null;
      if (text[i] === "(") [arg, i] = argument(text, i + 1);
      if (element || LEGACY_ELEMENTS.has(lower)) compound.pseudoElement = lower;
      else {
        const list = ["not", "is", "where", "matches", "-webkit-any", "any"].includes(lower) && arg !== null
          ? parseSelectorList(arg, depth + 1) : null;
        compound.pseudos.push({ name: lower, arg, list });
      }
    } else break;
  }
  return i;
}

function parseAttribute(inner) {
  const m = /^\s*(?:(?:\*|[\w-]*)\|)?([\w:.-]+)\s*(?:([~|^$*]?=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s"']+)\s*([is])?)?\s*$/i.exec(inner);
  if (!m) return null;
  const raw = m[3] === undefined ? null : /^["']/.test(m[3]) ? m[3].slice(1, -1) : m[3];
  return { name: m[1].toLowerCase(), op: m[2] ?? null, value: raw === null ? null : unescape(raw), insensitive: (m[4] ?? "").toLowerCase() === "i" };
}

function specificityOf(compounds) {
  const s = [0, 0, 0];
  for (const c of compounds) {
    s[0] += c.ids.length;
    s[1] += c.classes.length + c.attributes.length;
    if (c.tag) s[2] += 1;
    if (c.pseudoElement) s[2] += 1;
    for (const p of c.pseudos) {
      if (p.name === "where") continue;
      if (p.list) {
        const best = p.list.map((x) => x.specificity).reduce((a, b) => (compare(a, b) >= 0 ? a : b), [0, 0, 0]);
        for (let k = 0; k < 3; k++) s[k] += best[k];
      } else s[1] += 1;
    }
  }
  return s;
}

/** Compare two specificities: negative, 0 or positive. */
export function compare(a, b) {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * A matcher over elements {tag, attributes: Map, classes: Set, parent, prev (the element sibling
 * before it), index and typeIndex (1-based, among its element siblings and those of its tag),
 * memo: Map or null until first needed}: match(complex, element) is true, false or null. One matcher per style sheet (it
 * carries the budget).
 */
export class Matcher {
  constructor(budget = MATCH_BUDGET) {
    this.budget = budget;
    this.ids = new WeakMap();
    this.next = 0;
  }

  /** Whether the budget is spent (every answer from now on is null). */
  get exhausted() {
    return this.budget <= 0;
  }

  /** Spend `n` units of the budget (the caller's own work, e.g. a rule considered). */
  spend(n = 1) {
    this.budget -= n;
  }

  /** A memo key for compound `i` of `complex` (`kind`: 0 this element, 1 some ancestor, 2 some
   * earlier sibling). */
  key(complex, i, kind = 0) {
    if (!this.ids.has(complex)) this.ids.set(complex, this.next++);
    return (this.ids.get(complex) * MAX_COMPOUNDS + i) * 3 + kind;
  }

  match(complex, element) {
    return this.from(complex, complex.compounds.length - 1, element);
  }

  /** Whether compounds 0..i of `complex` match with compound i on `element`. */
  from(complex, i, element) {
    const key = this.key(complex, i);
    element.memo ??= new Map();
    if (element.memo.has(key)) return element.memo.get(key);
    let answer = this.compound(complex.compounds[i], element);
    if (answer !== false && i > 0) {
      const combinator = complex.combinators[i - 1];
      const rest = combinator === ">" ? (element.parent ? this.from(complex, i - 1, element.parent) : false)
        : combinator === " " ? this.some(complex, i - 1, element, "parent")
        : combinator === "+" ? (element.prev ? this.from(complex, i - 1, element.prev) : false)
        : combinator === "~" ? this.some(complex, i - 1, element, "prev")
        : null;
      answer = and(answer, rest);
    }
    element.memo.set(key, answer);
    return answer;
  }

  /** Whether compounds 0..i match with compound i on some element along `link` from `element`
   * ("parent": an ancestor, "prev": an earlier sibling); iterative, remembered per element. */
  some(complex, i, element, link) {
    const key = this.key(complex, i, link === "parent" ? 1 : 2);
    const chain = [];
    let node = element;
    let answer = false;
    while (node[link]) {
      if (node.memo?.has(key)) { answer = node.memo.get(key); break; }
      chain.push(node);
      node = node[link];
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      answer = or(this.from(complex, i, chain[k][link]), answer);
      (chain[k].memo ??= new Map()).set(key, answer);
    }
    return answer;
  }

  compound(c, element) {
    if (this.budget-- <= 0 || c.namespaced) return null;
    if (c.tag !== null && c.tag !== element.tag) return false;
    for (const id of c.ids) if (element.attributes.get("id") !== id) return false;
    for (const cls of c.classes) if (!element.classes.has(cls)) return false;
    for (const a of c.attributes) if (!attributeMatches(a, element.attributes)) return false;
    let answer = true;
    for (const p of c.pseudos) {
      answer = and(answer, this.pseudo(p, element));
      if (answer === false) return false;
    }
    return answer;
  }

  pseudo(p, element) {
    const has = (name) => element.attributes.has(name);
    switch (p.name) {
      case "not": return p.list ? not(this.any(p.list, element)) : null;
      case "is": case "where": case "matches": case "-webkit-any": case "any": return p.list ? this.any(p.list, element) : null;
      case "root": case "scope": return element.tag === "html";
      case "checked": return (element.tag === "input" && has("checked")) || (element.tag === "option" && has("selected"));
      case "disabled": return FORM.has(element.tag) && has("disabled");
      case "enabled": return FORM.has(element.tag) && !has("disabled");
      case "link": case "any-link": return (element.tag === "a" || element.tag === "area") && has("href");
      case "open": return (element.tag === "details" || element.tag === "dialog") && has("open");
      case "defined": return true;
      case "first-child": return element.index === 1;
      case "first-of-type": return element.typeIndex === 1;
      case "nth-child": case "nth-of-type": {
        const step = nth(p.arg ?? "");
        if (step === null) return null;
        const n = p.name === "nth-child" ? element.index : element.typeIndex;
        const [a, b] = step;
        return a === 0 ? n === b : (n - b) / a >= 0 && Number.isInteger((n - b) / a);
      }
      default: return NEVER_NOW.has(p.name) ? false : null;
    }
  }

  any(list, element) {
    let answer = false;
    for (const complex of list) {
      if (complex.pseudoElement) continue;
      answer = or(answer, this.match(complex, element));
      if (answer === true) return true;
    }
    return answer;
  }
}

const not = (x) => (x === null ? null : !x);

/** [a, b] of an An+B argument (`odd`, `2n+1`, `-n+3`, `4`), or null (`of S`, unreadable). */
function nth(arg) {
  const t = arg.trim().toLowerCase().replace(/\s+/g, "");
  if (t === "odd") return [2, 1];
  if (t === "even") return [2, 0];
  const m = /^([+-]?\d*)n([+-]\d+)?$|^([+-]?\d+)$/.exec(t);
  if (!m) return null;
  if (m[3] !== undefined) return [0, Number(m[3])];
  const a = m[1] === "" || m[1] === "+" ? 1 : m[1] === "-" ? -1 : Number(m[1]);
  return [a, Number(m[2] ?? 0)];
}

function attributeMatches(a, attributes) {
  if (!attributes.has(a.name)) return false;
  if (a.op === null) return true;
  let actual = attributes.get(a.name);
  let wanted = a.value;
  if (a.insensitive) { actual = actual.toLowerCase(); wanted = wanted.toLowerCase(); }
  switch (a.op) {
    case "=": return actual === wanted;
    case "~=": return wanted !== "" && actual.split(/\s+/).includes(wanted);
    case "|=": return actual === wanted || actual.startsWith(`${wanted}-`);
    case "^=": return wanted !== "" && actual.startsWith(wanted);
    case "$=": return wanted !== "" && actual.endsWith(wanted);
    case "*=": return wanted !== "" && actual.includes(wanted);
    default: return false;
  }
}

/** Whether a rule's pseudo-element styles the element's own text (::first-line, ::placeholder). */
export function stylesText(pseudoElement) {
  return TEXT_ELEMENTS.has(pseudoElement);
}
