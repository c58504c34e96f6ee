// Conversation titles: one made from a question is cut at 60 characters with an ellipsis, and a
// fork's suffix (" (edited)", " (regenerated)", " (fork)") stays visible where a long title is
// cut to fit, so a fork never looks like its original.

/** The suffixes a fork's title ends with (fork.js adds them, the server adds " (fork)"). */
export const FORK_SUFFIX = / \((?:fork|edited|regenerated)\)$/;

const DERIVED_CHARS = 60;

/** The title of a conversation started by `query`: its words, cut with an ellipsis. */
export function titleFrom(query) {
  const text = query.replace(/\s+/g, ' ').trim();
  if ([...text].length <= DERIVED_CHARS) return text;
  return `${[...text].slice(0, DERIVED_CHARS - 1).join('').trimEnd()}…`;
}

/**
 * Shows `title` in `node` as two parts: the text, which CSS may cut with an ellipsis, and the
 * fork suffix, which it never cuts.
 */
export function showTitle(node, title) {
  const match = FORK_SUFFIX.exec(title);
  const text = document.createElement('span');
  text.className = 'title-text';
  text.textContent = match ? title.slice(0, match.index) : title;
  if (!match) {
    node.replaceChildren(text);
    return;
  }
  const suffix = document.createElement('span');
  suffix.className = 'title-suffix';
  suffix.textContent = match[0];
  node.replaceChildren(text, suffix);
}
