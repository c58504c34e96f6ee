// reagent's browser client: the conversation list, the chat view and the run
// lifecycle — start a run and read its SSE stream, send interrupts and Stop while it works,
// resume a dropped stream with Last-Event-ID, and re-attach to the active run after a reload
// (the open conversation is kept in the URL hash). Rendering of one run lives in run.js,
// HTTP/auth/SSE parsing in api.js.

import { api, apiFetch, readSse, ApiError } from './api.js';
import { RunView } from './run.js';
import { announceChange, initConversationList, loadList } from './convlist.js';
import { followBottom } from './scroll.js';
import { confirmAction, promptText } from './dialogs.js';
import { initSettings } from './settings.js';
import { initToolsPanel } from './tools.js';
import { initUsagePanel } from './usage.js';
import { initForks, showForkedFrom } from './fork.js';

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

/**
 * A touch screen is the main pointer (a phone, a tablet): its keyboard's Enter is the only way
 * to start a new line, so there Enter types one and only the Send button sends.
 */
function touchTyping() {
  return window.matchMedia('(pointer: coarse)').matches;
}

async function newConversation(title) {
  const body = title ? { title } : {};
  // The agent menu is only shown when there is a choice; otherwise the server's one agent applies.
  if (!$('agent-pick').hidden && $('agent').value) body.agent = $('agent').value;
  // The engine is stored on a new conversation; an open one shows its own, and a
  // different choice applies to the next run only.
  const engine = $('engine').value;
  if (engine) body.engine = engine;
  const conv = await api('POST', '/api/conversations', body);
  announceChange();
  history.replaceState(null, '', `#/c/${conv.id}`);
  await openConversation(conv.id);
  return conv;
}

// ---- chat view ---------------------------------------------------------------------------

function userBubble(text, kind = 'query') {
  const bubble = document.createElement('div');
  bubble.className = `message user ${kind}`;
  bubble.textContent = text;
  return bubble;
}

function showHeader() {
  const conv = state.conversation;
  $('conv-title').textContent = conv ? conv.title || 'Untitled' : 'No conversation';
  $('conv-agent').hidden = !conv?.agent;
  $('conv-agent').textContent = conv?.agent || '';
  $('conv-agent').title = conv?.agent ? `Agent: ${conv.agent}` : '';
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
  $('engine').value = conv.engine || '';
  loadList();
  const signal = state.abort.signal;
  // One turn per run: the query, then the run replayed from its event log (finished runs
  // replay and close; the active one replays from 0 and then follows live).
  const turns = [];
  for (const message of conv.messages || []) {
    if (message.kind !== 'query') continue;
    thread.append(userBubble(message.content));
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

/**
 * Feeds `view` from `response` (the POST that started the run) or from the run's event log,
 * resuming after the last applied id whenever the connection drops, until `done`.
 */
async function follow(view, response, signal) {
  let failures = 0;
  while (!view.done && !signal.aborted) {
    try {
      if (!response) {
        if (!view.runId) return;
        const headers = { Accept: 'text/event-stream' };
        if (view.lastId > 0) {
          // Resume: the server replays only what came after the last applied event.
          headers['Last-Event-ID'] = String(view.lastId);
          document.body.dataset.resumes = String(Number(document.body.dataset.resumes || 0) + 1);
        }
        response = await apiFetch(`/api/runs/${encodeURIComponent(view.runId)}/events`, { headers, signal });
      }
      const before = view.lastId;
      view.root.dataset.connection = 'open';
      await readSse(response.body, (ev) => {
        if (signal.aborted) return;
        view.apply(ev);
        if (view.done && state.active === view) {
          announce(view);
          setWorking(null);
          loadList();
          announceChange();
        }
        scrollDown();
      });
      if (view.lastId > before) failures = 0;
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) {
        view.lost('run not found');
        return;
      }
    } finally {
      response = null;
    }
    if (view.done || signal.aborted) break;
    view.root.dataset.connection = 'retrying';
    failures += 1;
    if (failures > 8) {
      view.lost('connection lost — reload the page to resume');
      if (state.active === view) setWorking(null);
      return;
    }
    // Back off before reconnecting (a retry delay, growing with consecutive failures).
    await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** failures, 4000)));
  }
}

/** A run's body: the query, and the engine picked when it differs from the conversation's. */
function runBody(query, conv) {
  const engine = $('engine').value;
  return engine && engine !== (conv.engine || '') ? { query, engine } : { query };
}

async function startRun(query) {
  if (!state.conversation) await newConversation();
  const conv = state.conversation;
  const signal = state.abort.signal;
  thread.querySelector('.empty')?.remove();
  thread.append(userBubble(query));
  const view = new RunView(null);
  thread.append(view.root);
  setWorking(view);
  scrollDown(true);
  if (!conv.title) {
    const title = query.replace(/\s+/g, ' ').trim().slice(0, 60);
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
      body: JSON.stringify(runBody(query, conv)),
      signal,
    });
  } catch (e) {
    if (signal.aborted) return;
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
  if (!text) return;
  input.value = '';
  setStatus('');
  try {
    if (state.active) await sendInterrupt(state.active, text);
    else await startRun(text);
  } catch (e) {
    setStatus(e.message, true);
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

$('new-conv').addEventListener('click', () => {
  newConversation()
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

// The narrow-screen drawer: ☰ opens it; a tap on the backdrop beside it, or Escape, closes it.
function showSidebar(open) {
  document.body.classList.toggle('show-sidebar', open);
  $('backdrop').hidden = !open;
}

$('toggle-sidebar').addEventListener('click', () => {
  showSidebar(!document.body.classList.contains('show-sidebar'));
});
$('backdrop').addEventListener('click', () => showSidebar(false));
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && document.body.classList.contains('show-sidebar')) showSidebar(false);
});

function route() {
  const match = location.hash.match(/^#\/c\/([0-9a-fA-F-]{36})$/);
  if (match) openConversation(match[1]);
}

/**
 * A hint when the server says its default model cannot be called without a key, and the demo
 * banner when that model is the scripted demo model (`reagent serve --demo`).
 */
async function checkModels() {
  try {
    const models = await api('GET', '/api/models');
    const fallback = models.find((m) => m.default) || models[0];
    $('key-hint').hidden = !fallback?.needs_key;
    $('demo-banner').hidden = !fallback?.demo;
    $('demo-badge').hidden = !fallback?.demo;
  } catch {
    // Auth not given yet, or the server is away: nothing to hint about.
  }
}

/** The agent menu for new conversations (docs/protocols.md), shown when more than one agent exists. */
async function loadAgents() {
  try {
    const agents = await api('GET', '/api/agents');
    const select = $('agent');
    select.replaceChildren();
    for (const agent of agents) {
      const option = document.createElement('option');
      option.value = agent.name;
      option.textContent = agent.name;
      option.title = agent.description || `${agent.name} (${agent.model})`;
      select.append(option);
    }
    $('agent-pick').hidden = agents.length < 2;
    // The chosen agent's description as text (a tooltip alone is invisible on touch screens).
    const describe = () => {
      const agent = agents.find((a) => a.name === select.value);
      $('agent-desc').textContent = agents.length < 2 ? '' : agent?.description || '';
    };
    select.addEventListener('change', describe);
    describe();
  } catch {
    // Auth not given yet, or the server is away: new conversations use the server's default.
  }
}

/**
 * The message box takes the focus once the page is ready, so typing starts at once; not on
 * touch screens (it would pop the keyboard over the page) and not away from the key prompt.
 */
function focusComposer() {
  if (touchTyping() || !$('auth').hidden) return;
  if (document.activeElement && document.activeElement !== document.body) return;
  input.focus();
}

initForks({
  thread,
  conversation: () => state.conversation,
  // The fork opens as a new history entry (Back returns to the original), then runs `text`.
  async resend(conv, text) {
    announceChange();
    history.pushState(null, '', `#/c/${conv.id}`);
    await openConversation(conv.id);
    startRun(text).catch((e) => setStatus(e.message, true));
  },
  error: (text) => setStatus(text, true),
});
initToolsPanel(() => state.conversation);
initSettings();
initConversationList(() => state.conversation?.id, (id) => {
  location.hash = `#/c/${id}`;
});
initUsagePanel();
window.addEventListener('hashchange', route);
showHeader();
setWorking(null);
checkModels();
Promise.all([loadList(), loadAgents()]).then(() => {
  route();
  focusComposer();
  document.body.dataset.ready = 'true';
});
