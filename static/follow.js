// Following one run's events into its RunView (run.js): from the response of the POST that
// started it, or from its event log (`GET /api/runs/{id}/events`), resuming after the last
// applied id with Last-Event-ID whenever the connection drops, until `done`. EventSource cannot
// send the Authorization header, so the stream is read with fetch (api.js).

import { apiFetch, ApiError, readSse } from './api.js';

/**
 * Feeds `view` until `done` (or `signal` aborts); `onEvent()` runs after each applied event,
 * `onGiveUp()` when the connection could not be resumed.
 */
export async function followRun(view, response, signal, onEvent, onGiveUp) {
  let failures = 0;
  while (!view.done && !signal.aborted) {
    try {
      if (!response) {
        if (!view.runId) return;
        const headers = { Accept: 'text/event-stream' };
        if (view.lastId > 0) {
          // Resume: the server replays only what came after the last applied event.
          headers['Last-Event-ID'] = String(view.lastId);
          document.body.dataset.resumes = String(Number(document.body.dataset.resumes || 0) + 1);
        }
        response = await apiFetch(`/api/runs/${encodeURIComponent(view.runId)}/events`, { headers, signal });
      }
      const before = view.lastId;
      view.root.dataset.connection = 'open';
      await readSse(response.body, (ev) => {
        if (signal.aborted) return;
        view.apply(ev);
        onEvent();
      });
      if (view.lastId > before) failures = 0;
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) {
        view.lost('run not found');
        return;
      }
    } finally {
      response = null;
    }
    if (view.done || signal.aborted) break;
    view.root.dataset.connection = 'retrying';
    failures += 1;
    if (failures > 8) {
      view.lost('connection lost — reload the page to resume');
      onGiveUp();
      return;
    }
    // Back off before reconnecting (a retry delay, growing with consecutive failures).
    await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** failures, 4000)));
  }
}
