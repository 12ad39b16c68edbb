// Stage costs of the compile worker, one file at a time in this (unsandboxed) Node process:
// reads a JSON list of files on stdin, prints "stage  wall ms  node CPU ms  child CPU ms" a file.
// Node CPU includes the oxc thread's (one process); child CPU is esbuild's Go service (a child process), read from /proc. Run by benchmarks/pool_profile.py.
import fs from "node:fs";
import { checkSyntax } from "../sandbox/node/lib/syntax.mjs";
import { OxcSyntax } from "../sandbox/node/lib/oxc-syntax.mjs";
import { parseTsx, summarize } from "../sandbox/node/lib/summary.mjs";
import { reachability } from "../sandbox/node/lib/reach.mjs";
import { lineStarts } from "../sandbox/node/lib/positions.mjs";

const codes = JSON.parse(fs.readFileSync(0, "utf8"));
const REPEATS = 1000;
const WARMUP = 300;

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

async function stage(name, fn) {
  for (let i = 0; i < WARMUP; i++) await fn(codes[i % codes.length], i);
  const child0 = childCpuMs(); const own0 = ownCpuMs(); const t0 = performance.now();
  for (let i = 0; i < REPEATS; i++) await fn(codes[i % codes.length], i);
  const wall = performance.now() - t0; const own = ownCpuMs() - own0; const child = childCpuMs() - child0;
  const f = (x) => (x / REPEATS).toFixed(3).padStart(7);
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
process.exit(0);
