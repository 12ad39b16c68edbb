// Which expressions denote React's own API (`createElement`, `useState`, ...), decided by binding
// (lib/scope.mjs), never by spelling: `React.createElement` where `React` is this file's import
// of "react" (default or namespace), or `createElement` / `h` imported from "react" under any
// local name. A local function or object of the same name is not React's, and neither is
// anything once the file could have changed React's exports: when some use of a "react" import
// is not a plain read of one of its members (`React.createElement = f`, `Object.assign(React,
// ...)`, `const R = React`), nothing in the file is taken for React's API.
//
// Also the JSX pragmas: with `@jsxRuntime classic` in a comment, esbuild compiles JSX to calls
// of the `@jsx` factory (default `React.createElement`) and fragments to the `@jsxFrag` one
// (default `React.Fragment`), looked up where the JSX is, so JSX shows what React shows only if
// those are React's and no declaration in the file shadows their names (`jsxIsReact`).
import ts from "typescript";
import { bindingOf, innerOf, isWriteTarget, outerOf, scopesOf } from "./scope.mjs";

const REACT = "react";
const trusted = new WeakMap();

const isAccess = (n) => ts.isPropertyAccessExpression(n) || ts.isElementAccessExpression(n);

/** A plain read of a member of a "react" import: `React.x`, `React.x.y`, `React["x"]`, where no
 * link of the chain is written or deleted and none is `default` (through which `import * as R`
 * reaches the exports object itself: `R.default.createElement = f`). */
function isMemberRead(id) {
  let node = outerOf(id);
  let links = 0;
  while (node.parent && isAccess(node.parent) && innerOf(node.parent.expression) === innerOf(node)) {
    const access = node.parent;
    const key = ts.isPropertyAccessExpression(access) ? access.name.text
      : ts.isStringLiteralLike(access.argumentExpression) ? access.argumentExpression.text : null;
    if (key === null || key === "default") return false;
    links++;
    node = outerOf(access);
  }
  if (links === 0 || isWriteTarget(node)) return false;
  return !(node.parent && ts.isDeleteExpression(node.parent));
}

/** Whether nothing in `sf` can have changed what its "react" imports hold (module comment). */
function reactUntouched(sf) {
  if (trusted.has(sf)) return trusted.get(sf);
  const { bindings } = scopesOf(sf);
  const answer = bindings.every((b) => {
    const from = b.imported;
    if (!from || from.module !== REACT || (from.imported !== "default" && from.imported !== "*")) return true;
    return b.reads.every((r) => isMemberRead(r) || isJsxTag(r)) && b.writes.length === 0;
  });
  trusted.set(sf, answer);
  return answer;
}

/** `<React.Fragment>`: a JSX tag reads a member (its parent is the tag's property access). */
function isJsxTag(id) {
  const access = id.parent;
  const tagOwner = access?.parent;
  return Boolean(access && ts.isPropertyAccessExpression(access) && tagOwner
    && (ts.isJsxOpeningElement(tagOwner) || ts.isJsxSelfClosingElement(tagOwner) || ts.isJsxClosingElement(tagOwner)));
}

/** The name React exports that `expr` denotes (`"createElement"`, `"useState"`, ...), else null. */
export function reactApi(expr) {
  const e = innerOf(expr);
  if (!e) return null;
  if (ts.isIdentifier(e)) {
    const from = bindingOf(e)?.imported;
    if (!from || from.module !== REACT || from.imported === "default" || from.imported === "*") return null;
    return reactUntouched(e.getSourceFile()) ? from.imported : null;
  }
  if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(innerOf(e.expression))) {
    const from = bindingOf(innerOf(e.expression))?.imported;
    if (!from || from.module !== REACT || (from.imported !== "default" && from.imported !== "*")) return null;
    return reactUntouched(e.getSourceFile()) ? e.name.text : null;
  }
  return null;
}

/** Whether `node` is a call of React's createElement with a type argument. */
export function isCreateElement(node) {
  return ts.isCallExpression(node) && node.arguments.length > 0 && reactApi(node.expression) === "createElement";
}

const jsxAnswers = new WeakMap();

function hasFragment(sf) {
  const stack = [sf];
  while (stack.length > 0) {
    const n = stack.pop();
    if (ts.isJsxFragment(n)) return true;
    ts.forEachChild(n, (c) => { stack.push(c); });
  }
  return false;
}

/** Whether the dotted `name` a pragma gives (`React.createElement`, `h`) is React's `member`,
 * resolved as at every JSX site: the file declares its root name once, as a "react" import. */
function isReacts(sf, name, member) {
  if (name === null) return false;
  const [root, property, ...rest] = name.split(".");
  const declared = scopesOf(sf).bindings.filter((b) => b.name === root);
  const from = declared.length === 1 ? declared[0].imported : null;
  if (!from || from.module !== REACT || rest.length > 0 || !reactUntouched(sf)) return false;
  return property === undefined ? from.imported === member
    : property === member && (from.imported === "default" || from.imported === "*");
}

/** Whether the JSX of `sf` is compiled to React's elements (module comment). The pragmas are
 * matched in the raw text, a superset of the comments esbuild reads them from; a file naming
 * two factories is not React's. */
export function jsxIsReact(sf) {
  if (jsxAnswers.has(sf)) return jsxAnswers.get(sf);
  let answer = true;
  if (/@jsxRuntime\s+classic/.test(sf.text)) {
    const named = (pragma, fallback) => {
      const names = new Set([...sf.text.matchAll(new RegExp(`@${pragma}\\s+([^\\s*]+)`, "g"))].map((m) => m[1]));
      return names.size > 1 ? null : [...names][0] ?? fallback;
    };
    answer = isReacts(sf, named("jsx", "React.createElement"), "createElement")
      && (!hasFragment(sf) || isReacts(sf, named("jsxFrag", "React.Fragment"), "Fragment"));
  }
  jsxAnswers.set(sf, answer);
  return answer;
}
