// The Tools drawer (docs/protocols.md): where the agent's tools come from. Lists `/api/tools` grouped
// by source (built-in, HTTP, MCP) and, for MCP, each server from `/api/mcp` with its state,
// its tools and its last error. Everything is inserted as text: tool descriptions and server
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

async function render(body) {
  body.replaceChildren(el('p', 'muted', 'Loading…'));
  try {
    const [tools, servers] = await Promise.all([api('GET', '/api/tools'), api('GET', '/api/mcp')]);
    const parts = [];
    for (const [source, title] of SOURCES) {
      const some = tools.filter((t) => t.source === source);
      if (some.length) parts.push(section(title, some));
    }
    for (const s of servers) parts.push(serverBox(s, tools));
    if (!parts.length) parts.push(el('p', 'muted', 'No tools.'));
    body.replaceChildren(...parts);
  } catch (e) {
    body.replaceChildren(el('p', 'error', `Could not load the tools: ${e.message}`));
  }
}

/** Wires the Tools button and drawer; the drawer reloads each time it opens. */
export function initToolsPanel() {
  const panel = document.getElementById('tools-panel');
  const body = document.getElementById('tools-body');
  const open = (show) => {
    panel.hidden = !show;
    if (show) render(body);
  };
  document.getElementById('show-tools').addEventListener('click', () => open(panel.hidden));
  document.getElementById('close-tools').addEventListener('click', () => open(false));
  document.getElementById('refresh-tools').addEventListener('click', () => render(body));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !panel.hidden) open(false);
  });
}
