// Deciding conditions statically, for the reachability pass (lib/reach.mjs): a value is {v} (a
// known JS value), {lo, hi} (a number in a closed interval) or null (unknown). Literals, `!`,
// `&&`, `||`, `??`, comparisons and arithmetic on them, `.length` of a literal, `Math.random()`
// as [0, 1] and `Math.floor/ceil/round/trunc` of an interval; nothing is ever run.
import ts from "typescript";

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

/**
 * The value of `expr` where it is decidable without running anything; null otherwise.
 * Remembered per node (each node is evaluated once however many conditions contain it); a
 * subexpression deeper than MAX_DEPTH is unknown (the recursion stays bounded).
 */
export function evaluate(expr, depth = 0) {
  if (!expr || depth > MAX_DEPTH) return null;
  if (evaluated.has(expr)) return evaluated.get(expr);
  const value = evaluateUncached(expr, depth);
  evaluated.set(expr, value);
  return value;
}

function evaluateUncached(expr, depth) {
  const ev = (e) => evaluate(e, depth + 1);
  switch (expr.kind) {
    case ts.SyntaxKind.TrueKeyword: return known(true);
    case ts.SyntaxKind.FalseKeyword: return known(false);
    case ts.SyntaxKind.NullKeyword: return known(null);
    case ts.SyntaxKind.NumericLiteral: return known(Number(expr.text));
    case ts.SyntaxKind.StringLiteral:
    case ts.SyntaxKind.NoSubstitutionTemplateLiteral: return known(expr.text);
    case ts.SyntaxKind.ArrayLiteralExpression:
    case ts.SyntaxKind.ObjectLiteralExpression:
    case ts.SyntaxKind.ArrowFunction:
    case ts.SyntaxKind.FunctionExpression: return { v: {}, object: true };  // truthy, value unknown
    case ts.SyntaxKind.Identifier:
      if (expr.text === "undefined") return known(undefined);
      if (expr.text === "NaN") return known(NaN);
      if (expr.text === "Infinity") return known(Infinity);
      return null;
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
      const callee = expr.expression;
      if (!ts.isPropertyAccessExpression(callee) || !ts.isIdentifier(callee.expression) || callee.expression.text !== "Math") return null;
      const name = callee.name.text;
      if (name === "random" && expr.arguments.length === 0) return { lo: 0, hi: 1 };
      if (MONOTONE[name] && expr.arguments.length === 1) {
        const n = num(ev(expr.arguments[0]));
        return n ? { lo: MONOTONE[name](n.lo), hi: MONOTONE[name](n.hi) } : null;
      }
      return null;
    }
    case ts.SyntaxKind.PropertyAccessExpression:
      if (expr.name.text === "length" && (ts.isStringLiteral(expr.expression) || ts.isArrayLiteralExpression(expr.expression))) {
        const target = expr.expression;
        return known(ts.isStringLiteral(target) ? target.text.length
          : target.elements.some(ts.isSpreadElement) ? null : target.elements.length);
      }
      return null;
    default:
      return null;
  }
}

const decided = new WeakMap();

/** True (always), false (never) or null (undecidable) for a condition (remembered per node). */
export function decide(expr) {
  if (!expr) return null;
  if (!decided.has(expr)) decided.set(expr, truthiness(evaluate(expr)));
  return decided.get(expr);
}

