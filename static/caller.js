// A run that ended `requires_action` (docs/api.md "Caller tools"): an API client declared tools
// it runs itself, and the model called them. The run waits for that client to send their outputs
// (`POST /api/runs/{id}/tool_outputs`); this page declares no such tools and cannot answer them,
// so it shows the pending calls and says who must. When the continuation run appears
// (`start.continues`), the card says the calls were answered.

// Paused runs whose continuation has started. A reopened conversation replays its runs side by
// side, so the continuation's `start` may come before its paused run's calls are shown.
const answered = new Set();

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function pretty(args) {
  if (typeof args !== 'string') return JSON.stringify(args ?? {}, null, 2);
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/** The card of `calls` ([{call_id, name, arguments}]) that run `runId` waits on. */
export function callerCallsCard(runId, calls) {
  const card = el('section', 'caller-calls');
  const heading = el('h3', null, 'Waiting for the caller’s tools');
  heading.id = `caller-${runId || Math.random().toString(36).slice(2)}`;
  card.setAttribute('aria-labelledby', heading.id);
  card.dataset.state = 'pending';
  const note = el('p', 'caller-note muted',
    `The API client that started this run declared ${calls.length === 1 ? 'this tool' : 'these tools'} and must answer ` +
    `${calls.length === 1 ? 'the call' : 'the calls'} (POST /api/runs/${runId || '…'}/tool_outputs); ` +
    'the run goes on when it does. This page cannot answer them.');
  const list = el('ul', 'caller-call-list');
  for (const call of calls) {
    const item = el('li', 'caller-call');
    item.dataset.callId = call.call_id || '';
    const head = el('div', 'caller-call-head');
    head.append(el('code', 'caller-call-name', call.name || 'tool'), el('span', 'muted caller-call-id', call.call_id || ''));
    const args = el('pre', 'caller-call-args', pretty(call.arguments));
    args.setAttribute('aria-label', `Arguments of ${call.name || 'the call'}`);
    item.append(head, args);
    list.append(item);
  }
  card.append(heading, note, list);
  if (answered.has(runId)) showAnswered(card);
  return card;
}

function showAnswered(card) {
  card.dataset.state = 'answered';
  card.querySelector('h3').textContent = 'Caller’s tools answered';
  card.querySelector('.caller-note').textContent = 'The API client sent the outputs; the run went on below.';
}

/** Marks the card of paused run `runId` as answered by its continuation (now, or once shown). */
export function markAnswered(runId) {
  if (!runId) return;
  answered.add(runId);
  const card = document.querySelector(`.run[data-run-id="${CSS.escape(runId)}"] .caller-calls`);
  if (card) showAnswered(card);
}
