// Following the bottom of the thread while it grows, and only while the reader is there.
//
// The thread follows new content only while the reader is at its bottom (within STICK_PX):
// scrolling up to read while an answer streams stops following, scrolling back down resumes.
// Content growing never fires `scroll`, so `stick` changes only on the reader's moves: up
// (scrollTop decreased) stops, reaching the bottom resumes. The wheel and keys that scroll up
// stop it at once, before a smooth scroll's first `scroll` event, and nothing follows during a
// touch, so following never fights the reader's gesture. A touch counts for at most
// TOUCH_HOLD_MS after its last move: its target may be re-rendered away while the answer
// streams, and then its touchend never reaches the thread.

const STICK_PX = 24;
const TOUCH_HOLD_MS = 1500;
const UP_KEYS = new Set(['ArrowUp', 'PageUp', 'Home']);

/**
 * Watches the reader's scrolling in `thread` and returns `scrollDown(force)`: keep the bottom in
 * view after the next render, once per frame (after RunView's render of the same frame, which
 * was requested first); `force` for the reader's own actions (sending, opening a conversation).
 */
export function followBottom(thread) {
  let stick = true;
  let lastTop = 0;
  let touchedAt = -Infinity;
  let frame = 0;

  thread.addEventListener('scroll', () => {
    if (thread.scrollHeight - thread.scrollTop - thread.clientHeight <= STICK_PX) stick = true;
    else if (thread.scrollTop < lastTop) stick = false;
    lastTop = thread.scrollTop;
  }, { passive: true });
  thread.addEventListener('wheel', (ev) => {
    if (ev.deltaY < 0 && thread.scrollTop > 0) stick = false;
  }, { passive: true });
  document.addEventListener('keydown', (ev) => {
    // Keys scroll the thread unless they edit text (the composer's arrows move its caret).
    if (UP_KEYS.has(ev.key) && !ev.target.closest?.('textarea, input, select') && thread.scrollTop > 0) stick = false;
  });
  for (const type of ['touchstart', 'touchmove', 'touchend', 'touchcancel']) {
    thread.addEventListener(type, () => {
      touchedAt = type === 'touchstart' || type === 'touchmove' ? performance.now() : -Infinity;
    }, { passive: true });
  }

  return function scrollDown(force = false) {
    if (force) stick = true;
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const touching = performance.now() - touchedAt < TOUCH_HOLD_MS;
      if (stick && !touching) thread.scrollTop = thread.scrollHeight;
    });
  };
}
