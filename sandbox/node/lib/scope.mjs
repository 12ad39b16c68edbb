// Which declaration each name in a file refers to, and what reads and writes it: a parse-only
// scope analysis (no type information, nothing run) for the static checks of lib/conditions.mjs,
// lib/react-api.mjs and lib/reach.mjs. One pass collects the `var`s each function hoists, a
// second walks the file once with a stack of declarations per name, so it is linear in the file.
//
// Scopes (ES module semantics, strict mode): the file (its imports, `var`s, and the lexical
// declarations of its statements), each function (parameters, the name of a function or class
// expression, hoisted `var`s), each block, case block and namespace block (let, const, using,
// class, function, enum, namespace), a `for` head's let/const, a catch clause. A name with no
// declaration in scope is a global (`bindingOf` answers null). Type positions declare and read
// nothing. Every binding lists its reads and its writes after the declaration: assignments
// (`=`, `+=`, `||=`, ...), `++`/`--`, destructuring assignment targets and `for (x of ...)` heads.
import ts from "typescript";

const ASSIGNMENT = new Set([
  ts.SyntaxKind.EqualsToken, ts.SyntaxKind.PlusEqualsToken, ts.SyntaxKind.MinusEqualsToken,
  ts.SyntaxKind.AsteriskEqualsToken, ts.SyntaxKind.AsteriskAsteriskEqualsToken, ts.SyntaxKind.SlashEqualsToken,
  ts.SyntaxKind.PercentEqualsToken, ts.SyntaxKind.LessThanLessThanEqualsToken, ts.SyntaxKind.GreaterThanGreaterThanEqualsToken,
  ts.SyntaxKind.GreaterThanGreaterThanGreaterThanEqualsToken, ts.SyntaxKind.AmpersandEqualsToken, ts.SyntaxKind.BarEqualsToken,
  ts.SyntaxKind.CaretEqualsToken, ts.SyntaxKind.BarBarEqualsToken, ts.SyntaxKind.AmpersandAmpersandEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
]);
const INCREMENT = new Set([ts.SyntaxKind.PlusPlusToken, ts.SyntaxKind.MinusMinusToken]);

const isFunctionScope = (n) => ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n)
  || ts.isMethodDeclaration(n) || ts.isConstructorDeclaration(n) || ts.isGetAccessorDeclaration(n)
  || ts.isSetAccessorDeclaration(n) || ts.isClassStaticBlockDeclaration(n);

/** Skip what only wraps an expression's value: parentheses, `!`, `as`, `satisfies`, `<T>x`. */
export function outerOf(node) {
  let n = node;
  while (n.parent && (ts.isParenthesizedExpression(n.parent) || ts.isNonNullExpression(n.parent) || ts.isAsExpression(n.parent)
         || ts.isSatisfiesExpression(n.parent) || ts.isTypeAssertionExpression(n.parent))) n = n.parent;
  return n;
}

/** The expression inside such wrappers. */
export function innerOf(node) {
  let n = node;
  while (n && (ts.isParenthesizedExpression(n) || ts.isNonNullExpression(n) || ts.isAsExpression(n)
         || ts.isSatisfiesExpression(n) || ts.isTypeAssertionExpression(n))) n = n.expression;
  return n;
}

/** Whether the expression `node` is written to: an assignment's target (destructuring included),
 * the operand of `++`/`--`, or the head of a `for...in/of` that is not a declaration. */
export function isWriteTarget(node) {
  const n = outerOf(node);
  const p = n.parent;
  if (!p) return false;
  if (ts.isBinaryExpression(p)) return p.left === n && ASSIGNMENT.has(p.operatorToken.kind);
  if (ts.isPrefixUnaryExpression(p) || ts.isPostfixUnaryExpression(p)) return INCREMENT.has(p.operator);
  if (ts.isForInStatement(p) || ts.isForOfStatement(p)) return p.initializer === n;
  const literal = literalAround(n, p);
  return literal !== null && isTargetLiteral(literal);
}

/** The object or array literal `n` (with parent `p`) is a part of, as a destructuring would read it. */
function literalAround(n, p) {
  if (ts.isShorthandPropertyAssignment(p) || ts.isSpreadAssignment(p)) return p.parent;
  if (ts.isPropertyAssignment(p)) return p.initializer === n ? p.parent : null;
  if (ts.isSpreadElement(p)) return ts.isArrayLiteralExpression(p.parent) ? p.parent : null;
  if (ts.isArrayLiteralExpression(p)) return p;
  return null;
}

const targetLiterals = new WeakMap();

/** Whether an object or array literal is a destructuring assignment's target (`[a, b] = ...`),
 * directly or nested in one; remembered per literal, so nested literals cost linear time. */
function isTargetLiteral(literal) {
  const chain = [];
  let answer = false;
  for (let lit = literal; ;) {
    if (targetLiterals.has(lit)) { answer = targetLiterals.get(lit); break; }
    chain.push(lit);
    const n = outerOf(lit);
    const p = n.parent;
    if (!p) break;
    if (ts.isBinaryExpression(p)) { answer = p.left === n && p.operatorToken.kind === ts.SyntaxKind.EqualsToken; break; }
    if (ts.isForInStatement(p) || ts.isForOfStatement(p)) { answer = p.initializer === n; break; }
    const outer = literalAround(n, p);
    if (outer === null) break;
    lit = outer;
  }
  for (const lit of chain) targetLiterals.set(lit, answer);
  return answer;
}

/** Whether the identifier `id` is a use of a name (not a declaration, property name, label, ...). */
function isReference(id) {
  const p = id.parent;
  if (!p) return false;
  if (ts.isPropertyAccessExpression(p) || ts.isQualifiedName(p)) return p.expression === id || p.left === id;
  if (ts.isShorthandPropertyAssignment(p)) return p.name === id || p.objectAssignmentInitializer === id;
  if (ts.isBindingElement(p)) return p.initializer === id;
  if (ts.isVariableDeclaration(p) || ts.isParameter(p) || ts.isPropertyDeclaration(p) || ts.isPropertyAssignment(p)
      || ts.isEnumMember(p) || ts.isPropertySignature(p)) return p.initializer === id;
  if (ts.isMethodDeclaration(p) || ts.isMethodSignature(p) || ts.isGetAccessorDeclaration(p) || ts.isSetAccessorDeclaration(p)
      || ts.isFunctionDeclaration(p) || ts.isFunctionExpression(p) || ts.isClassDeclaration(p) || ts.isClassExpression(p)
      || ts.isInterfaceDeclaration(p) || ts.isTypeAliasDeclaration(p) || ts.isEnumDeclaration(p) || ts.isModuleDeclaration(p)
      || ts.isTypeParameterDeclaration(p)) return false;
  if (ts.isImportClause(p) || ts.isImportSpecifier(p) || ts.isNamespaceImport(p) || ts.isImportEqualsDeclaration(p)
      || ts.isNamespaceExport(p) || ts.isExportSpecifier(p)) return ts.isExportSpecifier(p) && (p.propertyName ?? p.name) === id;
  if (ts.isLabeledStatement(p) || ts.isBreakStatement(p) || ts.isContinueStatement(p) || ts.isMetaProperty(p)) return false;
  if (ts.isJsxAttribute(p) || ts.isJsxNamespacedName(p)) return false;
  if (ts.isJsxOpeningElement(p) || ts.isJsxSelfClosingElement(p) || ts.isJsxClosingElement(p)) {
    return !ts.isJsxClosingElement(p) && p.tagName === id && !/^[a-z]/.test(id.text);
  }
  return true;
}

const declarationKind = (list) => {
  const flags = list.flags & ts.NodeFlags.BlockScoped;
  return flags === ts.NodeFlags.Const ? "const" : flags === ts.NodeFlags.Let ? "let" : flags === 0 ? "var" : "using";
};

/** [identifier, binding element path] of every name a binding pattern declares. */
function boundNames(nameNode) {
  const out = [];
  const stack = [[nameNode, null]];
  while (stack.length > 0) {
    const [n, index] = stack.pop();
    if (ts.isIdentifier(n)) out.push([n, index]);
    else if (ts.isObjectBindingPattern(n)) for (const el of n.elements) stack.push([el.name, null]);
    else if (ts.isArrayBindingPattern(n)) {
      const top = n.parent && ts.isVariableDeclaration(n.parent);
      n.elements.forEach((el, i) => { if (ts.isBindingElement(el)) stack.push([el.name, top && !el.dotDotDotToken ? i : null]); });
    }
  }
  return out;
}

class Binding {
  constructor(name, kind, node, declaration = null, index = null) {
    this.name = name;
    this.kind = kind;  // const | let | var | using | param | function | class | import | catch | enum | namespace
    this.node = node;  // the declaring identifier
    this.declaration = declaration;  // the VariableDeclaration / ImportSpecifier / ... it comes from
    this.index = index;  // for `const [a, b] = init`: the element's position, else null
    this.reads = [];
    this.writes = [];
  }

  /** The initializer of a plain `const x = init` / `let x = init`, else null. */
  get initializer() {
    const d = this.declaration;
    return d && ts.isVariableDeclaration(d) && ts.isIdentifier(d.name) ? d.initializer ?? null : null;
  }

  /** For `import x from "m"`, `import * as x from "m"`, `import { y as x } from "m"`:
   * {module, imported} ("default", "*" or the exported name), else null. */
  get imported() {
    if (this.kind !== "import") return null;
    let n = this.declaration;
    while (n && !ts.isImportDeclaration(n)) n = n.parent;
    const module = n && ts.isStringLiteral(n.moduleSpecifier) ? n.moduleSpecifier.text : null;
    const d = this.declaration;
    const imported = ts.isImportClause(d) ? "default" : ts.isNamespaceImport(d) ? "*" : (d.propertyName ?? d.name).text;
    return { module, imported };
  }

  get exported() {
    let n = this.declaration;
    while (n && (ts.isVariableDeclaration(n) || ts.isVariableDeclarationList(n))) n = n.parent;
    return Boolean(n && ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
      || this.reads.some((r) => ts.isExportSpecifier(r.parent) || ts.isExportAssignment(r.parent));
  }
}

/** What a scope node declares: [identifier, kind, declaration, index] entries. */
function declaredIn(node, hoisted) {
  const out = [];
  const statementDeclares = (s) => {
    if (ts.isVariableStatement(s)) {
      const kind = declarationKind(s.declarationList);
      if (kind === "var") return;
      for (const d of s.declarationList.declarations) for (const [id, index] of boundNames(d.name)) out.push([id, kind, d, index]);
    } else if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) && s.name) {
      out.push([s.name, ts.isClassDeclaration(s) ? "class" : "function", s, null]);
    } else if (ts.isEnumDeclaration(s)) out.push([s.name, "enum", s, null]);
    else if (ts.isModuleDeclaration(s) && ts.isIdentifier(s.name)) out.push([s.name, "namespace", s, null]);
    else if (ts.isImportDeclaration(s) && s.importClause && !s.importClause.isTypeOnly) {
      const clause = s.importClause;
      if (clause.name) out.push([clause.name, "import", clause, null]);
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) out.push([bindings.name, "import", bindings, null]);
      else if (bindings) for (const el of bindings.elements) if (!el.isTypeOnly) out.push([el.name, "import", el, null]);
    } else if (ts.isImportEqualsDeclaration(s) && !s.isTypeOnly) out.push([s.name, "import", s, null]);
  };
  if (ts.isSourceFile(node) || ts.isBlock(node) || ts.isModuleBlock(node)) node.statements.forEach(statementDeclares);
  else if (ts.isCaseBlock(node)) for (const clause of node.clauses) clause.statements.forEach(statementDeclares);
  else if (isFunctionScope(node)) {
    if ((ts.isFunctionExpression(node)) && node.name) out.push([node.name, "function", node, null]);
    for (const p of node.parameters ?? []) for (const [id] of boundNames(p.name)) out.push([id, "param", p, null]);
  } else if (ts.isClassExpression(node) && node.name) out.push([node.name, "class", node, null]);
  else if ((ts.isForStatement(node) || ts.isForInStatement(node) || ts.isForOfStatement(node))
           && node.initializer && ts.isVariableDeclarationList(node.initializer)) {
    const kind = declarationKind(node.initializer);
    if (kind !== "var") {
      // a for-in/of variable takes a new value each iteration: it is written by the loop
      const loopKind = ts.isForStatement(node) ? kind : "loop";
      for (const d of node.initializer.declarations) for (const [id, index] of boundNames(d.name)) out.push([id, loopKind, d, index]);
    }
  } else if (ts.isCatchClause(node) && node.variableDeclaration) {
    for (const [id] of boundNames(node.variableDeclaration.name)) out.push([id, "catch", node.variableDeclaration, null]);
  }
  if (ts.isSourceFile(node) || isFunctionScope(node)) for (const [id, d] of hoisted.get(node) ?? []) out.push([id, "var", d, null]);
  return out;
}

/** Pass 1: the `var` declarations each function (or the file) hoists. */
function hoistedVars(sf) {
  const hoisted = new Map();
  const stack = [[sf, sf]];
  while (stack.length > 0) {
    const [node, fn] = stack.pop();
    if (ts.isVariableDeclarationList(node) && declarationKind(node) === "var") {
      if (!hoisted.has(fn)) hoisted.set(fn, []);
      for (const d of node.declarations) for (const [id] of boundNames(d.name)) hoisted.get(fn).push([id, d]);
    }
    const inner = isFunctionScope(node) ? node : fn;
    ts.forEachChild(node, (child) => { if (!ts.isTypeNode(child)) stack.push([child, inner]); });
  }
  return hoisted;
}

/** The node kinds declaredIn() can find declarations in (for any other kind it returns none):
 * skipping the rest saves its tests on every node of the walk. */
const SCOPE_KINDS = new Set([
  ts.SyntaxKind.SourceFile, ts.SyntaxKind.Block, ts.SyntaxKind.ModuleBlock, ts.SyntaxKind.CaseBlock,
  ts.SyntaxKind.FunctionDeclaration, ts.SyntaxKind.FunctionExpression, ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.MethodDeclaration, ts.SyntaxKind.Constructor, ts.SyntaxKind.GetAccessor, ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.ClassStaticBlockDeclaration, ts.SyntaxKind.ClassExpression, ts.SyntaxKind.ForStatement,
  ts.SyntaxKind.ForInStatement, ts.SyntaxKind.ForOfStatement, ts.SyntaxKind.CatchClause,
]);
const NONE = Object.freeze([]);
/** Children of the walk's current node (a shared buffer: the walk pushes them, then truncates it). */
const children = [];
const collectChild = (child) => {
  if (!ts.isTypeNode(child) && !ts.isInterfaceDeclaration(child) && !ts.isTypeAliasDeclaration(child)) children.push(child);
};

const analyses = new WeakMap();
const resolved = new WeakMap();  // every use of a name in an analysed file -> its Binding, or null (a global)
const declaring = new WeakMap();  // every declaring identifier -> its Binding

/**
 * The scope analysis of `sf` (computed once per file): {bindings: Binding[], usesEval: boolean}
 * (`eval` anywhere: a direct eval can write any `let`); `bindingOf` answers for its identifiers.
 */
export function scopesOf(sf) {
  let analysis = analyses.get(sf);
  if (analysis) return analysis;
  const hoisted = hoistedVars(sf);
  const bindings = [];
  const visible = new Map();  // name -> stack of bindings
  const declaredAt = new Map();  // scope node -> the bindings it declared (popped on leaving it)
  let usesEval = false;
  const stack = [[sf, false]];
  while (stack.length > 0) {
    const [node, leaving] = stack.pop();
    if (leaving) {
      for (const b of declaredAt.get(node)) visible.get(b.name).pop();
      declaredAt.delete(node);
      continue;
    }
    const declared = SCOPE_KINDS.has(node.kind)
      ? declaredIn(node, hoisted).map(([id, kind, d, index]) => new Binding(id.text, kind, id, d, index)) : NONE;
    if (declared.length > 0) {
      for (const b of declared) {
        bindings.push(b);
        declaring.set(b.node, b);
        if (!visible.has(b.name)) visible.set(b.name, []);
        visible.get(b.name).push(b);
      }
      declaredAt.set(node, declared);
      stack.push([node, true]);
    }
    if (ts.isIdentifier(node) && isReference(node)) {
      if (node.text === "eval") usesEval = true;
      const names = visible.get(node.text);
      const binding = names && names.length > 0 ? names[names.length - 1] : null;
      resolved.set(node, binding);
      if (binding) (isWriteTarget(node) ? binding.writes : binding.reads).push(node);
    }
    const first = children.length;
    ts.forEachChild(node, collectChild);
    for (let i = children.length - 1; i >= first; i--) stack.push([children[i], false]);
    children.length = first;
  }
  analysis = { bindings, usesEval };
  analyses.set(sf, analysis);
  return analysis;
}

/** The binding the identifier `id` (of a file parsed with parent pointers) refers to, or null: a
 * global, or not a use of a name. */
export function bindingOf(id) {
  if (!resolved.has(id)) {
    const sf = id.getSourceFile?.();
    if (!sf || analyses.has(sf)) return null;
    scopesOf(sf);
  }
  return resolved.get(id) ?? null;
}

/** The binding the declaring identifier `id` (`x` of `const x = ...`, a parameter, ...) creates. */
export function declaredBy(id) {
  if (!declaring.has(id)) {
    const sf = id.getSourceFile?.();
    if (sf && !analyses.has(sf)) scopesOf(sf);
  }
  return declaring.get(id) ?? null;
}

/** Whether an identifier spelled as one of `names` occurs anywhere under `root` (by spelling:
 * shadowing, property names and bindings count too). */
export function mentions(root, names) {
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop();
    if (ts.isIdentifier(n) && names.has(n.text)) return true;
    ts.forEachChild(n, (c) => { stack.push(c); });
  }
  return false;
}
