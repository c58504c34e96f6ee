// The form of one API agent in the agent editor (agents.js): every field an `[[agents]]` entry
// takes (docs/api.md "Agents"), the models offered from `/api/models` and the tools from
// `/api/tools`, and the server's refusal (400 naming the nearest names, 409) shown beside the
// field it names, with everything typed left in place. The server is the one judge of what is
// valid (the form does not validate), so the UI can never refuse what the API accepts. Also here:
// the read-only summary of one agent (a configured one, or an earlier version).

const ENGINES = [['', 'the server’s default'], ['react', 'ReAct (tool loop)'], ['dag', 'plan (DAG)'], ['auto', 'auto (the model picks)']];
const SYNTHESIS = [['', 'the server’s default'], ['auto', 'auto'], ['always', 'always'], ['never', 'never']];
const CHECK = [['', 'the server’s default'], ['true', 'on'], ['false', 'off']];
const FIELDS = ['name', 'description', 'model', 'system_prompt', 'tools', 'engine', 'max_iterations',
  'temperature', 'top_p', 'seed', 'synthesis', 'completion_check'];

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

const idOf = (field) => `agent-${field.replace(/_/g, '-')}`;

/**
 * Which field a refusal is about: the server's messages start with it (`model: …`,
 * `tools[2]: …`, `system_prompt is longer…`) or say `invalid value … for <field>: …`; a name
 * taken (409) is about the name. Null: the form as a whole.
 */
export function fieldOf(error) {
  const message = error?.message || '';
  if (error?.status === 409) return 'name';
  const m = /^(?:invalid value .* for )?([a-z_]+)(?:\[\d+\])?(?=[: ])/.exec(message);
  return m && FIELDS.includes(m[1]) ? m[1] : null;
}

/** A labelled control with its hint and its (hidden) error line, described by both. */
function field(name, label, control, hint = '') {
  control.id = idOf(name);
  const error = el('span', { className: 'field-error error', id: `${control.id}-error`, hidden: true });
  // The label holds its words only: the hint and the error describe the control, not name it.
  const parts = [el('label', { htmlFor: control.id }, label), control];
  const described = [error.id];
  if (hint) {
    const h = el('span', { className: 'muted field-hint', id: `${control.id}-hint` }, hint);
    parts.push(h);
    described.unshift(h.id);
  }
  control.setAttribute('aria-describedby', described.join(' '));
  parts.push(error);
  return el('div', { className: 'field' }, ...parts);
}

function select(options, value) {
  const s = el('select');
  for (const [v, label] of options) s.append(el('option', { value: v }, label));
  s.value = value ?? '';
  return s;
}

function number(value, props) {
  return el('input', { type: 'number', value: value ?? '', ...props });
}

function modelSelect(models, agent) {
  const fallback = models.find((m) => m.default) || models[0];
  const options = [['', `the default model${fallback ? ` (${fallback.name})` : ''}`]];
  for (const m of models) options.push([m.name, m.name === m.model ? m.name : `${m.name} (${m.model})`]);
  // A model the server no longer lists stays selectable, so that saving changes only what was edited.
  if (agent?.model && !models.some((m) => m.name === agent.model)) options.push([agent.model, agent.model]);
  return select(options, agent?.model);
}

/** The tools: every tool, or the ones ticked plus patterns (`github__*`) typed beside them. */
function toolsField(tools, agent) {
  const chosen = agent?.tools;
  const known = new Set(tools.map((t) => t.name));
  const set = el('fieldset', { className: 'agent-tools', id: idOf('tools') });
  set.append(el('legend', {}, 'Tools'));
  const mode = el('div', { className: 'choices' });
  for (const [value, label] of [['all', 'Every tool'], ['some', 'Only these']]) {
    const radio = el('input', { type: 'radio', name: 'agent-tools-mode', value, checked: (value === 'all') === !Array.isArray(chosen) });
    mode.append(el('label', {}, radio, ` ${label}`));
  }
  const list = el('fieldset', { className: 'agent-tool-list' }, el('legend', { className: 'visually-hidden' }, 'Tools to offer'));
  for (const t of tools) {
    const box = el('input', { type: 'checkbox', name: 'agent-tool', value: t.name, checked: Boolean(chosen?.includes(t.name)) });
    const text = el('span', { className: 'agent-tool-text' }, el('span', { className: 'agent-tool-name' }, t.name));
    if (t.description) text.append(el('span', { className: 'muted agent-tool-desc' }, t.description));
    list.append(el('label', { className: 'agent-tool' }, box, text));
  }
  if (!tools.length) list.append(el('p', { className: 'muted' }, 'The server lists no tools.'));
  const patterns = el('input', { type: 'text', id: 'agent-tool-patterns', autocomplete: 'off' });
  patterns.value = (chosen || []).filter((t) => !known.has(t)).join(', ');
  const hint = el('span', { className: 'muted field-hint', id: 'agent-tool-patterns-hint' },
    'Comma-separated names or patterns, e.g. github__* for an MCP server’s tools.');
  patterns.setAttribute('aria-describedby', hint.id);
  const error = el('p', { className: 'field-error error', id: `${set.id}-error`, hidden: true });
  set.setAttribute('aria-describedby', error.id);
  // "Every tool" leaves nothing to pick: the choices are hidden, not greyed out.
  const pick = el('div', { className: 'agent-tool-pick' }, list,
    el('div', { className: 'field' }, el('label', { htmlFor: patterns.id }, 'Other tools'), patterns, hint));
  const sync = () => {
    pick.hidden = mode.querySelector('input[name="agent-tools-mode"]:checked')?.value !== 'some';
  };
  mode.addEventListener('change', sync);
  sync();
  set.append(mode, pick, error);
  return set;
}

/**
 * The form's controls for `agent` (null: a new one), the models and tools offered from the
 * server's lists. Returns the nodes and `body()`, the `POST`/`PUT /api/agents` body.
 */
export function agentFields(agent, { models, tools }) {
  const name = el('input', { type: 'text', value: agent?.name || '', autocomplete: 'off', maxLength: 200 });
  if (agent) name.readOnly = true;
  const prompt = el('textarea', { rows: 5, value: agent?.system_prompt || '' });
  const nodes = [
    field('name', 'Name', name, agent ? 'An agent keeps its name; save makes its next version.' : 'Letters, digits, _ - . or :, up to 64.'),
    field('description', 'Description (optional)', el('input', { type: 'text', value: agent?.description || '', autocomplete: 'off' }),
      'Shown beside the agent when a conversation is started.'),
    field('model', 'Model', modelSelect(models, agent)),
    field('system_prompt', 'System prompt (optional)', prompt),
    toolsField(tools, agent),
    field('engine', 'Engine', select(ENGINES, agent?.engine)),
    field('max_iterations', 'Most tool iterations (optional)', number(agent?.max_iterations, { min: 1, step: 1 })),
    el('details', { className: 'agent-more', open: ['temperature', 'top_p', 'seed', 'synthesis', 'completion_check'].some((k) => agent?.[k] != null) },
      el('summary', {}, 'Sampling and synthesis'),
      field('temperature', 'Temperature', number(agent?.temperature, { min: 0, max: 2, step: 'any' })),
      field('top_p', 'Top p', number(agent?.top_p, { min: 0, max: 1, step: 'any' })),
      field('seed', 'Seed', number(agent?.seed, { min: 0, step: 1 })),
      field('synthesis', 'Synthesis of the answer', select(SYNTHESIS, agent?.synthesis)),
      field('completion_check', 'Completion check', select(CHECK, agent?.completion_check == null ? '' : String(agent.completion_check)))),
  ];
  return { nodes, body: (root) => bodyOf(root) };
}

/** The request body from the form's controls under `root`; an unset control is left out. */
function bodyOf(root) {
  const value = (f) => root.querySelector(`#${idOf(f)}`).value;
  const body = { name: value('name').trim() };
  for (const f of ['description', 'model', 'engine', 'synthesis']) if (value(f).trim()) body[f] = value(f).trim();
  if (value('system_prompt').trim()) body.system_prompt = value('system_prompt');
  for (const f of ['max_iterations', 'temperature', 'top_p', 'seed']) if (value(f) !== '') body[f] = Number(value(f));
  if (value('completion_check')) body.completion_check = value('completion_check') === 'true';
  if (root.querySelector('input[name="agent-tools-mode"]:checked')?.value === 'some') {
    const ticked = [...root.querySelectorAll('input[name="agent-tool"]:checked')].map((b) => b.value);
    const typed = root.querySelector('#agent-tool-patterns').value.split(/[,\s]+/).filter(Boolean);
    body.tools = [...ticked, ...typed];
  }
  return body;
}

/** Clears every error the form shows. */
export function clearErrors(root) {
  for (const e of root.querySelectorAll('.field-error, .form-error')) {
    e.hidden = true;
    e.textContent = '';
  }
  for (const c of root.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
}

/**
 * Shows a refusal beside its field (and moves the focus there, where a screen reader reads it as
 * the field's description), or at the top of the form; returns the element that has the focus.
 */
export function showError(root, error) {
  clearErrors(root);
  const name = fieldOf(error);
  const control = name && root.querySelector(`#${idOf(name)}`);
  const line = control ? root.querySelector(`#${idOf(name)}-error`) : root.querySelector('.form-error');
  line.textContent = error.message;
  line.hidden = false;
  if (!control) return line;
  control.setAttribute('aria-invalid', 'true');
  const focus = name === 'tools' ? root.querySelector('.agent-tool-pick:not([hidden]) #agent-tool-patterns') || control.querySelector('input') : control;
  if (control.closest('details')) control.closest('details').open = true;
  focus.focus();
  return focus;
}

function row(list, term, value) {
  if (value === undefined || value === null || value === '') return;
  list.append(el('dt', {}, term), el('dd', {}, value));
}

/** A read-only account of `agent`: a configured one, or one version of an API agent. */
export function agentSummary(agent) {
  const list = el('dl', { className: 'agent-summary' });
  if (agent.source === 'config') row(list, 'Source', 'config.toml (read-only)');
  else row(list, 'Version', `${agent.version}${agent.created_at ? `, saved ${new Date(agent.created_at).toLocaleString()}` : ''}`);
  row(list, 'Description', agent.description);
  row(list, 'Model', agent.model);
  row(list, 'Tools', Array.isArray(agent.tools) ? agent.tools.join(', ') || 'none' : 'every tool');
  row(list, 'Engine', ENGINES.find(([v]) => v === (agent.engine || ''))?.[1] || agent.engine);
  row(list, 'Most tool iterations', agent.max_iterations == null ? 'the server’s default' : String(agent.max_iterations));
  for (const [key, term] of [['temperature', 'Temperature'], ['top_p', 'Top p'], ['seed', 'Seed'], ['synthesis', 'Synthesis']]) {
    row(list, term, agent[key] == null ? '' : String(agent[key]));
  }
  row(list, 'Completion check', agent.completion_check == null ? '' : agent.completion_check ? 'on' : 'off');
  const prompt = agent.source === 'config'
    ? el('span', { className: 'muted' }, agent.has_system_prompt ? 'set on the server (not shown)' : 'none')
    : agent.system_prompt ? el('pre', { className: 'agent-prompt' }, agent.system_prompt) : 'none';
  list.append(el('dt', {}, 'System prompt'), el('dd', {}, prompt));
  return list;
}
