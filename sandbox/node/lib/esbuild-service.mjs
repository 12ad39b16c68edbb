// Shared by the esbuild levels: the warnings we silence and how a dead service is told apart
// from a file that fails to compile.
//
// esbuild runs as one long-lived Go child process per worker. If an input makes it die (e.g.
// out of memory: every diagnostic carries its whole source line, so 30,000 errors on one
// 60 KB line are 1.8 GB), every later call fails with "The service is no longer running".
// Such failures are thrown as ServiceError; the worker then reports itself poisoned and the
// pool replaces it, so no later rollout is ever judged by a dead service.

/** The service (not the input) failed: the worker can give no more verdicts. */
export class ServiceError extends Error {
  constructor(message) {
    super(message);
    this.name = "ServiceError";
  }
}

// Warnings are never part of a verdict, but esbuild builds each one with its full source
// line, so a tag with 20,000 duplicate props costs 20,000 copies of a 120 KB line. Silencing
// them by id (unknown ids are accepted and ignored) keeps that input at milliseconds.
const WARNING_IDS = [
  "assign-to-constant", "assign-to-define", "assign-to-import", "call-import-namespace",
  "class-name-will-throw", "commonjs-variable-in-esm", "delete-super-property", "direct-eval",
  "duplicate-case", "duplicate-class-member", "duplicate-object-key", "empty-import-meta",
  "equals-nan", "equals-negative-zero", "equals-new-object", "html-comment-in-js",
  "impossible-typeof", "indirect-require", "private-name-will-throw", "semicolon-after-return",
  "suspicious-boolean-not", "suspicious-define", "suspicious-logical-operator",
  "suspicious-nullish-coalescing", "this-is-undefined-in-esm", "unsupported-dynamic-import",
  "unsupported-jsx-comment", "unsupported-regexp", "unsupported-require-call",
  "different-path-case", "empty-glob", "ignored-bare-import", "ignored-dynamic-import",
  "import-is-undefined", "require-resolve-not-external", "unsupported-source-map-comment",
  "invalid-source-url", "invalid-source-mappings", "missing-source-map", "package.json",
  "tsconfig.json", "bigint",
];
export const QUIET = Object.freeze(Object.fromEntries(WARNING_IDS.map((id) => [id, "silent"])));

// Passing QUIET costs ~0.1 ms a call (esbuild turns it into flags per request), ~8% of a
// build. A warning flood costs at most (input length x longest line) bytes, so ordinary
// files (a 20 KB file of 120-column lines is 2.4 MB) skip it and only inputs that could
// blow up pay for it.
const FLOOD_BUDGET = 4 * 1024 * 1024;

/** `logOverride` option for `code`: QUIET when its warnings could flood esbuild's memory. */
export function logOverrideFor(code) {
  let longest = 0;
  let lineStart = 0;
  for (let i = 0; i <= code.length; i++) {
    const c = i < code.length ? code.charCodeAt(i) : 10;
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) {
      if (i - lineStart > longest) longest = i - lineStart;
      lineStart = i + 1;
    }
  }
  // UTF-16 units; esbuild's lines are UTF-8 (up to 3 bytes a unit).
  return code.length * longest * 3 > FLOOD_BUDGET ? QUIET : undefined;
}

const SERVICE_DOWN = /service (?:was stopped|is no longer running)/i;

/**
 * The build errors of a rejected esbuild call, or a ServiceError when the call failed for any
 * other reason (a rejection without `errors`, or one whose errors say the service is gone).
 */
export function buildErrors(error) {
  const errors = error?.errors;
  if (!Array.isArray(errors)) {
    throw new ServiceError(`esbuild service failed: ${error?.message ?? error}`);
  }
  for (const e of errors) {
    if (!e?.location && SERVICE_DOWN.test(String(e?.text ?? ""))) {
      throw new ServiceError(`esbuild service failed: ${e.text}`);
    }
  }
  return errors;
}
