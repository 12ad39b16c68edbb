// Level "build": bundle the file from a virtual stdin entry with an import policy.
// Allowed modules are marked external instead of being resolved into node_modules: the check
// is about *which* modules a component may use, external resolution never touches the
// filesystem, and it keeps a build at ~1 ms. Every other import (bare or relative) fails with
// an esbuild error located at the import specifier.
import * as esbuild from "esbuild";
import { esbuildErrorsToDiagnostics } from "./positions.mjs";

/** Modules every component may import; the operator extends this per request (`allow`). */
export const BASE_ALLOWED_MODULES = Object.freeze([
  "react",
  "react/jsx-runtime",
  "react/jsx-dev-runtime",
  "react-dom",
  "react-dom/client",
]);

/** True when `specifier` is allowed: exact match, or `pkg/*` entries allowing any subpath. */
export function isAllowedImport(specifier, allow) {
  for (const entry of [...BASE_ALLOWED_MODULES, ...allow]) {
    if (entry === specifier) return true;
    if (entry.endsWith("/*") && specifier.startsWith(entry.slice(0, -1))) return true;
  }
  return false;
}

function importPolicyPlugin(allow) {
  return {
    name: "import-policy",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (isAllowedImport(args.path, allow)) return { path: args.path, external: true };
        return { errors: [{ text: `Import of "${args.path}" is not allowed in this sandbox` }] };
      });
    },
  };
}

/** Return diagnostics for parse errors and disallowed imports (empty when it builds). */
export async function checkBuild(code, allow) {
  try {
    await esbuild.build({
      stdin: { contents: code, loader: "tsx", sourcefile: "input.tsx", resolveDir: "/" },
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      jsx: "automatic",
      logLevel: "silent",
      plugins: [importPolicyPlugin(allow)],
    });
    return [];
  } catch (error) {
    if (!Array.isArray(error?.errors)) throw error;
    return esbuildErrorsToDiagnostics(error.errors, code);
  }
}
