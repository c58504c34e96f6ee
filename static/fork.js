// Regenerate and edit-and-resend, as forks (docs/api.md, `POST /api/conversations/{id}/fork`):
// the conversation is copied up to the turn before the one redone, and the query (the same one,
// or the edited text) is sent in the copy, which opens. The original stays as it was, its own
// conversation; the fork is titled after it and its header links back to it.
//
// The actions are derived from the thread as it is, so they follow whatever app.js renders
// (a reload, a live run, a late follow-up's run): a query bubble is followed by its run's
// section, and a run's id is on its section once its `start` arrived.

import { api, ApiError } from './api.js';
import { copyButton } from './enhance.js';
import { sendable } from './images.js';
import { FORK_SUFFIX } from './titles.js';

const MAX_TITLE = 200;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(className, text, label) {
  const b = el('button', className, text);
  b.type = 'button';
  if (label) b.setAttribute('aria-label', label);
  return b;
}

/** A user message's text (its first node; its thumbnails come after it). */
function textOf(bubble) {
  const first = bubble.firstChild;
  return first?.nodeType === Node.TEXT_NODE ? first.textContent : '';
}

/** The thread's turns in order: each query bubble with the run section after it. */
function turns(thread) {
  const out = [];
  let bubble = null;
  for (const node of thread.children) {
    if (node.matches('.message.user.query')) bubble = node;
    else if (node.matches('.run') && bubble) {
      out.push({ bubble, run: node });
      bubble = null;
    }
  }
  return out;
}

/** The id of the last run with one before turn `i` (its turn is the last the fork keeps). */
function runBefore(list, i) {
  for (let j = i - 1; j >= 0; j -= 1) {
    if (list[j].run.dataset.runId) return list[j].run.dataset.runId;
  }
  return null;
}

/** `<title> (edited)`, from the original's title without a fork suffix of its own. */
function forkTitle(title, how) {
  const suffix = ` (${how})`;
  const base = (title || 'Conversation').replace(FORK_SUFFIX, '');
  return base.slice(0, MAX_TITLE - suffix.length) + suffix;
}

/**
 * Wires the thread's fork actions. `conversation()` is the open one; `resend(conv, text, images)` opens
 * the new conversation and sends `text` in it; `error(text)` shows a failure.
 */
export function initForks({ thread, conversation, resend, error }) {
  let busy = false;

  /** Forks before turn `i` and sends `text` there; false (the error shown) when it could not. */
  async function redo(list, i, text, how) {
    const conv = conversation();
    if (!conv || busy) return false;
    busy = true;
    document.body.dataset.forking = 'true';
    try {
      // The turn's images go with it again (a stored one is fetched back as a data URL).
      const images = await sendable(list[i].bubble.images);
      const until = runBefore(list, i);
      const fork = await api('POST', `/api/conversations/${encodeURIComponent(conv.id)}/fork`,
        until ? { until_run_id: until } : {});
      const title = forkTitle(conv.title, how);
      try {
        await api('PATCH', `/api/conversations/${encodeURIComponent(fork.id)}`, { title });
        fork.title = title;
      } catch {
        // The server's own "(fork)" title stands.
      }
      await resend(fork, text, images);
      return true;
    } catch (e) {
      error(`Could not ${how === 'edited' ? 'resend' : 'regenerate'}: ${e instanceof ApiError ? e.message : e}`);
      return false;
    } finally {
      busy = false;
      delete document.body.dataset.forking;
    }
  }

  /** Replaces the bubble with an editor of its text until it is sent or cancelled. */
  function edit(bubble) {
    if (bubble.nextElementSibling?.matches('.edit-query')) return;
    const form = el('form', 'edit-query');
    const box = el('textarea');
    box.value = textOf(bubble);
    box.rows = Math.min(8, Math.max(2, box.value.split('\n').length));
    box.setAttribute('aria-label', 'Edit message');
    const send = el('button', '', 'Send edited');
    send.type = 'submit';
    const cancel = button('', 'Cancel');
    const row = el('div', 'edit-actions');
    row.append(send, cancel);
    form.append(box, row, el('p', 'muted edit-note',
      'Sends the edited message in a new conversation; this one stays as it is.'));
    const actions = bubble.nextElementSibling?.matches('.query-actions') ? bubble.nextElementSibling : null;
    const close = () => {
      form.remove();
      bubble.hidden = false;
      if (actions) actions.hidden = false;
    };
    cancel.addEventListener('click', () => {
      close();
      actions?.querySelector('.edit-query-button')?.focus();
    });
    form.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        ev.stopPropagation();
        cancel.click();
      } else if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = box.value.trim();
      if (!text) return;
      const list = turns(thread);
      const i = list.findIndex((t) => t.bubble === bubble);
      if (i < 0) return;
      send.disabled = true;
      // A failed fork keeps the editor and its text: the edit is never lost.
      redo(list, i, text, 'edited').then((sent) => {
        if (sent && form.isConnected) close();
        if (!sent) {
          send.disabled = false;
          box.focus();
        }
      });
    });
    bubble.hidden = true;
    if (actions) actions.hidden = true;
    bubble.after(form);
    box.focus();
  }

  /** Adds what is missing and removes what no longer applies; changes nothing when up to date. */
  function refresh() {
    const list = turns(thread);
    list.forEach(({ bubble }) => {
      const next = bubble.nextElementSibling;
      if (next?.matches('.query-actions') || next?.matches('.edit-query')) return;
      const row = el('div', 'query-actions');
      const b = button('edit-query-button', 'Edit', 'Edit this message and resend it');
      b.addEventListener('click', () => edit(bubble));
      row.append(copyButton('Copy this message', () => textOf(bubble)), b);
      bubble.after(row);
    });
    const last = list.at(-1)?.run;
    for (const old of thread.querySelectorAll('.run > .run-actions')) {
      if (old.parentElement !== last) old.remove();
    }
    if (!last) return;
    const finished = last.dataset.runId && last.dataset.state && last.dataset.state !== 'running';
    const current = last.querySelector(':scope > .run-actions');
    if (!finished) {
      current?.remove();
    } else if (!current) {
      const row = el('div', 'run-actions');
      const b = button('regenerate', 'Regenerate', 'Regenerate this answer in a new conversation');
      b.title = 'Ask the same question again, in a copy of this conversation';
      b.addEventListener('click', () => {
        const now = turns(thread);
        const i = now.findIndex((t) => t.run === last);
        if (i >= 0) redo(now, i, textOf(now[i].bubble), 'regenerated');
      });
      row.append(b);
      last.append(row);
    }
  }

  // One refresh per batch of changes, and only for changes that can matter: turns added or
  // removed, a run's id or state set (not the answer's rendering, which changes every frame).
  let queued = false;
  const observer = new MutationObserver((records) => {
    const relevant = records.some((r) => r.target === thread
      || (r.type === 'attributes' && r.target.classList?.contains('run')));
    if (!relevant || queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      refresh();
    });
  });
  observer.observe(thread, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-state', 'data-run-id'] });
}

/** Shows where the open conversation `conv` was forked from, as a link to it, in `link`. */
export async function showForkedFrom(link, conv) {
  const from = conv?.forked_from;
  const id = from?.conversation_id || '';
  // The header is shown again on a rename: the link stays as it is.
  if (link.dataset.for === (conv?.id || '') && link.dataset.from === id) return;
  link.hidden = !from;
  link.dataset.for = conv?.id || '';
  link.dataset.from = id;
  if (!from) return;
  link.href = `#/c/${id}`;
  link.textContent = 'forked from another conversation';
  try {
    const original = await api('GET', `/api/conversations/${encodeURIComponent(id)}`);
    // The header may show another conversation by now.
    if (link.dataset.for === conv.id) link.textContent = `forked from “${original.title || 'Untitled'}”`;
  } catch (e) {
    if (link.dataset.for === conv.id && e instanceof ApiError && e.status === 404) {
      link.removeAttribute('href');
      link.textContent = 'forked from a deleted conversation';
    }
  }
  link.title = link.textContent;
}
