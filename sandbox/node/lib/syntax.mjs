// Level "syntax": parse the file with esbuild's TSX transform. Fast (sub-millisecond) and
// the same parser the "build" level uses, so the two levels agree on what is a parse error.
import * as esbuild from "esbuild";
import { esbuildErrorsToDiagnostics } from "./positions.mjs";

/** Return parse-error diagnostics for `code` (empty when it parses). */
export async function checkSyntax(code) {
  try {
    await esbuild.transform(code, {
      loader: "tsx",
      jsx: "automatic",
      logLevel: "silent",
      sourcefile: "input.tsx",
    });
    return [];
  } catch (error) {
    if (!Array.isArray(error?.errors)) throw error;
    return esbuildErrorsToDiagnostics(error.errors, code);
  }
}
