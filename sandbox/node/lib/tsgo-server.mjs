// A warm tsgo: one long-lived `tsc --api --async` process (TypeScript 7's API server, JSON-RPC
// over stdio) holding one project, whose root files are replaced for every run. The project
// system keeps the parsed and bound declaration files (lib.*.d.ts, @types/react: immutable, ~90
// ms of every cold tsgo run) across runs, while each run gets a new program and a new checker:
// the type-checking state of one run never carries into the next. What a run checks together is
// exactly what a spawned tsgo run checks (the same batch, the same compiler options, each file
// its own module), and its diagnostics are rendered in tsgo's own `--pretty false` text format
// so that the same parser (parseTsgoOutput) reads both.
//
// The per-run budget is the same as a spawned run's: once the server has used `timeoutMs` of
// CPU time during a run (write, update, diagnostics; lib/cpu-budget.mjs, with its wall-clock
// backstop), it is SIGKILLed and the run fails as timed out; the server runs under RLIMIT_DATA
// (`memoryMb`, prlimit), so a run that exhausts memory kills it and fails as out of memory. A
// dead server is restarted (and warmed) before the next run, outside that run's budget.
// RLIMIT_CPU would count the server's whole life, so the budget is the CPU time of each run.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { watchCpuBudget } from "./cpu-budget.mjs";
import { lineStarts } from "./positions.mjs";

const randomName = () => crypto.randomBytes(16).toString("hex");
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const STDERR_KEPT = 4096;

/** A run failed as a whole (not a verdict on any file); same shape as typecheck.mjs's. */
export class ServerFailure extends Error {
  constructor(message, { timedOut = false, outOfMemory = false } = {}) {
    super(message);
    this.timedOut = timedOut;
    this.outOfMemory = outOfMemory;
  }
}

const OUT_OF_MEMORY = /out of memory|cannot allocate memory/i;
// test-only (`spin`): a recursive conditional type tsgo computes on for over a minute
const SPIN = Array.from({ length: 40 }, (_, i) =>
  `type R${i}<N,S,A extends any[]=[]>=A['length'] extends N?A:R${i}<N,S,[...A,S]>;export type X${i}=R${i}<999,${i}>;\n`).join("");

/** Minimal JSON-RPC 2.0 client over a child's stdio with LSP-style Content-Length framing. */
class RpcProcess {
  constructor(command, args, cwd, env, onExit) {
    this.child = spawn(command, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    this.pending = new Map();
    this.nextId = 1;
    this.buffer = Buffer.alloc(0);
    this.stderr = "";
    this.dead = null;
    this.child.stdout.on("data", (chunk) => this.#onData(chunk));
    this.child.stderr.on("data", (chunk) => { this.stderr = (this.stderr + chunk.toString()).slice(-STDERR_KEPT); });
    this.child.stdin.on("error", () => {});  // EPIPE after a death: reported through "exit"
    this.child.on("error", (error) => this.#fail(new ServerFailure(`tsgo failed: ${error.message}`)));
    this.child.on("close", (code, signal) => {
      const crashed = /^(?:panic:|fatal error:)/m.test(this.stderr);
      const what = crashed ? `tsgo crashed: ${this.stderr.slice(0, 300)}` : `tsgo server exited (${signal ?? code})`;
      this.#fail(new ServerFailure(what, { outOfMemory: OUT_OF_MEMORY.test(this.stderr) }));
      onExit();
    });
  }

  request(method, params) {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
      this.child.stdin.write(body);
    });
  }

  /** Fail every open request with `error` (first cause wins) and kill the process. */
  kill(error) {
    this.#fail(error);
    this.child.kill("SIGKILL");
  }

  #fail(error) {
    this.dead ??= error;
    for (const { reject } of this.pending.values()) reject(this.dead);
    this.pending.clear();
  }

  #onData(chunk) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf("\r\n\r\n");
      if (headerEnd < 0) return;
      const match = /Content-Length: *(\d+)/i.exec(this.buffer.subarray(0, headerEnd).toString());
      const length = match ? Number(match[1]) : -1;
      if (length < 0 || length > MAX_MESSAGE_BYTES) {
        this.kill(new ServerFailure("tsgo output exceeded the buffer"));
        return;
      }
      if (this.buffer.length < headerEnd + 4 + length) return;
      const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString();
      this.buffer = this.buffer.subarray(headerEnd + 4 + length);
      let message;
      try {
        message = JSON.parse(body);
      } catch {
        this.kill(new ServerFailure("tsgo server sent malformed JSON"));
        return;
      }
      const waiter = message.id !== undefined && "method" in message === false ? this.pending.get(message.id) : undefined;
      if (!waiter) continue;  // notifications and requests to us: none are enabled, ignore
      this.pending.delete(message.id);
      if (message.error) waiter.reject(new ServerFailure(`tsgo failed: ${String(message.error.message).slice(0, 300)}`));
      else waiter.resolve(message.result);
    }
  }
}

/** Flatten a diagnostic's message chain the way tsgo's `--pretty false` output does. */
function flatten(diagnostic, indent = 0) {
  let text = (indent > 0 ? "\n" + "  ".repeat(indent) : "") + diagnostic.text;
  for (const child of diagnostic.messageChain ?? []) text += flatten(child, indent + 1);
  return text;
}

/** 1-based line and column of UTF-16 offset `pos` (TypeScript's line breaks, as positions.mjs). */
function lineAndColumn(starts, pos) {
  let lo = 0;
  let hi = starts.length - 1;
  let line = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= pos) { line = mid; lo = mid + 1; } else { hi = mid - 1; }
  }
  return [line + 1, pos - starts[line] + 1];
}

/**
 * Render API diagnostics of the batch files as tsgo `--pretty false` lines: sorted by file,
 * position, length, code and message, duplicates dropped (as the CLI does), errors only.
 */
export function renderDiagnostics(diagnostics, fileCodes) {
  const keyed = [];
  for (const d of diagnostics) {
    const code = d.fileName !== undefined ? fileCodes.get(d.fileName) : undefined;
    if (code === undefined || d.category !== 1) continue;
    const message = flatten(d);
    keyed.push({ file: path.basename(d.fileName), pos: d.pos, length: d.end - d.pos, code: d.code, message, source: code });
  }
  keyed.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.pos - b.pos
    || a.length - b.length || a.code - b.code || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  const lines = [];
  let previous = null;
  const starts = new Map();
  for (const d of keyed) {
    const key = `${d.file}\0${d.pos}\0${d.length}\0${d.code}\0${d.message}`;
    if (key === previous) continue;
    previous = key;
    // tsgo drops a byte-order mark when it reads the file: its positions start after it
    if (!starts.has(d.file)) starts.set(d.file, lineStarts(d.source.replace(/^\ufeff/, "")));
    const [line, column] = lineAndColumn(starts.get(d.file), d.pos);
    lines.push(`${d.file}(${line},${column}): error TS${d.code}: ${d.message}`);
  }
  return lines.join("\n") + (lines.length ? "\n" : "");
}

export class TsgoServer {
  /**
   * @param {object} options
   * @param {string} options.tsgoPath native tsc binary
   * @param {string|null} options.prlimit prlimit(1) for the memory cap, or null
   * @param {number} options.memoryMb RLIMIT_DATA of the server (0: none)
   * @param {string} options.workDir writable directory whose node_modules resolves @types/react
   * @param {object} options.compilerOptions the tsconfig compilerOptions of every run
   * @param {string} options.probe a known-good file checked at start (warms lib and React types)
   * @param {string} options.prelude a root file of every run (the installed libraries' imports), or ""
   */
  constructor({ tsgoPath, prlimit, memoryMb, workDir, compilerOptions, probe, prelude = "" }) {
    Object.assign(this, { tsgoPath, prlimit, memoryMb, workDir, compilerOptions, probe, prelude });
    this.rpc = null;
    this.starting = null;
  }

  /** Stop the server (the next run starts a fresh one). */
  stop() {
    this.rpc?.kill(new ServerFailure("tsgo server stopped"));
    this.rpc = null;
  }

  async #start(timeoutMs) {
    const dir = path.join(this.workDir, `server-${randomName()}`);
    await fs.mkdir(dir);
    let args = ["--api", "--async", "--cwd", dir];
    let command = this.tsgoPath;
    if (this.prlimit && this.memoryMb > 0) {
      [command, args] = [this.prlimit, [`--data=${this.memoryMb * 1024 * 1024}`, "--", command, ...args]];
    }
    // a long-lived Go heap: let its collector work harder before the cap (RLIMIT_DATA) kills it
    const env = this.memoryMb > 0 ? { ...process.env, GOMEMLIMIT: `${Math.floor(this.memoryMb * 0.75)}MiB` } : process.env;
    const rpc = new RpcProcess(command, args, dir, env, () => {
      if (this.rpc === rpc) this.rpc = null;
      fs.rm(dir, { recursive: true, force: true }).catch(() => {});
    });
    const state = { rpc, dir, config: path.join(dir, "tsconfig.json"), files: [], snapshot: null, project: null };
    const stopWatch = watchCpuBudget(rpc.child.pid, timeoutMs,
      (what) => rpc.kill(new ServerFailure(`tsgo server did not start within ${timeoutMs} ms of ${what} time`)));
    try {
      await rpc.request("initialize", null);
      const [output] = await this.#check(state, [this.probe], []);
      if (output !== "") throw new ServerFailure(`tsgo rejected the probe file: ${output.slice(0, 300)}`);
    } catch (error) {
      rpc.kill(error instanceof ServerFailure ? error : new ServerFailure(String(error?.message ?? error)));
      throw error;
    } finally {
      stopWatch();
    }
    this.state = state;
    return rpc;
  }

  /**
   * Type-check `codes` (one module each) with `ambient` module names declared `any`, as one
   * program; resolves to [the tsgo-format output, the file names]. The run is killed (and
   * rejects with ServerFailure{timedOut}) after `timeoutMs` of CPU time (lib/cpu-budget.mjs).
   * Test-only: `hang` never asks (a stall: the wall-clock backstop ends it); `spin` checks a type
   * bomb instead of `codes` (a run that computes: its CPU budget ends it).
   */
  async run(codes, ambient, timeoutMs, { hang = false, spin = false, fail = false } = {}) {
    if (!this.rpc || this.rpc.dead) {
      this.rpc = null;
      this.starting ??= this.#start(Math.max(timeoutMs, 15000)).finally(() => { this.starting = null; });
      this.rpc = await this.starting;
    }
    const { rpc } = this;
    let stopWatch;
    const expired = new Promise((_, reject) => {
      stopWatch = watchCpuBudget(rpc.child.pid, timeoutMs, (what) => {
        const failure = new ServerFailure(`tsgo stopped after ${timeoutMs} ms of ${what} time (SIGKILL)`, { timedOut: true });
        rpc.kill(failure);
        reject(failure);
      });
    });
    try {
      const work = hang ? new Promise(() => {}) : this.#check(this.state, spin ? [SPIN] : codes, ambient, fail);
      return await Promise.race([work, expired]);
    } catch (error) {
      // whatever failed, the next run gets a fresh server (its state is unknown)
      const failure = error instanceof ServerFailure ? error : new ServerFailure(`tsgo failed: ${error?.message ?? error}`);
      rpc.kill(failure);
      throw rpc.dead ?? failure;
    } finally {
      stopWatch();
      expired.catch(() => {});
    }
  }

  /** Replace the project's root files by `codes` and return [output, names]. */
  async #check(state, codes, ambient, fail = false) {
    const { rpc, dir, config } = state;
    const names = codes.map(() => randomName());
    const files = names.map((name) => path.join(dir, `${name}.tsx`));
    const ambientFile = path.join(dir, `${randomName()}.d.ts`);
    const declarations = ambient.map((m) => `declare module ${JSON.stringify(m)};`).join("\n");
    const preludeFile = path.join(dir, `${randomName()}.ts`);
    await Promise.all([...codes.map((code, i) => fs.writeFile(files[i], code)), fs.writeFile(ambientFile, declarations + "\n"),
      ...(this.prelude ? [fs.writeFile(preludeFile, this.prelude)] : [])]);
    const roots = [...files, ambientFile, ...(this.prelude ? [preludeFile] : [])];
    await fs.writeFile(config, JSON.stringify({ compilerOptions: this.compilerOptions, files: roots.map((f) => path.basename(f)) }));
    const previous = state.files;
    state.files = roots;
    try {
      const update = state.snapshot === null
        ? await rpc.request("updateSnapshot", { openProjects: [config] })
        : await rpc.request("updateSnapshot", { fileChanges: { changed: [config], created: roots, deleted: previous } });
      if (state.snapshot !== null) rpc.request("release", { snapshot: state.snapshot }).catch(() => {});
      state.snapshot = update.snapshot;
      const project = (update.projects ?? []).find((p) => path.resolve(p.configFileName) === config) ?? update.projects?.[0];
      if (!project) throw new ServerFailure("tsgo server lost the project");
      const target = { snapshot: update.snapshot, project: project.id };
      if (fail) await rpc.request("botgrpoNoSuchMethod", target);
      const fileCodes = new Map(files.map((f, i) => [f, codes[i]]));
      // asked together (one round trip); reported like the CLI: syntax errors of any file, else
      // every file's semantic diagnostics
      const [syntactic, semantic, program, global] = await Promise.all(["getSyntacticDiagnostics",
        "getSemanticDiagnostics", "getProgramDiagnostics", "getGlobalDiagnostics"].map((method) => rpc.request(method, target)));
      if ((syntactic ?? []).some((d) => d.category === 1)) return [renderDiagnostics(syntactic, fileCodes), names];
      const output = renderDiagnostics(semantic ?? [], fileCodes);
      // as a spawned run that fails without naming a file of the batch
      const broken = [...(program ?? []), ...(global ?? [])].find((d) => d.category === 1);
      if (broken && output === "") throw new ServerFailure(`tsgo: TS${broken.code}: ${String(broken.text).slice(0, 300)}`);
      return [output, names];
    } finally {
      await Promise.all(roots.map((f) => fs.rm(f, { force: true })));
    }
  }
}
