// What the typecheck prelude (lib/typecheck.mjs TYPECHECK_PRELUDES: a root file of every tsgo
// program) costs the warm tsgo server a run: the server's CPU (/proc) a run and a file, on batches
// of 32 and of 1, for the prelude `global` (React and the libraries with global effects, the
// default), `all` (every installed curated library, the path before) and none, alternated twice.
// Reads a JSON list of at least 64 files on stdin; run in sandbox/node (after `node lib/libraries.mjs
// prepare`, else `global` is every library):
//   node ../../benchmarks/tsgo_prelude.mjs [each|mixed] < files.json
// each:  batches of 1 with a prelude of one library at a time (and none);
// mixed: each batch holds one file that imports libraries (tests/data/react_libraries: recharts,
//        date-fns) and 31 of stdin's files (or it alone, for batches of 1).
// (issue 38)
import fs from "node:fs"; import os from "node:os"; import path from "node:path";
import { TsgoServer } from "../sandbox/node/lib/tsgo-server.mjs";
import { COMPILER_OPTIONS as compilerOptions } from "../sandbox/node/lib/compiler-options.mjs";
import { curatedLibraries, NODE_DIR } from "../sandbox/node/lib/libraries.mjs";
import { TYPECHECK_PRELUDES } from "../sandbox/node/lib/typecheck.mjs";
const mode = process.argv[2] ?? "";
const codes = JSON.parse(fs.readFileSync(0, "utf8"));
const nodeModules = path.join(NODE_DIR, "node_modules");
const tsgoPath = path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc");
function childMs(pid) { const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/); return (Number(f[11]) + Number(f[12])) * 10; }
const [global, all] = [TYPECHECK_PRELUDES.global(), TYPECHECK_PRELUDES.all()];
console.log(`global prelude: ${JSON.stringify(global)}`);
const cases = mode === "each" ? [["no prelude", ""], ...curatedLibraries().map((n) => [n, `import ${JSON.stringify(n)};\n`])]
  : [["global prelude", global], ["all libraries", all], ["no prelude", ""], ["global prelude", global], ["all libraries", all], ["no prelude", ""]];
const libraryFiles = mode === "mixed" ? ["dashboard", "booking_form"].map((name) =>
  [name, fs.readFileSync(new URL(`../tests/data/react_libraries/${name}.tsx`, import.meta.url), "utf8")]) : [[null, null]];
for (const [label, prelude] of cases) {
  const workDir = path.join(os.tmpdir(), `prof38-${process.pid}-${label.replace(/\W/g, "_")}`);
  fs.mkdirSync(workDir, { recursive: true }); try { fs.symlinkSync(nodeModules, path.join(workDir, "node_modules")); } catch {}
  const server = new TsgoServer({ tsgoPath, prlimit: null, memoryMb: 0, workDir, compilerOptions,
    probe: "export const P = () => <b>1</b>;\n", prelude });
  for (const [name, library] of libraryFiles) {
    for (const size of mode === "each" ? [1] : [32, 1]) {
      const runs = size === 32 ? 30 : 60;
      const batch = (i) => library === null ? codes.slice(i % 32, i % 32 + size) : [library, ...codes.slice(i % 32, i % 32 + size - 1)];
      for (let i = 0; i < 5; i++) await server.run(batch(i), [], 10000);
      const c0 = childMs(server.rpc.child.pid);
      for (let i = 0; i < runs; i++) { const [out] = await server.run(batch(i), [], 10000); if (out) throw new Error(out); }
      const ms = childMs(server.rpc.child.pid) - c0;
      const what = name === null ? label : `${label}, ${name}`;
      console.log(`${what.padEnd(30)} batches of ${String(size).padStart(2)}: tsgo ${(ms / runs).toFixed(1)} ms a run, ${(ms / runs / size).toFixed(2)} ms a file`);
    }
  }
  server.stop(); fs.rmSync(workDir, { recursive: true, force: true });
}
process.exit(0);
