// The compile worker's side of rendering: a queue in front of one render thread, a deadline
// per render, and a new thread whenever one ends. A render that outlives its deadline (a loop
// the context's timeout cannot interrupt) stops the thread; one that exhausts the thread's
// heap ends it (ERR_WORKER_OUT_OF_MEMORY). Either way only the render in flight fails, with
// the reason, and the next one gets a fresh thread.
import { Worker } from "node:worker_threads";

const THREAD = new URL("./thread.mjs", import.meta.url);
const STARTUP_MS = 10_000;

const failed = (status, message) => ({ status, message, effects: 0, timers: 0, consoleBytes: 0, effectErrors: [] });

export class RenderHost {
  constructor({ heapMb = 256, youngMb = 32, stackMb = 4, graceMs = 1000 } = {}) {
    this.limits = { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: youngMb, stackSizeMb: stackMb };
    this.graceMs = graceMs;
    this.queue = [];
    this.current = null;
    this.thread = null;
    this.ready = false;
    this.nextId = 0;
    this.restarts = 0;
  }

  /** Render `job` (see lib/render/realm.mjs); resolves to its result, never rejects. */
  render(job) {
    return new Promise((resolve) => {
      this.queue.push({ job: { ...job, id: ++this.nextId }, resolve });
      this.pump();
    });
  }

  pump() {
    if (this.current !== null || this.queue.length === 0) return;
    if (this.thread === null) this.spawn();
    if (!this.ready) return;
    const entry = this.queue.shift();
    this.current = entry;
    entry.timer = setTimeout(() => this.fail(`Render did not finish within ${entry.job.timeoutMs} ms (the render thread was stopped)`, "timeout"),
      entry.job.timeoutMs + this.graceMs);
    // a library's bundle crosses to a thread once; later jobs name it only
    const libraries = {};
    for (const [name, js] of Object.entries(entry.job.libraries ?? {})) {
      libraries[name] = this.sent.has(name) ? null : js;
      this.sent.add(name);
    }
    this.thread.postMessage({ ...entry.job, libraries });
  }

  spawn() {
    const thread = new Worker(THREAD, { resourceLimits: this.limits, stdout: true, stderr: true, env: {}, argv: [], execArgv: [] });
    thread.stdout.resume();
    thread.stderr.resume();
    this.thread = thread;
    this.ready = false;
    this.sent = new Set();
    const startup = setTimeout(() => {
      if (this.thread === thread && !this.ready) this.fail("The render thread did not start", "crashed");
    }, STARTUP_MS);
    thread.on("message", (message) => {
      if (this.thread !== thread) return;
      if (message?.ready) {
        clearTimeout(startup);
        this.ready = true;
        this.pump();
        return;
      }
      const entry = this.current;
      if (entry === null || message?.id !== entry.job.id) return;
      clearTimeout(entry.timer);
      this.current = null;
      entry.resolve(message.result);
      this.pump();
    });
    thread.on("error", (error) => {
      if (this.thread !== thread) return;
      clearTimeout(startup);
      if (error?.code === "ERR_WORKER_OUT_OF_MEMORY") {
        this.fail(`Render ran out of memory (the render heap is limited to ${this.limits.maxOldGenerationSizeMb} MiB)`, "memory");
      } else {
        this.fail(`Render thread failed: ${String(error?.message ?? error).slice(0, 200)}`, "crashed");
      }
    });
    thread.on("exit", () => {
      if (this.thread !== thread) return;
      clearTimeout(startup);
      this.fail("Render thread exited", "crashed");
    });
  }

  /** Fail the render in flight (if any) and replace the thread. A thread that dies before it is
   * ready cannot render anything: the queued renders fail too instead of waiting for ever. */
  fail(message, status) {
    const thread = this.thread;
    const started = this.ready;
    this.thread = null;
    this.ready = false;
    this.restarts++;
    if (thread !== null) thread.terminate().catch(() => {});
    const entry = this.current;
    this.current = null;
    if (entry !== null) {
      clearTimeout(entry.timer);
      entry.resolve(failed(status, message));
    }
    if (!started && thread !== null) {
      for (const queued of this.queue.splice(0)) queued.resolve(failed("crashed", `The render thread could not start (${message})`));
    }
    this.pump();
  }
}
