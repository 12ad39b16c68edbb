// The oxlint host: a child process of the compile worker that runs oxlint's native linter
// (the napi binding of the pinned `oxlint` package) once per batch. oxlint's only entry point is
// its command line, which prints its report on file descriptor 1, so it cannot run inside the
// worker (whose stdout is the protocol); here stdout is a pipe back to the worker alone.
//
// Protocol: the host writes "\u001eready\n" once the binding is loaded; then, for each run, one
// JSON line on stdin, {"args": [...], "cwd": dir, "end": "<nonce>"}: the host changes to `cwd`
// (oxlint names each file relative to the working directory), runs oxlint with those arguments
// (its JSON report goes to stdout) and then writes "\n\u001e<nonce>\n" (a byte that JSON output
// never holds raw) so the worker knows the report is complete. The host
// reads no files but the config and the ones named, and writes none. It runs in the worker's
// sandbox (it is the worker's child: same namespaces, seccomp filter, rlimits).
//
// Test-only (the worker sends it only with BOTGRPO_SANDBOX_DEBUG=1): "debug": "hang" blocks the
// host (a stall: the wall-clock backstop ends it), "spin" computes for ever (its CPU budget ends
// it), "crash" kills it, so the worker's timeout and restart paths can be exercised.
import fs from "node:fs";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

// argv[2]: oxlint's dist/bindings.js (not in the package's exports map, so named by path).
const { r: lint } = await import(pathToFileURL(process.argv[2]).href);
if (typeof lint !== "function") throw new Error("oxlint's binding has no lint entry point (version changed?)");

// JS plugins, workspaces and JS configs are never used: the callbacks only keep the binding happy.
const CALLBACKS = [
  () => null, () => null, () => null,
  () => Promise.resolve(), () => undefined, () => Promise.resolve("[]"),
];

process.stdout._handle?.setBlocking?.(true);
process.stdout.on("error", () => process.exit(0));  // the worker went away
fs.writeSync(1, "\u001eready\n");  // loaded: the worker's time limits start from here
const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let queue = Promise.resolve();
input.on("line", (line) => {
  queue = queue.then(async () => {
    const { args, cwd, end, debug } = JSON.parse(line);
    if (debug === "hang") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    if (debug === "spin") for (;;);
    if (debug === "crash") process.kill(process.pid, "SIGKILL");
    try {
      process.chdir(String(cwd));
      await lint(args.map(String), ...CALLBACKS);
    } catch (error) {
      process.stderr.write(`oxlint failed: ${String(error?.message ?? error).slice(0, 200)}\n`);
    }
    try {
      fs.writeSync(1, `\n\u001e${end}\n`);
    } catch {
      process.exit(0);
    }
  });
});
input.on("close", () => { queue.then(() => process.exit(0)); });
