// Stage costs of the compile worker, one file at a time in this (unsandboxed) Node process:
// reads a JSON list of files on stdin, prints "stage  wall ms  node CPU ms  child CPU ms" a file.
// Node CPU includes the oxc thread's and libuv's (one process); child CPU is that of this
// process's children from /proc: esbuild's Go service, and the warm tsgo server (`tsc --api`,
// lib/tsgo-server.mjs) in the typecheck stages; only one of them works in any stage.
// Run by benchmarks/pool_profile.py.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { checkSyntax } from "../sandbox/node/lib/syntax.mjs";
import { OxcSyntax } from "../sandbox/node/lib/oxc-syntax.mjs";
import { parseTsx, summarize } from "../sandbox/node/lib/summary.mjs";
import { reachability } from "../sandbox/node/lib/reach.mjs";
import { lineStarts } from "../sandbox/node/lib/positions.mjs";
import { checkBuild } from "../sandbox/node/lib/build.mjs";
import { libraryImportErrors, NODE_DIR } from "../sandbox/node/lib/libraries.mjs";
import { policyViolations } from "../sandbox/node/lib/policy.mjs";
import { budgetSuspects } from "../sandbox/node/lib/budget.mjs";
import { parseErrors } from "../sandbox/node/lib/summary.mjs";
import { TypecheckBatcher } from "../sandbox/node/lib/typecheck.mjs";

const codes = JSON.parse(fs.readFileSync(0, "utf8"));
const REPEATS = Number(process.env.PROFILE_REPEATS || 1000);
const WARMUP = Number(process.env.PROFILE_WARMUP || 300);

/** CPU ms of this process's children (utime + stime + reaped children), from /proc. */
function childCpuMs() {
  const tick = 10;  // USER_HZ is 100 on Linux
  let ticks = 0;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
      if (Number(fields[1]) === process.pid) ticks += Number(fields[11]) + Number(fields[12]);
    } catch { /* gone */ }
  }
  return ticks * tick;
}
const ownCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

/** `fn(code, i)` on `repeats` files one at a time after `warmup`; with `batch`, `fn` takes
 * `batch` files at once ([codes], first index) and the cost is still a file's. */
async function stage(name, fn, batch = 0, repeats = REPEATS, warmup = WARMUP) {
  const step = Math.max(1, batch);
  const call = (i) => (batch ? fn(Array.from({ length: step }, (_, k) => codes[(i + k) % codes.length]), i)
    : fn(codes[i % codes.length], i));
  for (let i = 0; i < warmup; i += step) await call(i);
  const child0 = childCpuMs(); const own0 = ownCpuMs(); const t0 = performance.now();
  let files = 0;
  for (; files < repeats; files += step) await call(files);
  const wall = performance.now() - t0; const own = ownCpuMs() - own0; const child = childCpuMs() - child0;
  const f = (x) => (x / files).toFixed(3).padStart(7);
  console.log(`  ${name.padEnd(44)} ${f(wall)} wall ${f(own)} node CPU ${f(child)} child CPU  (ms/file)`);
}

const parsed = codes.map(parseTsx);
const summary = summarize(parsed[0]);
const oxc = new OxcSyntax();
await stage("syntax check: esbuild transform", (code) => checkSyntax(code));
await stage("syntax check: oxc-parser on its thread", (code) => oxc.clean(code));
await stage("TypeScript parse (parseTsx)", (code) => parseTsx(code));
await stage("summary with reachability (summarize)", (_, i) => summarize(parsed[i % parsed.length]));
await stage("  of which reachability (reach.mjs)", (_, i) => reachability(parsed[i % parsed.length]));
await stage("lineStarts", (code) => lineStarts(code));
await stage("request JSON.parse + response JSON.stringify", (code) =>
  JSON.stringify({ ...JSON.parse(JSON.stringify({ id: "x", code, level: "syntax", allow: [] })), ok: true, diagnostics: [], summary }));

// level typecheck, in the worker's order (worker.mjs compileLevel): esbuild's bundle with the
// import policy, TypeScript's parse, the library-import check, parse errors, the isolation
// policy, the budget pre-check (lib/budget.mjs, in submit), the summary (unless summary:false),
// then the warm tsgo server on batches: the pool's dispatcher sends a worker up to 32 files at a
// time (NodePool max_batch), so the batcher's runs hold up to 32; other sizes show the per-run
// cost (a new program and checker a run, the prelude of installed libraries); the small ones
// run a quarter of the files.
await stage("typecheck: esbuild bundle (checkBuild)", (code) => checkBuild(code, []));
await stage("typecheck: libraryImportErrors", (_, i) => libraryImportErrors(parsed[i % parsed.length], []));
await stage("typecheck: parseErrors + policyViolations", (_, i) => {
  parseErrors(parsed[i % parsed.length]);
  return policyViolations(parsed[i % parsed.length], []);
});
await stage("typecheck: budget pre-check (budgetSuspects)", (_, i) => budgetSuspects(parsed[i % parsed.length]));
const nodeModules = path.join(NODE_DIR, "node_modules");
const batcher = new TypecheckBatcher({
  tsgoPath: path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc"),
  nodeModules, workDir: path.join(os.tmpdir(), `botgrpo-profile-tsgo-${process.pid}`), maxBatch: 128,
});
await batcher.selfTest();  // starts the warm server (and the probe), outside the measurement
for (const size of [128, 64, 32, 8, 1]) {
  await stage(`typecheck: tsgo server, batches of ${size}`, async (batchCodes) => {
    for (const _ of batchCodes) batcher.reserve();
    const answers = await Promise.all(batchCodes.map((code) => batcher.submit(code, [], null, null)));
    if (answers.some((a) => a.diagnostics.length > 0 || a.timedOut || a.crashed)) throw new Error("tsgo rejected a file");
  }, size, size < 32 ? REPEATS / 4 : REPEATS, size < 32 ? WARMUP / 4 : WARMUP);
}
batcher.server?.stop();
fs.rmSync(batcher.workDir, { recursive: true, force: true });
process.exit(0);
