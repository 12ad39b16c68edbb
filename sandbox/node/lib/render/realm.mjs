// Fresh render realms (node:vm contexts) and one render in one of them. Runs on the render
// thread (lib/render/thread.mjs); the thread's host realm only ever sees primitives coming out
// of a context: results are read with property descriptors (no getter of model code runs
// here), and no host object or function is ever passed in.
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";
import { readDom } from "./dom.mjs";
import { locateError } from "./locate.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeModules = path.resolve(here, "..", "..", "node_modules");
const REACT_FILES = {
  react: "react/cjs/react.production.js",
  reactDom: "react-dom/cjs/react-dom.production.js",
  jsxRuntime: "react/cjs/react-jsx-runtime.production.js",
  server: "react-dom/cjs/react-dom-server-legacy.browser.production.js",
};
const CONTEXT_OPTIONS = {
  name: "component",
  microtaskMode: "afterEvaluate",  // promise jobs run inside runInContext, under its timeout
  codeGeneration: { strings: false, wasm: false },  // no eval, new Function or WebAssembly
};
// The model's bundle is wrapped on its own first line, so its line N is line N + 1 here. The
// fourth parameter is the function its instrumented catch clauses call (lib/render/catches.mjs).
const wrapperHead = (catchName) => `(function (exports, require, module, ${catchName}) { "use strict";\n`;
const CATCH_NAME = /^[A-Za-z_$][\w$]{0,80}$/;
export const WRAPPER_LINES = 1;
// Markup in the realm may be this much longer than the limit: the host strips the per-element
// records (lib/render/dom.mjs) before the limit applies.
const RAW_FACTOR = 4;
const RAW_SLACK = 1 << 16;
const START = new vm.Script("__botgrpo_run()", { filename: "start.js" });

// React's server renderer, patched where it starts a host element (props pass through the
// prelude's record of what React received) and where it reports an error it recovered from
// (a Suspense boundary): lib/render/prelude.js, hostHooks.
const SERVER_PATCHES = [
  [/function pushStartInstance\(\s*target\$jscomp\$0,\s*type,\s*props,[^)]*\)\s*\{/g,
    (head) => `${head}\n  props = __botgrpo_host.element(type, props);`],
  [/\nfunction onError\(\) \{\}/g, () => "\nfunction onError(error) { __botgrpo_host.caught(error); }"],
];

/** The server renderer's source with SERVER_PATCHES applied; throws unless each matches once. */
export function patchServer(source) {
  let out = source;
  for (const [pattern, replace] of SERVER_PATCHES) {
    const hits = out.match(pattern)?.length ?? 0;
    if (hits !== 1) throw new Error(`react-dom/server does not have the expected shape (${pattern.source}: ${hits} matches)`);
    out = out.replace(pattern, replace);
  }
  return `var __botgrpo_host = require("botgrpo:host");\n${out}`;
}

function factoryScript(file, label) {
  let source = fs.readFileSync(file, "utf8");
  if (label === "server.js") source = patchServer(source);
  return new vm.Script(`(function (exports, require, module) {${source}\n})`, { filename: label });
}

/** Compiled once per thread: React's factories, the prelude, the call that starts a render. */
export class RealmFactory {
  constructor() {
    this.react = {};
    for (const [key, relative] of Object.entries(REACT_FILES)) {
      this.react[key] = factoryScript(path.join(nodeModules, relative), `${key}.js`);
    }
    this.prelude = new vm.Script(fs.readFileSync(path.join(here, "prelude.js"), "utf8"), { filename: "prelude.js" });
  }

  /** A new context with its own intrinsics and its own React, not yet given any model code. */
  create() {
    const context = vm.createContext(Object.create(null), CONTEXT_OPTIONS);
    const api = this.prelude.runInContext(context);
    const f = this.react;
    api.installReact(f.react.runInContext(context), f.reactDom.runInContext(context),
      f.jsxRuntime.runInContext(context), f.server.runInContext(context));
    return { context, api };
  }
}

/** The parameter a library bundle's instrumented catch clauses call (lib/libraries.mjs). */
export const LIBRARY_CATCH = "__botgrpo_library_caught";

/** A library bundle (lib/libraries.mjs) as a script that makes its module factory in a context. */
export function libraryScript(name, js) {
  return new vm.Script(`(function (exports, require, module, ${LIBRARY_CATCH}) {${js}\n})`, { filename: `library:${name}` });
}

/** Own data property of a context object, if it is a primitive of `type`. */
function field(object, key, type) {
  if (object === null || (typeof object !== "object" && typeof object !== "function")) return undefined;
  const d = Object.getOwnPropertyDescriptor(object, key);
  return d && "value" in d && typeof d.value === type ? d.value : undefined;
}

/** Strings from a context array of strings (read by index and descriptor only). */
function strings(list, max = 20) {
  const out = [];
  const length = field(list, "length", "number") ?? 0;
  for (let i = 0; i < Math.min(length, max); i++) {
    const value = field(list, String(i), "string");
    if (value !== undefined) out.push(value);
  }
  return out;
}

function effectErrors(list) {
  const out = [];
  const length = field(list, "length", "number") ?? 0;
  for (let i = 0; i < Math.min(length, 5); i++) {
    const d = Object.getOwnPropertyDescriptor(list, String(i));
    const entry = d && d.value;
    out.push(`${field(entry, "name", "string") ?? ""}: ${field(entry, "message", "string") ?? ""}`.slice(0, 300));
  }
  return out;
}

const RESOURCE = [
  [/Maximum call stack size exceeded/, "stack", "Render exceeded the stack limit (runaway recursion)"],
  [/Invalid (?:string|array|typed array) length|Array buffer allocation failed|allocation failed|out of memory/i,
    "memory", "Render ran out of memory"],
  [/Code generation from strings disallowed/, "violation", "the component tried to evaluate a string as code (eval / new Function)"],
  [/^Cannot (?:add|define) property [^,]+, object is not extensible|^Cannot redefine property: | is not extensible$|^Cannot (?:assign to read only|delete) property '[^']*' of (?:object )?'?(?:\[object (?:Array|String|Number|Boolean|Function|Object|Math|JSON|Symbol|RegExp|Date|Promise|Map|Set|Error|Reflect|global)\]|#<(?:Object|Promise|Map|Set|WeakMap|WeakSet|Error|Date|RegExp|Symbol)>|function )/,
    "violation", "the component tried to modify a built-in object (built-ins are frozen)"],
];

/** A failure that is the machine's limits or the sandbox's rules, not an ordinary bug. */
export function classify(name, message) {
  for (const [pattern, status, reason] of RESOURCE) {
    if (pattern.test(message)) return { status, reason };
  }
  return null;
}

/**
 * Render one bundled component in `realm` (which it uses up). `job`: {js, map, exportName, props,
 * allow, builtins, timeoutMs, maxHtmlChars, maxConsoleBytes, timerHorizonMs, empty, wrappers,
 * libraryNames}; `libraries`: specifier -> the library's compiled script (libraryScript).
 */
export function renderInRealm(realm, job, libraries = null) {
  const started = performance.now();
  const { context, api } = realm;
  let factory;
  try {
    const catchName = CATCH_NAME.test(job.catchName ?? "") ? job.catchName : "__botgrpo_caught";
    factory = new vm.Script(`${wrapperHead(catchName)}${job.js}\n})`, { filename: "component.js" }).runInContext(context);
  } catch (error) {
    return { status: "error", message: `The bundle could not be loaded: ${String(error?.message ?? error)}`.slice(0, 500) };
  }
  for (const name of job.libraryNames ?? []) {
    const script = libraries?.get(name);
    if (script) api.library(name, script.runInContext(context));
  }
  api.install(factory, JSON.stringify({
    exportName: job.exportName, props: job.props ?? {}, allow: job.allow ?? [], builtins: job.builtins ?? [],
    libraries: job.libraryNames ?? [], rootWrappers: job.rootWrappers ?? [],
    maxRawChars: job.maxHtmlChars * RAW_FACTOR + RAW_SLACK, maxConsoleBytes: job.maxConsoleBytes,
    timerHorizonMs: job.timerHorizonMs, nonce: job.nonce,
  }));
  let res;
  try {
    res = START.runInContext(context, { timeout: job.timeoutMs });
  } catch (error) {
    const timedOut = error?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
    const message = timedOut ? "" : String(field(error, "message", "string") ?? "");
    const resource = classify("", message);
    const phase = field(api.state, "phase", "string") ?? "render";
    if (timedOut) return finish({ status: "timeout", message: `Render did not finish within ${job.timeoutMs} ms (${phase})` }, api, started);
    return finish({ status: resource?.status ?? "crashed", message: resource?.reason ?? `Render crashed (${message.slice(0, 200)})` }, api, started);
  }
  const result = {
    status: field(res, "status", "string") ?? "crashed",
    name: field(res, "name", "string"),
    message: field(res, "message", "string"),
  };
  const raw = field(res, "html", "string") ?? "";
  const rawChars = field(res, "htmlChars", "number") ?? raw.length;
  const dom = rawChars <= job.maxHtmlChars * RAW_FACTOR + RAW_SLACK ? readDom(raw, job.nonce) : null;
  const html = dom ? dom.html : "";
  const htmlChars = dom ? html.length : rawChars;
  if (result.status === "error") {
    const resource = classify(result.name ?? "", result.message ?? "");
    if (resource) {
      result.status = resource.status;
      result.message = `${resource.reason}: ${result.message}`;
    } else {
      const where = locateError(field(res, "stack", "string") ?? "", job.map, WRAPPER_LINES,
        field(res, "line", "number"), field(res, "column", "number"));
      if (where) Object.assign(result, where);
    }
  } else if (result.status === "ok") {
    if (htmlChars > job.maxHtmlChars) {
      Object.assign(result, { status: "output", message: `Render output too large (${htmlChars} characters; the limit is ${job.maxHtmlChars})` });
    } else {
      Object.assign(result, { html, ...dom.stats, dom: { elements: dom.elements, texts: dom.texts } });
    }
  }
  return finish(result, api, started);
}

/** Sandbox bookkeeping that outranks the render's own verdict: violations, output floods. */
function finish(result, api, started) {
  const state = api.state;
  const violations = strings(field(state, "violations", "object"));
  for (const message of strings(field(state, "caught", "object"))) {
    const refused = classify("", message);
    const text = refused && refused.status === "violation" ? `${refused.reason} (caught: ${message.slice(0, 120)})` : null;
    if (text && violations.length < 20 && !violations.includes(text)) violations.push(text);
  }
  const out = { ...result };
  out.effects = field(state, "effects", "number") ?? 0;
  out.timers = field(state, "timersRun", "number") ?? 0;
  out.consoleBytes = field(state, "consoleBytes", "number") ?? 0;
  out.effectErrors = effectErrors(field(state, "effectErrors", "object"));
  if (violations.length > 0) {
    out.status = "violation";
    out.violations = violations;
    out.message = `Sandbox violation: ${violations[0]}`;
  } else if (field(state, "flood", "boolean") && out.status === "ok") {
    out.status = "output";
    out.message = `Console output flood (${out.consoleBytes} characters)`;
  }
  if (out.status === "violation" && !out.message?.startsWith("Sandbox violation")) {
    out.message = `Sandbox violation: ${out.message}`;
  }
  out.ms = Math.round((performance.now() - started) * 100) / 100;
  return out;
}
