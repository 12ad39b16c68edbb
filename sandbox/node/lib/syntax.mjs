// Level "syntax": the verdict and diagnostics of esbuild's TSX transform, the parser the "build"
// level uses, so the two levels agree on what is a parse error. SYNTAX_ENGINES says how it is
// reached: "oxc" (the default) skips the transform for a file that oxc and TypeScript's parser
// both accept (lib/oxc-syntax.mjs), "esbuild" runs it on every file (the path before).
import * as esbuild from "esbuild";
import { buildErrors, logOverrideFor } from "./esbuild-service.mjs";
import { OxcSyntax } from "./oxc-syntax.mjs";
import { esbuildErrorsToDiagnostics } from "./positions.mjs";
import { parseTsx } from "./summary.mjs";

const oxc = new OxcSyntax();

/** Syntax engines by name (the worker's BOTGRPO_SYNTAX_ENGINE), the default first: each returns
 * {diagnostics, sourceFile} (sourceFile: TypeScript's parse when the engine made it, else null).
 * `parse`: the caller wants TypeScript's parse (for the summary); oxc's path then also asks it,
 * as a second parser, before it skips esbuild. Without it, oxc's answer alone decides (on the
 * 2,149 corpus files TypeScript's parser rejected none that oxc accepted). */
export const SYNTAX_ENGINES = Object.freeze({
  oxc: async (code, { parse = true } = {}) => {
    let sourceFile = null;
    if (await oxc.clean(code)) {
      if (!parse) return { diagnostics: [], sourceFile };
      sourceFile = parseTsx(code);
      if ((sourceFile.parseDiagnostics ?? []).length === 0) return { diagnostics: [], sourceFile };
    }
    return { diagnostics: await checkSyntax(code), sourceFile };
  },
  esbuild: async (code) => ({ diagnostics: await checkSyntax(code), sourceFile: null }),
});

/** Start-up check of `engine`: it accepts `probe`, and oxc's thread answers (a binding that
 * cannot load would send every file to esbuild: correct, but not what was measured). */
export async function syntaxSelfTest(engine, probe) {
  if (!Object.hasOwn(SYNTAX_ENGINES, engine)) throw new Error(`unknown syntax engine ${JSON.stringify(engine)}`);
  if ((await SYNTAX_ENGINES[engine](probe)).diagnostics.length > 0) throw new Error("the syntax level rejected the probe file");
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
