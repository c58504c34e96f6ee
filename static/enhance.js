// What an answer gets after Markdown rendering and sanitising (markdown.js): code blocks
// highlighted (highlight.js) with a Copy button, and maths typeset (KaTeX) from the
// `$…$`, `$$…$$`, `\(…\)` and `\[…\]` spans that the marked extension below set aside as text.
// Both libraries are vendored (vendor/README.md) and loaded on first use, so a page without code
// or maths never fetches them. Neither executes anything from the answer: highlight.js escapes
// the code it colours, KaTeX runs with `trust: false` (no \href, \url, \includegraphics, …),
// and its output goes through DOMPurify like the answer itself.

const scripts = new Map();

/** Loads a vendored script (and stylesheet) once; resolves when it has run. */
function load(src, css) {
  if (!scripts.has(src)) {
    if (css) {
      const link = document.createElement('link');
      link.rel = 'stylesheet';
      link.href = css;
      document.head.append(link);
    }
    scripts.set(src, new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = src;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${src}`));
      document.head.append(script);
    }));
  }
  return scripts.get(src);
}

const escapeHtml = (text) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

const mathHtml = (tag, cls, tex) => `<${tag} class="${cls}" data-tex="${escapeHtml(tex)}">${escapeHtml(tex)}</${tag}>`;

/**
 * marked extensions: maths is kept out of Markdown (whose escapes and emphasis would eat `\\`,
 * `\{` or `_`) as an element holding the TeX as text. `$…$` follows Pandoc's rule so that
 * prices do not turn into maths: no space just inside the dollars, no digit just after.
 */
export const mathExtension = {
  extensions: [
    {
      name: 'mathBlock',
      level: 'block',
      start(src) {
        const i = src.search(/\$\$|\\\[/);
        return i < 0 ? undefined : i;
      },
      tokenizer(src) {
        const m = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n+|$)/.exec(src);
        if (m) return { type: 'mathBlock', raw: m[0], text: (m[1] ?? m[2]).trim() };
        return undefined;
      },
      renderer: (token) => `${mathHtml('div', 'math math-display', token.text)}\n`,
    },
    {
      name: 'mathInline',
      level: 'inline',
      start(src) {
        const i = src.search(/\$|\\\(/);
        return i < 0 ? undefined : i;
      },
      tokenizer(src) {
        const m = /^\$\$(?!\$)([\s\S]+?)\$\$/.exec(src)
          || /^\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)/.exec(src)
          || /^\\\(([\s\S]+?)\\\)/.exec(src);
        if (m) return { type: 'mathInline', raw: m[0], text: m[1], display: m[0].startsWith('$$') };
        return undefined;
      },
      renderer: (token) => mathHtml('span', token.display ? 'math math-display' : 'math', token.text),
    },
  ],
};

/**
 * Copies `text` to the clipboard. The Clipboard API needs a secure context (https or localhost);
 * elsewhere a hidden text box and the copy command do it.
 */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('copy refused');
}

/** A "Copy" button that copies `text()`, and says "Copied" for a moment. */
export function copyButton(label, text) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy';
  button.textContent = 'Copy';
  button.setAttribute('aria-label', label);
  button.addEventListener('click', async () => {
    try {
      await copyText(text());
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Copy failed';
    }
    setTimeout(() => {
      button.textContent = 'Copy';
    }, 1500);
  });
  return button;
}

function highlight(code) {
  const lang = /\blanguage-([\w#+.-]+)/.exec(code.className)?.[1];
  const hljs = window.hljs;
  if (!lang || !hljs?.getLanguage(lang) || code.dataset.highlighted) return;
  // highlight.js escapes the text it wraps in its spans.
  code.innerHTML = hljs.highlight(code.textContent, { language: lang, ignoreIllegals: true }).value;
  code.classList.add('hljs');
  code.dataset.highlighted = 'yes';
}

function typeset(node) {
  const katex = window.katex;
  if (!katex || node.dataset.rendered) return;
  const html = katex.renderToString(node.dataset.tex, {
    displayMode: node.classList.contains('math-display'),
    throwOnError: false,
    // What KaTeX cannot or may not render, in the theme's error colour (its own red fails contrast in dark).
    errorColor: 'var(--err)',
    trust: false,
    maxExpand: 1000,
  });
  node.innerHTML = window.DOMPurify.sanitize(html, { USE_PROFILES: { html: true, mathMl: true, svg: true } });
  node.dataset.rendered = 'true';
}

/** Wraps each code block in a box with a Copy button (once). */
function addCopy(pre) {
  if (pre.parentElement?.classList.contains('code-block')) return;
  const box = document.createElement('div');
  box.className = 'code-block';
  pre.replaceWith(box);
  const code = pre.querySelector('code') || pre;
  box.append(copyButton('Copy code', () => code.textContent), pre);
}

/**
 * Enhances rendered Markdown in `nodes` (elements, or one root): Copy buttons at once,
 * highlighting and maths when their library has loaded. Safe to call again on the same nodes.
 */
export function enhance(nodes) {
  const roots = (Array.isArray(nodes) ? nodes : [nodes]).filter((n) => n.nodeType === Node.ELEMENT_NODE);
  const find = (selector) => roots.flatMap((r) => [...(r.matches(selector) ? [r] : []), ...r.querySelectorAll(selector)]);
  const pres = find('pre');
  pres.forEach(addCopy);
  const codes = find('pre > code[class*="language-"]');
  const maths = find('.math[data-tex]');
  const pending = [];
  if (codes.length) pending.push(load('vendor/highlight.min.js').then(() => codes.forEach(highlight)));
  if (maths.length) pending.push(load('vendor/katex.min.js', 'vendor/katex.min.css').then(() => maths.forEach(typeset)));
  return Promise.all(pending).catch(() => {
    // A library that cannot load leaves the code plain and the TeX as text.
  });
}
