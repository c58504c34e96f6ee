// Small modal dialogs on the native <dialog> element (focus kept inside, Escape cancels, the
// page behind inert), instead of window.prompt/confirm, which cannot be styled, block the page
// and are suppressed by some browsers.

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

/**
 * Shows a modal dialog titled `title` around `body` (nodes) with the `buttons`
 * ([label, value, className]); resolves with the value of the button used, or null when it is
 * cancelled (Escape, Cancel). `className` is added to the dialog's (its own size or layout).
 */
export function modal(title, body, buttons, className = '') {
  const id = `dialog-${Math.random().toString(36).slice(2)}`;
  const form = el('form', { method: 'dialog' });
  const dialog = el('dialog', { className: `dialog ${className}`.trim() });
  dialog.setAttribute('aria-labelledby', id);
  const row = el('div', { className: 'buttons' });
  for (const [label, value, className] of buttons) {
    const button = el('button', { type: 'submit', value, className: className || '' }, label);
    if (value === '') button.type = 'button';
    if (value === '') button.addEventListener('click', () => dialog.close(''));
    row.append(button);
  }
  form.append(el('h2', { id }, title), ...body, row);
  dialog.append(form);
  // Escape closes the dialog only, not also the drawer or panel under it (their keydown listeners).
  dialog.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') ev.stopPropagation();
  });
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue || null);
    });
    dialog.showModal();
  });
}

/** Asks for a line of text (`value` to start with); null when cancelled or left blank. */
export async function promptText(title, label, value = '') {
  const input = el('input', { type: 'text', value, required: true });
  input.setAttribute('aria-label', label);
  input.maxLength = 200;
  const answer = modal(title, [input], [['Cancel', ''], ['Save', 'ok']]);
  input.select();
  return (await answer) === 'ok' && input.value.trim() ? input.value.trim() : null;
}

/** Asks to confirm `message`; true when confirmed with the `action` button. */
export async function confirmAction(title, message, action) {
  const answer = await modal(title, [el('p', {}, message)], [['Cancel', ''], [action, 'ok', 'danger']]);
  return answer === 'ok';
}
