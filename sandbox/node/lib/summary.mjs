// Structural summary of a parsed component file, consumed by the prompt-adherence (spec)
// check: which components exist, which JSX tags/props/texts the file holds, each with its
// UTF-16 [start, end) span, and what each top-level declaration shows (lib/reach.mjs):
// every element and text lists the declarations whose live output reaches it (`owners`), and
// `graph` maps each top-level declaration (the default export as "default") to the top-level
// names its output uses. Uses the TypeScript 6 parser only (no type information): ~1 ms a file.
import ts from "typescript";
import { isShownText, reachability } from "./reach.mjs";
import { isCreateElement } from "./react-api.mjs";

/** Parse `code` as TSX; the caller reads `parseDiagnostics` from the result. */
export function parseTsx(code) {
  return ts.createSourceFile("input.tsx", code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
}

/** TypeScript parser errors as [start, end, message] triples. */
export function parseErrors(sourceFile) {
  return (sourceFile.parseDiagnostics ?? []).map((d) => [
    d.start ?? 0,
    (d.start ?? 0) + (d.length ?? 0),
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  ]);
}

const isComponentName = (name) => /^[A-Z]/.test(name);
const span = (node, sf) => ({ start: node.getStart(sf), end: node.getEnd() });
const isJsx = (node) =>
  ts.isJsxElement(node) || ts.isJsxSelfClosingElement(node) || ts.isJsxFragment(node);

/** Iterative pre-order walk (deeply nested JSX must not overflow the JS stack). */
export function* walk(root) {
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    yield node;
    const children = [];
    ts.forEachChild(node, (child) => { children.push(child); });
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
}

/** Whether `node` makes React elements: JSX, or a call of React's createElement (lib/react-api.mjs). */
function containsElements(node) {
  for (const inner of walk(node)) if (isJsx(inner) || isCreateElement(inner)) return true;
  return false;
}

function hasModifier(node, kind) {
  return (ts.canHaveModifiers(node) ? ts.getModifiers(node) ?? [] : []).some((m) => m.kind === kind);
}

/** Component-like declarations at the top level of the file. */
function collectComponents(sf) {
  const components = [];
  const add = (nameNode, body, statement) => {
    if (!nameNode || !ts.isIdentifier(nameNode) || !isComponentName(nameNode.text)) return;
    if (!body || !containsElements(body)) return;
    components.push({
      name: nameNode.text,
      ...span(nameNode, sf),
      exported: hasModifier(statement, ts.SyntaxKind.ExportKeyword),
      default: hasModifier(statement, ts.SyntaxKind.DefaultKeyword),
    });
  };
  for (const statement of sf.statements) {
    if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) {
      add(statement.name, statement, statement);
    } else if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) add(decl.name, decl.initializer, statement);
    }
  }
  return components;
}

/** `export default X`, `export { X as default }` and `export default function X` names. */
function collectDefaultExport(sf, components) {
  const declared = components.find((c) => c.default);
  if (declared) return { name: declared.name, start: declared.start, end: declared.end };
  for (const statement of sf.statements) {
    if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const expr = unwrapComponent(statement.expression);
      const name = ts.isIdentifier(expr) ? expr.text : null;
      return { name, ...span(expr, sf) };
    }
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const el of statement.exportClause.elements) {
        if (el.name.text === "default") return { name: (el.propertyName ?? el.name).text, ...span(el, sf) };
      }
    }
  }
  return null;
}

const WRAPPERS = new Set(["memo", "forwardRef"]);

/** `memo(X)`, `React.forwardRef(X)`, `(X as T)`: the component they export is X. */
function unwrapComponent(expr) {
  let e = expr;
  for (let i = 0; i < 8; i++) {
    if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) { e = e.expression; continue; }
    if (!ts.isCallExpression(e) || e.arguments.length < 1) break;
    const callee = e.expression;
    const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : null;
    if (!WRAPPERS.has(name)) break;
    e = e.arguments[0];
  }
  return e;
}

/** Names exported through `export { A, B as C }` lists. */
function collectExportedNames(sf) {
  const names = new Set();
  for (const statement of sf.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const el of statement.exportClause.elements) names.add((el.propertyName ?? el.name).text);
    }
  }
  return names;
}

function elementEntry(opening, sf) {
  const props = [];
  for (const attr of opening.attributes.properties) {
    if (ts.isJsxAttribute(attr)) props.push({ name: attr.name.getText(sf), ...span(attr.name, sf) });
  }
  return { tag: opening.tagName.getText(sf), ...span(opening.tagName, sf), props };
}

/** The entry of `createElement(type, {props}, ...)`: its tag (a string's text, else the type's
 * source) on the type argument (inside a string's quotes), its props when they are a literal. */
function callEntry(call, sf) {
  const type = call.arguments[0];
  const isString = ts.isStringLiteralLike(type);
  const at = isString ? { start: type.getStart(sf) + 1, end: type.getEnd() - 1 } : span(type, sf);
  const props = [];
  const literal = call.arguments[1];
  if (literal && ts.isObjectLiteralExpression(literal)) {
    for (const prop of literal.properties) {
      if (prop.name && (ts.isIdentifier(prop.name) || ts.isStringLiteralLike(prop.name))) {
        props.push({ name: prop.name.text, ...span(prop.name, sf) });
      }
    }
  }
  return { tag: isString ? type.text : type.getText(sf), ...at, props };
}

function textEntry(node, sf) {
  const raw = node.text;
  const trimmed = raw.trim();
  if (!trimmed) return null;
  const base = ts.isJsxText(node) ? node.pos : node.getStart(sf) + 1;
  const start = base + raw.indexOf(trimmed);
  return { text: trimmed, start, end: start + trimmed.length };
}

/** Build the summary object for a successfully parsed source file. */
export function summarize(sf) {
  const components = collectComponents(sf);
  const exportedNames = collectExportedNames(sf);
  for (const c of components) if (exportedNames.has(c.name)) c.exported = true;
  const { graph, owners } = reachability(sf);
  const ownersOf = (node) => [...(owners.get(node) ?? [])].sort();
  const elements = [];
  const texts = [];
  for (const node of walk(sf)) {
    if (ts.isJsxSelfClosingElement(node) || ts.isJsxOpeningElement(node)) {
      elements.push({ ...elementEntry(node, sf), owners: ownersOf(node) });
    } else if (isCreateElement(node)) {
      elements.push({ ...callEntry(node, sf), owners: ownersOf(node) });
    } else if (ts.isJsxText(node) || isShownText(node)) {
      const entry = textEntry(node, sf);
      if (entry) texts.push({ ...entry, owners: ownersOf(node) });
    }
  }
  return {
    components,
    default_export: collectDefaultExport(sf, components),
    elements,
    texts,
    graph,
  };
}
