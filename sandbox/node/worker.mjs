// Long-lived compile worker: reads one JSON request per stdin line, writes one JSON response
// per stdout line (in completion order; responses carry the request id).
//   request:  {"id", "code", "level": "syntax"|"build"|"typecheck", "allow": [module, ...]}
//   response: {"id", "ok", "diagnostics": [{start, end, line, col, message, severity}], "summary"}
// Offsets are UTF-16 code units into `code`. Levels are cumulative: build = syntax + import
// policy, typecheck = build + TypeScript parse + strict type check.
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { checkBuild } from "./lib/build.mjs";
import { lineStarts, makeDiagnostic } from "./lib/positions.mjs";
import { parseErrors, parseTsx, summarize } from "./lib/summary.mjs";
import { checkSyntax } from "./lib/syntax.mjs";
import { TypecheckBatcher } from "./lib/typecheck.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeModules = path.join(here, "node_modules");
const debugEnabled = process.env.BOTGRPO_SANDBOX_DEBUG === "1";

const batcher = new TypecheckBatcher({
  tsgoPath: path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc"),
  nodeModules,
  workDir: path.join(process.env.BOTGRPO_SANDBOX_TMP || os.tmpdir(), `tsgo-${process.pid}`),
  maxBatch: Number(process.env.BOTGRPO_TYPECHECK_BATCH || 64),
});

/** Test-only levels (BOTGRPO_SANDBOX_DEBUG=1): simulate a hung or crashing worker. */
function runDebugLevel(request) {
  if (request.level === "debug_hang") {
    const until = Date.now() + 1000 * Number(request.seconds ?? 3600);
    while (Date.now() < until) { /* busy: blocks the event loop like a pathological input */ }
    return { ok: true, diagnostics: [], summary: {} };
  }
  if (request.level === "debug_crash") process.exit(70);
  if (request.level === "debug_flood") return { ok: true, diagnostics: [], summary: { blob: "x".repeat(request.bytes) } };
  return null;
}

async function compile(request) {
  const { code, level } = request;
  const allow = Array.isArray(request.allow) ? request.allow.map(String) : [];
  if (typeof code !== "string") throw new Error("request.code must be a string");
  if (!["syntax", "build", "typecheck"].includes(level)) throw new Error(`unknown level ${JSON.stringify(level)}`);

  if (level !== "typecheck") return (await compileUntyped(code, level, allow)).response;
  batcher.reserve();
  let submitted = false;
  try {
    const { response, sourceFile } = await compileUntyped(code, level, allow);
    if (!response.ok) return response;
    const starts = lineStarts(code);
    const parseDiagnostics = parseErrors(sourceFile).map(([s, e, m]) => makeDiagnostic(starts, s, e, m));
    if (parseDiagnostics.length > 0) return { ok: false, diagnostics: parseDiagnostics, summary: response.summary };
    submitted = true;
    const typeDiagnostics = await batcher.submit(code, allow);
    return { ok: typeDiagnostics.length === 0, diagnostics: typeDiagnostics, summary: response.summary };
  } finally {
    if (!submitted) batcher.cancel();
  }
}

/** Syntax (esbuild transform) or build (esbuild bundle) check, then the structural summary. */
async function compileUntyped(code, level, allow) {
  const diagnostics = level === "syntax" ? await checkSyntax(code) : await checkBuild(code, allow);
  if (diagnostics.length > 0) return { response: { ok: false, diagnostics, summary: {} }, sourceFile: null };
  const sourceFile = parseTsx(code);
  return { response: { ok: true, diagnostics: [], summary: summarize(sourceFile) }, sourceFile };
}

function describeFailure(error) {
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return "Input is nested too deeply to analyse";
  }
  return `Internal compiler error: ${error?.message ?? error}`;
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return { id: null, ok: false, diagnostics: [makeDiagnostic([0], 0, 0, "Malformed request")], summary: {} };
  }
  try {
    const debug = debugEnabled ? runDebugLevel(request) : null;
    return { id: request.id, ...(debug ?? (await compile(request))) };
  } catch (error) {
    return { id: request.id, ok: false, diagnostics: [makeDiagnostic([0], 0, 0, describeFailure(error))], summary: {} };
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (!line.trim()) return;
  handle(line).then((response) => process.stdout.write(JSON.stringify(response) + "\n"));
});
input.on("close", () => process.exit(0));
process.stdout.write(JSON.stringify({ id: "__ready__", ok: true, diagnostics: [], summary: {} }) + "\n");
