// The conversation list (issue 44, item 2), in headless Chromium against the real binary: all
// of 105 conversations are reachable by scrolling the list (pages load as its end comes into
// view); the search finds a word that occurs only in an old answer, beyond the first page; the
// list refreshes when a conversation starts in another tab at once, and from the API within the
// 30 s refresh.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/conversations.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newConversation, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 60000;

let llm;
let server;
let browser;

async function call(method, path, body) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}

/** Polls until `check()` is truthy (a run finishing in the background). */
async function until(check, what) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const value = await check();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let old;

before(async () => {
  llm = await startMockLlm();
  server = await startReagent(llm.base);
  browser = await startBrowser();
  // The oldest conversation: its answer alone holds "tnemevorpmi" (the query has it backwards).
  old = await call('POST', '/api/conversations', { title: 'Oldest' });
  await call('POST', `/api/conversations/${old.id}/runs`, { query: 'reverse improvement' });
  await until(async () => (await call('GET', `/api/conversations/${old.id}`)).messages
    .some((m) => m.kind === 'answer' && m.content.includes('tnemevorpmi')), 'the old answer');
  for (let i = 1; i <= 104; i += 1) {
    await call('POST', '/api/conversations', { title: `Conversation ${String(i).padStart(3, '0')}` });
  }
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await llm?.close();
});

async function openUi() {
  const page = await browser.context.newPage();
  await page.goto(`${server.base}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

describe('reagent UI, conversation list', () => {
  test('all 105 conversations are reachable by scrolling the list', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    const count = () => page.locator('#conv-list .conv').count();
    const first = await count();
    assert.ok(first < 105, `the first page already holds ${first}`);
    // Scroll the list to its end until no more pages come.
    for (let i = 0; i < 10 && (await count()) < 105; i += 1) {
      await page.$eval('#conv-scroll', (box) => {
        box.scrollTop = box.scrollHeight;
      });
      await page.waitForTimeout(300);
    }
    assert.equal(await count(), 105);
    assert.equal(await page.locator('#conv-list .conv[data-id="' + old.id + '"] .conv-title').textContent(), 'Oldest');
    assert.ok(await page.locator('#load-more').isHidden(), 'no "Load more" after the last page');
    // Still in order, newest first, each once.
    const titles = await page.locator('#conv-list .conv-title').allTextContents();
    assert.equal(new Set(titles).size, 105);
    assert.equal(titles[0], 'Conversation 104');
    await page.close();
  });

  test('search finds a word that occurs only in an old answer', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    assert.equal(await page.locator(`#conv-list .conv[data-id="${old.id}"]`).count(), 0, 'the old one is not on the first page');
    await page.fill('#conv-search', 'TNEMEVORPMI');
    await page.waitForFunction(() => document.querySelectorAll('#conv-list .conv').length === 1);
    assert.equal(await page.locator('#conv-list .conv').getAttribute('data-id'), old.id);
    await page.click('#conv-list .conv');
    await page.waitForSelector('.answer:has-text("tnemevorpmi")');
    // A search that matches nothing says so; clearing it brings the whole list back.
    await page.fill('#conv-search', 'no such words anywhere');
    await page.waitForSelector('#list-status:has-text("No conversation matches")');
    await page.fill('#conv-search', '');
    await page.waitForFunction(() => document.querySelectorAll('#conv-list .conv').length >= 50);
    await page.close();
  });

  test('a conversation started in another tab shows at once, one from the API within 30 s', { timeout: SCENARIO_TIMEOUT }, async () => {
    const watcher = await openUi();
    const other = await openUi();
    await newConversation(other);
    await other.fill('#input', 'What is 6*7 from the other tab?');
    await other.press('#input', 'Enter');
    // The other tab titles it after its first question; the watcher sees it without a reload.
    await watcher.waitForSelector('#conv-list .conv-title:has-text("from the other tab")', { timeout: 5000 });
    await other.close();
    await watcher.close();

    // From the API nothing tells the page: its 30 s refresh picks it up. A browser of its own,
    // whose clock the test moves on (a context's clock is shared by its pages).
    const clocked = await startBrowser();
    try {
      await clocked.context.clock.install();
      const page = await clocked.context.newPage();
      await page.goto(`${server.base}/`);
      await page.waitForSelector('body[data-ready="true"]');
      await call('POST', '/api/conversations', { title: 'Made through the API' });
      await page.waitForTimeout(300);
      assert.equal(await page.locator('#conv-list .conv-title:has-text("Made through the API")').count(), 0);
      await clocked.context.clock.fastForward(31000);
      await page.waitForSelector('#conv-list .conv-title:has-text("Made through the API")', { timeout: 5000 });
    } finally {
      await clocked.close();
    }
  });
});
