// Level "build": bundle the file from a virtual stdin entry with an import policy.
// Allowed modules are marked external instead of being resolved into node_modules: the check
// is about *which* modules a component may use, external resolution never touches the
// filesystem, and it keeps a build at ~1 ms. Every other import (bare or relative) fails with
// an esbuild error located at the import specifier.
import * as esbuild from "esbuild";
import { buildErrors, logOverrideFor } from "./esbuild-service.mjs";
import { esbuildErrorsToDiagnostics, lineStarts, makeDiagnostic } from "./positions.mjs";

/** Modules every component may import; the operator extends this per request (`allow`). */
export const BASE_ALLOWED_MODULES = Object.freeze([
  "react",
  "react/jsx-runtime",
  "react/jsx-dev-runtime",
  "react-dom",
  "react-dom/client",
]);

// A subpath a `pkg/*` entry may allow: plain segments only, so "pkg/../../etc/passwd",
// "pkg//x", "pkg/./x" or "pkg/x?y" never reach a resolver.
const SAFE_SUBPATH = /^(?!\.{1,2}(?:\/|$))[A-Za-z0-9_@$+~-][A-Za-z0-9_@$+~.-]*(?:\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9_@$+~.-]+)*$/;

/** True when `specifier` is allowed: exact match, or `pkg/*` entries allowing any plain subpath. */
export function isAllowedImport(specifier, allow) {
  if (typeof specifier !== "string") return false;
  for (const entry of BASE_ALLOWED_MODULES) if (entry === specifier) return true;
  for (const entry of allow) {
    if (entry === specifier) return true;
    if (entry.endsWith("/*")) {
      const prefix = entry.slice(0, -1);
      if (specifier.startsWith(prefix) && SAFE_SUBPATH.test(specifier.slice(prefix.length))) return true;
    }
  }
  return false;
}

const MAX_QUOTED = 200;

/** The refusal every level uses; the specifier is JSON-quoted (no raw newlines) and bounded. */
export function refusedImport(specifier) {
  let quoted = JSON.stringify(String(specifier));
  if (quoted.length > MAX_QUOTED) quoted = `${quoted.slice(0, MAX_QUOTED - 4)}..."`;
  return `Import of ${quoted} is not allowed in this sandbox`;
}

/** esbuild plugin: allowed modules become externals, every other import fails at its specifier. */
export function importPolicyPlugin(allow) {
  return {
    name: "import-policy",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (isAllowedImport(args.path, allow)) return { path: args.path, external: true };
        return { errors: [{ text: refusedImport(args.path) }] };
      });
    },
  };
}

const JSX_RUNTIME = /\/jsx-(?:dev-)?runtime$/;
const JSX_PRAGMA = /@jsxImportSource\s+[^\s*]+/;

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
      logOverride: logOverrideFor(code),
      plugins: [importPolicyPlugin(allow)],
    });
    return [];
  } catch (error) {
    const diagnostics = esbuildErrorsToDiagnostics(buildErrors(error), code);
    return diagnostics.map((d) => relocateJsxRuntime(d, code));
  }
}

/**
 * esbuild places a refused JSX runtime import (from `@jsxImportSource x`) on the first JSX
 * element; the construct to blame is the pragma, so move the diagnostic there.
 */
export function relocateJsxRuntime(diagnostic, code) {
  const quoted = /^Import of ("(?:[^"\\]|\\.)*")/.exec(diagnostic.message);
  if (!quoted) return diagnostic;
  let specifier;
  try {
    specifier = JSON.parse(quoted[1]);
  } catch {
    return diagnostic;
  }
  if (!JSX_RUNTIME.test(specifier) || code.includes(specifier)) return diagnostic;
  const pragma = JSX_PRAGMA.exec(code);
  if (!pragma) return diagnostic;
  return makeDiagnostic(lineStarts(code), pragma.index, pragma.index + pragma[0].length, diagnostic.message);
}
