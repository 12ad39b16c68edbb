// Level "syntax": parse the file with esbuild's TSX transform. Fast (sub-millisecond) and
// the same parser the "build" level uses, so the two levels agree on what is a parse error.
import * as esbuild from "esbuild";
import { buildErrors, logOverrideFor } from "./esbuild-service.mjs";
import { esbuildErrorsToDiagnostics } from "./positions.mjs";

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
