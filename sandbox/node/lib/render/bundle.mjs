// The render level's esbuild call: the build level's checks (parse errors, the import policy)
// and, in the same call, an executable CommonJS bundle with a source map. Allowed modules stay
// external (the render realm supplies React); `import()` is lowered to `require()` so that every
// module load goes through the realm's require; jsxDEV carries each element's source position.
import { builtinModules } from "node:module";
import * as esbuild from "esbuild";
import { importPolicyPlugin, relocateJsxRuntime } from "../build.mjs";
import { buildErrors, logOverrideFor } from "../esbuild-service.mjs";
import { esbuildErrorsToDiagnostics } from "../positions.mjs";

export const BUILTINS = Object.freeze([...new Set(builtinModules.map((m) => m.replace(/^node:/, "")))]);
const BUILTIN_SET = new Set(BUILTINS);
const REFUSED = /^Import of ("(?:[^"\\]|\\.)*") is not allowed/;

/** The Node built-in a refused import names (fs, node:child_process, ...), or null. */
export function refusedBuiltin(message) {
  const match = REFUSED.exec(message);
  if (!match) return null;
  let specifier;
  try {
    specifier = JSON.parse(match[1]);
  } catch {
    return null;
  }
  const bare = specifier.replace(/^node:/, "").split("/")[0];
  return BUILTIN_SET.has(bare) || specifier.startsWith("node:") ? specifier : null;
}

/** {diagnostics, js, map, externals}: diagnostics as at the build level; when it builds, js, map and
 * the allowed modules it loads (what the realm's require must serve). */
export async function bundleForRender(code, allow) {
  try {
    const result = await esbuild.build({
      stdin: { contents: code, loader: "tsx", sourcefile: "input.tsx", resolveDir: "/" },
      bundle: true,
      write: false,
      format: "cjs",
      platform: "neutral",
      target: "es2022",
      jsx: "automatic",
      jsxDev: true,
      sourcemap: "external",
      metafile: true,
      outfile: "/component.js",
      supported: { "dynamic-import": false },
      define: { "process.env.NODE_ENV": '"production"' },
      logLevel: "silent",
      logOverride: logOverrideFor(code),
      plugins: [importPolicyPlugin(allow)],
    });
    const js = result.outputFiles.find((f) => f.path.endsWith(".js"))?.text ?? "";
    const map = result.outputFiles.find((f) => f.path.endsWith(".map"))?.text ?? "";
    const externals = [...new Set(Object.values(result.metafile.inputs).flatMap((input) =>
      input.imports.filter((i) => i.external).map((i) => i.path)))];
    return { diagnostics: [], js, map, externals };
  } catch (error) {
    const diagnostics = esbuildErrorsToDiagnostics(buildErrors(error), code);
    return { diagnostics: diagnostics.map((d) => relocateJsxRuntime(d, code)), js: "", map: "", externals: [] };
  }
}
