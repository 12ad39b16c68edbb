// A component that tries to modify a frozen built-in gets a TypeError; inside its own
// try/catch that error never reaches the sandbox. So every catch clause of the model's bundle
// first hands what it caught to the realm (the wrapper's parameter `name`, per render, which
// model code cannot name in its source), which records refused writes as violations
// (lib/render/prelude.js, noteCaught).
//
// The edit is made to esbuild's output, which puts every block's body on lines of its own:
// text is only inserted right after a catch block's `{` (and a binding before it for
// `catch {`), so no position the source map or a stack trace refers to moves.
import ts from "typescript";

const BINDING = "__botgrpo_caught_error";

/** `js` with a call to `name` at the start of every catch block (unchanged without one). */
export function instrumentCatches(js, name) {
  if (!js.includes("catch")) return js;
  const sf = ts.createSourceFile("component.js", js, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const edits = [];  // [offset, text]
  const stack = [sf];
  while (stack.length > 0) {
    const node = stack.pop();
    if (ts.isCatchClause(node)) {
      const open = node.block.getStart(sf) + 1;
      const binding = node.variableDeclaration?.name;
      if (binding && ts.isIdentifier(binding)) {
        edits.push([open, ` ${name}(${binding.text});`]);
      } else if (binding) {  // a destructuring pattern: bind the whole value, destructure in the block
        edits.push([binding.getStart(sf), BINDING, binding.getEnd()]);
        edits.push([open, ` ${name}(${BINDING}); let ${binding.getText(sf)} = ${BINDING};`]);
      } else {
        edits.push([node.block.getStart(sf), `(${BINDING}) `]);
        edits.push([open, ` ${name}(${BINDING});`]);
      }
    }
    ts.forEachChild(node, (child) => { stack.push(child); });
  }
  if (edits.length === 0) return js;
  edits.sort((a, b) => b[0] - a[0]);
  let out = js;
  for (const [at, text, end] of edits) out = out.slice(0, at) + text + out.slice(end ?? at);
  return out;
}
