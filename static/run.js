// One run in the thread: turns SSE events (docs/api.md) into DOM. A RunView is fed every event of
// its run exactly once — it drops ids it has already applied — so replaying after a reload or
// resuming after a dropped connection can never duplicate a card or answer text. Tool cards are
// keyed by iteration and call id: a provider may reuse an id in a later iteration, and that call
// is a new card, placed where it happened (below a follow-up drained before it).
//
// Trust: tool arguments, observations, reasoning and interrupt texts are inserted with
// textContent; only the answer is HTML, and only after marked + DOMPurify (markdown.js).
//
// The answer streams as many small deltas: they are only appended to a string, and the answer
// is rendered at most once per animation frame, incrementally (markdown.js), so a long answer
// costs the page about the same per frame at its end as at its start.

import { api } from './api.js';
import { callerCallsCard, markAnswered } from './caller.js';
import { DagView } from './dag.js';
import { artifactPreview } from './images.js';
import { copyButton, enhance } from './enhance.js';
import { StreamingMarkdown } from './markdown.js';
import { safeguardNote } from './notes.js';

export { renderMarkdown } from './markdown.js';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

function formatMs(ms) {
  if (typeof ms !== 'number') return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export class RunView {
  constructor(runId) {
    this.runId = runId;
    this.lastId = 0;
    this.done = false;
    this.answerText = '';
    this.cards = new Map();
    /** Safeguard notes shown, by step and text: the same note again counts up. */
    this.notes = new Map();
    this.root = el('section', 'run');
    this.root.dataset.state = 'running';
    if (runId) this.root.dataset.runId = runId;
    this.meta = el('div', 'run-meta muted');
    this.steps = el('div', 'run-steps');
    this.answer = el('div', 'answer markdown');
    this.answer.hidden = true;
    this.markdown = new StreamingMarkdown(this.answer, enhance);
    this.frame = 0;
    this.footer = el('footer', 'run-footer muted', 'working…');
    this.root.append(this.meta, this.steps, this.answer, this.footer);
    this.activity('starting');
  }

  /** While the run works, the footer says what it is doing (from the events streamed so far). */
  activity(text) {
    if (this.done || this.footer.dataset.status) return;
    this.footer.textContent = text;
    this.footer.dataset.activity = 'true';
  }

  /** The next LLM call of the loop: the one after the last iteration seen. */
  waitingForModel(iteration) {
    this.iteration = Math.max(this.iteration || 0, iteration || 0);
    this.activity(`iteration ${this.iteration + 1} · waiting for the model`);
  }

  /** What the tools of the current iteration are doing, or the next LLM call once they ended. */
  toolActivity(iteration) {
    const running = [...this.cards.values()].filter((c) => c.dataset.state === 'running');
    if (!running.length) {
      this.waitingForModel(iteration);
      return;
    }
    const names = [...new Set(running.map((c) => c.querySelector('.tool-name').textContent))];
    this.activity(`iteration ${iteration ?? this.iteration ?? 1} · running ${names.join(', ')}`);
  }

  /** Applies one SSE event; events at or below the last applied id are ignored. */
  apply(ev) {
    if (typeof ev.id === 'number' && !Number.isNaN(ev.id)) {
      if (ev.id <= this.lastId) return;
      this.lastId = ev.id;
    }
    const data = ev.data || {};
    switch (ev.event) {
      case 'start':
        this.runId = data.run_id;
        this.root.dataset.runId = data.run_id;
        if (data.engine) this.root.dataset.engine = data.engine;
        this.meta.textContent = [data.model, data.mode && `${data.mode} mode`, data.engine === 'dag' && 'plan mode',
          data.continues && 'continued with the caller’s tool outputs'].filter(Boolean).join(' · ');
        markAnswered(data.continues);
        this.waitingForModel(0);
        break;
      case 'step':
        this.step(data);
        break;
      case 'compact':
        this.target(data).append(
          el('div', 'separator compact',
            `context compacted: ${data.messages_before} → ${data.messages_after} messages` +
            (data.tokens_before ? `, ${data.tokens_before} → ${data.tokens_after} tokens` : '')),
        );
        break;
      case 'answer':
        this.answerEvent(data);
        break;
      case 'done':
        this.finish(data);
        break;
      default:
        break;
    }
  }

  /** Where an event's DOM goes: its DAG step's box when it carries `dag_step`. */
  target(data) {
    return data.dag_step && this.dag ? this.dag.container(data.dag_step) : this.steps;
  }

  step(data) {
    switch (data.type) {
      case 'plan':
      case 'dag_step':
      case 'analysis':
      case 'replan':
        if (!this.dag) this.dag = new DagView(this.steps);
        this.dag.event(data);
        if (data.type === 'plan') this.activity(`round ${data.round} · running the plan`);
        if (data.type === 'analysis') this.activity(`round ${data.round} · judging the results`);
        if (data.type === 'dag_step' && this.dag.running().length) {
          this.activity(`round ${data.round} · running ${this.dag.running().join(', ')}`);
        }
        break;
      case 'thinking':
        if (data.reasoning) this.target(data).append(el('p', 'thinking muted', data.reasoning));
        this.activity(`iteration ${data.iteration ?? ''} · calling tools`);
        break;
      case 'tool_start':
        this.card(data.iteration, data.call_id, data.tool, data.arguments, data);
        this.toolActivity(data.iteration);
        break;
      case 'tool_end':
        this.toolEnd(data);
        this.toolActivity(data.iteration);
        break;
      case 'selection': {
        // Said only when it narrowed the tools, briefly (the names on hover): "16 of 16" above
        // every run told nothing.
        const selected = data.selected || [];
        if (data.fallback || !(selected.length < data.total_tools)) break;
        const line = el('div', 'selection muted', `tools narrowed to ${selected.length} of ${data.total_tools}`);
        line.title = selected.join(', ');
        this.steps.append(line);
        break;
      }
      case 'interrupt':
        this.drained(data);
        break;
      case 'approval_required':
        this.approval(data);
        this.activity(`waiting for your approval of ${data.tool}`);
        break;
      case 'resumed':
        // The server restarted: the run goes on from its last checkpoint (docs/deployment.md).
        this.steps.append(el('div', 'separator resumed',
          `resumed at iteration ${data.iteration ?? ''}${data.instance ? ` on ${data.instance}` : ''}`));
        break;
      case 'safeguard':
        safeguardNote(this.notes, this.target(data), data);
        break;
      case 'client_tool_calls':
        this.callerCalls(data.calls);
        break;
      case 'limit':
        // A tool-call limit took effect: some calls were not run, or the run calls no more.
        this.steps.append(el('div', 'selection muted', data.limit === 'tool_calls_per_run'
          ? `limit of ${data.max} tool calls per run reached: answering with what was found`
          : `limit of ${data.max} tool calls per reply: ${data.skipped} more were not run`));
        break;
      default:
        break;
    }
  }

  /** The calls of the caller's tools that the run ends waiting on (shown once). */
  callerCalls(calls) {
    if (this.callerCard || !Array.isArray(calls) || !calls.length) return;
    this.callerCard = callerCallsCard(this.runId, calls);
    this.steps.append(this.callerCard);
  }

  card(iteration, callId, tool, args, data = {}) {
    const key = `${data.dag_step ?? ''}:${iteration ?? ''}:${callId ?? ''}`;
    let card = this.cards.get(key);
    if (card) return card;
    card = el('details', 'tool-card');
    card.dataset.callId = callId || '';
    if (iteration !== undefined && iteration !== null) card.dataset.iteration = String(iteration);
    card.dataset.state = 'running';
    const summary = el('summary');
    summary.append(el('span', 'tool-name', tool || 'tool'), el('span', 'tool-status', 'running…'));
    const body = el('div', 'tool-body');
    body.append(el('h4', null, 'Arguments'), el('pre', 'tool-args', pretty(args ?? {})));
    card.append(summary, body);
    if (data.dag_step) card.dataset.dagStep = data.dag_step;
    this.cards.set(key, card);
    this.target(data).append(card);
    return card;
  }

  toolEnd(data) {
    const card = this.card(data.iteration, data.call_id, data.tool, undefined, data);
    const state = data.blocked ? 'blocked' : data.error ? 'error' : 'ok';
    card.dataset.state = state;
    card.querySelector('.tool-status').textContent =
      `${state === 'ok' ? 'done' : state} · ${formatMs(data.duration_ms)}`;
    const body = card.querySelector('.tool-body');
    body.append(el('h4', null, 'Observation'), el('pre', 'tool-observation', data.observation ?? ''));
    for (const artifact of data.artifacts || []) body.append(artifactPreview(artifact));
    // An image is the result to look at: its card opens to show it.
    if (body.querySelector('.artifact-image')) card.open = true;
    this.settleApprovals((box) => box.dataset.tool === data.tool);
  }

  /** Approval requests already answered (seen again on a replay) lose their buttons. */
  settleApprovals(which) {
    for (const box of this.root.querySelectorAll('.approval:not([data-settled])')) {
      if (!which(box)) continue;
      box.dataset.settled = 'true';
      for (const button of box.querySelectorAll('button')) button.disabled = true;
    }
  }

  /** A queued interrupt the user just sent (shown until the `interrupt` step drains it). */
  queued(id, content) {
    const item = el('div', 'interrupt queued');
    item.dataset.interruptId = id;
    item.append(el('span', 'badge', 'queued'), el('span', 'interrupt-text', content));
    this.steps.append(item);
  }

  drained(data) {
    const ids = data.ids || [];
    const contents = data.contents || [];
    ids.forEach((id, i) => {
      let item = this.root.querySelector(`.interrupt[data-interrupt-id="${CSS.escape(String(id))}"]`);
      if (!item) {
        item = el('div', 'interrupt');
        item.dataset.interruptId = id;
        item.append(el('span', 'badge'), el('span', 'interrupt-text', contents[i] ?? ''));
      }
      item.classList.remove('queued');
      item.classList.add('drained');
      item.querySelector('.badge').textContent = 'follow-up read by the agent';
      this.steps.append(item);
    });
  }

  approval(data) {
    const box = el('div', 'approval');
    box.dataset.approvalId = data.approval_id;
    box.dataset.tool = data.tool || '';
    box.append(el('p', null, `Approval needed: ${data.tool}`), el('pre', 'tool-args', pretty(data.arguments ?? {})));
    const approve = el('button', 'approve', 'Approve');
    const reject = el('button', 'reject danger', 'Reject');
    const status = el('span', 'muted');
    const decide = async (ok) => {
      approve.disabled = true;
      reject.disabled = true;
      try {
        await api('POST', `/api/approvals/${encodeURIComponent(data.approval_id)}`, { approve: ok });
        status.textContent = ok ? ' approved' : ' rejected';
      } catch (e) {
        status.textContent = ` ${e.message}`;
      }
    };
    approve.type = 'button';
    reject.type = 'button';
    approve.addEventListener('click', () => decide(true));
    reject.addEventListener('click', () => decide(false));
    box.append(approve, reject, status);
    this.target(data).append(box);
  }

  answerEvent(data) {
    switch (data.status) {
      case 'start':
        this.answerText = '';
        this.answer.setAttribute('aria-busy', 'true');
        this.activity('writing the answer');
        break;
      case 'reset':
        // What was shown is not the answer (tool calls follow it, or another answer replaces it).
        this.answerText = '';
        this.answer.removeAttribute('aria-busy');
        break;
      case 'delta':
        this.answerText += data.content || '';
        break;
      case 'done':
        // done.content is the full answer: authoritative over the accumulated deltas.
        if (typeof data.content === 'string') this.answerText = data.content;
        if (data.fallback) this.answer.dataset.fallback = 'true';
        this.answer.dataset.complete = 'true';
        this.answer.removeAttribute('aria-busy');
        this.renderAnswer(true);
        return;
      default:
        return;
    }
    // No empty box before the first delta: the answer appears with its first text (shown now,
    // filled by the render that runs before the next paint).
    this.answer.hidden = !this.answerText;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.renderAnswer(false));
  }

  /** Renders the answer so far (once per frame while it streams; `final` once it is complete). */
  renderAnswer(final) {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.answer.hidden = !this.answerText;
    this.markdown.update(this.answerText, final);
    if (final && this.answerText && !this.copy) {
      // The whole answer as the model wrote it (Markdown), under the answer.
      this.copy = el('div', 'answer-actions');
      this.copy.append(copyButton('Copy answer as Markdown', () => this.answerText));
      this.answer.after(this.copy);
    }
  }

  finish(data) {
    this.done = true;
    this.settleApprovals(() => true);
    this.root.dataset.state = data.status || 'done';
    for (const card of this.cards.values()) {
      if (card.dataset.state === 'running') {
        card.dataset.state = 'unfinished';
        card.querySelector('.tool-status').textContent = 'did not finish';
      }
    }
    // Late follow-ups became the next run's query (docs/api.md): the page follows it.
    this.nextRunId = data.next_run_id || null;
    this.unprocessed = data.unprocessed_interrupts || [];
    for (const item of this.root.querySelectorAll('.interrupt.queued')) {
      item.querySelector('.badge').textContent = this.nextRunId ? 'answered next' : 'not read by the agent';
    }
    if (data.status === 'requires_action') this.callerCalls(data.required_action?.tool_calls);
    if (!this.answerText && data.answer) this.answerEvent({ status: 'done', content: data.answer });
    else if (this.answerText && !this.answer.dataset.complete) {
      // Cut short (Stop, a failure): what streamed is the answer; render it now, not next frame.
      this.answer.removeAttribute('aria-busy');
      this.renderAnswer(true);
    }
    const usage = data.usage || {};
    const parts = [
      data.status === 'requires_action' ? 'waiting for the caller’s tool outputs' : data.status,
      data.engine === 'dag' && `${data.rounds} round${data.rounds === 1 ? '' : 's'}`,
      `${data.iterations ?? 0} iteration${data.iterations === 1 ? '' : 's'}`,
      `${data.tool_calls ?? 0} tool call${data.tool_calls === 1 ? '' : 's'}`,
      `${usage.total_tokens ?? 0} tokens (${usage.prompt_tokens ?? 0} in, ${usage.completion_tokens ?? 0} out)`,
      formatMs(data.elapsed_ms),
    ];
    this.footer.textContent = parts.filter(Boolean).join(' · ');
    // The run's trace in the operator's tracing UI (REAGENT_TRACE_URL); only http(s) links.
    if (/^https?:\/\//.test(data.trace_url || '')) {
      const link = el('a', 'trace-link', 'trace');
      link.href = data.trace_url;
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
      this.footer.append(' · ', link);
    }
    delete this.footer.dataset.activity;
    this.footer.dataset.status = data.status || '';
    if (data.error) this.footer.append(this.errorDetails(data.error));
    const left = data.unprocessed_interrupts || [];
    if (left.length) this.footer.append(el('div', 'muted', `${left.length} follow-up(s) not processed`));
  }

  /**
   * `done.error`: when the answer already told the user what failed (a failed run's fallback
   * text says what to set), the technical details are folded away, so the failure is said once.
   */
  errorDetails(error) {
    if (!this.answerText) return el('div', 'error', error);
    const details = el('details', 'error-details');
    details.append(el('summary', 'muted', 'details'), el('div', 'error', error));
    return details;
  }

  /** Shown when the stream could not be resumed; the run may still be going on the server. */
  lost(message) {
    delete this.footer.dataset.activity;
    this.footer.textContent = message;
    this.footer.dataset.status = 'disconnected';
  }
}
