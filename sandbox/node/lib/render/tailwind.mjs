// Tailwind CSS for a rendered component's screenshot: the class names in its markup compiled
// with Tailwind v4 (the `tailwindcss` package pinned in the lockfile, its own theme and
// preflight read from node_modules; nothing is fetched), so the page Chromium shoots is styled
// as the prompt's author would see it. A fresh compiler per render: one rollout's classes never
// reach another's stylesheet. Candidates are bounded (count and length) before they reach it.
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const TAILWIND_DIR = path.resolve(here, "..", "..", "node_modules", "tailwindcss");
const ENTRY = '@import "tailwindcss";';
const MAX_CANDIDATES = 2000;
const MAX_CANDIDATE_CHARS = 120;
const CLASS_ATTRIBUTE = /\sclass="([^"]*)"/g;

let tailwind = null;  // the module, loaded on first use (a worker that never shoots never pays)
const sheets = new Map();

async function loadStylesheet(id, base) {
  const file = id === "tailwindcss" ? "index.css" : id.startsWith("tailwindcss/") ? id.slice("tailwindcss/".length) : null;
  if (file === null || !/^[a-z-]+\.css$/.test(file)) throw new Error(`Tailwind stylesheet ${JSON.stringify(id).slice(0, 80)} is not available`);
  if (!sheets.has(file)) sheets.set(file, await fs.readFile(path.join(TAILWIND_DIR, file), "utf8"));
  return { path: path.join(TAILWIND_DIR, file), base: TAILWIND_DIR, content: sheets.get(file) };
}

/** The distinct class names of `html` (React's markup: attributes are double-quoted and escaped). */
export function classCandidates(html) {
  const out = new Set();
  for (const match of html.matchAll(CLASS_ATTRIBUTE)) {
    for (const raw of match[1].split(/\s+/)) {
      const name = raw.replaceAll("&amp;", "&").replaceAll("&quot;", '"').replaceAll("&#x27;", "'").replaceAll("&lt;", "<").replaceAll("&gt;", ">");
      if (name && name.length <= MAX_CANDIDATE_CHARS) out.add(name);
      if (out.size >= MAX_CANDIDATES) return [...out];
    }
  }
  return [...out];
}

/** {css, ms}: the stylesheet Tailwind makes for the classes `html` uses ("" when none match). */
export async function tailwindCss(html) {
  const started = performance.now();
  tailwind ??= await import("tailwindcss");
  const compiler = await tailwind.compile(ENTRY, { base: TAILWIND_DIR, loadStylesheet });
  const css = compiler.build(classCandidates(html));
  return { css: css.replaceAll("</", "<\\/"), ms: Math.round((performance.now() - started) * 100) / 100 };
}
