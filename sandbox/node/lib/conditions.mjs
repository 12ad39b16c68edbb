// Deciding conditions statically, for the reachability pass (lib/reach.mjs): a value is {v} (a
// known JS value), {lo, hi} (a number in a closed interval), an object ({v: {}, object: true},
// truthy, contents unknown; an array also has `array: true` and `length`, a number or null) or
// null (unknown). Nothing is ever run. Decided:
//   * literals, `!`, `&&`, `||`, `??`, comparisons and arithmetic on known values, `Math.random()`
//     as [0, 1], `Math.floor/ceil/round/trunc` of an interval;
//   * a name bound once and for all (lib/scope.mjs): a `const`, or a `let` nothing writes after
//     its initializer (no `eval` in the file), has its initializer's value; a state variable
//     `const [x, setX] = useState(init)` (React's useState, lib/react-api.mjs) whose setter is
//     never used (or not bound) is `init` forever;
//   * a member of a constant object literal (`const FLAGS = { show: false }`, also `as const` and
//     `Object.freeze({...})`) when every use of the name is a plain member read, not exported:
//     `FLAGS.show` is false; only primitive members are read;
//   * the length of an array: a literal's, a constant array's when every use of the name only
//     reads it (`.length`, `for...of`, spreads, methods that return a new array or a value, with
//     inline callbacks of at most two parameters), and of `.map`, `.filter` (0 when its callback
//     is decidably falsy, or the array is empty), `.slice` with known bounds, `.concat`, `.flat`,
//     `.flatMap`, `.toSorted`, `.toReversed` of a known array.
// Anything else, a parameter, a prop, a `var`, a value a loop or handler writes, is unknown.
import ts from "typescript";
import { bindingOf, declaredBy, innerOf, isWriteTarget, outerOf, scopesOf } from "./scope.mjs";
import { reactApi } from "./react-api.mjs";

export const MAX_DEPTH = 64;  // how deep an expression is looked into (the recursion stays bounded)

const known = (v) => ({ v });
const num = (x) => (x && "v" in x && typeof x.v === "number" ? { lo: x.v, hi: x.v } : x && "lo" in x ? x : null);

function truthiness(x) {
  if (!x) return null;
  if ("v" in x) return Boolean(x.v);
  if (x.lo > 0 || x.hi < 0) return true;
  if (x.lo === 0 && x.hi === 0) return false;
  return null;
}

function compare(op, a, b) {
  if (a && b && "v" in a && "v" in b) {
    switch (op) {
      case ts.SyntaxKind.LessThanToken: return a.v < b.v;
      case ts.SyntaxKind.GreaterThanToken: return a.v > b.v;
      case ts.SyntaxKind.LessThanEqualsToken: return a.v <= b.v;
      case ts.SyntaxKind.GreaterThanEqualsToken: return a.v >= b.v;
      case ts.SyntaxKind.EqualsEqualsToken: return a.v == b.v;
      case ts.SyntaxKind.EqualsEqualsEqualsToken: return a.v === b.v;
      case ts.SyntaxKind.ExclamationEqualsToken: return a.v != b.v;
      case ts.SyntaxKind.ExclamationEqualsEqualsToken: return a.v !== b.v;
      default: return null;
    }
  }
  const x = num(a);
  const y = num(b);
  if (!x || !y) return null;
  const decide = (always, never) => (always ? true : never ? false : null);
  switch (op) {
    case ts.SyntaxKind.LessThanToken: return decide(x.hi < y.lo, x.lo >= y.hi);
    case ts.SyntaxKind.GreaterThanToken: return decide(x.lo > y.hi, x.hi <= y.lo);
    case ts.SyntaxKind.LessThanEqualsToken: return decide(x.hi <= y.lo, x.lo > y.hi);
    case ts.SyntaxKind.GreaterThanEqualsToken: return decide(x.lo >= y.hi, x.hi < y.lo);
    case ts.SyntaxKind.EqualsEqualsToken:
    case ts.SyntaxKind.EqualsEqualsEqualsToken: return decide(false, x.hi < y.lo || y.hi < x.lo);
    case ts.SyntaxKind.ExclamationEqualsToken:
    case ts.SyntaxKind.ExclamationEqualsEqualsToken: return decide(x.hi < y.lo || y.hi < x.lo, false);
    default: return null;
  }
}

function arithmetic(op, a, b) {
  const x = num(a);
  const y = num(b);
  if (!x || !y) return null;
  const corners = (f) => {
    const c = [f(x.lo, y.lo), f(x.lo, y.hi), f(x.hi, y.lo), f(x.hi, y.hi)];
    return c.some(Number.isNaN) ? null : { lo: Math.min(...c), hi: Math.max(...c) };
  };
  switch (op) {
    case ts.SyntaxKind.PlusToken: return { lo: x.lo + y.lo, hi: x.hi + y.hi };
    case ts.SyntaxKind.MinusToken: return { lo: x.lo - y.hi, hi: x.hi - y.lo };
    case ts.SyntaxKind.AsteriskToken: return corners((p, q) => p * q);
    case ts.SyntaxKind.SlashToken: return y.lo > 0 || y.hi < 0 ? corners((p, q) => p / q) : null;
    default: return null;
  }
}

const MONOTONE = { floor: Math.floor, ceil: Math.ceil, round: Math.round, trunc: Math.trunc };

const evaluated = new WeakMap();
const OBJECT = Object.freeze({ v: {}, object: true });
const array = (length) => ({ v: {}, object: true, array: true, length });

/**
 * The value of `expr` where it is decidable without running anything; null otherwise.
 * Remembered per node (each node is evaluated once however many conditions contain it); a
 * subexpression deeper than MAX_DEPTH is unknown (the recursion stays bounded). `env` (a Map
 * binding -> expression) overrides what names hold, e.g. a `for` head's variables at the first
 * test; values under an `env` are not remembered.
 */
export function evaluate(expr, depth = 0, env = null) {
  if (!expr || depth > MAX_DEPTH) return null;
  if (env === null && evaluated.has(expr)) return evaluated.get(expr);
  const value = evaluateUncached(expr, depth, env);
  if (env === null) evaluated.set(expr, value);
  return value;
}

function evaluateUncached(expr, depth, env) {
  const ev = (e) => evaluate(e, depth + 1, env);
  switch (expr.kind) {
    case ts.SyntaxKind.TrueKeyword: return known(true);
    case ts.SyntaxKind.FalseKeyword: return known(false);
    case ts.SyntaxKind.NullKeyword: return known(null);
    case ts.SyntaxKind.NumericLiteral: return known(Number(expr.text));
    case ts.SyntaxKind.StringLiteral:
    case ts.SyntaxKind.NoSubstitutionTemplateLiteral: return known(expr.text);
    case ts.SyntaxKind.ArrayLiteralExpression:
      return array(expr.elements.some(ts.isSpreadElement) ? null : expr.elements.length);
    case ts.SyntaxKind.ObjectLiteralExpression:
    case ts.SyntaxKind.ArrowFunction:
    case ts.SyntaxKind.FunctionExpression: return OBJECT;  // truthy, value unknown
    case ts.SyntaxKind.Identifier: {
      const binding = bindingOf(expr);
      if (binding) return valueOfBinding(binding, ev, env, depth);
      if (expr.text === "undefined") return known(undefined);
      if (expr.text === "NaN") return known(NaN);
      if (expr.text === "Infinity") return known(Infinity);
      return null;
    }
    case ts.SyntaxKind.ParenthesizedExpression:
    case ts.SyntaxKind.AsExpression:
    case ts.SyntaxKind.SatisfiesExpression:
    case ts.SyntaxKind.NonNullExpression:
      return ev(expr.expression);
    case ts.SyntaxKind.VoidExpression: return known(undefined);
    case ts.SyntaxKind.PrefixUnaryExpression: {
      const x = ev(expr.operand);
      if (expr.operator === ts.SyntaxKind.ExclamationToken) {
        const t = truthiness(x);
        return t === null ? null : known(!t);
      }
      const n = num(x);
      if (!n) return null;
      if (expr.operator === ts.SyntaxKind.MinusToken) return { lo: -n.hi, hi: -n.lo };
      if (expr.operator === ts.SyntaxKind.PlusToken) return n;
      return null;
    }
    case ts.SyntaxKind.BinaryExpression: {
      const op = expr.operatorToken.kind;
      const left = ev(expr.left);
      if (op === ts.SyntaxKind.AmpersandAmpersandToken || op === ts.SyntaxKind.BarBarToken) {
        const t = truthiness(left);
        if (t === null) return null;
        return (op === ts.SyntaxKind.AmpersandAmpersandToken) === t ? ev(expr.right) : left;
      }
      if (op === ts.SyntaxKind.QuestionQuestionToken) {
        if (!left || !("v" in left)) return left && "lo" in left ? left : null;
        return left.v === null || left.v === undefined ? ev(expr.right) : left;
      }
      const right = ev(expr.right);
      if (left?.object || right?.object) return null;
      const c = compare(op, left, right);
      if (c !== null) return known(c);
      if (left && right && "v" in left && "v" in right && op === ts.SyntaxKind.PlusToken) return known(left.v + right.v);
      return arithmetic(op, left, right);
    }
    case ts.SyntaxKind.CallExpression: {
      const callee = innerOf(expr.expression);
      if (!ts.isPropertyAccessExpression(callee)) return null;
      if (ts.isIdentifier(callee.expression) && callee.expression.text === "Math" && !bindingOf(callee.expression)) {
        const name = callee.name.text;
        if (name === "random" && expr.arguments.length === 0) return { lo: 0, hi: 1 };
        if (MONOTONE[name] && expr.arguments.length === 1) {
          const n = num(ev(expr.arguments[0]));
          return n ? { lo: MONOTONE[name](n.lo), hi: MONOTONE[name](n.hi) } : null;
        }
        return null;
      }
      return arrayMethod(callee.name.text, ev(callee.expression), expr.arguments, ev);
    }
    case ts.SyntaxKind.PropertyAccessExpression:
      return member(expr.expression, expr.name.text, ev);
    case ts.SyntaxKind.ElementAccessExpression:
      return ts.isStringLiteralLike(expr.argumentExpression) ? member(expr.expression, expr.argumentExpression.text, ev) : null;
    default:
      return null;
  }
}

/** `target.name`: a string's or array's `length`, or a primitive member of a constant object. */
function member(target, name, ev) {
  const value = ev(target);
  if (name === "length") {
    if (value && "v" in value && typeof value.v === "string") return known(value.v.length);
    return value?.array && value.length !== null ? known(value.length) : null;
  }
  const literal = constantObject(target);
  if (!literal) return null;
  let found = null;
  for (const property of literal.properties) {
    const key = property.name && (ts.isIdentifier(property.name) || ts.isStringLiteralLike(property.name)
      || ts.isNumericLiteral(property.name)) ? property.name.text : null;
    if (key !== name) continue;
    if (ts.isPropertyAssignment(property)) found = ev(property.initializer);
    else if (ts.isShorthandPropertyAssignment(property)) found = ev(property.name);
    else return null;
  }
  return found && !found.object ? found : null;
}

/** The object literal `target` names when it is a constant nothing changes (module comment). */
function constantObject(target) {
  const id = innerOf(target);
  if (!ts.isIdentifier(id)) return null;
  const binding = bindingOf(id);
  if (!binding || !isConstant(binding) || !readOnly(binding)) return null;
  let init = innerOf(binding.initializer);
  if (init && ts.isCallExpression(init) && init.arguments.length === 1 && isObjectFreeze(init.expression)) init = innerOf(init.arguments[0]);
  if (!init || !ts.isObjectLiteralExpression(init)) return null;
  const plain = init.properties.every((p) => ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p))
    && !init.properties.some((p) => p.name && ts.isComputedPropertyName(p.name));
  return plain ? init : null;
}

function isObjectFreeze(callee) {
  const e = innerOf(callee);
  return ts.isPropertyAccessExpression(e) && e.name.text === "freeze" && ts.isIdentifier(e.expression)
    && e.expression.text === "Object" && !bindingOf(e.expression);
}

export const CALLBACK_METHODS = new Set(["map", "filter", "forEach", "flatMap", "some", "every", "find", "findIndex",
  "findLast", "findLastIndex", "reduce", "reduceRight", "toSorted"]);
const READ_METHODS = new Set([...CALLBACK_METHODS, "slice", "concat", "flat", "join", "includes", "indexOf",
  "lastIndexOf", "at", "toReversed", "toString", "entries", "keys", "values"]);

/** The value of `receiver.name(...args)` on a known array (module comment), else null. */
function arrayMethod(name, receiver, args, ev) {
  if (!receiver?.array) return null;
  const n = receiver.length;
  switch (name) {
    case "map": case "toSorted": case "toReversed": return array(n);
    case "filter": return array(n === 0 || (args[0] && returnsFalsy(args[0])) ? 0 : null);
    case "flat": case "flatMap": return array(n === 0 ? 0 : null);
    case "slice": {
      if (n === null) return array(null);
      const bound = (arg, fallback) => {
        if (!arg) return fallback;
        const b = ev(arg);
        if (!b || !("v" in b) || typeof b.v !== "number" || Number.isNaN(b.v)) return null;
        const x = Math.trunc(b.v);
        return x < 0 ? Math.max(n + x, 0) : Math.min(x, n);
      };
      const start = bound(args[0], 0);
      const end = bound(args[1], n);
      return array(start === null || end === null ? null : Math.max(end - start, 0));
    }
    case "concat": {
      let total = n;
      for (const arg of args) {
        const a = ev(arg);
        if (total === null || !a) total = null;
        else if (a.array) total = a.length === null ? null : total + a.length;
        else if (a.object) total = null;
        else total += 1;
      }
      return array(total);
    }
    default: return null;
  }
}

/** The expression a function returns when it is one expression (an arrow body or a lone return). */
export function returnedExpression(fn) {
  const f = innerOf(fn);
  if (!f || !(ts.isArrowFunction(f) || ts.isFunctionExpression(f)) || !f.body) return null;
  if (!ts.isBlock(f.body)) return f.body;
  const [only] = f.body.statements;
  return f.body.statements.length === 1 && ts.isReturnStatement(only) ? only.expression ?? null : null;
}

function returnsFalsy(callback) {
  const body = returnedExpression(callback);
  return body !== null && decide(body) === false;
}

// ---- names bound once and for all ----------------------------------------------------------------

const constant = new WeakMap();
const reads = new WeakMap();

/** A `const`, or a `let` nothing writes after its initializer (and no `eval` in the file). */
function isConstant(binding) {
  if (constant.has(binding)) return constant.get(binding);
  const answer = binding.kind === "const" || (binding.kind === "let" && binding.writes.length === 0
    && !scopesOf(binding.node.getSourceFile()).usesEval);
  constant.set(binding, answer);
  return answer;
}

/** Whether every use of `binding` only reads its object: members read (not written, deleted or
 * called, except an array's READ_METHODS with inline callbacks of at most two parameters),
 * `for...of`, spreads; never exported, passed, aliased or written. */
export function readOnly(binding) {
  if (reads.has(binding)) return reads.get(binding);
  const answer = !binding.exported && binding.writes.length === 0 && binding.reads.every(isPlainRead);
  reads.set(binding, answer);
  return answer;
}

function isPlainRead(ref) {
  const outer = outerOf(ref);
  const p = outer.parent;
  if (!p) return false;
  if (ts.isForOfStatement(p)) return p.expression === outer;
  if (ts.isSpreadElement(p) || ts.isSpreadAssignment(p)) return !isWriteTarget(p.expression);
  const access = (ts.isPropertyAccessExpression(p) || (ts.isElementAccessExpression(p) && ts.isLiteralExpression(p.argumentExpression)))
    && p.expression === outer ? p : null;
  if (!access || isWriteTarget(access)) return false;
  const around = outerOf(access).parent;
  if (around && ts.isDeleteExpression(around)) return false;
  if (around && ts.isCallExpression(around) && around.expression === outerOf(access)) {
    const name = ts.isPropertyAccessExpression(access) ? access.name.text : null;
    return READ_METHODS.has(name) && around.arguments.every((arg) => {
      const fn = innerOf(arg);
      const isFn = ts.isArrowFunction(fn) || ts.isFunctionExpression(fn);
      if (!CALLBACK_METHODS.has(name) || arg !== around.arguments[0]) return !isFn || fn.parameters.length <= 2;
      return isFn && fn.parameters.length <= 2 && !mentionsArguments(fn);
    });
  }
  return true;
}

function mentionsArguments(fn) {
  const stack = [fn.body];
  while (stack.length > 0) {
    const n = stack.pop();
    if (ts.isIdentifier(n) && n.text === "arguments") return true;
    ts.forEachChild(n, (c) => { stack.push(c); });
  }
  return false;
}

/** What `binding` holds at every read, where decidable (module comment). */
function valueOfBinding(binding, ev, env, depth) {
  if (env?.has(binding)) return ev(env.get(binding));
  if (!isConstant(binding)) return null;
  // a binding outside `env` cannot see the names `env` overrides (they are a loop head's): its
  // value is the remembered one, so evaluations under an `env` stay linear too
  const plain = (e) => evaluate(e, depth + 1);
  const init = binding.initializer;
  const value = init ? plain(init) : binding.index === 0 ? stateValue(binding, plain) : null;
  return value?.object && !readOnly(binding) ? OBJECT : value;
}

/** `const [x, setX] = useState(init)`: `init`'s value when the setter is never used. */
function stateValue(binding, ev) {
  const declaration = binding.declaration;
  const call = innerOf(declaration.initializer);
  if (!call || !ts.isCallExpression(call) || reactApi(call.expression) !== "useState") return null;
  const elements = declaration.name.elements;
  if (elements.some((el) => ts.isBindingElement(el) && el.dotDotDotToken)) return null;
  const setter = elements[1] && ts.isBindingElement(elements[1]) ? elements[1].name : null;
  if (setter) {
    const set = ts.isIdentifier(setter) ? declaredBy(setter) : null;
    if (!set || set.reads.length > 0 || set.writes.length > 0) return null;
  }
  const [arg] = call.arguments;
  if (!arg) return known(undefined);
  const fn = innerOf(arg);
  if (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) {
    const body = fn.parameters.length === 0 ? returnedExpression(fn) : null;
    return body ? ev(body) : null;
  }
  return ev(arg);
}

const decided = new WeakMap();

/** True (always), false (never) or null (undecidable) for a condition (remembered per node;
 * not under an `env`, see evaluate). */
export function decide(expr, env = null) {
  if (!expr) return null;
  if (env !== null) return truthiness(evaluate(expr, 0, env));
  if (!decided.has(expr)) decided.set(expr, truthiness(evaluate(expr)));
  return decided.get(expr);
}

/** Strict equality of two values: true, false or null (undecidable). */
export function strictlyEqual(a, b) {
  if (!a || !b) return null;
  if (a.object || b.object) return a.object && b.object ? null : false;
  if ("v" in a && "v" in b) return a.v === b.v;
  const x = num(a);
  const y = num(b);
  if (x && y) return x.hi < y.lo || y.hi < x.lo ? false : null;
  return ("v" in a && typeof a.v !== "number") || ("v" in b && typeof b.v !== "number") ? false : null;
}

/** The length of the array `expr` evaluates to, where known; else null. */
export function lengthOf(expr) {
  const value = evaluate(expr);
  return value?.array ? value.length : null;
}

