// Every diagnostic message leaves the worker through sanitize(): one line, no host paths,
// well-formed UTF-16, bounded. Rollout text can reach messages (a quoted specifier, a string
// literal type), so a raw newline there must not be able to fake a line of compiler output,
// and the sandbox's own layout (scratch dirs, node_modules) is nobody's business.

export const MAX_MESSAGE_CHARS = 1000;

const CONTROL = /[\u0000-\u001f\u007f\u0085\u2028\u2029]+/g;
// Per-batch file names of the type checker (random hex) and any node_modules path.
const SCRATCH_FILE = /\b[0-9a-f]{32}\.(?:d\.ts|tsx)\b/g;
const SCRATCH_PATH = /<sandbox>[\\/][^\s'"`()<>]*/g;
const NODE_MODULES_PATH = /(?:[A-Za-z]:)?(?:[^\s'"`()<>]*[\\/])?node_modules[\\/]/g;

let replacements = [];

/** Register host paths (and what to show instead) that must never appear in a message. */
export function redactPaths(entries) {
  const seen = new Set();
  replacements = entries
    .filter(([p]) => typeof p === "string" && p.length > 1 && !seen.has(p) && seen.add(p))
    .sort((a, b) => b[0].length - a[0].length);
}

/** One-line, path-free, well-formed, bounded version of `message`. */
export function sanitize(message) {
  let text = String(message ?? "");
  for (const [hostPath, placeholder] of replacements) text = text.split(hostPath).join(placeholder);
  text = text.replace(SCRATCH_PATH, "<sandbox>").replace(NODE_MODULES_PATH, "<node_modules>/");
  text = text.replace(SCRATCH_FILE, "input.tsx").replace(CONTROL, " ").trim();
  if (text.length > MAX_MESSAGE_CHARS) text = `${text.slice(0, MAX_MESSAGE_CHARS - 3)}...`;
  return typeof text.toWellFormed === "function" ? text.toWellFormed() : text;
}
