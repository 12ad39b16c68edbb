// oxc-parser (Rust, pinned in package-lock.json) as the fast path of level "syntax": a file that
// oxc parses with no parse or semantic error, and TypeScript's parser too when the worker parses
// it anyway, for the summary (else oxc's answer alone), is accepted without esbuild's transform; any other file goes to
// esbuild (lib/syntax.mjs), whose verdict and diagnostics stay the level's. So oxc never
// writes a diagnostic: a file both parsers accept that esbuild would reject is the one way the
// verdicts can differ (tests/test_syntax_engines.py compares the engines on every corpus).
// Cost on the benchmark component: ~0.1 ms of CPU a file against ~1.2 ms for esbuild's
// transform (its Go service included): docs/results/pool-profile-2026-12-04.md.
//
// Stack: oxc's parser and semantic pass recurse natively; a few thousand nested brackets
// exhaust an 8 MB stack (measured: 3,445 `[` in a type, about 2.4 KB of stack a character),
// and a native stack overflow is a segfault of the whole worker. So oxc runs on a worker thread
// with an OXC_STACK_MB stack, only for files of at most OXC_MAX_CHARS UTF-16 units (a third of
// what that stack holds at 2.4 KB a character); longer files take the esbuild path.
import { Worker } from "node:worker_threads";

export const OXC_STACK_MB = 128;
export const OXC_MAX_CHARS = 16384;
const THREAD = new URL("./oxc-thread.mjs", import.meta.url);

export class OxcSyntax {
  constructor() {
    this.thread = null;
    this.pending = new Map();
    this.ids = 0;
  }

  #start() {
    const thread = new Worker(THREAD, { resourceLimits: { stackSizeMb: OXC_STACK_MB } });
    thread.unref();
    thread.on("message", ({ id, errors }) => {
      const resolve = this.pending.get(id);
      this.pending.delete(id);
      resolve?.(errors);
    });
    const fail = () => {  // a dead thread: its files take the esbuild path, the next starts a new one
      if (this.thread === thread) this.thread = null;
      for (const resolve of this.pending.values()) resolve(-1);
      this.pending.clear();
    };
    thread.on("error", fail);
    thread.on("exit", fail);
    this.thread = thread;
  }

  /** Whether oxc parses `code` with no error: true, false, or null (not asked: too long, or the
   * thread failed), so only `true` lets the caller skip esbuild. */
  async clean(code) {
    if (code.length > OXC_MAX_CHARS) return null;
    if (!this.thread) this.#start();
    const id = this.ids++;
    const errors = await new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.thread.postMessage({ id, code });
    });
    return errors < 0 ? null : errors === 0;
  }
}
