// Which files need ESLint's rules-of-hooks at the render level. The rule is the authority, but
// running ESLint costs several milliseconds a file, and almost every component calls its hooks
// the one way that can never break the rules: as (part of) a statement directly in the body of
// a component or custom hook declared by name, before any return. Files where every hook call
// is of that shape skip the rule; any other hook call (in a condition, a loop, a callback, a
// class, after an early return, in an anonymous or wrapped function) sends the file to ESLint.
import ts from "typescript";

const HOOK = /^use[A-Z0-9]|^use$/;
const COMPONENT_OR_HOOK = /^[A-Z]|^use[A-Z0-9]/;
const TRANSPARENT = new Set([
  ts.SyntaxKind.ParenthesizedExpression, ts.SyntaxKind.AsExpression, ts.SyntaxKind.NonNullExpression,
  ts.SyntaxKind.SatisfiesExpression, ts.SyntaxKind.TypeAssertionExpression, ts.SyntaxKind.VariableDeclaration,
  ts.SyntaxKind.VariableDeclarationList, ts.SyntaxKind.PropertyAccessExpression, ts.SyntaxKind.ElementAccessExpression,
]);

function isHookCall(node) {
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression;
  if (ts.isIdentifier(callee)) return HOOK.test(callee.text);
  return ts.isPropertyAccessExpression(callee) && HOOK.test(callee.name.text);
}

function functionName(fn) {
  if (ts.isFunctionDeclaration(fn)) return fn.name?.text ?? null;
  if ((ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) && ts.isVariableDeclaration(fn.parent) && ts.isIdentifier(fn.parent.name)) {
    return fn.parent.name.text;
  }
  return null;
}

function containsExit(root) {
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (ts.isReturnStatement(node) || ts.isThrowStatement(node)) return true;
    if (node !== root && (ts.isFunctionLike(node) || ts.isClassLike(node))) continue;
    ts.forEachChild(node, (child) => { stack.push(child); });
  }
  return false;
}

/** True when the call sits where no rule of hooks can be broken (see the module comment). */
function plainlyPlaced(call) {
  let node = call;
  let parent = node.parent;
  while (parent && TRANSPARENT.has(parent.kind)) {
    if (ts.isVariableDeclaration(parent) && parent.initializer !== node) return false;
    if ((ts.isPropertyAccessExpression(parent) || ts.isElementAccessExpression(parent)) && parent.expression !== node) return false;
    node = parent;
    parent = parent.parent;
  }
  if (!parent) return false;
  let fn;
  if (ts.isArrowFunction(parent) && parent.body === node) {
    fn = parent;
  } else {
    if (!(ts.isVariableStatement(parent) || ts.isExpressionStatement(parent))) return false;
    const block = parent.parent;
    if (!block || !ts.isBlock(block) || !block.parent || !ts.isFunctionLike(block.parent)) return false;
    fn = block.parent;
    for (const statement of block.statements) {
      if (statement === parent) break;
      if (containsExit(statement)) return false;
    }
  }
  if (!(ts.isFunctionDeclaration(fn) || ts.isArrowFunction(fn) || ts.isFunctionExpression(fn))) return false;
  const name = functionName(fn);
  return name !== null && COMPONENT_OR_HOOK.test(name);
}

/** True when some hook call of `sf` is not plainly placed: the file needs the ESLint rule. */
export function needsHooksLint(sf) {
  const stack = [sf];  // iterative: deeply nested JSX must not overflow the stack
  while (stack.length > 0) {
    const node = stack.pop();
    if (isHookCall(node) && !plainlyPlaced(node)) return true;
    ts.forEachChild(node, (child) => { stack.push(child); });
  }
  return false;
}
