// oxlint inside the compile worker: the default engine of the `lint` option (lib/lint.mjs keeps
// ESLint as the other engine). oxlint (Rust, pinned in package-lock.json) has eslint-plugin-react
// and eslint-plugin-react-hooks built in; RULES below are the ESLint rule set "all" of
// lib/lint.mjs mapped one to one, with the findings reported under the ESLint rule ids so the
// Python side and the render level see the same names from either engine. Not covered
// (UNMAPPED): react/no-deprecated (oxlint has no such rule: calls to React APIs deprecated
// or removed, e.g. ReactDOM.render, componentWillMount); react/jsx-uses-vars reports nothing by
// itself (it marks JSX names used for no-unused-vars, which is not enabled).
//
// Batching: one oxlint run costs a few ms fixed plus well under 0.1 ms a file, so the files
// whose lint is asked while a run is pending join one run (reserve() at the request's start,
// then lint() or cancel(), as the typecheck batcher does: a batch starts once every reserved
// file has arrived, or after `maxWaitMs`). The i-th file of a run is written over slot file
// i of the worker's private directory, kept open and rewritten in place: where the new file is
// shorter, the rest of the old one is overwritten with spaces (trailing whitespace changes no
// finding and no offset), since on ext4 here creating and deleting a file costs ~1 ms and a
// truncation as much, a rewrite ~20 us. The run names only the
// slots of its batch, and a finding counts only for the file whose exact name it carries, so
// the rollouts of a batch never see each other's findings (oxlint's rules are per file: no
// import resolution, no type information, no nested config is read; each run reads its files
// afresh).
//
// Inline directives: oxlint honours `oxlint-disable*` and `eslint-disable*` comments. Both
// keywords are masked before the run (with same-length text, so every offset is unchanged), so
// a directive switches nothing off (the worker also refuses eslint directives when lint is on:
// lib/policy.mjs; lib/lint.mjs runs ESLint with inline config off, the same rule).
//
// Positions: oxlint reports UTF-8 byte offsets; they are converted to UTF-16 offsets into the
// request's code, then made into diagnostics with lib/positions.mjs as ESLint's are. The span is
// the finding's primary label (the first; the later one for jsx-key and exhaustive-deps), and
// for the rules where oxlint marks a part of the node ESLint reports, it is widened (or
// narrowed) to that node with a TypeScript parse of the file (SPAN_NODES: the element of
// jsx-key, the attribute of no-unknown-property, the opening tag of jsx-no-target-blank, the
// callee of rules-of-hooks), so a finding blames the same characters under either engine.
//
// Failure: a run that fails or exceeds `timeoutMs` kills the host (a fresh one starts on the
// next run); a batch of several files is then re-run one file at a time (each with half the
// limit), so one file that breaks oxlint costs its batch mates nothing, and the file that fails
// alone gets no findings, as a crashing ESLint rule does.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MAX_FINDINGS } from "./lint.mjs";
import { watchCpuBudget } from "./cpu-budget.mjs";
import ts from "typescript";
import { lineStarts, makeDiagnostic } from "./positions.mjs";

const HOST = path.join(path.dirname(fileURLToPath(import.meta.url)), "oxlint-host.mjs");
const MAX_REPORT_BYTES = 64 * 1024 * 1024;
const MAX_PADDING = 64 * 1024;  // a slot file is truncated rather than padded with more spaces than this

/** ESLint rule id (lib/lint.mjs, set "all") -> [oxlint rule, severity]. */
export const RULES = Object.freeze({
  "react/jsx-key": ["react/jsx-key", "error"],
  "react/jsx-no-comment-textnodes": ["react/jsx-no-comment-textnodes", "error"],
  "react/jsx-no-duplicate-props": ["react/jsx-no-duplicate-props", "error"],
  "react/jsx-no-target-blank": ["react/jsx-no-target-blank", "error"],
  "react/jsx-no-undef": ["react/jsx-no-undef", "error"],
  "react/no-children-prop": ["react/no-children-prop", "error"],
  "react/no-danger-with-children": ["react/no-danger-with-children", "error"],
  "react/no-direct-mutation-state": ["react/no-direct-mutation-state", "error"],
  "react/no-find-dom-node": ["react/no-find-dom-node", "error"],
  "react/no-is-mounted": ["react/no-is-mounted", "error"],
  "react/no-render-return-value": ["react/no-render-return-value", "error"],
  "react/no-string-refs": ["react/no-string-refs", "error"],
  "react/no-unescaped-entities": ["react/no-unescaped-entities", "error"],
  "react/no-unknown-property": ["react/no-unknown-property", "error"],
  "react-hooks/rules-of-hooks": ["react/rules-of-hooks", "error"],
  "react-hooks/exhaustive-deps": ["react/exhaustive-deps", "warn"],
});
/** ESLint rules of set "all" that oxlint does not have. */
export const UNMAPPED = Object.freeze(["react/no-deprecated", "react/jsx-uses-vars"]);
/** Rules whose finding ESLint reports at the node of oxlint's later label (the duplicate, the element). */
const LATER_LABEL = new Set(["react/jsx-key", "react/jsx-no-duplicate-props", "react-hooks/exhaustive-deps"]);

const isTag = (n) => ts.isJsxOpeningElement(n) || ts.isJsxSelfClosingElement(n);
const isElement = (n) => ts.isJsxElement(n) || ts.isJsxSelfClosingElement(n) || ts.isJsxFragment(n);
const isAccess = (n) => ts.isPropertyAccessExpression(n) || ts.isElementAccessExpression(n);
/** The first node from `node` up that passes `test`, picked by `pick` (null: none). */
const upTo = (test, pick = (n) => n) => (node) => {
  for (; node; node = node.parent) if (test(node)) return pick(node);
  return null;
};
const callee = upTo(ts.isCallExpression, (n) => n.expression);
/**
 * Rule -> the node ESLint reports, from the innermost node holding oxlint's span: the element
 * of jsx-key, the attribute of no-unknown-property, jsx-no-duplicate-props and no-children-prop
 * (oxlint: its name), the opening tag of jsx-no-target-blank, the callee of rules-of-hooks,
 * no-find-dom-node and no-is-mounted (oxlint: the call or the method name), and `this.state` of
 * no-direct-mutation-state (oxlint: the whole assigned member, `this.state.n`).
 */
const SPAN_NODES = {
  "react/jsx-key": upTo(isElement),
  "react/no-unknown-property": upTo(ts.isJsxAttribute),
  "react/jsx-no-duplicate-props": upTo(ts.isJsxAttribute),
  "react/no-children-prop": upTo(ts.isJsxAttribute),
  "react/jsx-no-target-blank": upTo(isTag),
  "react-hooks/rules-of-hooks": callee,
  "react/no-find-dom-node": callee,
  "react/no-is-mounted": callee,
  "react/no-direct-mutation-state": (node) => {
    while (isAccess(node) && node.expression.kind !== ts.SyntaxKind.ThisKeyword) node = node.expression;
    return isAccess(node) ? node : null;
  },
};

/** The innermost node of `sf` that holds [start, end). */
function nodeAt(sf, start, end) {
  let node = sf;
  for (;;) {
    const child = node.getChildren(sf).find((c) => c.pos <= start && end <= c.end);  // children tile their parent
    if (!child) return node;
    node = child;
  }
}

/** [start, end) moved to the node ESLint reports for `rule`, or as is when none is found. */
function eslintSpan(rule, parse, start, end) {
  const toNode = SPAN_NODES[rule];
  if (!toNode) return [start, end];
  const sf = parse();
  const target = toNode(nodeAt(sf, start, end));
  return target && target !== sf ? [target.getStart(sf), target.getEnd()] : [start, end];
}

export function oxlintConfig() {
  return {
    plugins: ["react"],
    categories: { correctness: "off", suspicious: "off", pedantic: "off", perf: "off", style: "off", restriction: "off", nursery: "off" },
    rules: Object.fromEntries(Object.values(RULES)),
  };
}

/** oxlint's report code "react(jsx-key)" / "react-hooks(rules-of-hooks)" -> the ESLint rule id. */
export function eslintRuleId(code) {
  const match = /^([\w-]+)\(([\w-]+)\)$/.exec(String(code ?? ""));
  return match ? `${match[1]}/${match[2]}` : null;
}

const DIRECTIVE = /((?:\/\/|\/\*)[\s*]*)(oxlint|eslint)(?=[\s*:-]|$)/gi;

/** `code` with the directive keywords of comments masked ("eslint-disable" -> "xxxxxx-disable"): same length, same offsets. */
export function maskDirectives(code) {
  return code.replace(DIRECTIVE, (_, opener, keyword) => opener + "x".repeat(keyword.length));
}

/** UTF-8 byte offset -> UTF-16 offset into `code` (`bytes` is Buffer.from(code); null: ASCII, the same). */
function utf16Offset(bytes, byteOffset) {
  if (bytes === null) return byteOffset;
  return bytes.subarray(0, Math.max(0, Math.min(byteOffset, bytes.length))).toString("utf8").length;
}

/**
 * The diagnostics of one file from its entries of an oxlint JSON report; `sourceFile`: the
 * file's TypeScript AST with parent pointers, if the caller has one (else parsed when needed).
 */
export function findingsOf(code, entries, sourceFile = null) {
  if (entries.length === 0) return [];
  const starts = lineStarts(code);
  const bytes = Buffer.byteLength(code, "utf8") === code.length ? null : Buffer.from(code, "utf8");
  const findings = [];
  let sf = sourceFile;
  const parse = () => (sf ??= ts.createSourceFile("/input.tsx", code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX));
  for (const entry of entries) {
    const rule = eslintRuleId(entry.code);
    const labels = Array.isArray(entry.labels) ? entry.labels.filter((l) => l?.span) : [];
    if (!rule || labels.length === 0) continue;
    const { span } = LATER_LABEL.has(rule) ? labels[labels.length - 1] : labels[0];
    const [start, end] = eslintSpan(rule, parse, utf16Offset(bytes, Number(span.offset)),
      utf16Offset(bytes, Number(span.offset) + Number(span.length)));
    const diagnostic = makeDiagnostic(starts, start, Math.max(end, start + 1), String(entry.message ?? ""));
    diagnostic.severity = entry.severity === "error" ? "error" : "warning";
    diagnostic.rule = rule;
    findings.push(diagnostic);
  }
  findings.sort((a, b) => a.start - b.start || a.end - b.end);
  return findings.slice(0, MAX_FINDINGS);
}

const READY = "\u001eready\n";
const START_TIMEOUT_MS = 15000;

/**
 * One long-lived oxlint host process; runs are sequential. A run's time limit starts once the
 * host is up (a cold start under load takes longer than a run); a host that failed is replaced
 * at once, so the next run finds its successor started.
 */
class OxlintHost {
  constructor(bindings) {
    this.bindings = bindings;
    this.child = null;
    this.ready = null;
  }

  #start() {
    const child = spawn(process.execPath, [HOST, this.bindings], { stdio: ["pipe", "pipe", "pipe"] });
    child.stderr.on("data", (chunk) => process.stderr.write(String(chunk).slice(0, 2000)));
    child.on("exit", () => { if (this.child === child) this.child = null; });
    child.stdin.on("error", () => {});
    child.stdout.setEncoding("utf8");
    this.child = child;
    this.ready = new Promise((resolve, reject) => {
      let seen = "";
      const done = (error) => {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        child.off("exit", onExit);
        if (error) { this.#kill(child); reject(error); } else resolve();
      };
      const onData = (chunk) => {
        seen += chunk;
        if (seen === READY) done(null);
        else if (!READY.startsWith(seen)) done(new Error("oxlint host wrote before it was ready"));
      };
      const onExit = (status, signal) => done(new Error(`oxlint host exited while starting (${signal ?? status})`));
      const timer = setTimeout(() => done(new Error(`oxlint host not up after ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.stdout.on("data", onData);
      child.on("exit", onExit);
    });
    this.ready.catch(() => {});
    return child;
  }

  #kill(child) {
    if (this.child === child) this.child = null;
    child.kill("SIGKILL");
  }

  kill() {
    if (this.child) this.#kill(this.child);
  }

  /** oxlint's report (parsed JSON) for `args` run in `cwd`; rejects on a failure or once the host has
   * used `timeoutMs` of CPU time on it (lib/cpu-budget.mjs: a busy machine does not fail a lint). */
  async run(args, cwd, timeoutMs, debug = null) {
    const child = this.child ?? this.#start();
    await this.ready;
    const end = crypto.randomBytes(16).toString("hex");
    const sentinel = `\n\u001e${end}\n`;
    return new Promise((resolve, reject) => {
      let output = "";
      const finish = (error, value) => {
        stopWatch();
        child.stdout.off("data", onData);
        child.off("exit", onExit);
        if (error) {
          this.#kill(child);
          this.#start();  // the successor starts now, not on the next run
          reject(error);
        } else {
          resolve(value);
        }
      };
      const onData = (chunk) => {
        const from = Math.max(0, output.length - sentinel.length);
        output += chunk;
        if (output.length > MAX_REPORT_BYTES) return finish(new Error("oxlint report too large"));
        const at = output.indexOf(sentinel, from);
        if (at < 0) return undefined;
        try {
          return finish(null, JSON.parse(output.slice(0, at)));
        } catch (error) {
          return finish(new Error(`oxlint report unreadable: ${error.message}`));
        }
      };
      const onExit = (status, signal) => finish(new Error(`oxlint host exited (${signal ?? status})`));
      const stopWatch = watchCpuBudget(child.pid, timeoutMs,
        (what) => finish(new Error(`oxlint timed out after ${timeoutMs} ms of ${what} time`)));
      child.stdout.on("data", onData);
      child.on("exit", onExit);
      child.stdin.write(JSON.stringify({ args, cwd, end, ...(debug ? { debug } : {}) }) + "\n");
    });
  }
}

export class OxlintBatcher {
  /** nodeModules: the worker's node_modules; workDir: a private scratch directory. */
  constructor({ nodeModules, workDir, maxBatch = 256, timeoutMs = 5000, maxWaitMs = 20 }) {
    this.host = new OxlintHost(path.join(nodeModules, "oxlint", "dist", "bindings.js"));
    this.workDir = workDir;
    this.maxBatch = maxBatch;
    this.timeoutMs = timeoutMs;
    this.maxWaitMs = maxWaitMs;
    this.waiting = null;
    this.force = false;
    this.reserved = 0;
    this.pending = [];
    this.running = false;
    this.runs = 0;
    this.failures = 0;
    this.configPath = null;
    this.slots = [];  // open file descriptors of slot-<i>.tsx
    this.slotBytes = [];  // their sizes
  }

  /** A lint is coming (the batch waits for it); pair with lint() or cancel(). */
  reserve() {
    this.reserved++;
  }

  cancel() {
    this.reserved = Math.max(0, this.reserved - 1);
    this.#maybeRun();
  }

  /**
   * Findings of `code` (diagnostics with `rule`, at most MAX_FINDINGS), after reserve().
   * `debug` (test-only, the worker passes it only in debug mode): "hang", "spin" or "crash" the host;
   * `sourceFile`: the worker's parse of `code` (parent pointers set), reused to place spans.
   */
  lint(code, debug = null, sourceFile = null) {
    return new Promise((resolve) => {
      this.reserved = Math.max(0, this.reserved - 1);
      this.pending.push({ code, resolve, debug, sourceFile });
      this.#maybeRun();
    });
  }

  /** Throws unless oxlint runs and finds a known finding (the worker's start-up self-test). */
  async selfTest() {
    const probe = "export const P = ({ xs }: { xs: string[] }) => <ul>{xs.map((x) => <li>{x}</li>)}</ul>;\n";
    const { findings, failed } = await this.#runOnce([{ code: probe }]);
    if (failed || findings[0].length !== 1 || findings[0][0].rule !== "react/jsx-key") {
      throw new Error(`oxlint self-test failed: ${failed ? "the run failed" : JSON.stringify(findings[0])} `
        + "(is node_modules current with package-lock.json? `npm ci --prefix sandbox/node`)");
    }
  }

  #maybeRun() {
    if (this.running || this.pending.length === 0) return;
    if (this.reserved > 0 && this.pending.length < this.maxBatch && !this.force) {
      // a reserved file still compiling (a typecheck, say) delays the batch by maxWaitMs at most
      this.waiting ??= setTimeout(() => { this.waiting = null; this.force = true; this.#maybeRun(); }, this.maxWaitMs);
      return;
    }
    clearTimeout(this.waiting);
    this.waiting = null;
    this.force = false;
    const batch = this.pending.splice(0, this.maxBatch);
    this.running = true;
    this.#run(batch).finally(() => {
      this.running = false;
      this.#maybeRun();
    });
  }

  /** The open descriptor of slot file `i` (created on first use). */
  #slot(i) {
    this.slots[i] ??= fs.openSync(path.join(this.workDir, `slot-${i}.tsx`), "w+", 0o600);
    return this.slots[i];
  }

  /** Slot file `i` := `text`, padded with spaces to the slot's size (truncated when that would be wasteful). */
  #write(i, text) {
    const fd = this.#slot(i);
    const bytes = Buffer.from(text, "utf8");
    const old = this.slotBytes[i] ?? 0;
    if (old > bytes.length && old > 2 * bytes.length + MAX_PADDING) {
      fs.ftruncateSync(fd, 0);
      this.slotBytes[i] = 0;
    }
    const size = Math.max(bytes.length, this.slotBytes[i] ?? 0);
    const out = size > bytes.length ? Buffer.concat([bytes, Buffer.alloc(size - bytes.length, 0x20)]) : bytes;
    fs.writeSync(fd, out, 0, out.length, 0);  // small synchronous writes: cheaper than the thread pool's
    this.slotBytes[i] = size;
  }

  #config() {
    if (this.configPath) return this.configPath;
    fs.mkdirSync(this.workDir, { recursive: true, mode: 0o700 });
    const configPath = path.join(this.workDir, "oxlintrc.json");
    fs.writeFileSync(configPath, JSON.stringify(oxlintConfig()));
    this.configPath = configPath;
    return configPath;
  }

  /** Resolve every job of `batch`; a failed run of several files is re-run one file at a time. */
  async #run(batch) {
    const { findings, failed } = await this.#runOnce(batch);
    if (!failed) {
      batch.forEach((job, i) => job.resolve(findings[i]));
      return;
    }
    if (batch.length === 1) {
      batch[0].resolve([]);
      return;
    }
    for (const job of batch) {  // half the limit each: the worker stays within its pool's silence budget
      const alone = await this.#runOnce([job], this.timeoutMs / 2);
      job.resolve(alone.failed ? [] : alone.findings[0]);
    }
  }

  /** One oxlint run over `batch`: {findings: one list per job, failed}. */
  async #runOnce(batch, timeoutMs = this.timeoutMs) {
    this.runs++;
    try {
      const config = this.#config();
      const names = batch.map((_, i) => `slot-${i}.tsx`);
      batch.forEach((job, i) => this.#write(i, maskDirectives(job.code)));
      const debug = batch.find((job) => job.debug)?.debug ?? null;
      const report = await this.host.run(["-c", config, "--disable-nested-config", "--no-ignore",
        "--threads", "1", "-f", "json", ...names], this.workDir, timeoutMs, debug);
      const byName = new Map(names.map((name) => [name, []]));
      for (const entry of Array.isArray(report?.diagnostics) ? report.diagnostics : []) {
        byName.get(entry?.filename)?.push(entry);  // a finding counts for the file it names, exactly
      }
      return { findings: batch.map((job, i) => findingsOf(job.code, byName.get(names[i]), job.sourceFile)), failed: false };
    } catch (error) {
      this.failures++;
      process.stderr.write(`oxlint failed: ${String(error?.message ?? error).slice(0, 200)}\n`);
      return { findings: batch.map(() => []), failed: true };
    }
  }

  close() {
    this.host.kill();
    for (const fd of this.slots) if (fd !== undefined) fs.closeSync(fd);
    this.slots = [];
  }
}
