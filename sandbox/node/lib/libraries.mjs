// The UI libraries a component may import besides React: the curated ones pinned in this
// folder's lockfile (package.json), or any allowed module that is installed here. An allowed
// specifier is a *library* when its package sits in node_modules; then
//
//   build      its named and default imports are checked against the library's real exports
//              (a hallucinated icon is a build error on the imported name, as a bundler would
//              report it), while the module itself stays external (no per-file bundling);
//   typecheck  tsgo resolves it to its own declarations (lib/typecheck.mjs), so misusing a prop
//              is a located type error; a curated library whose declarations act outside its
//              own modules (globalEffects: motion-dom's `Window` fields) is in every program,
//              so what a file sees never depends on the neighbours; any other is loaded by the
//              files that import it, and invisible to the rest;
//   render     the library runs inside the component's realm, from a bundle made once (at
//              install time, below; else once per worker): esbuild, React kept external so the
//              realm's own React serves it. The same frozen built-ins, trapped host globals,
//              virtual timers and recorded effects as the component; its catch clauses are
//              instrumented like the component's; framer-motion renders at rest (ROOT_WRAPPERS).
//
// With a `pkg/*` allow entry every plain subpath of an installed package is a library, bundled
// on its first use by each worker: an operator's choice, bounded by the pool's timeout.
//
// An allowed module that is not installed keeps the old meaning: external at build, an
// ambient `any` module at typecheck, "cannot be loaded" at render. The reward server refuses
// such an allow list at start-up (botgrpo.sandbox.libraries), so it only reaches here from a
// caller of the pool that asks for it.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import ts from "typescript";
import { isAllowedImport } from "./build.mjs";
import { COMPILER_OPTIONS } from "./compiler-options.mjs";
import { instrumentCatches } from "./render/catches.mjs";
import { LIBRARY_CATCH } from "./render/realm.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
export const NODE_DIR = path.resolve(here, "..");
const NODE_MODULES = path.join(NODE_DIR, "node_modules");
const requireHere = createRequire(path.join(NODE_DIR, "package.json"));

/** Modules the realm itself supplies to a library (never bundled into one). */
export const REALM_MODULES = Object.freeze(["react", "react/jsx-runtime", "react/jsx-dev-runtime", "react-dom", "react-dom/client"]);

/** The package a bare specifier names: "@scope/pkg/sub" -> "@scope/pkg", "pkg/sub" -> "pkg". */
export function packageOf(specifier) {
  const parts = String(specifier).split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * [specifier, export, props] a render wraps the component in when the component loads that
 * library: the root that makes it render its settled state (lib/render/prelude.js, settle).
 */
export const ROOT_WRAPPERS = Object.freeze([
  ["framer-motion", "AnimatePresence", { initial: false }],
  ["motion/react", "AnimatePresence", { initial: false }],
]);

const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;
const installedCache = new Map();

/** True when `specifier` is a library here: its package is installed (React's own never count). */
export function isLibrary(specifier) {
  if (typeof specifier !== "string" || REALM_MODULES.includes(specifier)) return false;
  const pkg = packageOf(specifier);
  if (!PACKAGE_NAME.test(pkg) || pkg === "react" || pkg === "react-dom") return false;
  if (!installedCache.has(specifier)) {
    let found = fs.existsSync(path.join(NODE_MODULES, pkg, "package.json"));
    if (found) {
      try { requireHere.resolve(specifier); } catch { found = false; }
    }
    installedCache.set(specifier, found);
  }
  return installedCache.get(specifier);
}

const typedCache = new Map();

/**
 * True when TypeScript finds declarations for the library: its package names them (`types`,
 * `typings`, a `types` export condition) or ships an index.d.ts, or `@types/<name>` is
 * installed. A library without them is an ambient `any` module at typecheck, as before.
 */
export function hasTypes(specifier) {
  if (!typedCache.has(specifier)) {
    const pkg = packageOf(specifier);
    let typed = false;
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(NODE_MODULES, pkg, "package.json"), "utf8"));
      typed = Boolean(manifest.types || manifest.typings) || JSON.stringify(manifest.exports ?? null).includes('"types"') ||
        fs.existsSync(path.join(NODE_MODULES, pkg, "index.d.ts"));
    } catch { /* not installed */ }
    const atTypes = pkg.startsWith("@") ? pkg.slice(1).replace("/", "__") : pkg;
    typed ||= fs.existsSync(path.join(NODE_MODULES, "@types", atTypes, "package.json"));
    typedCache.set(specifier, typed);
  }
  return typedCache.get(specifier);
}

/** The curated libraries of package.json that are installed. */
export function curatedLibraries() {
  const manifest = JSON.parse(fs.readFileSync(path.join(NODE_DIR, "package.json"), "utf8"));
  const names = manifest.botgrpo?.libraries ?? [];
  return names.filter((name) => isLibrary(name));
}

// ---- prepared at install time: each curated library's bundle, export names and global effects
// (globalEffects, for the typecheck prelude), made once by `node lib/libraries.mjs prepare`
// (after `npm ci`: the Makefile, botgrpo.sandbox.toolchain, deploy/Dockerfile.server) into
// node_modules/.botgrpo-libraries, so no worker spends seconds on them (bundling and
// instrumenting lucide-react and recharts take ~1-2 s each). A manifest whose stamp (lockfile,
// this file, the catch instrumentation, the typecheck compiler options, esbuild's version)
// differs is ignored: the worker makes bundles and surfaces itself on first use, and takes every
// library for global.
const PREPARED_DIR = path.join(NODE_MODULES, ".botgrpo-libraries");
const STAMPED = ["package-lock.json", "lib/libraries.mjs", "lib/render/catches.mjs", "lib/compiler-options.mjs"];

function stamp() {
  const digest = crypto.createHash("sha256").update(esbuild.version);
  for (const file of STAMPED) digest.update(`\0${file}\0`).update(fs.readFileSync(path.join(NODE_DIR, file)));
  return digest.digest("hex").slice(0, 32);
}

let prepared = null;
/** The current manifest ({stamp, libraries, globalEffects}), else {}. */
function preparedManifest() {
  if (prepared === null) {
    prepared = {};
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(PREPARED_DIR, "manifest.json"), "utf8"));
      if (manifest.stamp === stamp()) prepared = manifest;
      else process.stderr.write("libraries: node_modules/.botgrpo-libraries is stale; bundling on first use (run `node lib/libraries.mjs prepare`)\n");
    } catch { /* not prepared: made on first use */ }
  }
  return prepared;
}

/** {specifier: {file, names, hasDefault}} from a current manifest, else {}. */
const preparedLibraries = () => preparedManifest().libraries ?? {};

/** Make every installed curated library's bundle and surface and write them with their manifest. */
export async function prepareLibraries() {
  const libraries = {};
  fs.rmSync(PREPARED_DIR, { recursive: true, force: true });
  fs.mkdirSync(PREPARED_DIR, { recursive: true });
  for (const [i, name] of curatedLibraries().entries()) {
    const js = await buildBundle(name);
    const surface = loadSurface(name);
    const file = `${i}.cjs`;
    fs.writeFileSync(path.join(PREPARED_DIR, file), js);
    libraries[name] = { file, names: surface ? [...surface.names] : null, hasDefault: surface?.hasDefault ?? true };
  }
  const effects = Object.fromEntries(["react", ...Object.keys(libraries)].map((name) => [name, globalEffects(name)]));
  fs.writeFileSync(path.join(PREPARED_DIR, "manifest.json"), JSON.stringify({ stamp: stamp(), libraries, globalEffects: effects }));
  return Object.keys(libraries);
}

/**
 * What the declarations of `specifier` change outside its own modules, in a program with
 * lib/compiler-options.mjs's options: {effects, neutral}, each a list of "<file>[:<line>]:
 * <construct>" (files relative to node_modules). Looked at: every declaration file that a root file
 * `import "react"; import "<specifier>";` brings into the program beyond what `import "react";`
 * alone brings (for React itself: beyond the lib files). In them, an effect is
 *
 *   script                 a file that is not a module: its declarations are globals (the
 *                          option moduleDetection "force" makes every *non-declaration* file a
 *                          module; a .d.ts stays a script unless it imports or exports);
 *   declare global         a global augmentation (motion-dom: `Window` fields);
 *   declare module "m"     an ambient module (in a script) or a module augmentation;
 *   export as namespace X  a UMD global: X is then known to every file ("refers to a UMD global"
 *                          instead of "Cannot find name").
 *
 * One exception, listed as `neutral`: a `declare global` that holds only empty interfaces
 * (no members, type parameters or heritage) each merging into a global interface the program
 * already declares elsewhere, which adds nothing (@types/d3-shape's `CanvasRenderingContext2D
 * {}`, under recharts). A library with no effect need not be in every program: a file that
 * imports it loads it, and a file that does not cannot see it.
 */
export function globalEffects(specifier) {
  const baseline = specifier === "react" ? "" : 'import "react";\n';
  const before = new Set(declarationProgram(baseline).getSourceFiles().map((file) => file.fileName));
  const program = declarationProgram(`${baseline}import ${JSON.stringify(specifier)};\n`);
  const checker = program.getTypeChecker();
  const added = program.getSourceFiles().filter((file) => file.isDeclarationFile && !before.has(file.fileName));
  const addedNames = new Set(added.map((file) => file.fileName));
  const merelyMerges = (statement) => ts.isInterfaceDeclaration(statement) && statement.members.length === 0 &&
    !statement.typeParameters && !statement.heritageClauses &&
    checker.getSymbolAtLocation(statement.name)?.declarations?.some((d) => !addedNames.has(d.getSourceFile().fileName));
  const effects = [];
  const neutral = [];
  for (const file of added) {
    const where = path.relative(NODE_MODULES, file.fileName);
    if (!ts.isExternalModule(file)) effects.push(`${where}: script`);
    for (const statement of file.statements) {
      const at = (construct) => `${where}:${file.getLineAndCharacterOfPosition(statement.getStart(file)).line + 1}: ${construct}`;
      if (ts.isModuleDeclaration(statement) && ts.isGlobalScopeAugmentation(statement)) {
        const body = statement.body?.statements ?? [];
        const names = body.map((s) => ts.isVariableStatement(s) ? s.declarationList.declarations.map((d) => d.name.getText()).join(", ")
          : s.name?.getText() ?? "?").join(", ");
        (body.every(merelyMerges) ? neutral : effects).push(at(`declare global { ${names} }`));
      } else if (ts.isModuleDeclaration(statement) && ts.isStringLiteral(statement.name)) {
        effects.push(at(`declare module ${JSON.stringify(statement.name.text)}`));
      } else if (ts.isNamespaceExportDeclaration(statement)) {
        effects.push(at(`export as namespace ${statement.name.text}`));
      }
    }
  }
  return { effects, neutral };
}

const parsedDeclarations = new Map();  // file name -> SourceFile, shared by the programs below

/** A TypeScript program of one root file (`text`, in this folder) with the typecheck options. */
function declarationProgram(text) {
  const root = path.join(NODE_DIR, "__botgrpo_effects__.ts");
  const options = ts.convertCompilerOptionsFromJson(COMPILER_OPTIONS, NODE_DIR).options;
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, ...rest) => {
    if (name === root) return ts.createSourceFile(name, text, ts.ScriptTarget.Latest);
    if (!parsedDeclarations.has(name)) parsedDeclarations.set(name, getSourceFile.call(host, name, ...rest));
    return parsedDeclarations.get(name);
  };
  host.fileExists = (name) => name === root || fileExists.call(host, name);
  return ts.createProgram([root], options, host);
}

/**
 * The modules a typecheck program always imports (lib/typecheck.mjs TYPECHECK_PRELUDES): React and
 * each installed curated library whose declarations have global effects, as a current
 * manifest says; without one, all of them (the safe answer).
 */
export function globalModules() {
  const known = preparedManifest().globalEffects ?? {};
  return ["react", ...curatedLibraries()].filter((name) => !known[name] || known[name].effects.length > 0);
}

const surfaces = new Map();

/** {names, hasDefault} from loading the library in this (trusted) realm, or null. */
function loadSurface(specifier) {
  try {
    const exported = requireHere(specifier);
    const names = new Set(Object.keys(exported));
    return { names, hasDefault: !exported.__esModule || names.has("default") };
  } catch (error) {
    process.stderr.write(`libraries: ${specifier} could not be loaded: ${error?.message ?? error}\n`);
    return null;
  }
}

/**
 * {names: Set, hasDefault} of a library: what a component can import from it (prepared, or
 * from loading it once here). Null when it cannot be loaded (then nothing is checked).
 */
export function librarySurface(specifier) {
  if (!surfaces.has(specifier)) {
    const ready = preparedLibraries()[specifier];
    surfaces.set(specifier, ready?.names ? { names: new Set(ready.names), hasDefault: ready.hasDefault } : loadSurface(specifier));
  }
  return surfaces.get(specifier);
}

const quote = (name) => JSON.stringify(String(name)).slice(0, 120);

/**
 * Imports of allowed libraries that name an export the library does not have, as
 * [start, end, message] at the imported name (UTF-16 offsets), like a bundler's error.
 */
export function libraryImportErrors(sourceFile, allow) {
  const found = [];
  for (const statement of sourceFile.statements) {
    const isImport = ts.isImportDeclaration(statement);
    if (!isImport && !ts.isExportDeclaration(statement)) continue;
    const literal = statement.moduleSpecifier;
    if (!literal || !ts.isStringLiteral(literal)) continue;
    const specifier = literal.text;
    if (!isAllowedImport(specifier, allow) || !isLibrary(specifier)) continue;
    const surface = librarySurface(specifier);
    if (surface === null) continue;
    const missing = (node, name) => {
      if (name === "default" ? surface.hasDefault : surface.names.has(name)) return;
      found.push([node.getStart(sourceFile), node.getEnd(),
        `No matching export in ${quote(specifier)} for import ${quote(name)}`]);
    };
    if (isImport) {
      const clause = statement.importClause;
      if (!clause || clause.isTypeOnly) continue;
      if (clause.name) missing(clause.name, "default");
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) {
          if (!element.isTypeOnly) missing(element.propertyName ?? element.name, (element.propertyName ?? element.name).text);
        }
      }
    } else if (!statement.isTypeOnly && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) {
        if (!element.isTypeOnly) missing(element.propertyName ?? element.name, (element.propertyName ?? element.name).text);
      }
    }
  }
  return found;
}

// The realm traps these globals (lib/render/prelude.js): reading one is a violation. Libraries
// feature-test them (`typeof process !== "undefined"`), so in a library's bundle each is the
// constant `undefined`: the library sees a browser without them, and never reaches the trap.
// `global` is the realm's own global object, as browser bundlers make it (lodash, inside
// recharts, would otherwise find it through `Function("return this")`, i.e. eval).
const HOST_GLOBALS_ABSENT = Object.freeze(Object.fromEntries([
  "process", "Buffer", "__dirname", "__filename", "fetch", "XMLHttpRequest", "WebSocket",
  "EventSource", "Request", "Response", "Headers", "importScripts", "Deno", "Bun", "SharedArrayBuffer",
  "Atomics", "WebAssembly", "FinalizationRegistry",
].map((name) => [name, "undefined"]).concat([["global", "globalThis"]])));

const bundles = new Map();

/**
 * The library as one CommonJS script body (a Promise of its text), made once per worker:
 * esbuild bundles it with everything it imports except the realm's React, in production mode,
 * and every catch clause first hands its error to LIBRARY_CATCH (as the component's do).
 */
export function libraryBundle(specifier) {
  if (!bundles.has(specifier)) {
    const ready = preparedLibraries()[specifier];
    bundles.set(specifier, ready ? fs.promises.readFile(path.join(PREPARED_DIR, ready.file), "utf8") : buildBundle(specifier));
  }
  return bundles.get(specifier);
}

// A barrel of at least this many named re-exports (lucide-react's ~2,200 icon modules) is
// served lazily: each export is a getter that initialises its own module on first use, so a
// component using three icons does not instantiate all of them in every realm (~200 ms a render).
const LAZY_BARREL_MIN = 100;

/** The library's ES module entry, if package.json names one (exports' import/module, or module). */
function esmEntry(specifier) {
  const pkg = packageOf(specifier);
  const dir = path.join(NODE_MODULES, pkg);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const sub = specifier === pkg ? "." : `./${specifier.slice(pkg.length + 1)}`;
  const target = manifest.exports?.[sub];
  const file = (target && typeof target === "object" ? target.module ?? target.import : null) ??
    (sub === "." ? manifest.module : null);
  return typeof file === "string" ? path.join(dir, file) : null;
}

/**
 * CommonJS source whose exports are getters over the barrel's re-exported modules, or null
 * when the entry is not such a barrel. Names the barrel defines otherwise (lucide-react's
 * `icons` namespace) are read from the whole entry, loaded on their first use.
 */
function lazyBarrel(specifier) {
  const entry = esmEntry(specifier);
  if (entry === null || !fs.existsSync(entry)) return null;
  const sf = ts.createSourceFile(entry, fs.readFileSync(entry, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const lines = [];
  let reexports = 0;
  for (const statement of sf.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier || !statement.exportClause ||
        !ts.isNamedExports(statement.exportClause)) continue;
    reexports++;
    const from = JSON.stringify(statement.moduleSpecifier.text);
    for (const element of statement.exportClause.elements) {
      const name = JSON.stringify(element.name.text);
      const imported = JSON.stringify((element.propertyName ?? element.name).text);
      lines.push(`get(${name}, () => require(${from})[${imported}]);`);
    }
  }
  if (reexports < LAZY_BARREL_MIN) return null;
  const names = new Set(sf.statements.flatMap((s) => ts.isExportDeclaration(s) && s.moduleSpecifier && s.exportClause &&
    ts.isNamedExports(s.exportClause) ? s.exportClause.elements.map((e) => e.name.text) : []));
  const rest = Object.keys(requireHere(specifier)).filter((name) => !names.has(name));
  for (const name of rest) lines.push(`get(${JSON.stringify(name)}, () => require(${JSON.stringify(entry)})[${JSON.stringify(name)}]);`);
  return { resolveDir: path.dirname(entry), contents: [
    "const get = (name, read) => Object.defineProperty(exports, name, { enumerable: true, get: read });",
    'Object.defineProperty(exports, "__esModule", { value: true });',
    ...lines,
  ].join("\n") };
}

async function buildBundle(specifier) {
  const lazy = lazyBarrel(specifier);
  const result = await esbuild.build({
    stdin: lazy ? { ...lazy, loader: "js" }
      : { contents: `module.exports = require(${JSON.stringify(specifier)});`, resolveDir: NODE_DIR, loader: "js" },
    bundle: true,
    write: false,
    format: "cjs",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["production", "import", "default"],
    target: "es2022",
    external: [...REALM_MODULES],
    define: { ...HOST_GLOBALS_ABSENT, "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  return instrumentCatches(result.outputFiles[0].text, LIBRARY_CATCH);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "prepare") {
  const started = performance.now();
  const names = await prepareLibraries();
  await esbuild.stop();
  process.stdout.write(`prepared ${names.join(", ") || "no libraries"} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
