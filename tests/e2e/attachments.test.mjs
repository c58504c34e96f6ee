// Images in the composer (docs/api.md "Images"), in headless Chromium against the real binary
// and the mock LLM: a pasted and a dropped image show as previews (one can be removed), are sent
// as `images: [{url: "data:…"}]` and reach the model as image parts; the user's message shows
// their thumbnails (a click enlarges one in a dialog), also after a reload; what the server would
// refuse (a ninth image, more than 5 MB, more than 20 MB together, not an image) is refused
// before sending, and what it takes is sent whole (a 4.5 MB image is not 413, issue 51); a model
// without vision gives an inline error and keeps the question and its images. axe-core stays
// clean on the tray, the thumbnails and the enlarged image, light and dark.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/attachments.test.mjs

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { ask, footer, newConversation, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let llm;
let server;
let blind;
let browser;

before(async () => {
  llm = await startMockLlm();
  server = await startReagent(llm.base);
  // The same mock as a model that does not take images.
  blind = await startReagent(llm.base, {}, [
    'default_model = "blind"',
    '[[models]]',
    'name = "blind"',
    `base_url = "${llm.base}"`,
    'model = "mock"',
    'abilities = { vision = false }',
    '',
  ].join('\n'));
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await blind?.stop();
  await server?.stop();
  await llm?.close();
});

/**
 * Makes `files` in the page ([name, colour] → a 48×48 PNG of that colour, or [name, type, bytes]
 * → that many bytes of `type`) as a DataTransfer, and fires `kind` ('paste' on the message box,
 * or 'drop' on the chat) with it. Returns the PNGs' data URLs.
 */
function deliver(page, kind, files) {
  return page.evaluate(async ({ kind, files }) => {
    const transfer = new DataTransfer();
    const urls = [];
    for (const [name, a, b] of files) {
      if (b === undefined) {
        const canvas = Object.assign(document.createElement('canvas'), { width: 48, height: 48 });
        const g = canvas.getContext('2d');
        g.fillStyle = a;
        g.fillRect(0, 0, 48, 48);
        const blob = await new Promise((r) => canvas.toBlob(r, 'image/png'));
        urls.push(canvas.toDataURL('image/png'));
        transfer.items.add(new File([blob], name, { type: 'image/png' }));
      } else {
        transfer.items.add(new File([new Uint8Array(b)], name, { type: a }));
      }
    }
    if (kind === 'paste') {
      document.querySelector('#input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
    } else {
      const chat = document.querySelector('#chat');
      for (const type of ['dragenter', 'dragover', 'drop']) {
        chat.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }
    }
    return urls;
  }, { kind, files });
}

/** The data URLs of the image parts the model received in the user message holding `text`. */
function imagesSeenByModel(text) {
  for (const request of [...llm.requests].reverse()) {
    for (const m of request.messages || []) {
      if (m.role !== 'user' || !Array.isArray(m.content)) continue;
      if (!m.content.some((p) => p.type === 'text' && p.text.includes(text))) continue;
      return m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url.url);
    }
  }
  return [];
}

async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
}

async function openPage(base = server.base) {
  const page = await browser.context.newPage();
  await page.goto(`${base}/`);
  await page.waitForSelector('body[data-ready="true"]');
  await newConversation(page);
  return page;
}

/** Sends `text`; returns the run request's JSON body as the page sent it. */
async function send(page, text) {
  const request = page.waitForRequest((r) => r.method() === 'POST' && /\/runs$/.test(r.url()));
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
  return (await request).postDataJSON();
}

describe('reagent UI, image attachments', () => {
  test('pasted images show as previews, one can be removed, the rest are sent and shown', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openPage();
    const urls = await deliver(page, 'paste', [['red.png', '#d00'], ['blue.png', '#00d']]);
    await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 2);
    assert.deepEqual(await page.locator('#attachments img').evaluateAll((els) => els.map((e) => e.alt)), ['red.png', 'blue.png']);
    await page.click('#attachments .remove-attachment[aria-label="Remove image red.png"]');
    await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 1);

    const body = await send(page, 'what colour is this pasted image?');
    assert.deepEqual(body.images, [{ url: urls[1] }]);
    assert.equal(body.client_tools, undefined, 'the UI declares no caller tools');
    await footer(page, 'completed');
    assert.deepEqual(imagesSeenByModel('pasted image'), [urls[1]]);
    assert.equal(await page.locator('#attachments').isHidden(), true, 'the tray is emptied once sent');

    // The message shows the thumbnail; a click opens it large in a dialog; Escape closes it.
    const thumb = page.locator('.message.user .message-images .thumbnail');
    assert.equal(await thumb.count(), 1);
    assert.equal(await page.locator('.message.user').first().evaluate((b) => b.firstChild.textContent), 'what colour is this pasted image?');
    await thumb.click();
    await page.waitForSelector('dialog.lightbox[open] .lightbox-image');
    assert.equal(await page.locator('dialog.lightbox .lightbox-image').getAttribute('src'), urls[1]);
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog.lightbox', { state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('thumbnail')), true, 'focus returns to the thumbnail');
    await page.close();
  });

  test('a dropped image is sent, and its thumbnail is there again after a reload', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openPage();
    const [url] = await deliver(page, 'drop', [['green.png', '#0a0']]);
    await page.waitForSelector('#attachments .attachment img[alt="green.png"]');
    const body = await send(page, 'describe the dropped image');
    assert.deepEqual(body.images, [{ url }]);
    await footer(page, 'completed');
    assert.deepEqual(imagesSeenByModel('dropped image'), [url]);

    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await footer(page, 'completed');
    const img = page.locator('.message.user .message-images .thumbnail img');
    await img.waitFor();
    await page.waitForFunction(() => {
      const i = document.querySelector('.message.user .message-images img');
      return i?.complete && i.naturalWidth === 48;
    });
    // The stored image, as the page fetched it: the same pixels as were sent.
    const pixel = await img.evaluate((i) => {
      const c = Object.assign(document.createElement('canvas'), { width: 1, height: 1 });
      c.getContext('2d').drawImage(i, 0, 0);
      return [...c.getContext('2d').getImageData(0, 0, 1, 1).data];
    });
    assert.deepEqual(pixel, [0, 170, 0, 255]);
    await page.close();
  });

  test('what the server would refuse is refused before sending, with the file named', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openPage();
    await deliver(page, 'drop', [['notes.txt', 'text/plain', 10]]);
    await page.waitForSelector('#attach-error:not([hidden])');
    assert.match(await page.textContent('#attach-error'), /notes\.txt is not a PNG, JPEG, WebP or GIF image/);

    await deliver(page, 'drop', [['huge.png', 'image/png', 5 * 1024 * 1024 + 1]]);
    await page.waitForFunction(() => /huge\.png is larger than 5 MB/.test(document.querySelector('#attach-error').textContent));
    assert.equal(await page.locator('#attachments .attachment').count(), 0);

    const nine = Array.from({ length: 9 }, (_, i) => [`n${i + 1}.png`, `hsl(${i * 40} 80% 50%)`]);
    await deliver(page, 'paste', nine);
    await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 8);
    assert.match(await page.textContent('#attach-error'), /n9\.png was not added: at most 8 images per message/);

    // Images alone are not a question.
    const posts = [];
    page.on('request', (r) => r.method() === 'POST' && /\/runs$/.test(r.url()) && posts.push(r));
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => /Write a message/.test(document.querySelector('#attach-error').textContent));
    assert.equal(posts.length, 0);

    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], `tray, ${colorScheme}`);
    }
    await page.close();
  });

  test('an image as large as the page takes is sent whole; more than 20 MB together is refused', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openPage();
    // PNG files of 4.5 MB: the signature, then zeros.
    const bigs = (names) => page.evaluate((names) => {
      const transfer = new DataTransfer();
      for (const name of names) {
        const bytes = new Uint8Array(4.5 * 1024 * 1024);
        bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
        transfer.items.add(new File([bytes], name, { type: 'image/png' }));
      }
      const chat = document.querySelector('#chat');
      for (const type of ['dragenter', 'dragover', 'drop']) {
        chat.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }
    }, names);
    await bigs(['big.png']);
    await page.waitForSelector('#attachments .attachment');
    await send(page, 'what is in this big picture?');
    await footer(page, 'completed');
    const [seen] = imagesSeenByModel('what is in this big picture?');
    assert.ok(seen?.startsWith('data:image/png;base64,iVBORw0KGgo'), 'the model got the image');
    assert.equal(seen.length, 'data:image/png;base64,'.length + Math.ceil((4.5 * 1024 * 1024) / 3) * 4);

    await bigs(['b1.png', 'b2.png', 'b3.png', 'b4.png', 'b5.png']);
    await page.waitForFunction(() => /b5\.png was not added: the images of a message are at most 20 MB together/
      .test(document.querySelector('#attach-error').textContent));
    assert.equal(await page.locator('#attachments .attachment').count(), 4);
    await page.close();
  });

  test('a model without vision: an inline error, the question and its images kept', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openPage(blind.base);
    const [url] = await deliver(page, 'paste', [['cat.png', '#888']]);
    await page.waitForSelector('#attachments .attachment');
    await send(page, 'what is in this picture?');
    await page.waitForFunction(() => /does not take images/.test(document.querySelector('#attach-error').textContent));
    assert.equal(await page.locator('#attach-error').getAttribute('role'), 'alert');
    assert.equal(await page.inputValue('#input'), 'what is in this picture?');
    assert.equal(await page.locator('#attachments img').getAttribute('src'), url);
    assert.equal(await page.locator('.message.user').count(), 0, 'no question was shown as sent');
    assert.equal(await page.locator('.run').count(), 0);
    await page.close();
  });

  test('thumbnails and the enlarged image pass axe, light and dark', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, server.base, 'warm up');
    await footer(page, 'completed');
    await deliver(page, 'paste', [['a.png', '#a0a'], ['b.png', '#0aa']]);
    await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 2);
    await send(page, 'two images');
    await page.waitForFunction(() => document.querySelectorAll('.run-footer[data-status="completed"]').length === 2);
    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], `thumbnails, ${colorScheme}`);
      await page.locator('.message-images .thumbnail').nth(1).click();
      await page.waitForSelector('dialog.lightbox[open]');
      assert.match(await page.textContent('dialog.lightbox h2'), /Image 2 of 2/);
      assert.deepEqual(await violations(page), [], `enlarged, ${colorScheme}`);
      await page.keyboard.press('Escape');
      await page.waitForSelector('dialog.lightbox', { state: 'detached' });
    }
    await page.close();
  });
});
