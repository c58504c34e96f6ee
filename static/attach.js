// Images attached to the next question (docs/api.md "Images"): by the Attach button, by pasting
// into the message box, or by dropping files on the page. Each shows as a preview with a Remove
// button until it is sent; the run request carries them as `images: [{url: "data:…"}]`. What the
// server would refuse — a kind it does not take, more than 5 MiB, more than 8, more than a run's
// 20 MiB of images together — is refused here first, with an inline message naming the file, so
// nothing is lost on a 400 (the server's body limit on runs takes all of that).

export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_IMAGES = 8;
/** The server's default `max_run_image_bytes`; a lower setting is refused by the server (400). */
export const MAX_TOTAL_BYTES = 20 * 1024 * 1024;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function size(bytes) {
  return bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function dataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error || new Error('unreadable'));
    reader.readAsDataURL(file);
  });
}

/** The files of a clipboard or a drop (add() refuses, by name, those that are not images). */
function filesOf(transfer) {
  return [...(transfer?.files || [])];
}

/**
 * Wires the composer's attachments: `button` opens `picker` (a file input), `input` takes
 * pasted images, `dropZone` dropped ones; previews go in `tray`, refusals in `error`.
 * Returns {images(), take(), restore(list), showError(text)}.
 */
export function initAttachments({ button, picker, input, dropZone, tray, error }) {
  /** What is attached, in order: {name, url, size}. */
  let items = [];
  const total = () => items.reduce((sum, item) => sum + (item.size || 0), 0);

  function showError(text) {
    error.textContent = text || '';
    error.hidden = !text;
  }

  function render() {
    tray.replaceChildren();
    items.forEach((item, i) => {
      const box = el('div', 'attachment');
      box.setAttribute('role', 'listitem');
      const img = el('img');
      img.src = item.url;
      img.alt = item.name;
      const remove = el('button', 'remove-attachment', '✕');
      remove.type = 'button';
      remove.setAttribute('aria-label', `Remove image ${item.name}`);
      remove.title = 'Remove';
      remove.addEventListener('click', () => {
        items.splice(i, 1);
        render();
        showError('');
        // The focus stays in the tray (the next preview's button), or returns to the message box.
        (tray.querySelectorAll('.remove-attachment')[Math.min(i, items.length - 1)] || input).focus();
      });
      box.append(img, remove);
      tray.append(box);
    });
    tray.hidden = !items.length;
    // The name starts with the visible text (a voice command says what it sees).
    if (items.length) button.setAttribute('aria-label', `Attach image (${items.length} attached)`);
    else button.removeAttribute('aria-label');
  }

  /** Adds `files`, refusing (and naming) those the server would refuse. */
  async function add(files) {
    const refused = [];
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        refused.push(`${file.name || 'the file'} is not a PNG, JPEG, WebP or GIF image`);
      } else if (file.size > MAX_IMAGE_BYTES) {
        refused.push(`${file.name || 'the image'} is larger than 5 MB (${size(file.size)})`);
      } else if (items.length >= MAX_IMAGES) {
        refused.push(`${file.name || 'the image'} was not added: at most ${MAX_IMAGES} images per message`);
      } else if (total() + file.size > MAX_TOTAL_BYTES) {
        refused.push(`${file.name || 'the image'} was not added: the images of a message are at most ${MAX_TOTAL_BYTES >> 20} MB together`);
      } else {
        try {
          items.push({ name: file.name || `pasted image ${items.length + 1}`, url: await dataUrl(file), size: file.size });
        } catch {
          refused.push(`${file.name || 'the image'} could not be read`);
        }
      }
    }
    render();
    showError(refused.length ? `${refused.join('. ')}.` : '');
  }

  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    add([...picker.files]);
    picker.value = '';
  });
  input.addEventListener('paste', (ev) => {
    const files = filesOf(ev.clipboardData);
    if (!files.length) return;
    // Pasted text (a copied page often carries both) still lands in the box.
    if (!ev.clipboardData.getData('text/plain')) ev.preventDefault();
    add(files);
  });
  // Only drags that carry files light up the zone; dragging text within the page does not.
  const carriesFiles = (ev) => [...(ev.dataTransfer?.types || [])].includes('Files');
  let depth = 0;
  dropZone.addEventListener('dragenter', (ev) => {
    if (!carriesFiles(ev)) return;
    depth += 1;
    dropZone.classList.add('dropping');
  });
  dropZone.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (!depth) dropZone.classList.remove('dropping');
  });
  dropZone.addEventListener('dragover', (ev) => {
    if (!carriesFiles(ev)) return;
    ev.preventDefault();
    ev.dataTransfer.dropEffect = 'copy';
  });
  dropZone.addEventListener('drop', (ev) => {
    depth = 0;
    dropZone.classList.remove('dropping');
    const files = filesOf(ev.dataTransfer);
    if (!files.length) return;
    ev.preventDefault();
    add(files);
  });
  render();

  return {
    /** What would be sent now, as the run request's `images`. */
    images: () => items.map((item) => ({ url: item.url })),
    /** Empties the tray and returns what it held (restore() puts it back). */
    take() {
      const taken = items;
      items = [];
      render();
      return taken;
    },
    restore(list) {
      items = [...list, ...items].slice(0, MAX_IMAGES);
      render();
    },
    showError,
  };
}
