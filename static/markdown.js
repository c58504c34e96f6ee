// Markdown → sanitised HTML (marked + DOMPurify; LLM output is untrusted), and a renderer for an
// answer that streams in, whose cost per update is the new text and the open end, not the whole
// answer.
//
// Why it is sound: marked lexes a document into top-level blocks left to right, and a block is
// never reopened once a later line has started another block; its HTML depends only on its own
// text and the document's link definitions. So the renderer lexes only the text after the blocks
// it has already rendered ("committed"), keeps the last two blocks open — the last line may be
// incomplete, and e.g. "2" becoming "2. b" joins the list before it — and commits the ones before
// them, whose HTML is appended once and never touched again. Limits, each kept exact:
// - raw HTML (a block or inline) can span blocks once parsed (`<div>` … `</div>`, an unclosed
//   `<b>` carried into the next paragraph), so nothing from the first HTML token on is committed;
// - a link definition may come after a block that uses it (or still be half written): until the
//   end such a link may show unresolved; the final update checks the blocks and the definitions
//   every block was rendered with against one full lex of the answer (cheap next to rendering)
//   and renders it all again if they differ, so the finished answer is always exactly
//   `renderMarkdown(text)`;
// - a lexer that does not give back its input as the blocks' raw text is never committed from.
// Rendering runs at most once per animation frame (RunView batches the deltas).

import { mathExtension } from './enhance.js';

// Maths stays out of Markdown's hands (enhance.js typesets it after sanitising).
if (window.marked) window.marked.use(mathExtension);

if (window.DOMPurify) {
  // Links in answers open elsewhere and cannot reach back into the UI.
  window.DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  });
}

/** marked.parse's options, fresh each time (the lexer stores its tokenizer on them). */
const options = () => ({ ...window.marked.defaults, async: false, gfm: true });

function sanitize(html) {
  return window.DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}

/** Markdown → sanitised HTML. LLM output is untrusted. */
export function renderMarkdown(text) {
  return sanitize(window.marked.parse(text || '', options()));
}

/** Whether raw HTML occurs anywhere in a token (block, inline, list item or table cell). */
function hasHtml(value) {
  if (Array.isArray(value)) return value.some(hasHtml);
  if (!value || typeof value !== 'object') return false;
  if (value.type === 'html') return true;
  return ['tokens', 'items', 'header', 'rows'].some((key) => value[key] && hasHtml(value[key]));
}

/** Index of the first token to keep open: the second-to-last block that is not blank space. */
function openFrom(tokens) {
  let seen = 0;
  for (let i = tokens.length - 1; i >= 0; i -= 1) {
    if (tokens[i].type !== 'space' && ++seen === 2) return i;
  }
  return 0;
}

const shape = (token) => `${token.type}\u0000${token.raw}`;

export class StreamingMarkdown {
  /** `onRender(nodes)` is called with the nodes of each committed rendering (enhance.js). */
  constructor(box, onRender = null) {
    this.box = box;
    this.onRender = onRender;
    this.restart();
  }

  /** Forgets what was rendered (the answer restarted, or did not extend what was shown). */
  restart() {
    this.committed = ''; // the text of the committed blocks
    this.shapes = []; // their type and raw text, for the final check
    this.links = Object.create(null); // link definitions among them
    this.linkSets = new Set(); // the definitions each committed batch was rendered with
    this.count = 0; // how many of the box's nodes they are
    this.tailHtml = null;
    this.box.replaceChildren();
  }

  /** Shows `text`, the whole answer so far; `final` when it is complete. */
  update(text, final = false) {
    if (!text.startsWith(this.committed)) this.restart();
    const lexer = new window.marked.Lexer(options());
    Object.assign(lexer.tokens.links, this.links);
    const tail = text.slice(this.committed.length);
    const tokens = lexer.lex(tail);
    if (final && !this.matchesWhole(text, tokens, lexer.tokens.links)) {
      this.restart();
      this.box.innerHTML = renderMarkdown(text);
      this.onRender?.([...this.box.childNodes]);
      return;
    }
    const exact = tokens.reduce((n, t) => n + t.raw.length, 0) === tail.length;
    let keep = final ? tokens.length : exact ? openFrom(tokens) : 0;
    if (!final) {
      const html = tokens.findIndex(hasHtml);
      if (html >= 0) keep = Math.min(keep, html);
    }
    this.show(tokens.slice(0, keep), tokens.slice(keep), lexer.tokens.links);
  }

  /** Appends the newly committed blocks and replaces the open ones, when they changed. */
  show(commit, open, links) {
    const tailHtml = open.length ? sanitize(window.marked.parser(open, options())) : '';
    if (!commit.length && tailHtml === this.tailHtml) return;
    while (this.box.childNodes.length > this.count) this.box.lastChild.remove();
    if (commit.length) {
      const done = fragment(sanitize(window.marked.parser(commit, options())));
      const nodes = [...done.childNodes];
      this.box.append(done);
      this.count = this.box.childNodes.length;
      this.onRender?.(nodes);
      this.linkSets.add(JSON.stringify(links));
      for (const token of commit) {
        this.committed += token.raw;
        this.shapes.push(shape(token));
        if (token.type === 'def' && !this.links[token.tag]) this.links[token.tag] = { href: token.href, title: token.title };
      }
    }
    this.box.append(fragment(tailHtml));
    this.tailHtml = tailHtml;
  }

  /**
   * Whether committed blocks + `tokens` are the blocks one full lex finds, and every block was
   * rendered with the whole answer's link definitions.
   */
  matchesWhole(text, tokens, links) {
    const whole = new window.marked.Lexer(options());
    const all = whole.lex(text);
    if (all.length !== this.shapes.length + tokens.length) return false;
    const mine = this.shapes.concat(tokens.map(shape));
    if (!all.every((token, i) => shape(token) === mine[i])) return false;
    const final = JSON.stringify(whole.tokens.links);
    return final === JSON.stringify(links) && [...this.linkSets].every((used) => used === final);
  }
}

function fragment(html) {
  const template = document.createElement('template');
  template.innerHTML = html;
  return template.content;
}
