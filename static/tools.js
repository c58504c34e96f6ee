// The Tools drawer (docs/protocols.md): where the agent's tools come from. Lists `/api/tools` grouped
// by source (built-in, HTTP, MCP) and, for MCP, each server from `/api/mcp` with its state,
// its tools and its last error. With a conversation open, only the tools its runs may use: the
// conversation's own list, else its agent's tool globs (`GET /api/agents`), else all; "Show
// all tools" lifts the filter. Everything is inserted as text: tool descriptions and server
// errors come from outside.

import { api } from './api.js';

const SOURCES = [
  ['builtin', 'Built-in'],
  ['http', 'HTTP tools'],
];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function toolItem(tool) {
  const li = el('li', 'tool-item');
  li.dataset.tool = tool.name;
  li.append(el('span', 'tool-item-name', tool.name));
  if (tool.description) li.append(el('span', 'tool-item-desc muted', tool.description));
  return li;
}

function section(title, tools) {
  const box = el('section', 'tools-group');
  box.append(el('h3', '', title));
  const list = el('ul', 'tool-list');
  for (const t of tools) list.append(toolItem(t));
  box.append(list);
  return box;
}

function serverBox(server, tools) {
  const box = el('section', 'mcp-server');
  box.dataset.server = server.name;
  box.dataset.state = server.state;
  const head = el('h3', '');
  head.append(el('span', '', `MCP · ${server.name}`));
  head.append(el('span', `mcp-state state-${server.state}`, server.state));
  box.append(head);
  box.append(el('p', 'muted', `${server.transport}, since ${new Date(server.since).toLocaleTimeString()}`));
  if (server.last_error) box.append(el('p', 'mcp-error error', server.last_error));
  // Listed tools reagent does not offer (a schema it cannot use), with the reason.
  for (const s of server.skipped_tools || []) {
    box.append(el('p', 'mcp-skipped muted', `skipped ${s.tool || '(no name)'}: ${s.reason}`));
  }
  const list = el('ul', 'tool-list');
  for (const t of tools.filter((x) => x.server === server.name)) list.append(toolItem(t));
  box.append(list);
  return box;
}

/** A tool-name glob (`*`, `?`, `[…]`, `{a,b}`, as the server's globset reads it) as a RegExp. */
export function globRegExp(glob) {
  let out = '';
  for (const ch of glob) {
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else if (ch === '{') out += '(?:';
    else if (ch === '}') out += ')';
    else if (ch === ',' && out.includes('(?:')) out += '|';
    else if (ch === '[' || ch === ']') out += ch;
    else out += ch.replace(/[.+^$()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

/** Which tools the open conversation's runs may use: [a test, what it is], or null for all. */
async function scopeOf(conversation) {
  if (!conversation) return null;
  if (Array.isArray(conversation.tools)) {
    const names = new Set(conversation.tools);
    return [(name) => names.has(name), 'this conversation'];
  }
  if (!conversation.agent) return null;
  const agents = await api('GET', '/api/agents');
  const agent = agents.find((a) => a.name === conversation.agent);
  if (!agent || !Array.isArray(agent.tools)) return null;
  const globs = agent.tools.map(globRegExp);
  return [(name) => globs.some((g) => g.test(name)), `agent ${agent.name}`];
}

async function render(body, conversation, showAll) {
  body.replaceChildren(el('p', 'muted', 'Loading…'));
  try {
    const [all, servers, scope] = await Promise.all([
      api('GET', '/api/tools'), api('GET', '/api/mcp'), scopeOf(conversation),
    ]);
    const tools = scope && !showAll.checked ? all.filter((t) => scope[0](t.name)) : all;
    const parts = [];
    showAll.closest('label').hidden = !scope;
    if (scope) {
      parts.push(el('p', 'tools-scope muted', showAll.checked
        ? `All tools of the server; ${all.filter((t) => scope[0](t.name)).length} of them for ${scope[1]}.`
        : `The tools of ${scope[1]} (${tools.length} of ${all.length}).`));
    }
    for (const [source, title] of SOURCES) {
      const some = tools.filter((t) => t.source === source);
      if (some.length) parts.push(section(title, some));
    }
    for (const s of servers) {
      if (!scope || showAll.checked || tools.some((t) => t.server === s.name)) parts.push(serverBox(s, tools));
    }
    if (!parts.length) parts.push(el('p', 'muted', 'No tools.'));
    body.replaceChildren(...parts);
  } catch (e) {
    body.replaceChildren(el('p', 'error', `Could not load the tools: ${e.message}`));
  }
}

/**
 * Wires the Tools button and drawer; the drawer reloads each time it opens, and when another
 * conversation opens while it is shown. `conversation()` is the open one (or null).
 */
export function initToolsPanel(conversation) {
  const panel = document.getElementById('tools-panel');
  const body = document.getElementById('tools-body');
  const showAll = document.getElementById('all-tools');
  const again = () => render(body, conversation(), showAll);
  const open = (show) => {
    panel.hidden = !show;
    if (show) again();
  };
  document.getElementById('show-tools').addEventListener('click', () => open(panel.hidden));
  document.getElementById('close-tools').addEventListener('click', () => open(false));
  document.getElementById('refresh-tools').addEventListener('click', again);
  showAll.addEventListener('change', again);
  document.addEventListener('reagent:conversation', () => {
    if (!panel.hidden) again();
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !panel.hidden) open(false);
  });
}
