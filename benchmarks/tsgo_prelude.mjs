// What the library prelude (lib/typecheck.mjs libraryPrelude: an import of every installed curated
// library, a root file of every tsgo program) costs the warm tsgo server a run: the server's CPU
// (/proc) a run and a file on batches of 32 and of 1, with the prelude and with none, alternated
// twice; `each`: batches of 1 with a prelude of one library at a time. Reads a JSON list of at
// least 64 files on stdin; run in sandbox/node:
//   node ../../benchmarks/tsgo_prelude.mjs [each] < files.json
// (issue 38; the compiler options are lib/typecheck.mjs's COMPILER_OPTIONS, copied)
import fs from "node:fs"; import os from "node:os"; import path from "node:path";
import { TsgoServer } from "../sandbox/node/lib/tsgo-server.mjs";
import { curatedLibraries, NODE_DIR } from "../sandbox/node/lib/libraries.mjs";
const codes = JSON.parse(fs.readFileSync(0, "utf8"));
const nodeModules = path.join(NODE_DIR, "node_modules");
const tsgoPath = path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc");
const compilerOptions = { strict: true, jsx: "react-jsx", noEmit: true, skipLibCheck: true, moduleDetection: "force", module: "esnext",
  moduleResolution: "bundler", target: "es2022", lib: ["es2022", "dom", "dom.iterable"], types: [], resolveJsonModule: false,
  allowArbitraryExtensions: false, noLib: false };
function childMs(pid) { const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/); return (Number(f[11]) + Number(f[12])) * 10; }
const full = curatedLibraries().map((n) => `import ${JSON.stringify(n)};\n`).join("");
const cases = process.argv[2] === "each" ? [["no prelude", ""], ...curatedLibraries().map((n) => [n, `import ${JSON.stringify(n)};\n`])]
  : [["libraries prelude", full], ["no prelude", ""], ["libraries prelude", full], ["no prelude", ""]];
for (const [label, prelude] of cases) {
  const workDir = path.join(os.tmpdir(), `prof38-${process.pid}-${label.replace(/\W/g, "_")}`);
  fs.mkdirSync(workDir, { recursive: true }); try { fs.symlinkSync(nodeModules, path.join(workDir, "node_modules")); } catch {}
  const server = new TsgoServer({ tsgoPath, prlimit: null, memoryMb: 0, workDir, compilerOptions,
    probe: "export const P = () => <b>1</b>;\n", prelude });
  for (const size of process.argv[2] === "each" ? [1] : [32, 1]) {
    const runs = size === 32 ? 30 : 60;
    for (let i = 0; i < 5; i++) await server.run(codes.slice(0, size), [], 10000);
    const c0 = childMs(server.rpc.child.pid);
    for (let i = 0; i < runs; i++) { const [out] = await server.run(codes.slice(i % 32, i % 32 + size), [], 10000); if (out) throw new Error(out); }
    const ms = childMs(server.rpc.child.pid) - c0;
    console.log(`${label.padEnd(18)} batches of ${String(size).padStart(2)}: tsgo ${(ms / runs).toFixed(1)} ms a run, ${(ms / runs / size).toFixed(2)} ms a file`);
  }
  server.stop(); fs.rmSync(workDir, { recursive: true, force: true });
}
process.exit(0);
