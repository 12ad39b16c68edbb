// Long-lived compile worker: reads one JSON request per stdin line, writes one JSON response
// per stdout line (in completion order; responses carry the request id).
//   request:  {"id", "code", "level": "syntax"|"build"|"typecheck"|"render", "allow": [module, ...],
//              "lint"?: bool | "oxlint" | "eslint", "render"?: {props, component, empty, wrappers, timeout_ms, ...},
//              "summary"?: bool}
//   response: {"id", "ok", "diagnostics": [{start, end, line, col, message, severity, rule?, related?}], "summary",
//              "lint"?: [diagnostic + rule], "render"?: {status, message, html, ...},
//              "timed_out"?, "crashed"?, "budget"?: "time"|"memory", "poisoned"?}
// Offsets are UTF-16 code units into `code`. Levels are cumulative: build = syntax + import
// policy, typecheck = build + TypeScript parse + isolation policy + strict type check, render =
// build + executing the component and rendering it server-side (lib/render/level.mjs) on a
// render thread with its own heap limit. `lint` adds the lint findings of the engine it names
// (LINT_ENGINES): oxlint's (lib/oxlint.mjs, batched; also `true`) or ESLint's (lib/lint.mjs).
// `summary: false` skips the spec summary (lib/summary.mjs; the response's `summary` is then {})
// and, at level syntax, TypeScript's parse that only the summary needs: most of the worker's
// CPU a file under the lint (issue 38). Levels build and typecheck parse anyway (their import
// and isolation policies read the AST); render always summarises (it picks the component so).
//
// Poisoning: when a compiler service fails (esbuild's Go process died, e.g. out of memory, or
// tsgo cannot check even a known-good file), this worker can give no more trustworthy
// verdicts. It answers that request, and every later one, with `poisoned` set and no verdict;
// the pool then replaces the worker and re-runs those jobs on a fresh one.
//
// Start-up self-test: before announcing itself ready, the worker compiles a probe file at
// every level, so a worker whose compilers cannot run never counts as ready.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { checkBuild } from "./lib/build.mjs";
import { ServiceError } from "./lib/esbuild-service.mjs";
import { libraryImportErrors } from "./lib/libraries.mjs";
import { lintDirectiveViolations, policyViolations } from "./lib/policy.mjs";
import { lineStarts, makeDiagnostic } from "./lib/positions.mjs";
import { redactPaths, sanitize } from "./lib/sanitize.mjs";
import { parseErrors, parseTsx, summarize } from "./lib/summary.mjs";
import { checkSyntax, SYNTAX_ENGINES, syntaxSelfTest } from "./lib/syntax.mjs";
import { MAX_DIAGNOSTICS_PER_FILE, TypecheckBatcher } from "./lib/typecheck.mjs";
import { lintFile } from "./lib/lint.mjs";
import { OxlintBatcher } from "./lib/oxlint.mjs";
import { RenderHost } from "./lib/render/host.mjs";
import { renderLevel } from "./lib/render/level.mjs";
import { tailwindCss } from "./lib/render/tailwind.mjs";

// stdout is the protocol: a library that prints must not be able to forge or break a response.
for (const method of ["log", "info", "warn", "error", "debug", "trace"]) {
  console[method] = (...args) => { process.stderr.write(`${args.map(String).join(" ").slice(0, 2000)}\n`); };
}
const LEVELS = ["syntax", "build", "typecheck", "render"];
const SYNTAX_ENGINE = process.env.BOTGRPO_SYNTAX_ENGINE || "oxc";  // lib/syntax.mjs SYNTAX_ENGINES

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeModules = path.join(here, "node_modules");
const debugEnabled = process.env.BOTGRPO_SANDBOX_DEBUG === "1";
const scratch = process.env.BOTGRPO_SANDBOX_TMP || os.tmpdir();
const workDir = path.join(scratch, `tsgo-${process.pid}`);

const realpath = (p) => {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
};
redactPaths([
  [workDir, "<sandbox>"], [realpath(scratch), "<tmp>"], [scratch, "<tmp>"],
  [nodeModules, "<node_modules>"], [realpath(nodeModules), "<node_modules>"],
  [here, "<sandbox>"], [realpath(here), "<sandbox>"], [os.homedir(), "<home>"],
]);

const batcher = new TypecheckBatcher({
  tsgoPath: path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc"),
  nodeModules,
  workDir,
  maxBatch: Number(process.env.BOTGRPO_TYPECHECK_BATCH || 64),
  timeoutMs: Number(process.env.BOTGRPO_TSGO_TIMEOUT_MS || 3000),
  memoryMb: Number(process.env.BOTGRPO_TSGO_MEMORY_MB ?? 1024),
  debug: debugEnabled,
});

const oxlint = new OxlintBatcher({
  nodeModules,
  workDir: path.join(scratch, `oxlint-${process.pid}`),
  maxBatch: Number(process.env.BOTGRPO_LINT_BATCH || 256),
  timeoutMs: Number(process.env.BOTGRPO_LINT_TIMEOUT_MS || 2000),
});
/** Lint engines by name: reserve() when a request with lint starts, then lint() or cancel(). */
const LINT_ENGINES = {
  oxlint: {
    reserve: () => oxlint.reserve(),
    cancel: () => oxlint.cancel(),
    lint: (code, request, sourceFile) => oxlint.lint(code, debugEnabled ? request.debug_oxlint : null, sourceFile),
  },
  eslint: { reserve: () => {}, cancel: () => {}, lint: async (code) => lintFile(code, "all") },
};
const DEFAULT_LINT_ENGINE = "oxlint";

/** The lint engine a request asks for (null: no lint). */
function lintEngine(request) {
  if (!request.lint) return null;
  const name = request.lint === true ? DEFAULT_LINT_ENGINE : request.lint;
  const engine = typeof name === "string" && Object.hasOwn(LINT_ENGINES, name) ? LINT_ENGINES[name] : undefined;
  if (!engine) {
    throw new Error(`unknown lint engine ${JSON.stringify(request.lint)}; one of ${Object.keys(LINT_ENGINES).join(", ")}`);
  }
  return engine;
}

let poisoned = null;
const renderHost = new RenderHost({ heapMb: Number(process.env.BOTGRPO_RENDER_HEAP_MB || 256) });

/** Test-only levels (BOTGRPO_SANDBOX_DEBUG=1): simulate a hung or crashing worker. */
function runDebugLevel(request) {
  if (request.level === "debug_hang") {
    const until = Date.now() + 1000 * Number(request.seconds ?? 3600);
    while (Date.now() < until) { /* busy: blocks the event loop like a pathological input */ }
    return { ok: true, diagnostics: [], summary: {} };
  }
  if (request.level === "debug_crash") process.exit(70);
  if (request.level === "debug_flood") return { ok: true, diagnostics: [], summary: { blob: "x".repeat(request.bytes) } };
  if (request.level === "debug_escape") return escaped(request.code);
  return null;
}

/**
 * Test-only: run `code` as if a component had escaped every JavaScript-level guard (node:vm
 * included) and held `require` in this process. What it can still do is what the process
 * layers (bubblewrap, namespaces, rlimits) allow, which is what the isolation tests check.
 */
function escaped(code) {
  const requireHere = createRequire(import.meta.url);
  let output;
  try {
    output = String(new Function("require", "process", code)(requireHere, process));
  } catch (error) {
    output = `threw ${error?.code ?? ""} ${String(error?.message ?? error)}`;
  }
  return { ok: true, diagnostics: [], summary: { output: output.slice(0, 4000) } };
}

async function compile(request) {
  const { code, level } = request;
  const allow = Array.isArray(request.allow) ? request.allow.map(String) : [];
  if (typeof code !== "string") throw new Error("request.code must be a string");
  if (!LEVELS.includes(level)) throw new Error(`unknown level ${JSON.stringify(level)}`);
  const engine = lintEngine(request);
  engine?.reserve();  // a batching engine waits for this file's lint before it runs
  let linted = false;
  let response;
  let passed;  // the file passed the level's untyped checks: it gets the lint
  try {
    if (level === "render") {
      response = await render(request, code, allow, engine, () => { linted = true; });
      passed = response.summary && Object.keys(response.summary).length > 0;
    } else {
      const compiled = await compileLevel(code, level, allow, request, request.summary !== false);
      ({ response, passed } = compiled);
      if (engine && passed) {
        linted = true;
        response.lint = await engine.lint(code, request, compiled.sourceFile);  // its parse places spans
      }
    }
  } finally {
    if (engine && !linted) engine.cancel();
  }
  if (request.lint && passed) refuseLintDirectives(code, response);
  return response;
}

/** With lint on, an ESLint inline directive fails the file at that comment (lib/policy.mjs). */
function refuseLintDirectives(code, response) {
  const starts = lineStarts(code);
  const refusals = lintDirectiveViolations(code).map(([s, e, m]) => makeDiagnostic(starts, s, e, m));
  if (refusals.length === 0) return;
  response.ok = false;
  response.diagnostics = [...(response.diagnostics ?? []), ...refusals].sort((a, b) => a.start - b.start);
}

async function render(request, code, allow, engine, onLint) {
  const sourceFile = parseTsx(code);
  if (engine) onLint();
  const lint = engine ? await engine.lint(code, request, sourceFile) : null;
  const hooks = lint ? lint.filter((d) => d.rule === "react-hooks/rules-of-hooks") : null;
  const options = request.render && typeof request.render === "object" ? request.render : {};
  const response = await renderLevel(code, sourceFile, allow, options, renderHost, hooks);
  if (options.tailwind === true && response.render?.html) {
    const { css, ms } = await tailwindCss(response.render.html);
    Object.assign(response.render, { css, css_ms: ms });
  }
  if (lint && response.summary && Object.keys(response.summary).length > 0) response.lint = lint;
  return response;
}

/** {response, passed (the untyped checks passed: the lint runs), sourceFile (TypeScript's parse, or null)}. */
async function compileLevel(code, level, allow, request, wantSummary) {
  if (level !== "typecheck") return compileUntyped(code, level, allow, wantSummary);
  batcher.reserve();
  let submitted = false;
  try {
    const untyped = await compileUntyped(code, level, allow, wantSummary);
    const { response, sourceFile } = untyped;
    if (!response.ok) return untyped;
    const done = (fields) => ({ response: { ...fields, summary: response.summary }, passed: true, sourceFile });
    const starts = lineStarts(code);
    const toDiagnostic = ([s, e, m]) => makeDiagnostic(starts, s, e, m);
    const parseDiagnostics = parseErrors(sourceFile).map(toDiagnostic);
    if (parseDiagnostics.length > 0) return done({ ok: false, diagnostics: parseDiagnostics });
    const refusals = policyViolations(sourceFile, allow).map(toDiagnostic);
    if (refusals.length > 0) return done({ ok: false, diagnostics: refusals });
    submitted = true;
    const checked = await batcher.submit(code, allow, debugEnabled ? request.debug_tsgo : null, sourceFile);
    const ok = checked.diagnostics.length === 0 && !checked.timedOut && !checked.crashed;
    return done({ ok, diagnostics: checked.diagnostics,
                  timed_out: checked.timedOut, crashed: checked.crashed, ...(checked.budget ? { budget: checked.budget } : {}) });
  } finally {
    if (!submitted) batcher.cancel();
  }
}

/** Syntax or build check (lib/syntax.mjs), then the structural summary when wanted.
 * TypeScript's parse is made only where something reads it: the build level's library check and
 * policy, the summary, or the oxc syntax path's second opinion when the summary pays for it. */
async function compileUntyped(code, level, allow, wantSummary) {
  const engine = SYNTAX_ENGINES[SYNTAX_ENGINE];
  const checked = level === "syntax" ? await engine.syntax(code, { parse: wantSummary }) : await engine.build(code, allow);
  const { diagnostics } = checked;
  const failed = (ds) => ({ response: { ok: false, diagnostics: ds, summary: {} }, passed: false, sourceFile: null });
  if (diagnostics.length > 0) return failed(diagnostics);
  const sourceFile = checked.sourceFile ?? (level !== "syntax" || wantSummary ? parseTsx(code) : null);
  if (level !== "syntax") {
    const starts = lineStarts(code);
    const missing = libraryImportErrors(sourceFile, allow).map(([s, e, m]) => makeDiagnostic(starts, s, e, m));
    if (missing.length > 0) return failed(missing);
  }
  const summary = wantSummary ? summarize(sourceFile) : {};
  return { response: { ok: true, diagnostics: [], summary }, passed: true, sourceFile };
}

function describeFailure(error) {
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return "Input is nested too deeply to analyse";
  }
  return `Internal compiler error: ${error?.message ?? error}`;
}

const failing = (id, message, extra = {}) =>
  ({ id, ok: false, diagnostics: [makeDiagnostic([0], 0, 0, message)], summary: {}, ...extra });

function poisonedResponse(id) {
  return failing(id, `Compiler service unavailable: ${poisoned}`, { poisoned });
}

/** Bound and sanitise what leaves the worker. */
function finish(response) {
  const diagnostics = Array.isArray(response.diagnostics) ? response.diagnostics : [];
  return {
    ...response,
    diagnostics: diagnostics.slice(0, MAX_DIAGNOSTICS_PER_FILE).map((d) => ({ ...d, message: sanitize(d.message) })),
    ...(Array.isArray(response.lint) ? { lint: response.lint.map((d) => ({ ...d, message: sanitize(d.message) })) } : {}),
    ...(response.render ? { render: { ...response.render, message: sanitize(response.render.message ?? "") } } : {}),
  };
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return failing(null, "Malformed request");
  }
  const id = request?.id ?? null;
  if (poisoned) return poisonedResponse(id);
  try {
    const debug = debugEnabled ? runDebugLevel(request) : null;
    return { id, ...(debug ?? (await compile(request))) };
  } catch (error) {
    if (error instanceof ServiceError) {
      poisoned ??= error.message;
      process.stderr.write(`worker poisoned: ${error.message}\n`);
      return poisonedResponse(id);
    }
    return failing(id, describeFailure(error));
  }
}

function write(response) {
  process.stdout.write(JSON.stringify(finish(response)) + "\n");
}

async function selfTest() {
  const probe = "export const Probe = () => <b>ok</b>;\n";
  const syntax = await checkSyntax(probe);
  const build = await checkBuild(probe, []);
  if (syntax.length > 0 || build.length > 0) throw new Error("esbuild rejected the probe file");
  await syntaxSelfTest(SYNTAX_ENGINE, probe);
  await batcher.selfTest();
  await oxlint.selfTest();
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (!line.trim()) return;
  handle(line).catch((error) => failing(null, describeFailure(error))).then(write);
});
input.on("close", () => process.exit(0));
selfTest().then(
  () => write({ id: "__ready__", ok: true, diagnostics: [], summary: {} }),
  (error) => {
    process.stderr.write(`worker self-test failed: ${error?.message ?? error}\n`);
    process.exit(75);
  },
);
