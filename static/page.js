// The page around the chat: the narrow-screen drawer of conversations, the hints about the
// server's default model, and where the focus starts.

import { api } from './api.js';

const $ = (id) => document.getElementById(id);

/**
 * A touch screen is the main pointer (a phone, a tablet): its keyboard's Enter is the only way
 * to start a new line, so there Enter types one and only the Send button sends.
 */
export function touchTyping() {
  return window.matchMedia('(pointer: coarse)').matches;
}

/** Opens or closes the narrow-screen drawer (and the backdrop beside it). */
export function showSidebar(open) {
  document.body.classList.toggle('show-sidebar', open);
  $('backdrop').hidden = !open;
}

/** ☰ opens the drawer; a tap on the backdrop beside it, or Escape, closes it. */
export function initSidebarDrawer() {
  $('toggle-sidebar').addEventListener('click', () => {
    showSidebar(!document.body.classList.contains('show-sidebar'));
  });
  $('backdrop').addEventListener('click', () => showSidebar(false));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && document.body.classList.contains('show-sidebar')) showSidebar(false);
  });
}

/**
 * A hint when the server says its default model cannot be called without a key, and the demo
 * banner when that model is the scripted demo model (`reagent serve --demo`).
 */
export async function checkModels() {
  try {
    const models = await api('GET', '/api/models');
    const fallback = models.find((m) => m.default) || models[0];
    $('key-hint').hidden = !fallback?.needs_key;
    $('demo-banner').hidden = !fallback?.demo;
    $('demo-badge').hidden = !fallback?.demo;
  } catch {
    // Auth not given yet, or the server is away: nothing to hint about.
  }
}

/**
 * The message box takes the focus once the page is ready, so typing starts at once; not on
 * touch screens (it would pop the keyboard over the page) and not away from the key prompt.
 */
export function focusComposer(input) {
  if (touchTyping() || !$('auth').hidden) return;
  if (document.activeElement && document.activeElement !== document.body) return;
  input.focus();
}
