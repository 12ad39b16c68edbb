// What a component shows, statically: which JSX each top-level declaration can reach from its
// own returns, and which other top-level declarations it uses. The prompt-adherence check
// (reward_server/react/spec.py) follows the `uses` edges from the named, exported component,
// so JSX in a decoy declaration, an unused constant or a dead branch never counts.
//
// Rules (a static approximation; level `render` sees what actually renders):
//   * a function's output is its live `return` expressions (an arrow's expression body); a
//     class's is its `render` method's; a variable's is its initializer;
//   * dead code is pruned where a condition is decidable (lib/conditions.mjs: literals, names
//     bound once and for all, members of constant objects, state whose setter is never used,
//     array lengths, `Math.random()` as the interval [0, 1]): `if`, `?:`, `&&`/`||`, `while`
//     conditions, a `for` whose test fails with its head's initial values, `switch` on a known
//     value (the matching case, or `default`, and the cases it falls through to), `for...of` an
//     empty array, `for...in` an empty object literal, callbacks of `.map`/`.filter`/... on an
//     empty array, and statements after an unconditional `return`/`throw`/`break`/`continue`.
//     A condition on props, state that can change, time or chance (`Math.random() > 0.99`) is
//     undecidable and both branches count;
//   * React's `createElement(type, props, ...children)` (lib/react-api.mjs: React's by binding)
//     is an element like JSX; JSX is none when a `@jsxRuntime classic` pragma hands it to a
//     factory that is not React's createElement;
//   * a name used in live output resolves to its local values (initializer, assignments,
//     arguments of `name.push(...)`-style calls) or, failing that, to a top-level declaration
//     (an edge); `this.x` in a class resolves to member `x`;
//   * never shown: what a DOM element's `on*` handler returns, the operand of `typeof`, `void`,
//     `delete`, and what is passed to a same-file component that cannot read it (acceptedProps).
// The walks are iterative (deep JSX must not overflow the stack; the two recursive helpers,
// alwaysExits and evaluate, are depth-bounded) and each node is visited at
// most twice per declaration. Conditions are decided by lib/conditions.mjs.
import ts from "typescript";
import { CALLBACK_METHODS, decide, evaluate, lengthOf, strictlyEqual } from "./conditions.mjs";
import { isCreateElement, jsxIsReact } from "./react-api.mjs";
import { declaredBy, innerOf, mentions, outerOf } from "./scope.mjs";

const MAX_EXIT_DEPTH = 64;  // how deep `alwaysExits` looks through nested if/blocks

const isFunctionNode = (n) => ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n)
  || ts.isMethodDeclaration(n) || ts.isGetAccessorDeclaration(n) || ts.isConstructorDeclaration(n);

const exits = new WeakMap();

/** True when control never leaves `statement` normally (a return or throw on every path). */
function alwaysExits(statement, depth = 0) {
  if (!statement || depth > MAX_EXIT_DEPTH) return false;
  if (exits.has(statement)) return exits.get(statement);
  const answer = exitsUncached(statement, depth);
  if (depth === 0) exits.set(statement, answer);  // a cut-off answer deeper down is not remembered
  return answer;
}

function exitsUncached(statement, depth) {
  if (ts.isReturnStatement(statement) || ts.isThrowStatement(statement)) return true;
  if (ts.isBreakStatement(statement) || ts.isContinueStatement(statement)) return true;  // the next statement is skipped
  if (ts.isBlock(statement)) return statement.statements.some((s) => alwaysExits(s, depth + 1));
  if (ts.isIfStatement(statement)) {
    const t = decide(statement.expression);
    if (t === true) return alwaysExits(statement.thenStatement, depth + 1);
    if (t === false) return alwaysExits(statement.elseStatement, depth + 1);
    return alwaysExits(statement.thenStatement, depth + 1) && alwaysExits(statement.elseStatement, depth + 1);
  }
  return false;
}

/** The children of `node` that can run, dead branches left out. */
export function liveChildren(node) {
  if (ts.isBlock(node) || ts.isSourceFile(node) || ts.isModuleBlock(node) || ts.isCaseClause(node) || ts.isDefaultClause(node)) {
    const out = [];
    for (const statement of node.statements) {
      out.push(statement);
      if (alwaysExits(statement)) break;
    }
    return out;
  }
  if (ts.isIfStatement(node)) {
    const t = decide(node.expression);
    if (t === true) return [node.expression, node.thenStatement];
    if (t === false) return node.elseStatement ? [node.expression, node.elseStatement] : [node.expression];
  } else if (ts.isConditionalExpression(node)) {
    const t = decide(node.condition);
    if (t === true) return [node.condition, node.whenTrue];
    if (t === false) return [node.condition, node.whenFalse];
  } else if (ts.isBinaryExpression(node)) {
    const op = node.operatorToken.kind;
    const t = op === ts.SyntaxKind.AmpersandAmpersandToken || op === ts.SyntaxKind.BarBarToken ? decide(node.left) : null;
    if (t !== null && (op === ts.SyntaxKind.AmpersandAmpersandToken) !== t) return [node.left];
  } else if (ts.isWhileStatement(node) && decide(node.expression) === false) {
    return [node.expression];
  } else if (ts.isForStatement(node) && node.condition && firstTest(node) === false) {
    return [node.initializer].filter(Boolean);
  } else if (ts.isForOfStatement(node) && lengthOf(node.expression) === 0) {
    return [node.expression];
  } else if (ts.isForInStatement(node) && isEmptyObject(node.expression)) {
    return [node.expression];
  } else if (ts.isSwitchStatement(node)) {
    const clauses = liveClauses(node);
    if (clauses) return [node.expression, ...clauses];
  } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(innerOf(node.expression))
             && CALLBACK_METHODS.has(innerOf(node.expression).name.text) && lengthOf(innerOf(node.expression).expression) === 0) {
    return [node.expression, ...node.arguments.slice(1)];  // [].map(cb), emptied.filter(cb): cb never runs
  }
  const children = [];
  ts.forEachChild(node, (child) => { if (!ts.isTypeNode(child)) children.push(child); });
  return children;
}

/** The value of a `for` loop's test the first time: its head's let/const at their initial values. */
function firstTest(node) {
  const env = new Map();
  if (node.initializer && ts.isVariableDeclarationList(node.initializer)) {
    for (const d of node.initializer.declarations) {
      const binding = ts.isIdentifier(d.name) ? declaredBy(d.name) : null;
      if (binding && d.initializer && binding.kind !== "var") env.set(binding, d.initializer);
    }
  }
  return env.size > 0 ? decide(node.condition, env) : decide(node.condition);
}

function isEmptyObject(expr) {
  const e = innerOf(expr);
  return ts.isObjectLiteralExpression(e) && e.properties.length === 0;
}

/**
 * The clauses of a `switch` that can run, or null when that is undecidable: the first case whose
 * test strictly equals the discriminant (every test before it decidably different), else
 * `default`, then each following clause while the one before can fall through (it does not
 * always end in return, throw, break or continue).
 */
function liveClauses(node) {
  const value = evaluate(node.expression);
  if (!value) return null;
  const clauses = node.caseBlock.clauses;
  let start = clauses.findIndex(ts.isDefaultClause);
  for (let i = 0; i < clauses.length; i++) {
    if (ts.isDefaultClause(clauses[i])) continue;
    const equal = strictlyEqual(value, evaluate(clauses[i].expression));
    if (equal === null) return null;
    if (equal) { start = i; break; }
  }
  const live = [];
  for (let i = start; i >= 0 && i < clauses.length; i++) {
    live.push(clauses[i]);
    if (clauses[i].statements.some((s) => alwaysExits(s))) break;
  }
  return live;
}

/** A string shown as text: a JSX expression's (`{"Add item"}`) or a createElement child's. */
export function isShownText(node) {
  if (!ts.isStringLiteralLike(node) || !node.parent) return false;
  if (ts.isJsxExpression(node.parent)) return true;
  const outer = outerOf(node);
  const call = outer.parent;
  return Boolean(call && ts.isCallExpression(call) && call.arguments.indexOf(outer) >= 2 && isCreateElement(call));
}

// ---- reachability ---------------------------------------------------------------------------

const ASSIGNMENTS = new Set([
  ts.SyntaxKind.EqualsToken, ts.SyntaxKind.PlusEqualsToken, ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken, ts.SyntaxKind.QuestionQuestionEqualsToken,
]);

function push(map, key, value) {
  const list = map.get(key);
  if (list) list.push(value); else map.set(key, [value]);
}

/** Bind every name of a (possibly destructuring) binding to `value`. */
function bindNames(nameNode, value, values) {
  const stack = [nameNode];
  while (stack.length > 0) {
    const n = stack.pop();
    if (ts.isIdentifier(n)) push(values, n.text, value);
    else if (ts.isObjectBindingPattern(n) || ts.isArrayBindingPattern(n)) {
      for (const el of n.elements) if (ts.isBindingElement(el)) stack.push(el.name);
    }
  }
}

/** The identifier a chain like `a.b[c]` starts from, if any. */
function baseName(expr) {
  let e = expr;
  while (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) e = e.expression;
  return ts.isIdentifier(e) ? e.text : null;
}

/** Phase A: the live values of every local name and the live returns of every function under `root`. */
function scan(root) {
  const values = new Map();
  const returnsOf = new Map();
  const stack = [[root, null]];
  while (stack.length > 0) {
    const [node, fn] = stack.pop();
    let inner = fn;
    if (isFunctionNode(node)) {
      inner = node;
      if (!returnsOf.has(node)) returnsOf.set(node, []);
      if (node.body && !ts.isBlock(node.body)) returnsOf.get(node).push(node.body);
      if (ts.isFunctionDeclaration(node) && node.name) push(values, node.name.text, node);
      for (const p of node.parameters ?? []) if (p.initializer) bindNames(p.name, p.initializer, values);
    } else if (ts.isClassLike(node)) {
      for (const m of node.members) {
        const name = m.name && (ts.isIdentifier(m.name) || ts.isPrivateIdentifier(m.name)) ? m.name.text : null;
        if (!name) continue;
        if (ts.isMethodDeclaration(m) || ts.isGetAccessorDeclaration(m)) push(values, `this.${name}`, m);
        else if (ts.isPropertyDeclaration(m) && m.initializer) push(values, `this.${name}`, m.initializer);
      }
    } else if (ts.isReturnStatement(node)) {
      if (node.expression && inner) returnsOf.get(inner)?.push(node.expression);
    } else if (ts.isVariableDeclaration(node)) {
      if (node.initializer) bindNames(node.name, node.initializer, values);
    } else if (ts.isBinaryExpression(node) && ASSIGNMENTS.has(node.operatorToken.kind)) {
      const target = ts.isPropertyAccessExpression(node.left) && node.left.expression.kind === ts.SyntaxKind.ThisKeyword
        ? `this.${node.left.name.text}` : baseName(node.left);
      if (target) push(values, target, node.right);
    } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const target = baseName(node.expression.expression);  // items.push(x), rows.unshift(x), ...
      if (target) for (const arg of node.arguments) push(values, target, arg);
    }
    const children = liveChildren(node);
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], inner]);
  }
  return { values, returnsOf };
}

function renderMember(cls) {
  for (const m of cls.members) {
    if (!m.name || !ts.isIdentifier(m.name) || m.name.text !== "render") continue;
    if (ts.isMethodDeclaration(m)) return m;
    if (ts.isPropertyDeclaration(m) && m.initializer) return m.initializer;
  }
  return null;
}

/** The function a top-level declaration's root is (`function X`, `const X = () => ...`, `memo(() => ...)`). */
function functionOf(root) {
  let e = root;
  for (let i = 0; i < 8 && e; i++) {
    if (ts.isFunctionDeclaration(e) || ts.isFunctionExpression(e) || ts.isArrowFunction(e)) return e;
    if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
    else if (ts.isCallExpression(e) && e.arguments.length > 0) e = e.arguments[0];  // memo(fn), forwardRef(fn)
    else return null;
  }
  return null;
}

/**
 * What a same-file function component can do with what it is passed: null (it may read any
 * prop), else the set of prop names it can read (`children` among them). It reads nothing when
 * it takes no parameter or never mentions its props parameter (nor `arguments`); a destructured
 * parameter reads exactly the names it lists (a rest element: anything).
 */
export function acceptedProps(root) {
  const fn = functionOf(root);
  if (!fn || !fn.body) return null;
  const param = fn.parameters[0];
  if (!param) return mentions(fn.body, new Set(["arguments"])) ? null : new Set();
  if (ts.isObjectBindingPattern(param.name)) {
    const names = new Set();
    for (const el of param.name.elements) {
      const key = el.propertyName ?? el.name;
      if (el.dotDotDotToken || !(ts.isIdentifier(key) || ts.isStringLiteral(key))) return null;
      names.add(key.text);
    }
    return names;
  }
  if (ts.isIdentifier(param.name)) {
    return mentions(fn.body, new Set([param.name.text, "arguments"])) ? null : new Set();
  }
  return null;
}

/**
 * Phase B: walk what `root` outputs; `record(node)` is called on every JSX element and text
 * reached, and the top-level names it uses (other than `self`) are returned. What is passed to a
 * same-file component counts only where that component can read it (`accepts`: name -> null or
 * the prop names it reads): `<Hidden><ul/></Hidden>` shows no <ul> when Hidden ignores children.
 */
function reach(root, self, topNames, record, accepts = new Map(), jsxShows = true) {
  const { values, returnsOf } = scan(root);
  const uses = new Set();
  const seen = new Set();
  const stack = [root];
  const readsOf = (tag) => (ts.isIdentifier(tag) && !values.has(tag.text) && tag.text !== self
    ? accepts.get(tag.text) ?? null : null);
  const resolve = (name) => {
    const local = values.get(name);
    if (local) stack.push(...local);
    else if (topNames.has(name) && name !== self) uses.add(name);
  };
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node || seen.has(node)) continue;
    seen.add(node);
    if (isFunctionNode(node)) {
      stack.push(...(returnsOf.get(node) ?? []));
    } else if (ts.isClassLike(node)) {
      stack.push(renderMember(node));
    } else if (ts.isIdentifier(node)) {
      resolve(node.text);
    } else if (ts.isPropertyAccessExpression(node)) {
      if (node.expression.kind === ts.SyntaxKind.ThisKeyword) stack.push(...(values.get(`this.${node.name.text}`) ?? []));
      else stack.push(node.expression);
    } else if (ts.isTypeOfExpression(node) || ts.isVoidExpression(node) || ts.isDeleteExpression(node)) {
      // a string, undefined or a boolean: never the operand's JSX
    } else if (ts.isPropertyAssignment(node)) {
      stack.push(node.initializer);
    } else if (ts.isShorthandPropertyAssignment(node)) {
      resolve(node.name.text);
    } else if (ts.isJsxAttribute(node)) {
      stack.push(node.initializer);
    } else if (!jsxShows && (ts.isJsxElement(node) || ts.isJsxSelfClosingElement(node) || ts.isJsxFragment(node))) {
      // compiled to a factory that is not React's: nothing under it is known to show
    } else if (isCreateElement(node)) {
      record(node);
      const [type, props, ...children] = node.arguments;
      const tag = innerOf(type);
      const intrinsic = ts.isStringLiteralLike(tag);
      if (!intrinsic) stack.push(type);
      const reads = ts.isIdentifier(tag) ? readsOf(tag) : null;
      const literal = props ? innerOf(props) : null;
      if (literal && ts.isObjectLiteralExpression(literal)) {
        for (const prop of literal.properties) {
          const name = prop.name && (ts.isIdentifier(prop.name) || ts.isStringLiteralLike(prop.name)) ? prop.name.text : null;
          if (intrinsic && name && /^on[A-Z]/.test(name)) continue;  // a DOM handler's result is never shown
          if (!reads || (name === null ? reads.size > 0 : reads.has(name))) stack.push(prop);
        }
      } else if (props && (!reads || reads.size > 0)) stack.push(props);
      if (!reads || reads.has("children")) for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    } else if (ts.isJsxElement(node)) {
      const reads = readsOf(node.openingElement.tagName);
      stack.push(node.openingElement);
      if (!reads || reads.has("children")) for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    } else if (ts.isJsxOpeningElement(node) || ts.isJsxSelfClosingElement(node)) {
      record(node);
      const tag = node.tagName;
      if (ts.isIdentifier(tag) ? /^[A-Z_$]/.test(tag.text) : ts.isPropertyAccessExpression(tag)) stack.push(tag);
      const reads = readsOf(tag);
      const intrinsic = ts.isIdentifier(tag) && /^[a-z]/.test(tag.text);
      for (const attr of node.attributes.properties) {
        const name = ts.isJsxAttribute(attr) ? attr.name.getText() : null;
        if (intrinsic && name && /^on[A-Z]/.test(name)) continue;  // a DOM handler's result is never shown
        if (!reads || (name === null ? reads.size > 0 : reads.has(name))) stack.push(attr);
      }
    } else if (ts.isJsxText(node) || isShownText(node)) {
      record(node);
    } else {
      const children = liveChildren(node);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  }
  return uses;
}

function isExportDefault(statement) {
  const mods = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) ?? [] : [];
  return mods.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
}

/** Top-level declarations as [name, root node] pairs; the default export is named "default". */
export function topLevelDeclarations(sf) {
  const out = [];
  for (const statement of sf.statements) {
    if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) {
      const name = statement.name?.text;
      if (name) out.push([name, statement]);
      if (isExportDefault(statement)) out.push(["default", name ? statement.name : statement]);
    } else if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) {
        if (!decl.initializer) continue;
        const names = new Map();
        bindNames(decl.name, decl.initializer, names);
        for (const name of names.keys()) out.push([name, decl.initializer]);
      }
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      out.push(["default", statement.expression]);
    } else if (ts.isExportDeclaration(statement) && !statement.moduleSpecifier && statement.exportClause
               && ts.isNamedExports(statement.exportClause)) {
      for (const el of statement.exportClause.elements) {
        if (el.name.text === "default") out.push(["default", el.propertyName ?? el.name]);
      }
    }
  }
  return out;
}

/**
 * Which JSX each top-level declaration outputs and which others it uses:
 * {graph: {name: [used names]}, owners: Map(jsx node -> Set(name))}.
 */
export function reachability(sf) {
  const declarations = topLevelDeclarations(sf);
  const jsxShows = jsxIsReact(sf);
  const topNames = new Set(declarations.map(([name]) => name));
  topNames.delete("default");
  const graph = {};
  const owners = new Map();
  const accepts = new Map();
  const counts = new Map();
  for (const [name] of declarations) counts.set(name, (counts.get(name) ?? 0) + 1);
  for (const [name, root] of declarations) {
    if (name !== "default" && counts.get(name) === 1) accepts.set(name, acceptedProps(root));
  }
  const namesOf = new Map();  // one walk per root: `const { a, b } = f()` binds two names to one initializer
  for (const [name, root] of declarations) push(namesOf, root, name);
  let groups = 0;
  for (const [root, names] of namesOf) {
    // several names for one root own its JSX through one synthetic "#k" node, so the output
    // stays linear in the file (each name -> "#k" -> what the root uses)
    const owner = names.length === 1 ? names[0] : `#${groups++}`;
    const record = (node) => {
      const set = owners.get(node);
      if (set) set.add(owner); else owners.set(node, new Set([owner]));
    };
    const self = names.length === 1 && owner !== "default" ? owner : null;
    const uses = ts.isIdentifier(root) && names.includes("default") ? new Set(topNames.has(root.text) ? [root.text] : [])
      : reach(root, self, topNames, record, accepts, jsxShows);
    const add = (name, used) => { graph[name] = [...new Set([...(graph[name] ?? []), ...used])].filter((u) => u !== name).sort(); };
    add(owner, uses);
    if (owner !== names[0]) for (const name of names) add(name, [owner]);
  }
  return { graph, owners };
}
