// Which component level "render" mounts, and the spec summary of what it rendered.
//
// With a spec naming a component, the named component is mounted only when the module exports
// it (a named export, an export list, or the default export, wrapped or not in memo /
// forwardRef): an unexported declaration of that name is a decoy no app can import. Otherwise
// (and without a spec) the default export, else the first exported component, else the first
// component. The spec is then judged on that component's rendered DOM (lib/render/dom.mjs):
// its visible host elements, their text, and the props React received on them.
import ts from "typescript";

export const TARGET = "__botgrpo_render_target__";

function hasModifier(node, kind) {
  return (ts.canHaveModifiers(node) ? ts.getModifiers(node) ?? [] : []).some((m) => m.kind === kind);
}

/** The identifier an `export default` expression names, through calls such as memo(X). */
function defaultName(expression) {
  let node = expression;
  for (let depth = 0; node && depth < 8; depth++) {
    if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression?.(node)) node = node.expression;
    else if (ts.isCallExpression(node) && node.arguments.length > 0) node = node.arguments[0];
    else break;
  }
  return node && ts.isIdentifier(node) ? node.text : null;
}

/** Local names the module exports (any export form), the default export's included. */
export function exportedNames(sf) {
  const names = new Set();
  for (const statement of sf.statements) {
    const exported = hasModifier(statement, ts.SyntaxKind.ExportKeyword);
    if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && exported && statement.name) {
      names.add(statement.name.text);
    } else if (ts.isVariableStatement(statement) && exported) {
      for (const decl of statement.declarationList.declarations) if (ts.isIdentifier(decl.name)) names.add(decl.name.text);
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const name = defaultName(statement.expression);
      if (name) names.add(name);
    } else if (ts.isExportDeclaration(statement) && !statement.moduleSpecifier && statement.exportClause
               && ts.isNamedExports(statement.exportClause) && !statement.isTypeOnly) {
      for (const el of statement.exportClause.elements) names.add((el.propertyName ?? el.name).text);
    }
  }
  return names;
}

/**
 * {exportName, name, append, span, exported} of the component to mount, or null: see the module
 * comment. `summary` is the static one (lib/summary.mjs: components, default_export).
 */
export function renderTarget(summary, wanted, sf) {
  const components = summary.components ?? [];
  const exported = exportedNames(sf);
  const local = (c) => ({ exportName: TARGET, name: c.name, append: `\nexport { ${c.name} as ${TARGET} };\n`, span: c, exported: exported.has(c.name) });
  if (wanted) {
    const named = components.find((c) => c.name === wanted && exported.has(c.name));
    if (named) return local(named);
  }
  if (summary.default_export) {
    const d = summary.default_export;
    const declared = d.name ? components.find((c) => c.name === d.name) : undefined;
    return { exportName: "default", name: d.name ?? "default", append: "", span: declared ?? d, exported: true };
  }
  const pick = components.find((c) => exported.has(c.name)) ?? components[0];
  return pick ? local(pick) : null;
}

/** Static JSX elements by tag, each with its prop names (lib/summary.mjs's `elements`). */
function byTag(staticElements) {
  const out = new Map();
  for (const e of staticElements ?? []) {
    if (typeof e?.tag !== "string" || typeof e.start !== "number" || typeof e.end !== "number") continue;
    if (!out.has(e.tag)) out.set(e.tag, []);
    out.get(e.tag).push({ start: e.start, end: e.end, props: new Set((e.props ?? []).map((p) => p?.name)) });
  }
  return out;
}

/** The [start, end) in the source of the JSX tag a rendered element most likely came from:
 * the static element of that tag sharing the most prop names (the first on a tie), or null. */
function sourceSpan(candidates, props) {
  let best = null;
  let bestScore = -1;
  for (const c of candidates ?? []) {
    const score = props.reduce((n, p) => n + (c.props.has(p) ? 1 : 0), 0);
    if (score > bestScore) { best = c; bestScore = score; }
  }
  return best ? [best.start, best.end] : null;
}

/**
 * The spec summary (the shape of lib/summary.mjs's) of a render: `components` holds the mounted
 * component only if the module exports it; `elements` and `texts` what it showed (none when it
 * did not render). Each element is placed on the source tag it most likely came from (same tag,
 * most props in common), else on the component's name.
 */
export function renderedSummary(code, target, dom, staticElements) {
  const fallback = target?.span && target.span.end > target.span.start ? [target.span.start, target.span.end] : [0, Math.min(1, code.length)];
  const components = target && target.exported && target.span?.name
    ? [{ name: target.span.name, start: target.span.start, end: target.span.end, exported: true, default: target.exportName === "default" }] : [];
  const tags = byTag(staticElements);
  const elements = (dom?.elements ?? []).map((e) => {
    const [start, end] = sourceSpan(tags.get(e.tag), e.props) ?? fallback;
    return { tag: e.tag, start, end, props: e.props.map((name) => ({ name })) };
  });
  const texts = (dom?.texts ?? []).map((text) => ({ text }));
  return { components, default_export: target?.exportName === "default" ? { name: target.name } : null, elements, texts, rendered: Boolean(dom) };
}
