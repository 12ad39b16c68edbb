// What a server render shows: visible text and the elements that carry it. Reads React's own
// markup (attributes double-quoted and escaped, void elements self-closed), so a linear scan
// is exact. Hidden subtrees (script, style, template, `hidden`, display:none) show nothing.

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
  "source", "track", "wbr"]);
const INVISIBLE = new Set(["script", "style", "template", "noscript", "title", "head"]);
const HIDDEN_STYLE = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:;|$)/i;
const TEXT_SAMPLE = 500;

function hiddenByAttributes(attributes) {
  if (/(?:^|\s)hidden(?:[\s=/]|$)/.test(attributes)) return true;
  const style = /\sstyle="([^"]*)"/.exec(attributes);
  return style !== null && HIDDEN_STYLE.test(style[1]);
}

function decodedLength(text) {
  return text.replace(/&(?:#\d+|#x[0-9a-f]+|[a-z]+);/gi, "_").length;
}

/** {textChars, text, elements, tags: {tag: count}} of the visible part of `html`. */
export function htmlStats(html) {
  const tags = {};
  const stack = [];  // [tag, hidden]
  let hiddenDepth = 0;
  let textChars = 0;
  let elements = 0;
  let text = "";
  let i = 0;
  const addText = (raw) => {
    if (hiddenDepth > 0) return;
    const trimmed = raw.replace(/\s+/g, " ").trim();
    if (!trimmed) return;
    textChars += decodedLength(trimmed);
    if (text.length < TEXT_SAMPLE) text = `${text}${text ? " " : ""}${trimmed}`.slice(0, TEXT_SAMPLE);
  };
  while (i < html.length) {
    const lt = html.indexOf("<", i);
    if (lt < 0) { addText(html.slice(i)); break; }
    if (lt > i) addText(html.slice(i, lt));
    if (html.startsWith("<!--", lt)) {
      const end = html.indexOf("-->", lt + 4);
      i = end < 0 ? html.length : end + 3;
      continue;
    }
    const gt = html.indexOf(">", lt);
    if (gt < 0) { addText(html.slice(lt)); break; }
    const inner = html.slice(lt + 1, gt);
    i = gt + 1;
    if (inner.startsWith("/")) {
      const name = inner.slice(1).trim().toLowerCase();
      for (let k = stack.length - 1; k >= 0; k--) {
        if (stack[k][0] === name) {
          for (let m = stack.length - 1; m >= k; m--) if (stack[m][1]) hiddenDepth--;
          stack.length = k;
          break;
        }
      }
      continue;
    }
    if (inner.startsWith("!") || inner.startsWith("?")) continue;
    const match = /^([A-Za-z][\w:.-]*)/.exec(inner);
    if (!match) { addText(`<${inner}>`); continue; }
    const name = match[1].toLowerCase();
    const attributes = inner.slice(match[1].length);
    const selfClosing = VOID.has(name) || attributes.trimEnd().endsWith("/");
    const hidden = INVISIBLE.has(name) || hiddenByAttributes(attributes);
    if (hiddenDepth === 0 && !hidden) {
      tags[name] = (tags[name] ?? 0) + 1;
      elements++;
    }
    if (!selfClosing) {
      stack.push([name, hidden]);
      if (hidden) hiddenDepth++;
    }
  }
  return { textChars, text, elements, tags };
}

/** True when nothing shows: no visible text and every visible element is a wrapper. */
export function isEmptyRender(stats, wrappers) {
  if (stats.textChars > 0) return false;
  return Object.keys(stats.tags).every((tag) => wrappers.has(tag));
}
