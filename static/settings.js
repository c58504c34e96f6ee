// The settings dialog (the ⚙ button): the theme (system, light or dark; kept in this browser
// and applied before the first paint by theme.js) and the API key this browser keeps (replace
// it, or forget it so the next request asks again).

import { forgetKey, hasKey, setKey } from './api.js';
import { modal } from './dialogs.js';

const THEME_STORAGE = 'reagent.theme';

export function currentTheme() {
  try {
    const theme = localStorage.getItem(THEME_STORAGE);
    return theme === 'light' || theme === 'dark' ? theme : 'system';
  } catch {
    return 'system';
  }
}

/** Applies `theme` at once and keeps it for the next visits. */
export function setTheme(theme) {
  const root = document.documentElement;
  if (theme === 'light' || theme === 'dark') root.dataset.theme = theme;
  else delete root.dataset.theme;
  try {
    if (theme === 'light' || theme === 'dark') localStorage.setItem(THEME_STORAGE, theme);
    else localStorage.removeItem(THEME_STORAGE);
  } catch {
    // No storage: the choice lasts for this page.
  }
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function themeChoices() {
  const set = el('fieldset', {}, el('legend', {}, 'Theme'));
  const row = el('div', { className: 'choices' });
  for (const [value, label] of [['system', 'System'], ['light', 'Light'], ['dark', 'Dark']]) {
    const radio = el('input', { type: 'radio', name: 'theme', value, checked: currentTheme() === value });
    radio.addEventListener('change', () => setTheme(value));
    row.append(el('label', {}, radio, ` ${label}`));
  }
  set.append(row);
  return set;
}

function keyControls() {
  const set = el('fieldset', {}, el('legend', {}, 'API key'));
  const state = el('p', { className: 'muted', id: 'key-state' });
  const show = () => {
    state.textContent = hasKey()
      ? 'This browser keeps an API key and sends it with every request.'
      : 'This browser keeps no API key (the server asks for one when it needs it).';
    forget.disabled = !hasKey();
  };
  const input = el('input', { type: 'password', placeholder: 'New API key', autocomplete: 'off', id: 'new-key' });
  input.setAttribute('aria-label', 'New API key');
  const save = el('button', { type: 'button', id: 'save-key' }, 'Save key');
  const forget = el('button', { type: 'button', className: 'danger', id: 'forget-key' }, 'Forget key');
  save.addEventListener('click', () => {
    if (!input.value.trim()) return;
    setKey(input.value.trim());
    input.value = '';
    show();
  });
  forget.addEventListener('click', () => {
    forgetKey();
    show();
  });
  show();
  set.append(state, el('div', { className: 'row' }, input, save, forget));
  return set;
}

export function initSettings() {
  document.getElementById('open-settings').addEventListener('click', () => {
    modal('Settings', [themeChoices(), keyControls()], [['Close', 'close']]);
  });
}
