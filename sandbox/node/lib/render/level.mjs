// Level "render": build, then execute the bundle and render the component server-side with
// react-dom/server in a fresh realm on the render thread (lib/render/host.mjs), with safe
// default props. Fails on a build error, a throw during render (located on the throwing line
// through the source map), an invalid element, an empty render, a broken rule of hooks, and on
// everything the sandbox refuses (a timeout, memory, a violation, an output flood).
import { isEmptyRender } from "./html.mjs";
import { BUILTINS, bundleForRender, refusedBuiltin } from "./bundle.mjs";
import { needsHooksLint } from "./hooks.mjs";
import ts from "typescript";
import { componentNode, defaultProps } from "./props.mjs";
import { lintFile } from "../lint.mjs";
import { lineStarts, makeDiagnostic, offsetOf } from "../positions.mjs";
import { summarize } from "../summary.mjs";

export const DEFAULT_WRAPPERS = Object.freeze([
  "div", "span", "p", "section", "main", "article", "header", "footer", "nav", "aside", "ul", "ol",
  "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "a", "strong", "em", "b", "i", "u",
  "small", "label", "form", "fieldset", "legend", "table", "thead", "tbody", "tfoot", "tr", "td",
  "th", "caption", "blockquote", "pre", "code", "figure", "figcaption", "br", "wbr", "center", "font",
]);
const TARGET = "__botgrpo_render_target__";
const FATAL = new Set(["timeout", "memory", "stack", "violation", "output", "crashed"]);
const RETURNED = ["status", "message", "html", "text", "textChars", "elements", "tags", "effects", "timers",
  "effectErrors", "consoleBytes", "violations", "ms"];

/** Which component to mount: the spec's, else the default export, else the first exported one. */
function renderTarget(summary, wanted) {
  const components = summary.components ?? [];
  const byName = (name) => components.find((c) => c.name === name);
  const chosen = (wanted && byName(wanted)) ?? null;
  if (!chosen && summary.default_export) {
    return { exportName: "default", name: summary.default_export.name ?? "default", append: "", span: summary.default_export };
  }
  const pick = chosen ?? components.find((c) => c.exported) ?? components[0];
  if (!pick) return null;
  return { exportName: TARGET, name: pick.name, append: `\nexport { ${pick.name} as ${TARGET} };\n`, span: pick };
}

/** The whole line (from its first non-blank character) of a 1-based line, 0-based column. */
function lineSpan(code, starts, line, column) {
  const at = offsetOf(starts, code, line, column);
  const lineStart = starts[Math.min(Math.max(line - 1, 0), starts.length - 1)];
  let end = code.indexOf("\n", lineStart);
  if (end < 0) end = code.length;
  if (end > lineStart && code[end - 1] === "\r") end--;
  let start = lineStart;
  while (start < end && /\s/.test(code[start])) start++;
  return start < end ? [start, end] : [at, Math.min(code.length, at + 1)];
}

/** The return statement (or expression body) that produced an empty render, as [start, end). */
function emptySpan(sourceFile, target) {
  let node = componentNode(sourceFile, target.exportName === "default" ? "default" : target.name).node;
  if (node && ts.isClassLike(node)) node = node.members.find((m) => ts.isMethodDeclaration(m) && m.name.getText(sourceFile) === "render");
  if (!node || !node.body) return null;
  if (!ts.isBlock(node.body)) return [node.body.getStart(sourceFile), node.body.getEnd()];
  const returns = [];
  const stack = [...node.body.statements];
  while (stack.length > 0 && returns.length < 2) {
    const n = stack.pop();
    if (ts.isReturnStatement(n)) returns.push(n);
    else if (!ts.isFunctionLike(n) && !ts.isClassLike(n)) ts.forEachChild(n, (c) => { stack.push(c); });
  }
  const last = returns.length === 1 ? returns[0] : null;  // several returns: no one place to blame
  return last ? [last.getStart(sourceFile), last.getEnd()] : null;
}

function renderDiagnostics(code, result, target, sourceFile) {
  const starts = lineStarts(code);
  if (result.status === "empty") {
    const span = emptySpan(sourceFile, target) ?? [0, 0];
    return [{ ...makeDiagnostic(starts, span[0], span[1], result.message), rule: "render/empty" }];
  }
  if (result.status === "error") {
    const message = `Render error: ${result.name ? `${result.name}: ` : ""}${result.message ?? "the component threw"}`;
    if (typeof result.line === "number") {
      const [start, end] = lineSpan(code, starts, result.line, result.column ?? 0);
      return [{ ...makeDiagnostic(starts, start, end, message), rule: "render/throw" }];
    }
    const span = target.span && target.span.end > target.span.start ? target.span : { start: 0, end: 0 };
    return [{ ...makeDiagnostic(starts, span.start, span.end, message), rule: "render/throw" }];
  }
  if (result.status === "ok") return [];
  return [{ ...makeDiagnostic(starts, 0, 0, result.message ?? `Render failed (${result.status})`), rule: `render/${result.status}` }];
}

/**
 * The response fields of a render: {ok, diagnostics, summary, render}. `options`: {props,
 * component, empty ("fail" | "allow"), wrappers, timeout_ms, max_html_chars, timer_horizon_ms,
 * max_console_bytes}; `hookFindings` are rules-of-hooks findings already at hand (from a full
 * lint), else the rule runs here when the file needs it.
 */
export async function renderLevel(code, sourceFile, allow, options, host, hookFindings = null) {
  const summary = summarize(sourceFile);
  const target = renderTarget(summary, typeof options.component === "string" ? options.component : null);
  const bundle = await bundleForRender(target ? code + target.append : code, allow);
  if (bundle.diagnostics.length > 0) {
    const diagnostics = bundle.diagnostics.map((d) => ({ ...d, start: Math.min(d.start, code.length), end: Math.min(d.end, code.length) }));
    const builtin = diagnostics.map((d) => refusedBuiltin(d.message)).find(Boolean);
    const render = builtin
      ? { status: "violation", message: `Sandbox violation: the component imports the Node built-in "${builtin.slice(0, 100)}"`, violations: [`import "${builtin.slice(0, 100)}"`] }
      : { status: "not_built", message: "The component does not build" };
    return { ok: false, diagnostics, summary: {}, render };
  }
  if (!target) {
    const message = "Nothing to render: the file declares no component (a capitalised function or class returning JSX)";
    return { ok: false, diagnostics: [{ ...makeDiagnostic([0], 0, 0, message), rule: "render/no-component" }], summary,
             render: { status: "error", message } };
  }
  const hooks = hookFindings ?? (needsHooksLint(sourceFile) ? lintFile(code, "hooks") : []);
  const inferred = defaultProps(sourceFile, target.exportName === "default" ? "default" : target.name);
  const given = options.props && typeof options.props === "object" && !Array.isArray(options.props) ? options.props : {};
  const props = { ...inferred.props, ...given };
  const result = await host.render({
    js: bundle.js, map: bundle.map, exportName: target.exportName, props, allow, builtins: BUILTINS,
    timeoutMs: clamp(options.timeout_ms, 50, 10_000, 1000), maxHtmlChars: clamp(options.max_html_chars, 1000, 1_000_000, 100_000),
    timerHorizonMs: clamp(options.timer_horizon_ms, 0, 60_000, 1000), maxConsoleBytes: clamp(options.max_console_bytes, 1024, 16 << 20, 1 << 20),
  });
  if (result.status === "ok" && options.empty !== "allow") {
    const wrappers = new Set(Array.isArray(options.wrappers) ? options.wrappers.map((t) => String(t).toLowerCase()) : DEFAULT_WRAPPERS);
    if (isEmptyRender(result, wrappers)) {
      result.status = "empty";
      result.message = "Rendered nothing visible: no text and no elements beyond wrappers";
    }
  }
  const diagnostics = renderDiagnostics(code, result, target, sourceFile);
  const fatal = FATAL.has(result.status);
  if (!fatal) diagnostics.push(...hooks);
  const render = { component: target.name, props, props_from: given && Object.keys(given).length ? "spec" : inferred.from };
  for (const key of RETURNED) if (result[key] !== undefined) render[key] = result[key];
  if (render.status === "ok" && hooks.length > 0) {
    render.status = "hooks";
    render.message = "Breaks the rules of hooks";
  }
  return { ok: diagnostics.length === 0, diagnostics, summary, render };
}

function clamp(value, low, high, fallback) {
  const n = Number(value);
  return Number.isFinite(n) ? Math.min(high, Math.max(low, n)) : fallback;
}
