// The Usage drawer (docs/api.md, Budgets and usage): this window's spend against each of the
// caller's budgets, then tokens and cost by day and by model over the last 30 days, from
// `/api/usage`. The charts are inline SVG built here (no library); every text is inserted as
// text.

import { api } from './api.js';

const SVG = 'http://www.w3.org/2000/svg';
const DAYS = 30;
const DAY_MS = 86400000;
/** The widest bar, in the chart's units (280 wide): one or two bars stay bars, not blocks. */
const MAX_BAR = 24;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

const usd = (n) => `$${n < 0.01 && n > 0 ? n.toPrecision(2) : n.toFixed(2)}`;
const tokens = (n) => n.toLocaleString();

/** One budget: spent (and reserved) against its limits, as text and a bar. */
function budgetBox(b) {
  const box = el('section', 'usage-budget');
  box.dataset.window = b.window;
  const scope = b.tenant === '*' ? 'every tenant' : b.tenant;
  box.append(el('h3', '', `${b.window} budget (${scope})`));
  const rows = [];
  if (b.tokens !== null) rows.push(['tokens', b.spent_tokens, b.tokens, tokens]);
  if (b.cost_usd !== null) rows.push(['cost', b.spent_cost_usd, b.cost_usd, usd]);
  for (const [what, spent, limit, fmt] of rows) {
    const share = limit > 0 ? Math.min(spent / limit, 1) : 1;
    const line = el('p', 'usage-line', `${what}: ${fmt(spent)} of ${fmt(limit)}`);
    line.dataset.kind = what;
    const bar = el('div', 'usage-bar');
    bar.setAttribute('role', 'meter');
    bar.setAttribute('aria-label', `${b.window} ${what} spent`);
    bar.setAttribute('aria-valuemin', '0');
    bar.setAttribute('aria-valuemax', String(limit));
    bar.setAttribute('aria-valuenow', String(spent));
    const fill = el('div', share * 100 >= b.warn_at_percent ? 'usage-fill warn' : 'usage-fill');
    fill.style.width = `${(share * 100).toFixed(1)}%`;
    bar.append(fill);
    box.append(line, bar);
  }
  const ends = new Date(b.window_end).toLocaleString();
  box.append(el('p', 'muted', `resets ${ends}`));
  return box;
}

/**
 * The days from `from` to today (UTC dates, oldest first), each with its group, or null for a
 * day without usage: the by-day charts have a slot per day, so a single day is one thin bar
 * rather than a block across the chart.
 */
function everyDay(groups, from) {
  const byKey = new Map(groups.map((g) => [g.key, g]));
  const first = Date.parse(`${from.toISOString().slice(0, 10)}T00:00:00Z`);
  const days = [];
  for (let t = first; t <= Date.now(); t += DAY_MS) {
    const key = new Date(t).toISOString().slice(0, 10);
    days.push(byKey.get(key) || { key, empty: true });
  }
  return days;
}

/**
 * A bar chart of `value(g)` per slot (a group, or an `empty` day drawn as nothing), with a
 * title for each bar (read on hover).
 */
function chart(title, slots, value, fmt) {
  const box = el('section', 'usage-chart');
  box.append(el('h3', '', title));
  const groups = slots.filter((g) => !g.empty);
  if (!groups.length) {
    box.append(el('p', 'muted', 'Nothing yet.'));
    return box;
  }
  const width = 280;
  const height = 90;
  const max = Math.max(...groups.map(value), 1e-12);
  const step = width / slots.length;
  const barWidth = Math.max(Math.min(step * 0.8, MAX_BAR), 1);
  const picture = svg('svg', { viewBox: `0 0 ${width} ${height + 14}`, role: 'img', width: '100%' });
  picture.setAttribute('aria-label', title);
  slots.forEach((g, i) => {
    if (g.empty) return;
    const h = Math.max((value(g) / max) * height, value(g) > 0 ? 1 : 0);
    const bar = svg('rect', {
      x: (i * step + (step - barWidth) / 2).toFixed(1),
      y: (height - h).toFixed(1),
      width: barWidth.toFixed(1),
      height: h.toFixed(1),
      class: 'usage-chart-bar',
    });
    bar.dataset.key = g.key;
    const tip = svg('title', {});
    tip.textContent = `${g.key}: ${fmt(value(g))}`;
    bar.append(tip);
    picture.append(bar);
  });
  const first = svg('text', { x: 0, y: height + 12, class: 'usage-chart-label' });
  first.textContent = slots[0].key;
  const last = svg('text', { x: width, y: height + 12, 'text-anchor': 'end', class: 'usage-chart-label' });
  last.textContent = slots[slots.length - 1].key;
  picture.append(first, last);
  box.append(picture);
  return box;
}

/** A table of the groups (models): tokens, calls and cost. */
function table(groups) {
  const t = el('table', 'usage-table');
  const head = el('tr');
  for (const h of ['model', 'tokens', 'calls', 'cost']) head.append(el('th', '', h));
  t.append(head);
  for (const g of groups) {
    const row = el('tr');
    row.dataset.model = g.key;
    const cost = g.unpriced_calls > 0 ? `${usd(g.cost_usd)} + ${g.unpriced_calls} unpriced` : usd(g.cost_usd);
    // Calls the provider reported no usage for are counted at an estimate: say so.
    const estimated = g.estimated_calls > 0 ? ` (${g.estimated_calls} estimated)` : '';
    for (const c of [g.key, tokens(g.total_tokens) + estimated, String(g.llm_calls), cost]) row.append(el('td', '', c));
    t.append(row);
  }
  return t;
}

async function render(body) {
  body.replaceChildren(el('p', 'muted', 'Loading…'));
  try {
    const since = new Date(Date.now() - DAYS * DAY_MS);
    const q = `from=${encodeURIComponent(since.toISOString())}`;
    const [byDay, byModel] = await Promise.all([
      api('GET', `/api/usage?${q}&group_by=day`),
      api('GET', `/api/usage?${q}&group_by=model`),
    ]);
    const parts = byDay.budgets.map(budgetBox);
    if (!parts.length) parts.push(el('p', 'muted', 'No budget applies to you.'));
    const days = everyDay(byDay.groups, since);
    parts.push(chart(`Cost by day, last ${DAYS} days`, days, (g) => g.cost_usd, usd));
    parts.push(chart(`Tokens by day, last ${DAYS} days`, days, (g) => g.total_tokens, tokens));
    parts.push(chart('Cost by model', byModel.groups, (g) => g.cost_usd, usd));
    if (byModel.groups.length) parts.push(table(byModel.groups));
    body.replaceChildren(...parts);
  } catch (e) {
    body.replaceChildren(el('p', 'error', `Could not load the usage: ${e.message}`));
  }
}

/** Wires the Usage button and drawer; the drawer reloads each time it opens. */
export function initUsagePanel() {
  const panel = document.getElementById('usage-panel');
  const body = document.getElementById('usage-body');
  const open = (show) => {
    panel.hidden = !show;
    if (show) render(body);
  };
  document.getElementById('show-usage').addEventListener('click', () => open(panel.hidden));
  document.getElementById('close-usage').addEventListener('click', () => open(false));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !panel.hidden) open(false);
  });
}
