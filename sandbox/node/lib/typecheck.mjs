// Level "typecheck": TypeScript strict checking with React types through the TS 7 native
// compiler (tsgo). Requests are micro-batched: every syntax-clean file that arrives while a run
// is in flight joins the next run, each written as its own module (`moduleDetection: force`) so
// names never collide. A run goes to one of TYPECHECK_ENGINES (BOTGRPO_TYPECHECK_ENGINE): a warm
// tsgo API server that keeps the parsed lib and React declarations between runs (`server`, the
// default: lib/tsgo-server.mjs), or a tsgo process of its own (`spawn`: ~90 ms of parsing and
// binding them first, every run). Both check the same files as one program and report through
// parseTsgoOutput, so verdicts and spans are the same (tests/test_typecheck_engines.py).
//
// Files of one batch come from different rollouts and must not interact. The caller refuses
// every construct that could name another file or change shared types (lib/policy.mjs);
// here, each run gets a fresh directory and every file a random 128-bit name, so no rollout
// can name a neighbour, and tsgo's output is parsed strictly: only lines that start with one
// of this run's file names count, for that file, so text a rollout gets echoed into a message
// can never fail (or pass) another file. A library a neighbour imports is in the program too:
// every library whose declarations act globally is in every program (TYPECHECK_PRELUDES), so it
// changes nothing, and the others are visible only to the files that import them.
//
// tsgo reports only syntax errors when any file of a batch has one, so callers submit only
// files the parser accepted; if tsgo still finds syntax errors, the affected files are
// answered with them and the rest are re-run. If a run fails as a whole (tsgo crashes, exits
// without naming a file, or times out), the batch is split and re-run so innocent files keep
// their verdict; a file that fails alone gets a failing "type checker failed/timed out on this
// input" answer, unless a known-good probe fails too: then the checker itself is broken and
// a ServiceError tells the worker to report itself poisoned.
//
// Per-rollout budget: every tsgo run is killed once it has used `timeoutMs` of CPU time (a busy
// machine does not make a file time out; lib/cpu-budget.mjs, whose wall-clock backstop ends a
// run that stalls) and runs under a memory cap (`memoryMb`, RLIMIT_DATA through prlimit(1); a
// spawned run also has RLIMIT_CPU; a killed server is restarted, outside any rollout's budget,
// before the next run).
// Files whose type aliases could make a type-instantiation bomb (lib/budget.mjs) never share a
// run: they are checked alone, in a spawned tsgo, after their batch's other files, so an innocent file is answered
// before them and a bomb costs at most one `timeoutMs` of its own. A file that exceeds the budget
// is answered `timed_out` (time) or `crashed` (memory), with `budget` saying which, and with the
// blame on the suspect aliases and their instantiations where it has some (rule `budget/time`,
// `budget/memory`); otherwise at offset 0. An unsuspected file that times out a batch costs that
// run and its own re-run: at most 2 x `timeoutMs`.
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fsSync from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { budgetSuspects } from "./budget.mjs";
import { COMPILER_OPTIONS } from "./compiler-options.mjs";
import { watchCpuBudget } from "./cpu-budget.mjs";
import { curatedLibraries, globalModules, hasTypes, isLibrary } from "./libraries.mjs";
import { ServiceError } from "./esbuild-service.mjs";
import { lineStarts, makeDiagnostic, offsetOf } from "./positions.mjs";
import { ServerFailure, TsgoServer } from "./tsgo-server.mjs";

const DIAGNOSTIC_LINE = /^([0-9a-f]{32})\.tsx\((\d+),(\d+)\): error (TS\d+): (.*)$/;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
export const MAX_DIAGNOSTICS_PER_FILE = 1000;
const PROBE_TIMEOUT_MS = 15000;
const PROBE = "export const Probe = ({ n }: { n: number }) => <b>{n + 1}</b>;\n";

/**
 * How a run of a batch is type-checked (BOTGRPO_TYPECHECK_ENGINE). Both check the same files as
 * one program with the same options and report through the same parser; a file the budget
 * check suspects (lib/budget.mjs) always runs in a spawned tsgo of its own.
 *   server: a warm tsgo API server that keeps the parsed lib and React declarations (default)
 *   spawn:  one `tsc -p` process per run, which parses them every time (the path before it)
 */
export const TYPECHECK_ENGINES = {
  server: { run: (batcher, batch, timeoutMs) => batcher.runInServer(batch, timeoutMs) },
  spawn: { run: (batcher, batch, timeoutMs) => batcher.runSpawned(batch, timeoutMs) },
};
const DEFAULT_ENGINE = "server";

const importsOf = (modules) => modules.map((name) => `import ${JSON.stringify(name)};\n`).join("");
/**
 * The prelude: a root file of every program (BOTGRPO_TYPECHECK_PRELUDE), so that declarations
 * that act outside their own modules (global augmentations, such as motion-dom's `Window`
 * fields) are the same in every run, whoever else is in the batch. A library without such
 * effects need not be there: a file that imports it loads it, one that does not cannot see it.
 *   global: React and the curated libraries with global effects (lib/libraries.mjs
 *           globalModules; all of them without a current prepared manifest) (default)
 *   all:    every installed curated library (the path before)
 */
export const TYPECHECK_PRELUDES = {
  global: () => importsOf(globalModules()),
  all: () => importsOf(curatedLibraries()),
};
const DEFAULT_PRELUDE = "global";

/** A tsgo run failed as a whole (not a verdict on any file). */
class TsgoFailure extends Error {
  constructor(message, { timedOut = false, outOfMemory = false } = {}) {
    super(message);
    this.timedOut = timedOut;
    this.outOfMemory = outOfMemory;
  }
}

const OUT_OF_MEMORY = /out of memory|cannot allocate memory/i;
const PRLIMIT_PATHS = ["/usr/bin/prlimit", "/bin/prlimit"];

/** prlimit(1) if this host has it (the memory cap is then a hard limit), else null. */
function findPrlimit() {
  for (const candidate of PRLIMIT_PATHS) {
    try {
      fsSync.accessSync(candidate, fsSync.constants.X_OK);
      return candidate;
    } catch { /* try the next */ }
  }
  return null;
}

const randomName = () => crypto.randomBytes(16).toString("hex");

/**
 * Allowed modules of a batch declared as ambient `any` modules: those that are not installed
 * libraries with declarations (such a library is checked against its own: lib/libraries.mjs).
 */
function ambientModules(batch) {
  return [...new Set(batch.flatMap((item) => item.allow))].filter((m) => !(isLibrary(m) && hasTypes(m)));
}

/** End of the token starting at `start`, so a diagnostic spans e.g. the whole identifier. */
function tokenEnd(code, start) {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.JSX, code);
  scanner.resetTokenState(start);
  scanner.scan();
  const end = scanner.getTokenEnd();
  return end > start ? end : Math.min(start + 1, code.length);
}

/**
 * Parse tsgo `--pretty false` output into {fileIndex: [{code, line, col, message}]}, counting
 * only lines that start with one of `names` (file name -> index); indented lines continue the
 * message of the line before them.
 */
export function parseTsgoOutput(stdout, names) {
  const byFile = new Map();
  let last = null;
  for (const raw of stdout.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const match = DIAGNOSTIC_LINE.exec(line);
    const index = match ? names.get(match[1]) : undefined;
    if (index !== undefined) {
      last = { code: match[4], line: Number(match[2]), col: Number(match[3]), message: match[5] };
      if (!byFile.has(index)) byFile.set(index, []);
      const list = byFile.get(index);
      if (list.length < MAX_DIAGNOSTICS_PER_FILE) list.push(last);
    } else if (last && /^\s+\S/.test(line)) {
      last.message += " " + line.trim();
    } else {
      last = null;
    }
  }
  return byFile;
}

const isSyntaxCode = (code) => {
  const n = Number(code.slice(2));
  return n >= 1000 && n < 2000;
};

export class TypecheckBatcher {
  /**
   * @param {object} options
   * @param {string} options.tsgoPath  native tsc binary
   * @param {string} options.nodeModules directory holding @types/react etc.
   * @param {string} options.workDir writable scratch directory (tmpfs inside the sandbox)
   * @param {number} options.maxBatch most files per tsgo run
   * @param {number} options.timeoutMs CPU-time limit of one tsgo run (lib/cpu-budget.mjs)
   * @param {number} options.memoryMb RLIMIT_DATA of one tsgo run (0: none)
   * @param {boolean} options.debug honour test-only `debug` fields of submitted items
   * @param {string} options.engine a key of TYPECHECK_ENGINES
   * @param {string} options.prelude a key of TYPECHECK_PRELUDES
   */
  constructor({ tsgoPath, nodeModules, workDir, maxBatch = 64, timeoutMs = 3000, memoryMb = 1024, debug = false,
                engine = process.env.BOTGRPO_TYPECHECK_ENGINE || DEFAULT_ENGINE,
                prelude = process.env.BOTGRPO_TYPECHECK_PRELUDE || DEFAULT_PRELUDE }) {
    if (!Object.hasOwn(TYPECHECK_ENGINES, engine)) {
      throw new Error(`unknown typecheck engine ${JSON.stringify(engine)}; choose ${Object.keys(TYPECHECK_ENGINES).join(" or ")}`);
    }
    if (!Object.hasOwn(TYPECHECK_PRELUDES, prelude)) {
      throw new Error(`unknown typecheck prelude ${JSON.stringify(prelude)}; choose ${Object.keys(TYPECHECK_PRELUDES).join(" or ")}`);
    }
    Object.assign(this, { tsgoPath, nodeModules, workDir, maxBatch, timeoutMs, memoryMb, debug, engine });
    this.prelude = TYPECHECK_PRELUDES[prelude]();  // the text of the root file
    this.prlimit = memoryMb > 0 ? findPrlimit() : null;
    this.server = null;
    this.pending = [];
    this.expected = 0;
    this.running = false;
    this.ready = null;
  }

  /**
   * Announce a typecheck request that is still in its earlier stages, so the next tsgo run
   * waits for it instead of starting with a partial batch. Pair with submit() or cancel().
   */
  reserve() {
    this.expected += 1;
  }

  cancel() {
    this.expected -= 1;
    this.#schedule();
  }

  /**
   * Queue one syntax-clean, policy-clean file (after reserve()); `sourceFile` is its parse (for
   * lib/budget.mjs). Resolves to {diagnostics, timedOut, crashed, budget}; rejects with
   * ServiceError when the checker is broken.
   */
  submit(code, allow, debug = null, sourceFile = null) {
    this.expected -= 1;
    const suspects = sourceFile ? budgetSuspects(sourceFile) : [];
    return new Promise((resolve, reject) => {
      this.pending.push({ code, allow, debug: this.debug ? debug : null, suspects, resolve, reject });
      this.#schedule();
    });
  }

  /**
   * Check a known-good file; throws unless tsgo runs and accepts it. Not a rollout: it gets
   * PROBE_TIMEOUT_MS (at least), so a busy machine cannot make a healthy checker look broken.
   */
  async selfTest() {
    // suspects always run in a spawned tsgo: that engine must work too
    for (const engine of new Set([this.engine, "spawn"])) await this.#probe(engine);
  }

  async #probe(engine) {
    const probe = { code: PROBE, allow: [], debug: null, suspects: [] };
    const [diagnostics] = await this.#run(engine, [probe], Math.max(this.timeoutMs, PROBE_TIMEOUT_MS));
    if (diagnostics.length > 0) throw new Error(`tsgo rejected the probe file: ${diagnostics[0].message}`);
  }

  /** The engine a run of `batch` goes to: a suspect (a possible bomb) always gets a spawned tsgo. */
  #engineFor(batch) {
    return batch.some((item) => item.suspects.length > 0) ? "spawn" : this.engine;
  }

  #run(engine, batch, timeoutMs = this.timeoutMs) {
    return TYPECHECK_ENGINES[engine].run(this, batch, timeoutMs);
  }

  #schedule() {
    const batchReady = this.expected <= 0 || this.pending.length >= this.maxBatch;
    if (!this.running && this.pending.length > 0 && batchReady) setImmediate(() => this.#drain());
  }

  async #drain() {
    if (this.running || this.pending.length === 0) return;
    this.running = true;
    try {
      while (this.pending.length > 0 && (this.expected <= 0 || this.pending.length >= this.maxBatch)) {
        const batch = this.pending.splice(0, this.maxBatch);
        // innocent-looking files first, together; then each suspect alone
        const runs = [batch.filter((item) => item.suspects.length === 0),
                      ...batch.filter((item) => item.suspects.length > 0).map((item) => [item])];
        for (const run of runs.filter((r) => r.length > 0)) {
          try {
            await this.#check(run);
          } catch (error) {
            for (const item of run) item.reject(error);
          }
        }
      }
    } finally {
      this.running = false;
      this.#schedule();
    }
  }

  /** Answer every item of `batch` (or throw ServiceError). */
  async #check(batch) {
    let remaining = batch;
    while (remaining.length > 0) {
      let results;
      try {
        results = await this.#run(this.#engineFor(remaining), remaining);
      } catch (error) {
        if (!(error instanceof TsgoFailure || error instanceof ServerFailure)) throw error;
        await this.#recover(remaining, error);
        return;
      }
      const poisoned = results.some((diags) => diags.some((d) => isSyntaxCode(d.code)));
      const retry = [];
      remaining.forEach((item, i) => {
        if (!poisoned || results[i].length > 0) {
          item.resolve({ diagnostics: this.#toDiagnostics(item.code, results[i]), timedOut: false, crashed: false, budget: null });
        } else {
          retry.push(item);
        }
      });
      remaining = retry;
    }
  }

  /**
   * A run failed as a whole. Several files: re-run them so the innocent keep their verdict
   * (one at a time after a timeout, so the slow file costs one more timeout, not one per
   * split; in halves after a crash, which is quick to repeat). One file: blame it, unless
   * the probe fails too.
   */
  async #recover(items, failure) {
    process.stderr.write(`typecheck: tsgo run of ${items.length} file(s) failed: ${failure.message}\n`);
    if (items.length > 1) {
      if (failure.timedOut) {
        for (const item of items) await this.#check([item]);
      } else {
        const half = Math.ceil(items.length / 2);
        await this.#check(items.slice(0, half));
        await this.#check(items.slice(half));
      }
      return;
    }
    const [item] = items;
    // A suspect that ran out of time is explained by its aliases; anything else: is tsgo broken?
    if (!(failure.timedOut && item.suspects.length > 0)) {
      try {
        await this.#probe(this.#engineFor(items));
      } catch (error) {
        throw new ServiceError(`type checker unavailable: ${error.message}`);
      }
    }
    const budget = failure.timedOut ? "time" : failure.outOfMemory ? "memory" : null;
    item.resolve({ diagnostics: this.#failureDiagnostics(item, budget), timedOut: failure.timedOut,
                   crashed: !failure.timedOut, budget });
  }

  /** The answer to a file its tsgo run failed on alone: located on its suspects for a budget overrun. */
  #failureDiagnostics(item, budget) {
    if (budget === null) return [makeDiagnostic([0], 0, 0, "Type checker failed on this input")];
    const limit = budget === "time" ? `${(this.timeoutMs / 1000).toFixed(1)}s` : `${this.memoryMb} MB`;
    const rule = `budget/${budget}`;
    if (item.suspects.length === 0) {
      return [{ ...makeDiagnostic([0], 0, 0, `Type checking exceeded its ${budget} budget (${limit}) on this input`), rule }];
    }
    const starts = lineStarts(item.code);
    const message = `Type checking exceeded its ${budget} budget (${limit}): recursive generic type alias`;
    return item.suspects.map(([start, end]) => ({ ...makeDiagnostic(starts, start, end, message), rule }));
  }

  #toDiagnostics(code, raw) {
    const starts = lineStarts(code);
    return raw.map((d) => {
      const start = offsetOf(starts, code, d.line, d.col - 1);
      return makeDiagnostic(starts, start, tokenEnd(code, start), `${d.code}: ${d.message}`);
    });
  }

  async #prepare() {
    this.ready ??= (async () => {
      await fs.mkdir(this.workDir, { recursive: true });
      const link = path.join(this.workDir, "node_modules");
      await fs.rm(link, { force: true, recursive: true });
      await fs.symlink(this.nodeModules, link);
    })();
    return this.ready;
  }

  /** One run in the warm tsgo server (lib/tsgo-server.mjs): same batch, same output format. */
  async runInServer(batch, timeoutMs) {
    await this.#prepare();
    this.server ??= new TsgoServer({ tsgoPath: this.tsgoPath, prlimit: this.prlimit, memoryMb: this.memoryMb,
                                     workDir: this.workDir, compilerOptions: COMPILER_OPTIONS, probe: PROBE,
                                     prelude: this.prelude });
    const ambient = ambientModules(batch);
    const debug = new Set(batch.map((item) => item.debug).filter(Boolean));
    const [stdout, names] = await this.server.run(batch.map((item) => item.code), ambient, timeoutMs,
                                                  { hang: debug.has("hang"), spin: debug.has("spin"), fail: debug.has("fail") });
    const byFile = parseTsgoOutput(stdout, new Map(names.map((name, i) => [name, i])));
    return batch.map((_, i) => byFile.get(i) ?? []);
  }

  /** One run in a tsgo process of its own (`tsc -p`), killed after `timeoutMs` of CPU time. */
  async runSpawned(batch, timeoutMs) {
    await this.#prepare();
    const dir = path.join(this.workDir, randomName());
    await fs.mkdir(dir);
    try {
      const names = batch.map(() => randomName());
      const index = new Map(names.map((name, i) => [name, i]));
      const files = names.map((name) => `${name}.tsx`);
      await Promise.all(batch.map((item, i) => fs.writeFile(path.join(dir, files[i]), item.code)));
      const ambient = ambientModules(batch).map((m) => `declare module ${JSON.stringify(m)};`).join("\n");
      const ambientFile = `${randomName()}.d.ts`;
      await fs.writeFile(path.join(dir, ambientFile), ambient + "\n");
      const { prelude } = this;
      const preludeFile = `${randomName()}.ts`;
      if (prelude) await fs.writeFile(path.join(dir, preludeFile), prelude);
      const config = { compilerOptions: COMPILER_OPTIONS, files: [...files, ambientFile, ...(prelude ? [preludeFile] : [])] };
      await fs.writeFile(path.join(dir, "tsconfig.json"), JSON.stringify(config));
      let command = this.tsgoPath;
      let args = ["-p", dir, "--pretty", "false", "--singleThreaded"];
      const debug = new Set(batch.map((item) => item.debug).filter(Boolean));
      if (debug.has("hang")) [command, args] = [process.execPath, ["-e", "setTimeout(() => {}, 1e9)"]];
      else if (debug.has("spin")) [command, args] = [process.execPath, ["-e", "for (;;) {}"]];
      else if (debug.has("fail")) args.push("--botgrpoNoSuchOption");
      [command, args] = this.#limited(command, args, timeoutMs);
      const { stdout, status } = await this.#exec(command, args, dir, timeoutMs);
      const byFile = parseTsgoOutput(stdout, index);
      if (status !== 0 && byFile.size === 0) {
        throw new TsgoFailure(`tsgo exited ${status} without naming a file of the batch`);
      }
      return batch.map((_, i) => byFile.get(i) ?? []);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  /** `command` under the per-run memory cap and a CPU-seconds backstop (prlimit), where available. */
  #limited(command, args, timeoutMs) {
    if (!this.prlimit) return [command, args];
    const cpuSeconds = Math.ceil(timeoutMs / 1000) + 1;
    return [this.prlimit, [`--data=${this.memoryMb * 1024 * 1024}`, `--cpu=${cpuSeconds}`, "--", command, ...args]];
  }

  #exec(command, args, cwd, timeoutMs) {
    const options = { cwd, maxBuffer: MAX_OUTPUT_BYTES, killSignal: "SIGKILL" };
    return new Promise((resolve, reject) => {
      let expired = null;  // "cpu" or "wall" once the budget killed it
      const child = execFile(command, args, options, (error, stdout, stderr) => {
        stopWatch();
        if (/^(?:panic:|fatal error:)/m.test(stderr)) {
          reject(new TsgoFailure(`tsgo crashed: ${stderr.slice(0, 300)}`, { outOfMemory: OUT_OF_MEMORY.test(stderr) }));
        } else if (error && error.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") {
          reject(new TsgoFailure("tsgo output exceeded the buffer"));
        } else if (error && (expired !== null || error.signal === "SIGXCPU")) {
          reject(new TsgoFailure(`tsgo stopped after ${timeoutMs} ms of ${expired ?? "cpu"} time (${error.signal})`, { timedOut: true }));
        } else if (error && typeof error.code !== "number") {
          reject(new TsgoFailure(`tsgo failed: ${error.code ?? error.signal ?? error.message}`));
        } else {
          // A non-zero status with diagnostics on stdout just means "errors were reported".
          resolve({ stdout, status: error ? error.code : 0 });
        }
      });
      const stopWatch = watchCpuBudget(child.pid, timeoutMs, (what) => {
        expired = what;
        child.kill("SIGKILL");
      });
    });
  }
}
