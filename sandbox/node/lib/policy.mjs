// Import and isolation policy at the "typecheck" level, on the TypeScript AST.
//
// esbuild's import policy (level "build") only sees the imports that survive into its
// output: type-only and unused imports are dropped first, yet tsgo would still resolve them,
// read the files behind them and echo their types. tsgo also checks a micro-batch of
// rollouts as one program, so anything that names another file or changes what is global
// would let one rollout read or rig another's verdict. Every such construct is refused here,
// before tsgo runs, with a diagnostic located at the construct:
//
//   import / export ... from "m" (also `import type`, unused, `export type`), import x = require("m"),
//   import("m") calls, import("m") types (`typeof import("./f1")`), require("m"),
//   /// <reference path|types|lib|no-default-lib>, /// <amd-dependency|amd-module>,
//   @jsxImportSource m           -> allowed only for allowlisted modules (no paths, no JSON)
//   declare module "m" { }, declare global { }, export as namespace X
//                                -> always refused (they change other files' types)
//   @ts-nocheck, @ts-ignore, @ts-expect-error
//                                -> always refused (they switch the checker off, for the file or
//                                   the line below): matched case-insensitively anywhere in the raw
//                                   text, a superset of every comment form TypeScript honours
//                                   (line or block comment, after other comments, words after it)
//
// With lint on, at every level, ESLint's inline directives (eslint-disable*, eslint-enable,
// /* eslint rule: off */, eslint-env) are refused the same way (lintDirectiveViolations): they
// would switch the lint findings off.
import ts from "typescript";
import { isAllowedImport, refusedImport } from "./build.mjs";

const JSX_RUNTIMES = ["jsx-runtime", "jsx-dev-runtime"];
const MAX_REFUSALS = 50;

/** Iterative walk over every node (deep JSX must not overflow the stack). */
export function forEachNode(root, visit) {
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    visit(node);
    ts.forEachChild(node, (child) => { stack.push(child); });
  }
}

const spanOf = (node, sf) => [node.getStart(sf), node.getEnd()];

function moduleName(node) {
  return node && ts.isStringLiteralLike(node) ? node.text : null;
}

/**
 * Policy violations of a parsed file as [start, end, message] triples (UTF-16 offsets),
 * sorted by position; empty when the file may be type-checked with others.
 */
export function policyViolations(sf, allow) {
  const found = [];
  const refuse = (start, end, message) => {
    if (found.length < MAX_REFUSALS) found.push([start, end, message]);
  };
  const checkSpecifier = (literal, fallbackNode) => {
    const name = moduleName(literal);
    if (name === null) {
      const [s, e] = spanOf(literal ?? fallbackNode, sf);
      refuse(s, e, "Module specifiers must be string literals in this sandbox");
    } else if (!isAllowedImport(name, allow)) {
      const [s, e] = spanOf(literal, sf);
      refuse(s, e, refusedImport(name));
    }
  };

  forEachNode(sf, (node) => {
    switch (node.kind) {
      case ts.SyntaxKind.ImportDeclaration:
        checkSpecifier(node.moduleSpecifier, node);
        break;
      case ts.SyntaxKind.ExportDeclaration:
        if (node.moduleSpecifier) checkSpecifier(node.moduleSpecifier, node);
        break;
      case ts.SyntaxKind.ImportEqualsDeclaration:
        if (ts.isExternalModuleReference(node.moduleReference)) {
          checkSpecifier(node.moduleReference.expression, node.moduleReference);
        }
        break;
      case ts.SyntaxKind.ImportType: {
        const argument = node.argument;
        const literal = argument && ts.isLiteralTypeNode(argument) ? argument.literal : argument;
        checkSpecifier(literal, node);
        break;
      }
      case ts.SyntaxKind.CallExpression: {
        const callee = node.expression;
        const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
        const isRequire = ts.isIdentifier(callee) && callee.text === "require";
        // Only literal specifiers are ever resolved; a computed import() cannot name a file.
        if ((isImport || isRequire) && node.arguments.length > 0 && moduleName(node.arguments[0]) !== null) {
          checkSpecifier(node.arguments[0], node);
        }
        break;
      }
      case ts.SyntaxKind.ModuleDeclaration:
        if (ts.isStringLiteral(node.name)) {
          const quoted = JSON.stringify(node.name.text).slice(0, 100);
          refuse(node.getStart(sf), node.name.getEnd(),
            `Ambient module declarations (declare module ${quoted}) are not allowed in this sandbox`);
        } else if ((node.flags & ts.NodeFlags.GlobalAugmentation) || node.name.text === "global") {
          refuse(node.getStart(sf), node.name.getEnd(), "Global augmentation (declare global) is not allowed in this sandbox");
        }
        break;
      case ts.SyntaxKind.NamespaceExportDeclaration:
        refuse(...spanOf(node, sf), "UMD global declarations (export as namespace) are not allowed in this sandbox");
        break;
      default:
        break;
    }
  });
  checkPragmas(sf, allow, refuse);
  for (const refusal of checkerDirectiveViolations(sf.text)) refuse(...refusal);
  return found.sort((a, b) => a[0] - b[0]);
}

const TS_DIRECTIVE = /@ts-(nocheck|ignore|expect-error)/gi;
const LINT_DIRECTIVE = /(?:\/\/|\/\*)[\s*]*(eslint(?:-disable(?:-next-line|-line)?|-enable|-env)?)(?=[\s*:]|$)/gi;

/**
 * TypeScript's checker-off directives in `text`, as [start, end, message] refusals at each one.
 * A raw-text match: a string or JSX text that spells one is refused too (no component needs to).
 */
export function checkerDirectiveViolations(text) {
  const out = [];
  for (const match of text.matchAll(TS_DIRECTIVE)) {
    if (out.length >= MAX_REFUSALS) break;
    out.push([match.index, match.index + match[0].length,
      `The @ts-${match[1].toLowerCase()} directive is not allowed in this sandbox (it switches the type checker off)`]);
  }
  return out;
}

/** ESLint's inline directives in `text` (refused when lint is on), located at the comment opener through the keyword. */
export function lintDirectiveViolations(text) {
  const out = [];
  for (const match of text.matchAll(LINT_DIRECTIVE)) {
    if (out.length >= MAX_REFUSALS) break;
    out.push([match.index, match.index + match[0].length,
      `The ${match[1].toLowerCase()} comment is not allowed in this sandbox when lint is on (it switches lint rules off)`]);
  }
  return out;
}

const TRIPLE_SLASH = /^[ \t\f\v\ufeff]*\/\/\/[ \t]*<[ \t]*(?:reference|amd-dependency|amd-module)\b[^\n\r\u2028\u2029]*/gim;
const DIRECTIVE_NAMES = { path: "path", types: "types", lib: "lib", "no-default-lib": "no-default-lib" };

/** Triple-slash directives and JSX pragmas, located at the comment that holds them. */
function checkPragmas(sf, allow, refuse) {
  const text = sf.text;
  const pragmas = sf.pragmas ?? new Map();
  const directive = (entry, what) => {
    const range = entry?.range;
    if (!range) return;
    const comment = text.slice(range.pos, range.end);
    const end = range.pos + comment.trimEnd().length;
    refuse(range.pos, end, `Triple-slash ${what} directives are not allowed in this sandbox`);
  };
  for (const entry of [].concat(pragmas.get("reference") ?? [])) {
    const kind = Object.keys(entry?.arguments ?? {}).find((k) => k in DIRECTIVE_NAMES) ?? "reference";
    directive(entry, `reference ${kind}`);
  }
  for (const name of ["amd-dependency", "amd-module"]) {
    for (const entry of [].concat(pragmas.get(name) ?? [])) directive(entry, name);
  }
  // Belt and braces: any line that looks like such a directive, honoured by the parser or not
  // (a React component never needs one; a parser difference must not let one through).
  const covered = new Set();
  for (const name of ["reference", "amd-dependency", "amd-module"]) {
    for (const entry of [].concat(pragmas.get(name) ?? [])) if (entry?.range) covered.add(entry.range.pos);
  }
  for (const match of text.matchAll(TRIPLE_SLASH)) {
    const start = match.index + match[0].length - match[0].trimStart().length;
    if (!covered.has(start)) refuse(start, match.index + match[0].trimEnd().length, "Triple-slash directives are not allowed in this sandbox");
  }
  for (const entry of [].concat(pragmas.get("jsximportsource") ?? [])) {
    const source = String(entry?.arguments?.factory ?? "");
    if (JSX_RUNTIMES.every((runtime) => isAllowedImport(`${source}/${runtime}`, allow))) continue;
    const range = entry?.range ?? { pos: 0, end: 0 };
    const comment = text.slice(range.pos, range.end);
    const at = comment.indexOf("@jsxImportSource");
    const start = at >= 0 ? range.pos + at : range.pos;
    const match = /@jsxImportSource\s+[^\s*]+/.exec(comment);
    const end = match ? start + match[0].length : range.end;
    refuse(start, end, refusedImport(`${source}/jsx-runtime`));
  }
}
