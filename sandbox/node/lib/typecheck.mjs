// Level "typecheck": TypeScript strict checking with React types through the TS 7 native
// compiler (tsgo). One tsgo run costs ~90 ms fixed plus ~0.5 ms a file, so requests are
// micro-batched: every syntax-clean file that arrives while a run is in flight joins the next
// run, each written as its own module (`moduleDetection: force`) so names never collide.
// tsgo reports only syntax errors when any file of a batch has one, so callers must submit
// only files the parser accepted; if tsgo still finds syntax errors, the affected files are
// answered with them and the rest are re-run.
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { lineStarts, makeDiagnostic, offsetOf } from "./positions.mjs";

const DIAGNOSTIC_LINE = /^f(\d+)\.tsx\((\d+),(\d+)\): error (TS\d+): (.*)$/;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

const COMPILER_OPTIONS = {
  strict: true,
  jsx: "react-jsx",
  noEmit: true,
  skipLibCheck: true,
  moduleDetection: "force",
  module: "esnext",
  moduleResolution: "bundler",
  target: "es2022",
  lib: ["es2022", "dom", "dom.iterable"],
  types: [],
};

/** End of the token starting at `start`, so a diagnostic spans e.g. the whole identifier. */
function tokenEnd(code, start) {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.JSX, code);
  scanner.resetTokenState(start);
  scanner.scan();
  const end = scanner.getTokenEnd();
  return end > start ? end : Math.min(start + 1, code.length);
}

/** Parse tsgo `--pretty false` output into {fileIndex: [{code, line, col, message}]}. */
export function parseTsgoOutput(stdout) {
  const byFile = new Map();
  let last = null;
  for (const line of stdout.split("\n")) {
    const match = DIAGNOSTIC_LINE.exec(line);
    if (match) {
      last = { code: match[4], line: Number(match[2]), col: Number(match[3]), message: match[5] };
      const index = Number(match[1]);
      if (!byFile.has(index)) byFile.set(index, []);
      byFile.get(index).push(last);
    } else if (last && /^\s+\S/.test(line)) {
      last.message += "\n" + line.trim();
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
   */
  constructor({ tsgoPath, nodeModules, workDir, maxBatch = 64 }) {
    Object.assign(this, { tsgoPath, nodeModules, workDir, maxBatch });
    this.pending = [];
    this.expected = 0;
    this.running = false;
    this.runCount = 0;
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

  /** Queue one syntax-clean file (after reserve()); resolves to its type diagnostics. */
  submit(code, allow) {
    this.expected -= 1;
    return new Promise((resolve, reject) => {
      this.pending.push({ code, allow, resolve, reject });
      this.#schedule();
    });
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
        try {
          await this.#checkUntilClean(batch);
        } catch (error) {
          for (const item of batch) item.reject(error);
        }
      }
    } finally {
      this.running = false;
      this.#schedule();
    }
  }

  async #checkUntilClean(batch) {
    let remaining = batch;
    while (remaining.length > 0) {
      const results = await this.#runTsgo(remaining);
      const poisoned = results.some((diags) => diags.some((d) => isSyntaxCode(d.code)));
      const retry = [];
      remaining.forEach((item, i) => {
        if (!poisoned || results[i].length > 0) item.resolve(this.#toDiagnostics(item.code, results[i]));
        else retry.push(item);
      });
      remaining = retry;
    }
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

  async #runTsgo(batch) {
    await this.#prepare();
    const dir = path.join(this.workDir, `batch${this.runCount++}`);
    await fs.mkdir(dir);
    try {
      const files = batch.map((_, i) => `f${i}.tsx`);
      await Promise.all(batch.map((item, i) => fs.writeFile(path.join(dir, files[i]), item.code)));
      const allowed = new Set(batch.flatMap((item) => item.allow));
      const ambient = [...allowed].map((m) => `declare module ${JSON.stringify(m)};`).join("\n");
      await fs.writeFile(path.join(dir, "allowed-modules.d.ts"), ambient + "\n");
      const config = { compilerOptions: COMPILER_OPTIONS, files: [...files, "allowed-modules.d.ts"] };
      await fs.writeFile(path.join(dir, "tsconfig.json"), JSON.stringify(config));
      const { stdout, status } = await this.#exec(["-p", dir, "--pretty", "false", "--singleThreaded"], dir);
      const byFile = parseTsgoOutput(stdout);
      if (status !== 0 && byFile.size === 0) throw new Error(`tsgo exited ${status}: ${stdout.slice(0, 2000)}`);
      return batch.map((_, i) => byFile.get(i) ?? []);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  #exec(args, cwd) {
    return new Promise((resolve, reject) => {
      execFile(this.tsgoPath, args, { cwd, maxBuffer: MAX_OUTPUT_BYTES }, (error, stdout, stderr) => {
        // A non-zero status with diagnostics on stdout just means "errors were reported".
        if (error && typeof error.code !== "number") reject(new Error(`tsgo failed: ${stderr || error.message}`));
        else resolve({ stdout, status: error ? error.code : 0 });
      });
    });
  }
}
