// Levels "syntax" and "build": esbuild's verdict and diagnostics, from its TSX transform
// (syntax) or its bundle with the import policy (build, lib/build.mjs), so the levels agree on
// what is a parse error. SYNTAX_ENGINES says how each level reaches that verdict: "oxc" (the
// default) skips esbuild for a file that oxc (lib/oxc-syntax.mjs) and TypeScript's parser both
// accept and, at build, whose every import the AST policy allows (lib/policy.mjs, a superset of
// esbuild's); "esbuild" runs esbuild on every file (the path before). esbuild's answer stays the
// level's wherever a fast check has any doubt, so oxc never writes a diagnostic:
// tests/test_syntax_engines.py compares the two engines on every corpus, at every level.
import * as esbuild from "esbuild";
import ts from "typescript";
import { checkBuild } from "./build.mjs";
import { buildErrors, logOverrideFor } from "./esbuild-service.mjs";
import { OxcSyntax } from "./oxc-syntax.mjs";
import { forEachNode, policyViolations } from "./policy.mjs";
import { esbuildErrorsToDiagnostics } from "./positions.mjs";
import { mentions } from "./scope.mjs";
import { parseTsx } from "./summary.mjs";

const oxc = new OxcSyntax();

/** TypeScript's parse of `code` when it has no parse error, else null (one nested too deeply
 * for the parser's stack included: esbuild then answers, as on the path before). */
function cleanParse(code) {
  try {
    const sourceFile = parseTsx(code);
    return (sourceFile.parseDiagnostics ?? []).length === 0 ? sourceFile : null;
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

/** The local names a file's imports bind (default, namespace, named, `import x = require`). */
function importNames(sourceFile) {
  const names = new Set();
  for (const statement of sourceFile.statements) {
    if (ts.isImportEqualsDeclaration(statement)) names.add(statement.name.text);
    const clause = ts.isImportDeclaration(statement) ? statement.importClause : undefined;
    if (!clause) continue;
    if (clause.name) names.add(clause.name.text);
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
    else if (bindings) for (const element of bindings.elements) names.add(element.name.text);
  }
  return names;
}

const UPDATES = new Set([ts.SyntaxKind.PlusPlusToken, ts.SyntaxKind.MinusMinusToken]);

/** The expression a node writes to, if it is an assignment, ++/--, or a for-in/of head. */
function written(node) {
  if (ts.isBinaryExpression(node) && ts.isAssignmentOperator(node.operatorToken.kind)) return node.left;
  if ((ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) && UPDATES.has(node.operator)) return node.operand;
  if ((ts.isForInStatement(node) || ts.isForOfStatement(node)) && !ts.isVariableDeclarationList(node.initializer)) return node.initializer;
  return undefined;
}

/**
 * Whether the file may write to an import binding, which esbuild's bundle refuses ("Cannot
 * assign to import") and neither parser reports: any identifier inside a written expression
 * (a destructuring pattern or `R.x` included) that spells an imported name, shadowed or not.
 * An over-approximation: such a file only loses the fast path.
 */
function mayWriteImport(sourceFile) {
  const imported = importNames(sourceFile);
  if (imported.size === 0) return false;
  let found = false;
  forEachNode(sourceFile, (node) => {
    const target = written(node);
    found ||= target !== undefined && mentions(target, imported);
  });
  return found;
}

/** Engines by name (the worker's BOTGRPO_SYNTAX_ENGINE), the default first. Each level's function
 * returns {diagnostics, sourceFile} (sourceFile: TypeScript's parse when the engine made it, else
 * null).
 *   syntax(code, {parse}): `parse`: the caller wants TypeScript's parse (for the summary); oxc's
 *     path then also asks it, as a second parser, before it skips esbuild. Without it, oxc's
 *     answer alone decides (on the 2,149 corpus files TypeScript's parser rejected none that oxc
 *     accepted).
 *   build(code, allow): the bundle's verdict; oxc's path skips the bundle (~2 ms of CPU a file,
 *     most of it esbuild's Go service) when oxc and TypeScript parse the file cleanly and the
 *     policy that level typecheck applies refuses nothing in it, and it writes to no import. */
export const SYNTAX_ENGINES = Object.freeze({
  oxc: {
    syntax: async (code, { parse = true } = {}) => {
      let sourceFile = null;
      if (await oxc.clean(code)) {
        if (!parse) return { diagnostics: [], sourceFile };
        sourceFile = parseTsx(code);
        if ((sourceFile.parseDiagnostics ?? []).length === 0) return { diagnostics: [], sourceFile };
      }
      return { diagnostics: await checkSyntax(code), sourceFile };
    },
    build: async (code, allow) => {
      const sourceFile = (await oxc.clean(code)) ? cleanParse(code) : null;
      const clean = sourceFile !== null && policyViolations(sourceFile, allow).length === 0 && !mayWriteImport(sourceFile);
      if (clean) return { diagnostics: [], sourceFile };
      return { diagnostics: await checkBuild(code, allow), sourceFile };
    },
  },
  esbuild: {
    syntax: async (code) => ({ diagnostics: await checkSyntax(code), sourceFile: null }),
    build: async (code, allow) => ({ diagnostics: await checkBuild(code, allow), sourceFile: null }),
  },
});

/** Start-up check of `engine`: it accepts `probe`, and oxc's thread answers (a binding that
 * cannot load would send every file to esbuild: correct, but not what was measured). */
export async function syntaxSelfTest(engine, probe) {
  if (!Object.hasOwn(SYNTAX_ENGINES, engine)) throw new Error(`unknown syntax engine ${JSON.stringify(engine)}`);
  for (const level of ["syntax", "build"]) {
    if ((await SYNTAX_ENGINES[engine][level](probe, [])).diagnostics.length > 0) throw new Error(`level ${level} rejected the probe file`);
  }
  if (engine === "oxc" && (await oxc.clean(probe)) !== true) throw new Error("oxc-parser did not parse the probe file");
}

/** Return parse-error diagnostics for `code` (empty when it parses). */
export async function checkSyntax(code) {
  try {
    await esbuild.transform(code, {
      loader: "tsx",
      jsx: "automatic",
      logLevel: "silent",
      logOverride: logOverrideFor(code),
      sourcefile: "input.tsx",
    });
    return [];
  } catch (error) {
    return esbuildErrorsToDiagnostics(buildErrors(error), code);
  }
}
