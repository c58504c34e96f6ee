// Images in the thread. A tool's artifact: a link, previewed as an image (raster only) or an
// HTML page (in an empty sandbox). The images of a user's message: thumbnails under its text,
// each a button that opens the image large in a dialog. Sent images are data URLs; after a reload the conversation lists them as
// `images: [{url, artifact_id?}]` (docs/api.md), where a stored image's `url` is
// `/api/artifacts/{id}`: fetched with the API key (an <img> cannot send it) into an object URL.

import { apiFetch, blobUrl, hasKey } from './api.js';
import { modal } from './dialogs.js';

/** Only what an image may come from: a data URL of an image, http(s), or this server's artifacts. */
const SAFE = /^(?:data:image\/(?:png|jpeg|webp|gif);|https?:\/\/|\/api\/artifacts\/)/i;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A tool's artifact ({id, name, mime_type, size, url?}) as a link with its preview. */
export function artifactPreview(artifact) {
  const box = el('div', 'artifact');
  const link = el('a', null, `${artifact.name} (${artifact.mime_type}, ${artifact.size} bytes)`);
  link.target = '_blank';
  link.rel = 'noopener';
  box.append(link);
  const isHtml = /^text\/html/i.test(artifact.mime_type || '');
  // Raster images only: an SVG can carry script, so it stays a link like any other file.
  const isImage = /^image\/(png|jpeg|gif|webp|avif|bmp)$/i.test(artifact.mime_type || '');
  const frame = isHtml ? el('iframe', 'artifact-preview') : null;
  if (frame) {
    // An empty sandbox: no scripts, no same-origin access, no forms, no navigation of the UI.
    frame.setAttribute('sandbox', '');
    frame.title = artifact.name;
    box.append(frame);
  }
  const image = isImage ? el('img', 'artifact-image') : null;
  if (image) {
    image.alt = artifact.name;
    box.append(image);
  }
  const url = artifact.url || `/api/artifacts/${artifact.id}`;
  const show = (u) => {
    link.href = u;
    if (frame) frame.src = u;
    if (image) image.src = u;
  };
  if (hasKey()) {
    // Links and iframes cannot send the Authorization header: fetch with it, show a blob.
    blobUrl(url).then(show).catch(() => box.append(el('span', 'error', ' (could not load)')));
  } else {
    show(url);
  }
  return box;
}

/** Sets `img.src` to `url`, through an object URL when the server wants the key for it. */
function show(img, url) {
  if (url.startsWith('/api/') && hasKey()) {
    blobUrl(url)
      .then((u) => {
        img.src = u;
      })
      .catch(() => img.replaceWith(el('span', 'error', '(image unavailable)')));
  } else {
    img.src = url;
  }
}

/** Opens image `n` of `count` large, in a modal dialog (Escape or Close returns to the thumbnail). */
function enlarge(src, n, count) {
  const img = el('img', 'lightbox-image');
  img.src = src;
  img.alt = `Image ${n} of ${count} attached to the message`;
  modal(count > 1 ? `Image ${n} of ${count}` : 'Image', [img], [['Close', 'close']], 'lightbox');
}

/** The thumbnails of `images` ({url}), or null when there are none to show. */
export function thumbnails(images) {
  const safe = (images || []).filter((i) => typeof i?.url === 'string' && SAFE.test(i.url));
  if (!safe.length) return null;
  const row = el('div', 'message-images');
  row.setAttribute('role', 'list');
  row.setAttribute('aria-label', 'Attached images');
  safe.forEach((image, i) => {
    const button = el('button', 'thumbnail');
    button.type = 'button';
    button.setAttribute('role', 'listitem');
    button.setAttribute('aria-label', `Enlarge image ${i + 1} of ${safe.length}`);
    const img = el('img');
    img.alt = '';
    show(img, image.url);
    button.append(img);
    button.addEventListener('click', () => {
      if (img.src) enlarge(img.src, i + 1, safe.length);
    });
    row.append(button);
  });
  return row;
}

function readAsDataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error || new Error('unreadable'));
    reader.readAsDataURL(blob);
  });
}

/**
 * `images` as a run request takes them again (regenerate, edit): a stored image is fetched
 * and sent as a data URL, since the request accepts data and http(s) URLs only.
 */
export async function sendable(images) {
  const out = [];
  for (const image of images || []) {
    if (typeof image?.url !== 'string' || !SAFE.test(image.url)) continue;
    if (!image.url.startsWith('/api/')) {
      out.push({ url: image.url });
      continue;
    }
    const response = await apiFetch(image.url);
    out.push({ url: await readAsDataUrl(await response.blob()) });
  }
  return out;
}
