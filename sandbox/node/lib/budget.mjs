// Where a type-checking budget overrun is blamed, and which files must not share a tsgo run.
//
// A type-instantiation bomb needs recursion through type aliases: a generic alias that reaches
// itself (directly or through other aliases of the file), instantiated with arguments that make
// every step a new type (`type Rep<N, S, A extends any[] = []> = A['length'] extends N ? A :
// Rep<N, S, [...A, S]>` used as `Rep<999, 0>`: 40 such pairs, 2.7 KB, cost tsgo over a minute
// and 6.7 GB). Such aliases are cheap to find syntactically, so:
//   * a file that has one is a *suspect*: it is type-checked in a tsgo run of its own, after the
//     other files of its batch, so it can never delay or time out an innocent neighbour;
//   * when its run exceeds the time or memory budget, the blame lands on the aliases of the
//     cycle and on the references that instantiate them from outside it (their spans), instead
//     of on the whole file.
// A generic recursive alias is ordinary TypeScript (a tree, a JSON value): being a suspect costs
// a file only the batching (one tsgo start, ~0.1 s, of its own), never its verdict.

import ts from "typescript";

import { walk as nodes } from "./summary.mjs";

export const MAX_BLAME_SPANS = 100;
const MAX_ALIASES = 1000; // more aliases than this: every generic one is a suspect (no graph walk)

const referencedName = (node) =>
  ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName) ? node.typeName.text : null;

/** name -> [declarations] of the file's type aliases, and name -> names its declarations reference. */
function aliasGraph(sourceFile) {
  const declarations = new Map();
  for (const node of nodes(sourceFile)) {
    if (!ts.isTypeAliasDeclaration(node)) continue;
    const name = node.name.text;
    if (!declarations.has(name)) declarations.set(name, []);
    declarations.get(name).push(node);
  }
  const edges = new Map();
  for (const [name, decls] of declarations) {
    const targets = new Set();
    for (const decl of decls) {
      for (const node of nodes(decl)) {
        const target = referencedName(node);
        if (target !== null && declarations.has(target)) targets.add(target);
      }
    }
    edges.set(name, targets);
  }
  return { declarations, edges };
}

/** Names of aliases that reach themselves through `edges`. */
function onCycle(edges) {
  const cyclic = new Set();
  for (const start of edges.keys()) {
    const seen = new Set();
    const stack = [...edges.get(start)];
    while (stack.length > 0) {
      const name = stack.pop();
      if (name === start) {
        cyclic.add(start);
        break;
      }
      if (seen.has(name)) continue;
      seen.add(name);
      stack.push(...(edges.get(name) ?? []));
    }
  }
  return cyclic;
}

/**
 * UTF-16 [start, end) spans to blame when type checking `sourceFile` exceeds its budget: each
 * generic type alias on a reference cycle (its whole declaration), then each reference with type
 * arguments to one of them from outside those declarations (the instantiation). At most
 * MAX_BLAME_SPANS, in source order. Empty: the file has no such alias (not a suspect).
 */
export function budgetSuspects(sourceFile) {
  const { declarations, edges } = aliasGraph(sourceFile);
  const cyclic = declarations.size > MAX_ALIASES ? new Set(declarations.keys()) : onCycle(edges);
  const suspects = [...cyclic].flatMap((name) => declarations.get(name))
    .filter((decl) => decl.typeParameters && decl.typeParameters.length > 0);
  if (suspects.length === 0) return [];
  const names = new Set(suspects.map((decl) => decl.name.text));
  const inside = suspects.map((decl) => [decl.getStart(sourceFile), decl.end]);
  const spans = [...inside];
  for (const node of nodes(sourceFile)) {
    const name = referencedName(node);
    if (name === null || !names.has(name) || !node.typeArguments) continue;
    const start = node.getStart(sourceFile);
    if (inside.some(([s, e]) => start >= s && start < e)) continue;
    spans.push([start, node.end]);
  }
  return spans.sort((x, y) => x[0] - y[0]).slice(0, MAX_BLAME_SPANS);
}
