// What a server render shows for the empty-render check and the render's details: visible
// text and the elements that carry it, counted over what is not surely hidden (the lenient
// verdict of lib/render/visible.mjs: a render is not failed as empty on a maybe).

const TEXT_SAMPLE = 500;

function decodedLength(text) {
  return text.replace(/&(?:#\d+|#x[0-9a-f]+|[a-z]+);/gi, "_").length;
}

/** Counts {textChars, text, elements, tags: {tag: count}} as the scan reports text and elements. */
export class Stats {
  constructor() {
    this.textChars = 0;
    this.text = "";
    this.elements = 0;
    this.tags = {};
  }

  /** A run of raw character data (entities not decoded). */
  addText(raw) {
    const trimmed = raw.replace(/\s+/g, " ").trim();
    if (!trimmed) return;
    this.textChars += decodedLength(trimmed);
    if (this.text.length < TEXT_SAMPLE) this.text = `${this.text}${this.text ? " " : ""}${trimmed}`.slice(0, TEXT_SAMPLE);
  }

  addElement(tag) {
    this.tags[tag] = (this.tags[tag] ?? 0) + 1;
    this.elements++;
  }

  result() {
    return { textChars: this.textChars, text: this.text, elements: this.elements, tags: this.tags };
  }
}

/** True when nothing shows: no visible text and every visible element is a wrapper. */
export function isEmptyRender(stats, wrappers) {
  if (stats.textChars > 0) return false;
  return Object.keys(stats.tags).every((tag) => wrappers.has(tag));
}
