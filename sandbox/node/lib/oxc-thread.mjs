// The oxc parse thread of lib/oxc-syntax.mjs: answers {id, code} with {id, errors}: the number of
// oxc-parser's parse and semantic errors (the AST is never read), plus one when an export name
// is declared twice, which esbuild refuses ("Multiple exports with the same name") and oxc does
// not report. It runs on a worker thread
// because its native stack is set there (lib/oxc-syntax.mjs OXC_STACK_MB): oxc's parser and
// semantic pass recurse in Rust, where running out of stack kills the process, not a RangeError.
import { parentPort } from "node:worker_threads";
import { parseSync } from "oxc-parser";

const OPTIONS = Object.freeze({ lang: "tsx", sourceType: "module", showSemanticErrors: true });

/** Whether two exports of the module record share a name (`default` included, types too). */
function duplicateExport(module) {
  const names = new Set();
  for (const statement of module.staticExports) {
    for (const { exportName } of statement.entries) {
      const name = exportName.kind === "Default" ? "default" : exportName.kind === "Name" ? exportName.name : null;
      if (name === null) continue;
      if (names.has(name)) return true;
      names.add(name);
    }
  }
  return false;
}

parentPort.on("message", ({ id, code }) => {
  let errors;
  try {
    const result = parseSync("input.tsx", code, OPTIONS);
    errors = result.errors.length + (result.errors.length === 0 && duplicateExport(result.module) ? 1 : 0);
  } catch {
    errors = -1;  // the caller takes the esbuild path
  }
  parentPort.postMessage({ id, errors });
});
