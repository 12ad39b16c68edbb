// Position helpers. Every offset the worker reports is a UTF-16 code-unit offset into the
// request's `code` (JavaScript string indexing); the Python side converts to code points.
// esbuild reports columns in UTF-8 bytes, TypeScript in UTF-16 units, so both are normalised here.

/**
 * Offsets at which each line of `text` starts (line 1 is index 0), with the line terminators
 * esbuild and TypeScript both use when they report (line, column): LF, CR, CRLF (one break),
 * U+2028 and U+2029. Counting LF alone would shift every diagnostic after an LS or a lone CR.
 */
export function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    } else if (c === 10 || c === 0x2028 || c === 0x2029) {
      starts.push(i + 1);
    }
  }
  return starts;
}

/** Convert a UTF-8 byte column within `lineText` into a UTF-16 column. */
export function utf8ColumnToUtf16(lineText, byteColumn) {
  const bytes = Buffer.from(lineText, "utf8");
  return bytes.subarray(0, Math.max(0, byteColumn)).toString("utf8").length;
}

/** Clamp a (line, column) pair (1-based line, 0-based UTF-16 column) to an offset in `text`. */
export function offsetOf(starts, text, line, column) {
  const lineIndex = Math.min(Math.max(line - 1, 0), starts.length - 1);
  return Math.min(starts[lineIndex] + Math.max(column, 0), text.length);
}

/** Build a protocol diagnostic from a UTF-16 [start, end) span. */
export function makeDiagnostic(starts, start, end, message) {
  let lineIndex = 0;
  let lo = 0;
  let hi = starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= start) { lineIndex = mid; lo = mid + 1; } else { hi = mid - 1; }
  }
  return {
    start,
    end: Math.max(end, start),
    line: lineIndex + 1,
    col: start - starts[lineIndex],
    message,
    severity: "error",
  };
}

import ts from "typescript";

const MAX_RELATED = 4; // notes kept per diagnostic (the Python side keeps as many)

/** Convert esbuild `Message` objects (errors) into protocol diagnostics. */
export function esbuildErrorsToDiagnostics(errors, code) {
  const starts = lineStarts(code);
  return errors.map((error) => {
    const loc = error.location;
    if (!loc) return makeDiagnostic(starts, 0, 0, error.text);
    const col = utf8ColumnToUtf16(loc.lineText, loc.column);
    const endCol = utf8ColumnToUtf16(loc.lineText, loc.column + loc.length);
    const start = offsetOf(starts, code, loc.line, col);
    const end = offsetOf(starts, code, loc.line, endCol);
    const diagnostic = makeDiagnostic(starts, start, end, error.text);
    const related = (error.notes ?? []).filter((note) => note.location).slice(0, MAX_RELATED).map((note) => {
      const at = note.location;
      const noteStart = offsetOf(starts, code, at.line, utf8ColumnToUtf16(at.lineText, at.column));
      const noteEnd = offsetOf(starts, code, at.line, utf8ColumnToUtf16(at.lineText, at.column + at.length));
      return { start: noteStart, end: Math.max(noteEnd, noteStart) };
    });
    // where the parser's note points: the opening tag a mismatched closing tag fails to match
    if (related.length) diagnostic.related = related;
    return diagnostic;
  }).map((d) => relocateExtraClosingTag(d, code));
}

const MISMATCHED_CLOSE = /^Unexpected closing "[^"]*" tag does not match opening "[^"]*" tag$/;

/**
 * esbuild reports a mismatched closing tag with a note at the opening tag it fails to match.
 * Two mistakes read that way: an element left open (`<p>Body</main>`: the note's `<p>` is the
 * mistake) and an extra closing tag (`<main><p>x</p></div></main>`: the `</div>` is). The
 * TypeScript parser tells them apart (it blames an unclosed opener, else the closing tag): when
 * it does not blame the note's opener but does blame this closing tag, the note is moved onto
 * the whole closing tag, so `first_cause` blames the tag that has no opener.
 */
export function relocateExtraClosingTag(diagnostic, code) {
  if (!diagnostic.related?.length || !MISMATCHED_CLOSE.test(diagnostic.message)) return diagnostic;
  let errors;
  try {
    const sf = ts.createSourceFile("input.tsx", code, ts.ScriptTarget.Latest, false, ts.ScriptKind.TSX);
    errors = sf.parseDiagnostics ?? [];
  } catch {
    return diagnostic;
  }
  const opener = diagnostic.related[0].start;
  if (errors.some((e) => e.start === opener)) return diagnostic;       // TypeScript too: the opener is left open
  if (!errors.some((e) => e.start === diagnostic.start)) return diagnostic;
  const open = code.lastIndexOf("</", diagnostic.start);
  const close = code.indexOf(">", diagnostic.end);
  if (open < 0 || /\S/.test(code.slice(open + 2, diagnostic.start))) return diagnostic;
  const end = close < 0 ? diagnostic.end : close + 1;
  return { ...diagnostic, related: [{ start: open, end }] };
}
