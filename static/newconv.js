// The new-conversation dialog (+ New): the agent, each with its description on screen (a
// tooltip is invisible on touch screens), extra instructions added to the agent's system prompt,
// and the engine. These are fixed when the conversation is created (docs/api.md
// `POST /api/conversations`), so they are asked here, once, and not beside the message box.
// Sending a first message with no conversation open creates one with the last agent chosen
// (kept in this browser); the engine and instructions are asked afresh each time. Manage agents…
// beside the picker opens the agent editor (agents.js); the picker is redrawn when it closes.

import { api } from './api.js';
import { modal } from './dialogs.js';
import { openAgentEditor } from './agents.js';

const ENGINES = [['', 'the agent’s default'], ['react', 'ReAct (tool loop)'], ['dag', 'plan (DAG)'], ['auto', 'auto (the model picks)']];

/** A label for `engine` (the header's badge). */
export function engineLabel(engine) {
  return ENGINES.find(([value]) => value === engine)?.[1] || engine || '';
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

const STORAGE = 'reagent.newConversation';
let agents = [];
/** The last agent chosen (kept in this browser): a conversation started by just typing uses it. */
const last = { agent: '' };
try {
  last.agent = String(JSON.parse(localStorage.getItem(STORAGE) || '{}').agent || '');
} catch {
  // Nothing kept, or unreadable: the defaults.
}

function remember() {
  try {
    localStorage.setItem(STORAGE, JSON.stringify(last));
  } catch {
    // No storage: the choice lasts for this page.
  }
}

/** Loads the agents (`GET /api/agents`); the dialog offers a choice when there are several. */
export async function loadAgents() {
  try {
    agents = await api('GET', '/api/agents');
  } catch {
    // Auth not given yet, or the server is away: new conversations use the server's default.
    agents = [];
  }
  if (!agents.some((a) => a.name === last.agent)) last.agent = agents.length > 1 ? agents[0].name : '';
}

function agentChoices() {
  const set = el('fieldset', { className: 'agent-choices' }, el('legend', {}, 'Agent'));
  for (const agent of agents) {
    const radio = el('input', { type: 'radio', name: 'new-agent', value: agent.name, checked: agent.name === last.agent });
    // The dialog opens on the agent chosen (Manage agents… comes before it in the tab order).
    radio.autofocus = radio.checked;
    const descId = `new-agent-desc-${agent.name.replace(/[^\w-]/g, '_')}`;
    radio.setAttribute('aria-describedby', descId);
    const text = el('span', { className: 'agent-choice-text' },
      el('span', { className: 'agent-choice-name' }, agent.name),
      el('span', { className: 'agent-choice-desc muted', id: descId },
        agent.description || `${agent.model}, ${agent.engine || 'react'} engine`));
    set.append(el('label', { className: 'agent-choice' }, radio, text));
  }
  return set;
}

function engineChoice() {
  const select = el('select', { id: 'new-engine' });
  for (const [value, label] of ENGINES) select.append(el('option', { value }, label));
  return el('label', { className: 'field' }, 'Engine', select);
}

function promptField() {
  const area = el('textarea', { id: 'new-system-prompt', rows: 3, maxLength: 8000 });
  area.placeholder = 'e.g. Answer in French. Keep it short.';
  const hint = el('span', { className: 'muted field-hint', id: 'new-system-prompt-hint' },
    'Added to the agent’s system prompt for every run of this conversation.');
  area.setAttribute('aria-describedby', hint.id);
  return el('label', { className: 'field' }, 'Extra instructions (optional)', area, hint);
}

/** The agents to choose from (or the only one), as the dialog shows them now. */
function pickerContent() {
  if (agents.length > 1) return [agentChoices()];
  if (agents.length === 1) return [el('p', { className: 'muted agent-only' }, `Agent: ${agents[0].name}${agents[0].description ? ` — ${agents[0].description}` : ''}`)];
  return [];
}

/** The picker and Manage agents…, which redraws the picker after a change (the one saved chosen). */
function agentPicker() {
  const choices = el('div', { className: 'agent-picker-choices' }, ...pickerContent());
  const manage = el('button', { type: 'button', id: 'manage-agents', className: 'manage-agents' }, 'Manage agents…');
  manage.addEventListener('click', async () => {
    const { changed, picked } = await openAgentEditor();
    if (!changed) return;
    await loadAgents();
    if (picked && agents.some((a) => a.name === picked)) last.agent = picked;
    choices.replaceChildren(...pickerContent());
  });
  return el('div', { className: 'agent-picker' }, el('div', { className: 'agent-picker-bar' }, manage), choices);
}

/**
 * Asks for the new conversation's options; resolves with the `POST /api/conversations` body,
 * or null when cancelled.
 */
export async function askNewConversation() {
  const prompt = promptField();
  // Without agents to choose, the dialog opens on the instructions, as before Manage agents….
  prompt.querySelector('textarea').autofocus = agents.length < 2;
  const body = [agentPicker(), prompt, engineChoice()];
  const dialog = modal('New conversation', body, [['Cancel', ''], ['Create', 'ok']], 'new-conversation');
  const form = document.querySelector('dialog.new-conversation form');
  const answer = await dialog;
  if (answer !== 'ok') return null;
  const picked = form.querySelector('input[name="new-agent"]:checked')?.value || '';
  last.agent = picked || last.agent;
  remember();
  return newConversationBody({
    engine: form.querySelector('#new-engine').value,
    systemPrompt: form.querySelector('#new-system-prompt').value.trim(),
  });
}

/** The body of `POST /api/conversations`: the last agent chosen, and `engine`, `systemPrompt` if given. */
export function newConversationBody({ engine, systemPrompt } = {}) {
  const body = {};
  if (agents.length > 1 && last.agent) body.agent = last.agent;
  if (engine) body.engine = engine;
  if (systemPrompt) body.system_prompt = systemPrompt;
  return body;
}
