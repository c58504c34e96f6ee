// The agent editor (Manage agents… beside the agent picker of the new-conversation dialog): the
// agents this browser's tenant can run (`GET /api/agents`), the configured ones read-only (View),
// its own made (New agent), edited (a save is the next version; every earlier one is listed and
// viewable), and deleted after a confirmation (docs/api.md "Agents"). One modal <dialog> whose
// content changes between the list, the form (agentform.js) and a read-only view; the form node
// is kept while a version is viewed, so nothing typed is lost. Everything from the server is
// inserted as text.

import { api, ApiError } from './api.js';
import { confirmAction } from './dialogs.js';
import { agentFields, agentSummary, clearErrors, showError } from './agentform.js';

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

const path = (name) => `/api/agents/${encodeURIComponent(name)}`;

/**
 * Shows `nodes` as the dialog's content and moves the focus to `focus` (a node, or a selector);
 * `note` ({text, error}) is what the last action did, said in the dialog's live region.
 */
function show(ctx, nodes, focus, note = null) {
  ctx.view.replaceChildren(...nodes);
  ctx.status.textContent = note?.text || '';
  ctx.status.className = `agents-status ${note?.error ? 'error' : 'muted'}`;
  const target = typeof focus === 'string' ? ctx.view.querySelector(focus) : focus;
  target?.focus();
}

async function reload(ctx) {
  ctx.agents = await api('GET', '/api/agents');
}

function heading(text) {
  // Focused when its view opens, so a screen reader says where the user now is.
  return el('h3', { className: 'agents-view-title', tabIndex: -1 }, text);
}

function agentRow(ctx, agent) {
  const configured = agent.source === 'config';
  const badge = el('span', { className: 'agent-badge muted' }, configured ? 'configured' : `v${agent.version}`);
  const text = el('div', { className: 'agent-row-text' },
    el('span', { className: 'agent-row-head' }, el('span', { className: 'agent-row-name' }, agent.name), ' ', badge));
  if (agent.description) text.append(el('span', { className: 'agent-row-desc muted' }, agent.description));
  const actions = el('div', { className: 'agent-row-actions' });
  const button = (label, className, action) => {
    const b = el('button', { type: 'button', className }, label);
    b.setAttribute('aria-label', `${label} ${agent.name}`);
    b.addEventListener('click', action);
    actions.append(b);
  };
  if (configured) {
    button('View', 'view-agent', () => summaryView(ctx, agent, `${agent.name} (configured)`, () => listView(ctx)));
  } else {
    button('Edit', 'edit-agent', () => formView(ctx, agent));
    button('Delete', 'danger delete-agent', () => remove(ctx, agent));
  }
  const row = el('li', { className: 'agent-row' }, text, actions);
  row.dataset.agent = agent.name;
  row.dataset.source = agent.source;
  return row;
}

/** The list: every agent, New agent, and a line saying what the last action did. */
function listView(ctx, note = null, focus = '#agents-new') {
  const add = el('button', { type: 'button', id: 'agents-new' }, 'New agent');
  add.addEventListener('click', () => formView(ctx, null));
  const close = el('button', { type: 'button', id: 'agents-close' }, 'Close');
  close.addEventListener('click', () => ctx.dialog.close());
  const list = el('ul', { className: 'agent-list' }, ...ctx.agents.map((a) => agentRow(ctx, a)));
  show(ctx, [
    el('p', { className: 'muted agents-intro' },
      'Agents from the server’s configuration are read-only. Yours can be edited — each save is a new version, the earlier ones kept — and deleted.'),
    el('div', { className: 'row' }, add),
    list,
    el('div', { className: 'buttons' }, close),
  ], focus, note);
}

/** A read-only view of `agent` under `title`; Back calls `back`. */
function summaryView(ctx, agent, title, back) {
  const done = el('button', { type: 'button', className: 'agents-back' }, 'Back');
  done.addEventListener('click', back);
  show(ctx, [heading(title), agentSummary(agent), el('div', { className: 'buttons' }, done)], '.agents-view-title');
}

/** Every version of `agent`, newest first, each viewable; the form stays as it was meanwhile. */
async function versionsList(ctx, agent, form) {
  const box = el('section', { className: 'agent-versions' }, el('h4', {}, 'Versions'));
  let versions;
  try {
    versions = await api('GET', `${path(agent.name)}/versions`);
  } catch (e) {
    box.append(el('p', { className: 'error' }, `Could not load the versions: ${e.message}`));
    return box;
  }
  const list = el('ol', { className: 'agent-version-list', reversed: true });
  for (const v of [...versions].reverse()) {
    const when = v.created_at ? new Date(v.created_at).toLocaleString() : '';
    const current = v.version === agent.version ? ' (current)' : '';
    const view = el('button', { type: 'button', className: 'view-version' }, 'View');
    view.setAttribute('aria-label', `View version ${v.version}`);
    view.addEventListener('click', () => summaryView(ctx, v, `${v.name}, version ${v.version}`, () => show(ctx, [form], view)));
    const item = el('li', { className: 'agent-version' }, el('span', {}, `v${v.version}${current}`, el('span', { className: 'muted' }, when ? ` · ${when}` : '')), view);
    item.dataset.version = String(v.version);
    list.append(item);
  }
  box.append(list);
  return box;
}

/** The form for a new agent (`agent` null) or the next version of `agent`. */
async function formView(ctx, agent) {
  const form = el('form', { className: 'agent-form', noValidate: true });
  const { nodes, body } = agentFields(agent, ctx);
  const save = el('button', { type: 'submit', id: 'agent-save' }, agent ? 'Save new version' : 'Create agent');
  const back = el('button', { type: 'button', className: 'agents-back' }, 'Back');
  back.addEventListener('click', () => listView(ctx, null, agent ? `.agent-row[data-agent="${CSS.escape(agent.name)}"] .edit-agent` : '#agents-new'));
  form.append(heading(agent ? `Edit ${agent.name}` : 'New agent'), el('p', { className: 'form-error error', role: 'alert', hidden: true }), ...nodes);
  if (agent) form.append(await versionsList(ctx, agent, form));
  form.append(el('div', { className: 'buttons' }, back, save));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    save.disabled = true;
    try {
      const saved = agent ? await api('PUT', path(agent.name), body(form)) : await api('POST', '/api/agents', body(form));
      ctx.changed = true;
      ctx.picked = saved.name;
      await reload(ctx);
      listView(ctx, { text: `Saved ${saved.name}, version ${saved.version}.` }, `.agent-row[data-agent="${CSS.escape(saved.name)}"] .edit-agent`);
    } catch (e) {
      showError(form, e instanceof ApiError ? e : { message: `Could not save: ${e.message}` });
    } finally {
      save.disabled = false;
    }
  });
  show(ctx, [form], agent ? '.agents-view-title' : '#agent-name');
}

async function remove(ctx, agent) {
  const sure = await confirmAction('Delete agent',
    `Delete the agent “${agent.name}”? New conversations can no longer use it; conversations made with it keep running on their version.`,
    'Delete');
  if (!sure) return;
  let note;
  try {
    await api('DELETE', path(agent.name));
    ctx.changed = true;
    if (ctx.picked === agent.name) ctx.picked = null;
    note = { text: `Deleted ${agent.name}.` };
  } catch (e) {
    note = { text: `Could not delete ${agent.name}: ${e.message}`, error: true };
  }
  try {
    await reload(ctx);
  } catch (e) {
    note = { text: `Could not reload the agents: ${e.message}`, error: true };
  }
  listView(ctx, note);
}

/**
 * Opens the agent editor; resolves when it is closed with `{changed, picked}`: whether any agent
 * was made, changed or deleted, and the name of the last one saved (for the picker to select).
 */
export function openAgentEditor() {
  const titleId = `dialog-${Math.random().toString(36).slice(2)}`;
  const dialog = el('dialog', { className: 'dialog agents-editor' });
  dialog.setAttribute('aria-labelledby', titleId);
  const view = el('div', { className: 'agents-view' }, el('p', { className: 'muted' }, 'Loading…'));
  // One live region for the dialog's life: a screen reader hears each change of it.
  const status = el('p', { className: 'agents-status muted', role: 'status' });
  dialog.append(el('h2', { id: titleId }, 'Agents'), status, view);
  // Escape closes this dialog only, not also what is under it (dialogs.js does the same).
  dialog.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') ev.stopPropagation();
  });
  const ctx = { dialog, view, status, agents: [], models: [], tools: [], changed: false, picked: null };
  document.body.append(dialog);
  const closed = new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve({ changed: ctx.changed, picked: ctx.picked });
    });
  });
  dialog.showModal();
  Promise.all([api('GET', '/api/agents'), api('GET', '/api/models'), api('GET', '/api/tools')])
    .then(([agents, models, tools]) => {
      Object.assign(ctx, { agents, models, tools });
      listView(ctx);
    })
    .catch((e) => {
      const close = el('button', { type: 'button', id: 'agents-close' }, 'Close');
      close.addEventListener('click', () => dialog.close());
      show(ctx, [el('p', { className: 'error', role: 'alert' }, `Could not load the agents: ${e.message}`), el('div', { className: 'buttons' }, close)], close);
    });
  return closed;
}
