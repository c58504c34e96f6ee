// The HTTP side of the UI: JSON calls with the API key, the one-time key prompt, and an SSE
// reader over `fetch`. EventSource cannot send an Authorization header, so event streams are
// read with fetch and parsed here (docs/api.md: `id:`, `event:`, `data:` lines, blank line ends an
// event, `:` lines are keep-alive comments).

const KEY_STORAGE = 'reagent.apiKey';

/** An API failure with the server's `{error: {code, message}}` when it sent one. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

// One prompt at a time: every request that meets a 401 while the prompt is open waits for the
// same answer, so the user is asked once, not once per request.
let pendingKey = null;

function askKey(rejected) {
  if (pendingKey) return pendingKey;
  const overlay = document.getElementById('auth');
  const form = document.getElementById('auth-form');
  const input = document.getElementById('api-key');
  const error = document.getElementById('auth-error');
  error.hidden = !rejected;
  error.textContent = rejected ? 'That key was refused. Try again.' : '';
  document.body.dataset.authPrompts = String(Number(document.body.dataset.authPrompts || 0) + 1);
  overlay.hidden = false;
  input.value = '';
  input.focus();
  pendingKey = new Promise((resolve) => {
    form.addEventListener('submit', function onSubmit(ev) {
      ev.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      form.removeEventListener('submit', onSubmit);
      try {
        localStorage.setItem(KEY_STORAGE, key);
      } catch {
        // Private mode: the key still works for this page.
      }
      sessionKey = key;
      overlay.hidden = true;
      pendingKey = null;
      resolve(key);
    });
  });
  return pendingKey;
}

let sessionKey = storedKey();

/**
 * fetch() on the API with the key; on 401 asks for a key (once) and retries. Returns the
 * Response for 2xx, throws ApiError otherwise.
 */
export async function apiFetch(path, options = {}) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const headers = new Headers(options.headers || {});
    if (sessionKey) headers.set('Authorization', `Bearer ${sessionKey}`);
    const response = await fetch(path, { ...options, headers });
    if (response.status === 401) {
      const hadKey = Boolean(sessionKey);
      await askKey(hadKey);
      continue;
    }
    if (!response.ok) {
      let code = 'http_error';
      let message = `HTTP ${response.status}`;
      try {
        const body = await response.json();
        code = body?.error?.code || code;
        message = body?.error?.message || message;
      } catch {
        // Not JSON: keep the status text.
      }
      throw new ApiError(response.status, code, message);
    }
    return response;
  }
  throw new ApiError(401, 'unauthorized', 'API key refused');
}

/** JSON request helper; returns the parsed body (or null for 204). */
export async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const response = await apiFetch(path, options);
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/** Fetches a protected URL and returns a blob: URL for it (links and iframes cannot send the key). */
export async function blobUrl(path) {
  const response = await apiFetch(path);
  return URL.createObjectURL(await response.blob());
}

export function hasKey() {
  return Boolean(sessionKey);
}

/** Keeps `key` in this browser and sends it from now on (the settings dialog). */
export function setKey(key) {
  sessionKey = key;
  try {
    localStorage.setItem(KEY_STORAGE, key);
  } catch {
    // Private mode: the key still works for this page.
  }
}

/** Forgets the key: the next request that needs one asks for it again. */
export function forgetKey() {
  sessionKey = '';
  try {
    localStorage.removeItem(KEY_STORAGE);
  } catch {
    // Nothing was stored.
  }
}

/**
 * Reads an SSE body and calls onEvent({id, event, data}) for each complete event, data parsed
 * as JSON when possible. Resolves when the body ends; rejects on a network error or abort.
 */
export async function readSse(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = { id: null, event: 'message', data: [] };
  const dispatch = () => {
    if (event.data.length > 0) {
      const raw = event.data.join('\n');
      let data = raw;
      try {
        data = JSON.parse(raw);
      } catch {
        // Leave it as text.
      }
      onEvent({ id: event.id, event: event.event, data });
    }
    event = { id: null, event: 'message', data: [] };
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      // A lone trailing CR may be the first half of a CRLF split across chunks.
      if (buffer[nl] === '\r' && nl === buffer.length - 1) break;
      const line = buffer.slice(0, nl);
      const width = buffer.startsWith('\r\n', nl) ? 2 : 1;
      buffer = buffer.slice(nl + width);
      if (line === '') {
        dispatch();
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value2 = colon < 0 ? '' : line.slice(colon + 1);
      if (value2.startsWith(' ')) value2 = value2.slice(1);
      if (field === 'id') event.id = Number(value2);
      else if (field === 'event') event.event = value2;
      else if (field === 'data') event.data.push(value2);
    }
  }
}
