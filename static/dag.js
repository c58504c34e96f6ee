// A DAG run inside a RunView: each round is a plan whose steps show their status,
// model and duration; a step's own events (tool cards, reasoning, approvals, compactions,
// tagged `dag_step`) go into that step's box; a re-plan opens a new round under its reason;
// the analysis closes the round. Same trust rule as run.js: model and tool text as textContent.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function formatMs(ms) {
  if (typeof ms !== 'number') return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export class DagView {
  /** `parent` is the run's steps container. */
  constructor(parent) {
    this.parent = parent;
    this.round = 0;
    this.rounds = new Map();
    this.pendingReason = null;
  }

  event(data) {
    switch (data.type) {
      case 'plan':
        this.plan(data);
        break;
      case 'dag_step':
        this.status(data);
        break;
      case 'analysis':
        this.analysis(data);
        break;
      case 'replan':
        this.pendingReason = data.reason || '';
        break;
      default:
        break;
    }
  }

  plan(data) {
    const round = data.round ?? this.round + 1;
    this.round = round;
    const box = el('section', 'dag-round');
    box.dataset.round = String(round);
    const title = round === 1 ? 'Plan' : `Round ${round} · re-plan`;
    box.append(el('h4', 'dag-round-title', title));
    if (this.pendingReason !== null && round > 1) {
      box.append(el('p', 'dag-replan muted', this.pendingReason));
    }
    this.pendingReason = null;
    const list = el('ol', 'dag-steps');
    const steps = new Map();
    for (const s of data.steps || []) {
      const item = el('li', 'dag-step');
      item.dataset.stepId = s.id;
      item.dataset.status = 'pending';
      const head = el('div', 'dag-step-head');
      head.append(
        el('span', 'dag-step-id', s.id),
        el('span', 'dag-step-task', s.task),
        el('span', 'dag-step-status badge', 'pending'),
      );
      const meta = el('div', 'dag-step-meta muted');
      const deps = (s.dependencies || []).length ? `after ${s.dependencies.join(', ')}` : '';
      meta.append(
        el('span', 'dag-step-model', s.model || ''),
        el('span', 'dag-step-deps', deps),
        el('span', 'dag-step-duration', ''),
      );
      const body = el('div', 'dag-step-body');
      const result = el('div', 'dag-step-result');
      item.append(head, meta, body, result);
      list.append(item);
      steps.set(s.id, item);
    }
    box.append(list);
    this.rounds.set(round, { box, steps });
    this.parent.append(box);
  }

  step(round, id) {
    const r = this.rounds.get(round ?? this.round);
    return r ? r.steps.get(id) : undefined;
  }

  /** Where a step's own events go: its body in the current round (the run's list otherwise). */
  container(id) {
    const item = this.step(this.round, id);
    return item ? item.querySelector('.dag-step-body') : this.parent;
  }

  status(data) {
    const item = this.step(data.round, data.step_id);
    if (!item) return;
    item.dataset.status = data.status;
    item.querySelector('.dag-step-status').textContent = data.status;
    if (data.model) item.querySelector('.dag-step-model').textContent = data.model;
    if (typeof data.duration_ms === 'number') {
      item.querySelector('.dag-step-duration').textContent = formatMs(data.duration_ms);
    }
    const result = item.querySelector('.dag-step-result');
    if (data.error) {
      result.replaceChildren(el('div', 'error', data.error));
    } else if (data.result) {
      result.replaceChildren(el('div', 'dag-result-text', data.result));
    }
  }

  analysis(data) {
    const r = this.rounds.get(data.round ?? this.round);
    if (!r) return;
    const confidence = typeof data.confidence === 'number' ? data.confidence.toFixed(2) : '?';
    const text = `${data.achieved ? 'goal achieved' : 'goal not achieved'} · confidence ${confidence}`;
    const box = el('div', 'dag-analysis muted');
    box.dataset.achieved = String(Boolean(data.achieved));
    box.append(el('span', 'dag-verdict', text));
    if (data.reasoning) box.append(el('p', 'dag-reasoning', data.reasoning));
    r.box.append(box);
  }

  /** Running steps of the current round, for the footer. */
  running() {
    const r = this.rounds.get(this.round);
    if (!r) return [];
    return [...r.steps.values()].filter((s) => s.dataset.status === 'running').map((s) => s.dataset.stepId);
  }
}
