// Level "render": build, then execute the bundle and render the component server-side with
// react-dom/server in a fresh realm on the render thread (lib/render/host.mjs), with safe
// default props. Fails on a build error, a throw during render (located on the throwing line
// through the source map), an invalid element, an empty render, a broken rule of hooks, and on
// everything the sandbox refuses (a timeout, memory, a violation, an output flood). A component
// whose prop types let a caller leave props out is mounted a second time without them, and a
// throw there fails it too. `summary.rendered` is the spec summary of what the mounted
// component showed (lib/render/target.mjs): the spec is judged on it, not on the source.
import { randomBytes } from "node:crypto";
import { isEmptyRender } from "./html.mjs";
import { instrumentCatches } from "./catches.mjs";
import { renderTarget, renderedSummary } from "./target.mjs";
import { BUILTINS, bundleForRender, refusedBuiltin } from "./bundle.mjs";
import { needsHooksLint } from "./hooks.mjs";
import ts from "typescript";
import { componentNode, defaultProps, optionalProps } from "./props.mjs";
import { lintFile } from "../lint.mjs";
import { lineStarts, makeDiagnostic, offsetOf } from "../positions.mjs";
import { summarize } from "../summary.mjs";
import { ROOT_WRAPPERS, isLibrary, libraryBundle, libraryImportErrors } from "../libraries.mjs";

export const DEFAULT_WRAPPERS = Object.freeze([
  "div", "span", "p", "section", "main", "article", "header", "footer", "nav", "aside", "ul", "ol",
  "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "a", "strong", "em", "b", "i", "u",
  "small", "label", "form", "fieldset", "legend", "table", "thead", "tbody", "tfoot", "tr", "td",
  "th", "caption", "blockquote", "pre", "code", "figure", "figcaption", "br", "wbr", "center", "font",
]);
const FATAL = new Set(["timeout", "memory", "stack", "violation", "output", "crashed"]);
const RETURNED = ["status", "message", "html", "text", "textChars", "elements", "tags", "effects", "timers",
  "effectErrors", "consoleBytes", "violations", "ms"];

const OUTPUT = new Set(["ok", "empty", "hooks"]);  // statuses with markup to judge the spec on

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
  const target = renderTarget(summary, typeof options.component === "string" ? options.component : null, sourceFile);
  const bundle = await bundleForRender(target ? code + target.append : code, allow);
  if (bundle.diagnostics.length === 0) {
    const starts = lineStarts(code);
    bundle.diagnostics = libraryImportErrors(sourceFile, allow).map(([s, e, m]) => makeDiagnostic(starts, s, e, m));
  }
  if (bundle.diagnostics.length > 0) {
    const diagnostics = bundle.diagnostics.map((d) => ({ ...d, start: Math.min(d.start, code.length), end: Math.min(d.end, code.length) }));
    const builtin = diagnostics.map((d) => refusedBuiltin(d.message)).find(Boolean);
    const render = builtin
      ? { status: "violation", message: `Sandbox violation: the component imports the Node built-in "${builtin.slice(0, 100)}"`, violations: [`import "${builtin.slice(0, 100)}"`] }
      : { status: "not_built", message: "The component does not build" };
    return { ok: false, diagnostics, summary: {}, render };
  }
  if (!target) {
    const message = "Nothing to render: the file declares no component (a capitalised function or class returning JSX or React.createElement elements)";
    return { ok: false, diagnostics: [{ ...makeDiagnostic([0], 0, 0, message), rule: "render/no-component" }],
             summary: { ...summary, rendered: renderedSummary(code, null, null, summary.elements) }, render: { status: "error", message } };
  }
  const hooks = hookFindings ?? (needsHooksLint(sourceFile) ? lintFile(code, "hooks") : []);
  const declared = target.exportName === "default" ? "default" : target.name;
  const inferred = defaultProps(sourceFile, declared);
  const given = options.props && typeof options.props === "object" && !Array.isArray(options.props) ? options.props : {};
  const props = { ...inferred.props, ...given };
  const catchName = catchParameter(bundle.js);
  const job = {
    js: instrumentCatches(bundle.js, catchName), catchName, nonce: randomBytes(8).toString("hex"),
    map: bundle.map, exportName: target.exportName, props, allow, builtins: BUILTINS,
    libraries: await libraryScripts(bundle.externals.filter(isLibrary)), rootWrappers: ROOT_WRAPPERS,
    timeoutMs: clamp(options.timeout_ms, 50, 10_000, 1000), maxHtmlChars: clamp(options.max_html_chars, 1000, 1_000_000, 100_000),
    timerHorizonMs: clamp(options.timer_horizon_ms, 0, 60_000, 1000), maxConsoleBytes: clamp(options.max_console_bytes, 1024, 16 << 20, 1 << 20),
  };
  let result = await host.render(job);
  const omitted = optionalProps(sourceFile, declared).filter((name) => name in props);
  if (result.status === "ok" && omitted.length > 0) result = withoutOptional(result, await host.render({ ...job, props: withoutKeys(props, omitted) }), omitted);
  const dom = OUTPUT.has(result.status) ? result.dom : null;
  delete result.dom;
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
  if (omitted.length > 0) render.optional_props = omitted;
  for (const key of RETURNED) if (result[key] !== undefined) render[key] = result[key];
  if (render.status === "ok" && hooks.length > 0) {
    render.status = "hooks";
    render.message = "Breaks the rules of hooks";
  }
  const rendered = renderedSummary(code, target, OUTPUT.has(render.status) ? dom : null, summary.elements);
  return { ok: diagnostics.length === 0, diagnostics, summary: { ...summary, rendered }, render };
}

/** {specifier: bundle text} of the libraries a render loads (made once per worker: lib/libraries.mjs). */
async function libraryScripts(specifiers) {
  const out = {};
  for (const specifier of specifiers) out[specifier] = await libraryBundle(specifier);
  return out;
}

/** The name the bundle's instrumented catch clauses call (lib/render/catches.mjs). Model code can
 * only shadow it by writing it, so a fixed name serves (and keeps the wrapped source the same for
 * the same bundle, which V8's compilation cache rewards) unless the bundle mentions it or has an
 * escape that could spell it; then a random one (never the marker's nonce: the source shows it). */
function catchParameter(js) {
  return /botgrpo|\\u/i.test(js) ? `__botgrpo_caught_${randomBytes(12).toString("hex")}` : "__botgrpo_caught";
}

function withoutKeys(object, keys) {
  const out = { ...object };
  for (const key of keys) delete out[key];
  return out;
}

/** The first render's result, failed by the second (without `omitted`) if that one failed. */
function withoutOptional(first, second, omitted) {
  if (second.status === "ok") {
    return { ...first, ms: (first.ms ?? 0) + (second.ms ?? 0) };
  }
  const names = omitted.slice(0, 5).join(", ");
  const out = { ...second, dom: undefined, ms: (first.ms ?? 0) + (second.ms ?? 0) };
  if (second.status === "error") {
    out.message = `${second.name ? `${second.name}: ` : ""}${second.message ?? "the component threw"} (rendered without the optional props ${names})`;
    out.name = undefined;
  } else out.message = `${second.message ?? `Render failed (${second.status})`} (rendered without the optional props ${names})`;
  return out;
}

function clamp(value, low, high, fallback) {
  const n = Number(value);
  return Number.isFinite(n) ? Math.min(high, Math.max(low, n)) : fallback;
}
