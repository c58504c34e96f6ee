// The sidebar's conversation list: every conversation reachable (pages of `PAGE`, the next one
// fetched when the end of the list scrolls into view, or with the "Load more" button), a search
// box (`GET /api/conversations?q=`, docs/api.md) and a refresh when conversations change
// elsewhere. Changes made in another tab of this browser arrive at once (a BroadcastChannel);
// changes from the API or another browser are picked up when the tab becomes visible again and
// every 30 s while it is visible: no page polls faster than that.

import { api } from './api.js';
import { showTitle } from './titles.js';

const PAGE = 50;
const REFRESH_MS = 30000;
const $ = (id) => document.getElementById(id);

const list = {
  items: [], // the conversations shown, in order
  next: null, // cursor of the next page, null at the end
  query: '', // the search shown
  loading: null, // the request in flight (a Promise)
  generation: 0, // bumped by every reload, so a late page of an older one is dropped
  currentId: () => null,
  open: () => {},
};

const channel = 'BroadcastChannel' in window ? new BroadcastChannel('reagent.conversations') : null;

/** Tells the other tabs of this browser that conversations changed (they reload their list). */
export function announceChange() {
  channel?.postMessage('changed');
}

/** "14:05" today, "3 Mar 14:05" this year, "3 Mar 2025" before: enough to tell titles apart. */
function shortTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  const time = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (d.toDateString() === now.toDateString()) return time;
  const day = d.toLocaleDateString(undefined, { day: 'numeric', month: 'short' });
  if (d.getFullYear() === now.getFullYear()) return `${day} ${time}`;
  return d.toLocaleDateString(undefined, { day: 'numeric', month: 'short', year: 'numeric' });
}

function item(conv) {
  const li = document.createElement('li');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'conv';
  button.dataset.id = conv.id;
  // The title is cut with an ellipsis (a fork's suffix stays visible); the time and the
  // working dot stay visible beside it.
  const title = document.createElement('span');
  title.className = 'conv-title';
  showTitle(title, conv.title || 'Untitled');
  const when = document.createElement('time');
  when.className = 'conv-time muted';
  when.dateTime = conv.created_at;
  when.textContent = shortTime(conv.created_at);
  when.title = new Date(conv.created_at).toLocaleString();
  button.title = `${title.textContent} — ${when.title}`;
  button.append(title, when);
  if (conv.active_run_id) {
    button.classList.add('working');
    const dot = document.createElement('span');
    dot.className = 'working-dot';
    dot.setAttribute('role', 'img');
    dot.setAttribute('aria-label', 'working');
    button.append(dot);
  }
  if (list.currentId() === conv.id) {
    button.classList.add('current');
    button.setAttribute('aria-current', 'true');
  }
  button.addEventListener('click', () => list.open(conv.id));
  li.append(button);
  return li;
}

function render() {
  $('conv-list').replaceChildren(...list.items.map(item));
  const searching = Boolean(list.query);
  $('list-status').textContent = list.items.length
    ? ''
    : searching
      ? 'No conversation matches.'
      : 'No conversations yet.';
  $('load-more').hidden = !list.next;
}

function url(before, limit) {
  const params = new URLSearchParams({ limit: String(limit) });
  if (before) params.set('before', before);
  if (list.query) params.set('q', list.query);
  return `/api/conversations?${params}`;
}

/** Appends the next page (if any and none is already on its way). */
export function loadMore() {
  if (!list.next || list.loading) return list.loading;
  const generation = list.generation;
  list.loading = api('GET', url(list.next, PAGE))
    .then((page) => {
      if (generation !== list.generation) return;
      list.items.push(...(page.items || []));
      list.next = page.next_before || null;
      render();
    })
    .catch((e) => {
      $('list-status').textContent = `Could not load conversations: ${e.message}`;
    })
    .finally(() => {
      list.loading = null;
      // The end may still be in view (a tall screen), which the observer does not report again.
      requestAnimationFrame(() => {
        if (endInView()) loadMore();
      });
    });
  return list.loading;
}

/**
 * Reloads the list from the top, keeping as many conversations as were shown (a refresh must
 * not take away pages the reader scrolled to).
 */
export async function loadList() {
  const generation = ++list.generation;
  list.loading = null;
  const wanted = Math.max(PAGE, list.items.length);
  const items = [];
  let next = null;
  try {
    do {
      const page = await api('GET', url(next, Math.min(200, wanted - items.length)));
      if (generation !== list.generation) return;
      items.push(...(page.items || []));
      next = page.next_before || null;
    } while (next && items.length < wanted);
  } catch (e) {
    if (generation === list.generation) $('list-status').textContent = `Could not load conversations: ${e.message}`;
    return;
  }
  list.items = items;
  list.next = next;
  render();
}

/** Whether the "Load more" button is shown within (or 200 px below) the list's scroll box. */
function endInView() {
  const button = $('load-more');
  if (button.hidden) return false;
  const box = $('conv-scroll').getBoundingClientRect();
  const end = button.getBoundingClientRect();
  return end.top < box.bottom + 200 && end.bottom > box.top;
}

/**
 * Wires the list: `currentId()` says which conversation is open, `open(id)` opens one. The
 * search runs 250 ms after the last keystroke (Enter at once; Escape clears it).
 */
export function initConversationList(currentId, open) {
  list.currentId = currentId;
  list.open = open;
  const search = $('conv-search');
  let timer = 0;
  const apply = () => {
    clearTimeout(timer);
    const query = search.value.trim();
    if (query === list.query) return;
    list.query = query;
    list.items = [];
    loadList();
  };
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 250);
  });
  search.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      apply();
    } else if (ev.key === 'Escape' && search.value) {
      ev.stopPropagation();
      search.value = '';
      apply();
    }
  });
  $('load-more').addEventListener('click', () => loadMore());
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadMore();
  }, { root: $('conv-scroll'), rootMargin: '200px' }).observe($('load-more'));
  channel?.addEventListener('message', () => loadList());
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') loadList();
  });
  setInterval(() => {
    if (document.visibilityState === 'visible') loadList();
  }, REFRESH_MS);
}
