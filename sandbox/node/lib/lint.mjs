// ESLint inside the compile worker: eslint-plugin-react's recommended rules and
// eslint-plugin-react-hooks (rules-of-hooks, exhaustive-deps) on the TSX source, parsed by
// @typescript-eslint/parser, all pinned in package-lock.json. Loaded on first use (the plugins
// take a second or two to load), with the config normalised once; never touches the disk
// (no config files, `react.version` is fixed instead of detected). Inline config comments
// (eslint-disable*, /* eslint rule: off */) are ignored: a file cannot switch a rule off (with
// lint on, the worker also refuses them: lib/policy.mjs). lib/oxlint.mjs is the other engine.
//
// Two rule sets: "hooks" (rules-of-hooks only: the render level's verdict on hooks) and
// "all" (the `lint` option): react's recommended rules except display-name and
// require-render-return (style and class-component rules that each run their own component
// detection, a third of the lint's time), plus rules-of-hooks and exhaustive-deps. Findings
// are diagnostics with the rule id; a rule that crashes on an input yields no findings, never a
// failed compile.
import { createRequire } from "node:module";
import path from "node:path";
import { lineStarts, makeDiagnostic, offsetOf } from "./positions.mjs";

const require = createRequire(import.meta.url);
export const MAX_FINDINGS = 50;
const FILENAME = "/input.tsx";

let linter = null;
const configs = {};

function parserOptions() {
  return {
    ecmaFeatures: { jsx: true }, sourceType: "module", lib: [], loggerFn: false,
    warnOnUnsupportedTypeScriptVersion: false,
  };
}

const SKIPPED = ["react/display-name", "react/require-render-return", "react/prop-types"];  // prop-types: TS types do it

function rulesFor(set, react) {
  const hooks = { "react-hooks/rules-of-hooks": "error" };
  if (set === "hooks") return hooks;
  const rules = { ...react.configs.flat.recommended.rules, ...react.configs.flat["jsx-runtime"].rules };
  for (const rule of SKIPPED) delete rules[rule];
  return { ...rules, ...hooks, "react-hooks/exhaustive-deps": "warn" };
}

/**
 * eslint-plugin-react asks semver whether the (fixed) React version satisfies a range on every
 * check, parsing both each time (5% of a lint): the answers are remembered instead.
 */
function memoiseSemver(pluginDir) {
  const semver = require(require.resolve("semver", { paths: [pluginDir] }));
  if (semver.satisfies.botgrpoMemoised) return;
  const satisfies = semver.satisfies;
  const answers = new Map();
  const memoised = (version, range, options) => {
    if (options !== undefined || typeof version !== "string" || typeof range !== "string") return satisfies(version, range, options);
    const key = `${version}\u0000${range}`;
    if (!answers.has(key)) answers.set(key, satisfies(version, range));
    return answers.get(key);
  };
  memoised.botgrpoMemoised = true;
  semver.satisfies = memoised;
}

function configFor(set) {
  if (configs[set]) return configs[set];
  const { Linter } = require("eslint");
  const eslintDir = path.dirname(require.resolve("eslint/package.json"));
  // The Linter re-normalises a plain config on every call; a FlatConfigArray is used as is.
  const { FlatConfigArray } = require(path.join(eslintDir, "lib", "config", "flat-config-array.js"));
  const parser = require("@typescript-eslint/parser");
  const plugins = { "react-hooks": require("eslint-plugin-react-hooks") };
  let react = null;
  if (set === "all") {
    plugins.react = react = require("eslint-plugin-react");
    memoiseSemver(path.dirname(require.resolve("eslint-plugin-react/package.json")));
  }
  const config = new FlatConfigArray([{
    files: ["**/*.tsx"],
    languageOptions: { parser, parserOptions: parserOptions() },
    plugins,
    settings: { react: { version: "19.0" } },
    linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: "off" },  // no comment switches a rule off
    rules: rulesFor(set, react),
  }], { basePath: "/" });
  config.normalizeSync();
  linter ??= new Linter({ configType: "flat", cwd: "/" });
  configs[set] = config;
  return config;
}

/** The ids of the rules that set "hooks" or "all" turns on, sorted. */
export function ruleIds(set = "all") {
  const rules = rulesFor(set, set === "all" ? require("eslint-plugin-react") : null);
  return Object.keys(rules).filter((id) => ![0, "off"].includes(rules[id])).sort();
}

/** Load a rule set now (the worker's first lint otherwise pays for it). */
export function preload(set) {
  configFor(set);
}

/** ESLint findings of `code` under rule set "hooks" or "all", at most MAX_FINDINGS. */
export function lintFile(code, set = "all") {
  const config = configFor(set);
  let messages;
  try {
    messages = linter.verify(code, config, { filename: FILENAME });
  } catch (error) {
    process.stderr.write(`lint failed: ${String(error?.message ?? error).slice(0, 200)}\n`);
    return [];
  }
  const starts = lineStarts(code);
  const findings = [];
  for (const m of messages) {
    if (m.fatal || !m.ruleId) continue;  // a parse error: the compile levels report those
    const start = offsetOf(starts, code, m.line, m.column - 1);
    const end = m.endLine ? offsetOf(starts, code, m.endLine, m.endColumn - 1) : start + 1;
    const diagnostic = makeDiagnostic(starts, start, Math.max(end, start + 1), m.message);
    diagnostic.severity = m.severity === 2 ? "error" : "warning";
    diagnostic.rule = m.ruleId;
    findings.push(diagnostic);
    if (findings.length >= MAX_FINDINGS) break;
  }
  return findings;
}
