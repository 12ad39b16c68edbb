// The tsconfig compilerOptions of every tsgo run at level typecheck (lib/typecheck.mjs), in a
// module of their own because lib/libraries.mjs reads them too: which declaration files a
// library brings into such a program, to decide whether its declarations act outside its own
// modules (globalEffects). They are part of the prepared manifest's stamp.
export const COMPILER_OPTIONS = Object.freeze({
  strict: true,
  jsx: "react-jsx",
  noEmit: true,
  skipLibCheck: true,
  moduleDetection: "force",
  module: "esnext",
  moduleResolution: "bundler",
  target: "es2022",
  lib: ["es2022", "dom", "dom.iterable"],
  types: [],
  resolveJsonModule: false,
  allowArbitraryExtensions: false,
  noLib: false,
});
