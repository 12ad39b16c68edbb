// Where in the model's source a render failure happened: the JSX element that carried an
// invalid value (esbuild's jsxDEV passes its source position), else the innermost frame of
// the stack that belongs to the model's bundle, mapped back through esbuild's source map.
import { SourceMap } from "node:module";

const FRAME = /component\.js:(\d+):(\d+)/g;

/**
 * {line, column} (1-based line, 0-based UTF-16 column) in the original source, or null.
 * `wrapperLines`: lines the render wrapper puts before the bundle's first line.
 */
export function locateError(stack, mapJson, wrapperLines, sourceLine, sourceColumn) {
  if (typeof sourceLine === "number" && sourceLine >= 1) {
    return { line: sourceLine, column: Math.max(0, (sourceColumn ?? 1) - 1) };
  }
  if (!stack || !mapJson) return null;
  let map;
  try {
    map = new SourceMap(JSON.parse(mapJson));
  } catch {
    return null;
  }
  for (const match of stack.matchAll(FRAME)) {
    const line = Number(match[1]) - 1 - wrapperLines;  // zero-based line of the bundle
    const column = Number(match[2]) - 1;
    if (line < 0) continue;
    const entry = map.findEntry(line, column);
    if (entry && typeof entry.originalLine === "number" && entry.originalSource !== undefined) {
      return { line: entry.originalLine + 1, column: entry.originalColumn };
    }
  }
  return null;
}
