// Safeguard notes in a run (docs/api.md, `step {type: "safeguard"}`): a quiet line in words for
// each kind; what the safeguard told the model stays internal. The same note again (a model
// repeating a call eleven times) counts up on the first one ("· 11 times") instead of adding a
// line, its iterations on hover.

const TEXTS = {
  reflection: () => 'the agent was asked to step back and check its progress',
  cycle_warning: (tool) => `the agent was warned that it is repeating itself${tool}`,
  completion_check: () => 'the agent was asked to check that the answer is complete',
  max_iterations: () => 'the iteration limit was reached: answering with what was found',
  cycle_stop: () => 'the agent kept repeating the same calls, so it stopped: answering with what was found',
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Shows the safeguard event `data` in `container`, or counts it on the same note shown before
 * (`notes`: the run's notes by step and text).
 */
export function safeguardNote(notes, container, data) {
  const words = TEXTS[data.kind];
  const text = words ? words(data.tool ? ` (${data.tool})` : '') : 'a safeguard of the agent loop stepped in';
  const key = `${data.dag_step ?? ''}|${text}`;
  let note = notes.get(key);
  if (!note) {
    note = el('div', 'safeguard-note muted');
    note.append(el('span', 'note-text', text), el('span', 'note-count'));
    note.dataset.kind = data.kind || '';
    note.dataset.count = '0';
    note.iterations = [];
    notes.set(key, note);
    container.append(note);
  }
  const count = Number(note.dataset.count) + 1;
  note.dataset.count = String(count);
  note.querySelector('.note-count').textContent = count > 1 ? ` · ${count} times` : '';
  if (data.iteration !== undefined && data.iteration !== null) note.iterations.push(data.iteration);
  if (note.iterations.length) {
    note.title = `${note.iterations.length > 1 ? 'iterations' : 'iteration'} ${note.iterations.join(', ')}`;
  }
}
