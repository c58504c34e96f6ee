// reagent's browser client: the conversation list, the chat view and the run
// lifecycle — start a run and read its SSE stream, send interrupts and Stop while it works,
// resume a dropped stream with Last-Event-ID, and re-attach to the active run after a reload
// (the open conversation is kept in the URL hash). Rendering of one run lives in run.js,
// following its stream in follow.js, HTTP/auth/SSE parsing in api.js, the composer's images in
// attach.js, the new-conversation dialog in newconv.js.

import { api, apiFetch, ApiError } from './api.js';
import { followRun } from './follow.js';
import { RunView } from './run.js';
import { announceChange, initConversationList, loadList } from './convlist.js';
import { followBottom } from './scroll.js';
import { confirmAction, promptText } from './dialogs.js';
import { initSettings } from './settings.js';
import { initToolsPanel } from './tools.js';
import { initUsagePanel } from './usage.js';
import { initForks, showForkedFrom } from './fork.js';
import { initAttachments } from './attach.js';
import { thumbnails } from './images.js';
import { askNewConversation, engineLabel, loadAgents, newConversationBody } from './newconv.js';
import { checkModels, focusComposer, initSidebarDrawer, showSidebar, touchTyping } from './page.js';
import { showTitle, titleFrom } from './titles.js';

const $ = (id) => document.getElementById(id);
const thread = $('thread');
const input = $('input');
const stopButton = $('stop');
const status = $('composer-status');
// The thread follows new content while the reader is at its bottom (scroll.js).
const scrollDown = followBottom(thread);

/** What is open: the conversation, its live run (if any), and an abort for its streams. */
const state = {
  conversation: null,
  active: null, // RunView of the run that is working now
  abort: new AbortController(),
};

function setStatus(text, isError = false) {
  status.textContent = text || '';
  status.classList.toggle('error', isError);
}

function setWorking(view) {
  state.active = view && !view.done ? view : null;
  // "Stopping…" belongs to the run that was working; it ends with it.
  if (!state.active && status.dataset.stopping) {
    delete status.dataset.stopping;
    setStatus('');
  }
  stopButton.hidden = !state.active;
  $('send').textContent = state.active ? 'Send follow-up' : 'Send';
  input.placeholder = state.active
    ? 'The agent is working: a message here is read at its next step…'
    : touchTyping()
      ? 'Ask something…'
      : 'Ask something… (Enter sends, Shift+Enter for a new line)';
}

/** Creates a conversation (`body`: the dialog's choices, else the last ones) and opens it. */
async function newConversation(body = newConversationBody()) {
  const conv = await api('POST', '/api/conversations', body);
  announceChange();
  history.replaceState(null, '', `#/c/${conv.id}`);
  await openConversation(conv.id);
  return conv;
}

// ---- chat view ---------------------------------------------------------------------------

/** A user's message: its text, then its images' thumbnails (kept on the node for a resend). */
function userBubble(text, kind = 'query', images = []) {
  const bubble = document.createElement('div');
  bubble.className = `message user ${kind}`;
  bubble.textContent = text;
  const row = thumbnails(images);
  if (row) bubble.append(row);
  bubble.images = images || [];
  return bubble;
}

function showHeader() {
  const conv = state.conversation;
  showTitle($('conv-title'), conv ? conv.title || 'Untitled' : 'No conversation');
  $('conv-title').title = conv?.title || '';
  $('conv-agent').hidden = !conv?.agent;
  $('conv-agent').textContent = conv?.agent || '';
  $('conv-agent').title = conv?.agent ? `Agent: ${conv.agent}` : '';
  $('conv-engine').hidden = !conv?.engine;
  $('conv-engine').textContent = conv?.engine ? engineLabel(conv.engine) : '';
  $('conv-engine').title = conv?.engine ? `Engine: ${engineLabel(conv.engine)}` : '';
  showForkedFrom($('conv-fork'), conv);
  $('rename-conv').disabled = !conv;
  $('delete-conv').disabled = !conv;
}

async function openConversation(id) {
  state.abort.abort();
  state.abort = new AbortController();
  setWorking(null);
  setStatus('');
  thread.replaceChildren();
  showSidebar(false);
  let conv;
  try {
    conv = await api('GET', `/api/conversations/${encodeURIComponent(id)}`);
  } catch (e) {
    state.conversation = null;
    showHeader();
    setStatus(e instanceof ApiError && e.status === 404 ? 'Conversation not found.' : e.message, true);
    return;
  }
  state.conversation = conv;
  showHeader();
  document.dispatchEvent(new CustomEvent('reagent:conversation'));
  loadList();
  const signal = state.abort.signal;
  // One turn per run: the query, then the run replayed from its event log (finished runs
  // replay and close; the active one replays from 0 and then follows live).
  // A continuation of a run that waited for an API client's tools has an answer but no query
  // of its own: it is shown after the run it continues.
  const turns = [];
  const seen = new Set();
  for (const message of conv.messages || []) {
    const continuation = message.kind === 'answer' && message.run_id && !seen.has(message.run_id);
    if (message.kind !== 'query' && !continuation) continue;
    seen.add(message.run_id);
    if (!continuation) thread.append(userBubble(message.content, 'query', message.images));
    const view = new RunView(message.run_id);
    thread.append(view.root);
    turns.push({ view, message });
  }
  if (!turns.length) thread.append(emptyNote());
  for (const { view, message } of turns) {
    const live = message.run_id === conv.active_run_id;
    if (live) setWorking(view);
    follow(view, null, signal).then(() => {
      if (!view.done && !signal.aborted && !live) fallbackAnswer(view, conv, message.run_id);
    });
  }
  scrollDown(true);
}

function emptyNote() {
  const p = document.createElement('p');
  p.className = 'empty muted';
  p.textContent = 'Ask a question to start. The agent\'s tool calls appear here as it works.';
  return p;
}

/** A finished run whose log could not be read still shows its stored answer. */
function fallbackAnswer(view, conv, runId) {
  const answer = (conv.messages || []).find((m) => m.run_id === runId && m.kind === 'answer');
  if (answer) view.answerEvent({ status: 'done', content: answer.content });
  view.lost('details unavailable');
}

/**
 * Screen readers hear a live run once, when it ends: its finished answer (or how it ended),
 * from a hidden live region; the thread itself is not live, so tokens are not read one by one.
 */
function announce(view) {
  const answer = view.answer.hidden ? '' : view.answer.textContent.trim();
  $('announcer').textContent = answer || view.footer.textContent;
}

/** Feeds `view` until `done` (follow.js); the live run's end re-enables the composer. */
function follow(view, response, signal) {
  return followRun(view, response, signal, () => {
    if (view.done && state.active === view) {
      announce(view);
      setWorking(null);
      loadList();
      announceChange();
    }
    scrollDown();
  }, () => {
    if (state.active === view) setWorking(null);
  });
}

/** Starts a run of `query` with `images` ([{url}]) in the open conversation (or a new one). */
async function startRun(query, images = []) {
  if (!state.conversation) await newConversation();
  const conv = state.conversation;
  const signal = state.abort.signal;
  thread.querySelector('.empty')?.remove();
  const bubble = userBubble(query, 'query', images);
  thread.append(bubble);
  const view = new RunView(null);
  thread.append(view.root);
  setWorking(view);
  scrollDown(true);
  if (!conv.title) {
    const title = titleFrom(query);
    api('PATCH', `/api/conversations/${conv.id}`, { title })
      .then(() => {
        conv.title = title;
        showHeader();
        loadList();
      })
      .catch(() => {});
  }
  let response;
  try {
    response = await apiFetch(`/api/conversations/${encodeURIComponent(conv.id)}/runs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(images.length ? { query, images } : { query }),
      signal,
    });
  } catch (e) {
    if (signal.aborted) return;
    if (e instanceof ApiError && e.code === 'model_without_vision') {
      // Nothing ran: the question goes back into the box, its images into the tray.
      bubble.remove();
      view.root.remove();
      setWorking(null);
      throw Object.assign(e, { restore: { query, images } });
    }
    view.lost(`could not start: ${e.message}`);
    setWorking(null);
    return;
  }
  loadList();
  announceChange();
  await follow(view, response, signal);
  await followNext(view, signal);
  if (!view.runId && !signal.aborted) {
    // The stream broke before `start`: learn the run id from the conversation and resume.
    try {
      const fresh = await api('GET', `/api/conversations/${conv.id}`);
      const run = fresh.active_run_id
        || [...(fresh.messages || [])].reverse().find((m) => m.kind === 'query')?.run_id;
      if (run) {
        view.runId = run;
        await follow(view, null, signal);
      }
    } catch {
      view.lost('connection lost — reload the page to resume');
    }
  }
}

/** Follows the runs the server started with late follow-ups (`done.next_run_id`), each as a
 * turn of its own whose question is those follow-ups. */
async function followNext(view, signal) {
  let current = view;
  while (current.done && current.nextRunId && !signal.aborted) {
    // The server joins, in order, what the loop never read and what came after it closed.
    const parts = new Map(current.unprocessed.map((i) => [String(i.id), i.content]));
    for (const q of current.root.querySelectorAll('.interrupt.queued')) {
      if (!parts.has(q.dataset.interruptId)) parts.set(q.dataset.interruptId, q.querySelector('.interrupt-text').textContent);
      q.remove();
    }
    const query = [...parts.values()].join('\n\n');
    thread.append(userBubble(query));
    const next = new RunView(current.nextRunId);
    thread.append(next.root);
    setWorking(next);
    scrollDown();
    await follow(next, null, signal);
    current = next;
  }
}

async function sendInterrupt(view, content) {
  const conv = state.conversation;
  try {
    const r = await api('POST', `/api/conversations/${encodeURIComponent(conv.id)}/interrupt`, { content });
    if (!view.root.querySelector(`.interrupt[data-interrupt-id="${CSS.escape(String(r.id))}"]`)) {
      view.queued(r.id, content);
    }
    scrollDown();
  } catch (e) {
    if (e instanceof ApiError && e.code === 'no_active_run') {
      // The run ended in the meantime: the message starts the next run instead.
      setWorking(null);
      await startRun(content);
    } else {
      setStatus(`Could not send: ${e.message}`, true);
    }
  }
}

async function submit() {
  const text = input.value.trim();
  const images = attachments.images();
  if (images.length && !text) {
    attachments.showError('Write a message to go with the images.');
    return;
  }
  if (images.length && state.active) {
    attachments.showError('Images go with a new question: wait for the answer, or Stop, then send.');
    return;
  }
  if (!text) return;
  input.value = '';
  setStatus('');
  attachments.showError('');
  const taken = attachments.take();
  try {
    if (state.active) await sendInterrupt(state.active, text);
    else await startRun(text, images);
  } catch (e) {
    if (e.restore) {
      input.value = e.restore.query;
      attachments.restore(taken);
      attachments.showError(`${e.message}. Remove the images, or start a conversation with an agent whose model takes images.`);
    } else {
      setStatus(e.message, true);
    }
  }
}

// ---- wiring ------------------------------------------------------------------------------

$('composer').addEventListener('submit', (ev) => {
  ev.preventDefault();
  submit();
});

input.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing && !touchTyping()) {
    ev.preventDefault();
    submit();
  }
});

stopButton.addEventListener('click', async () => {
  const view = state.active;
  if (!view?.runId) return;
  stopButton.disabled = true;
  try {
    await api('POST', `/api/runs/${encodeURIComponent(view.runId)}/cancel`);
    // `done` may already have arrived while the cancel was on its way.
    if (state.active === view) {
      setStatus('Stopping…');
      status.dataset.stopping = 'true';
    }
  } catch (e) {
    // 409: it finished on its own meanwhile.
    if (!(e instanceof ApiError && e.status === 409)) setStatus(`Could not stop: ${e.message}`, true);
  } finally {
    stopButton.disabled = false;
  }
});

$('new-conv').addEventListener('click', async () => {
  const body = await askNewConversation();
  if (!body) return;
  newConversation(body)
    .then(() => {
      // A new conversation is for typing into (on a touch screen the user taps the box).
      if (!touchTyping()) input.focus();
    })
    .catch((e) => setStatus(e.message, true));
});

$('rename-conv').addEventListener('click', async () => {
  const conv = state.conversation;
  if (!conv) return;
  const title = await promptText('Rename conversation', 'Title', conv.title || '');
  if (!title) return;
  try {
    await api('PATCH', `/api/conversations/${conv.id}`, { title });
    conv.title = title;
    showHeader();
    loadList();
    announceChange();
  } catch (e) {
    setStatus(`Could not rename: ${e.message}`, true);
  }
});

$('delete-conv').addEventListener('click', async () => {
  const conv = state.conversation;
  if (!conv) return;
  const sure = await confirmAction('Delete conversation', `Delete "${conv.title || 'Untitled'}" and its runs?`, 'Delete');
  if (!sure || state.conversation !== conv) return;
  try {
    state.abort.abort();
    await api('DELETE', `/api/conversations/${conv.id}`);
    state.conversation = null;
    history.replaceState(null, '', location.pathname);
    thread.replaceChildren(emptyNote());
    setWorking(null);
    // An error shown for the deleted conversation no longer means anything.
    setStatus('');
    showHeader();
    loadList();
    announceChange();
  } catch (e) {
    setStatus(`Could not delete: ${e.message}`, true);
  }
});

function route() {
  const match = location.hash.match(/^#\/c\/([0-9a-fA-F-]{36})$/);
  if (match) openConversation(match[1]);
}

initForks({
  thread,
  conversation: () => state.conversation,
  // The fork opens as a new history entry (Back returns to the original), then runs `text`.
  async resend(conv, text, images) {
    announceChange();
    history.pushState(null, '', `#/c/${conv.id}`);
    await openConversation(conv.id);
    startRun(text, images).catch((e) => {
      // Refused before anything ran: the text goes back into the box rather than being lost.
      if (e.restore) input.value = e.restore.query;
      setStatus(e.message, true);
    });
  },
  error: (text) => setStatus(text, true),
});
const attachments = initAttachments({
  button: $('attach'),
  picker: $('attach-file'),
  input,
  dropZone: document.body,
  tray: $('attachments'),
  error: $('attach-error'),
});
initToolsPanel(() => state.conversation);
initSettings();
initConversationList(() => state.conversation?.id, (id) => {
  location.hash = `#/c/${id}`;
});
initUsagePanel();
initSidebarDrawer();
window.addEventListener('hashchange', route);
showHeader();
setWorking(null);
checkModels();
Promise.all([loadList(), loadAgents()]).then(() => {
  route();
  focusComposer(input);
  document.body.dataset.ready = 'true';
});
