// Regenerate and edit-and-resend (issue 44, item 4), in headless Chromium against the real binary
// and the mock LLM: each forks the conversation before the turn it redoes
// (`POST /api/conversations/{id}/fork`), runs the query (the same, or the edited text) in the
// fork, which opens with a "forked from" link back; the original keeps its history. A title
// made from a long question ends with an ellipsis, and a fork's suffix stays in sight where the
// list and the header cut a long title (issue 51, item 7).
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/fork.test.mjs

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { ask, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let llm;
let server;
let browser;

before(async () => {
  llm = await startMockLlm();
  server = await startReagent(llm.base);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await llm?.close();
});

async function get(path) {
  const response = await fetch(`${server.base}${path}`);
  assert.ok(response.ok, `GET ${path}: ${response.status}`);
  return response.json();
}

/** axe-core's serious and critical violations in the page as it is now. */
async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
}

/** The conversation open in `page` (from the URL), as the API returns it. */
async function openConversation(page) {
  const id = await page.evaluate(() => location.hash.match(/^#\/c\/(.+)$/)?.[1]);
  assert.ok(id, 'a conversation is open');
  return get(`/api/conversations/${id}`);
}

const queries = (conv) => conv.messages.filter((m) => m.kind === 'query').map((m) => m.content);

/** Waits until `n` runs of the open conversation show `completed`. */
async function completed(page, n) {
  await page.waitForFunction(
    (count) => document.querySelectorAll('.run-footer[data-status="completed"]').length === count
      && document.querySelectorAll('.run').length === count,
    n,
  );
}

/** Sends `text` in the open conversation and waits for its run, the `n`-th, to complete. */
async function send(page, text, n) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
  await completed(page, n);
}

/** A conversation with two finished turns; returns it from the API. */
async function twoTurns() {
  const page = await ask(browser, server.base, 'What is 6*7?');
  await completed(page, 1);
  await send(page, 'reverse apple', 2);
  await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("elppa")');
  return { page, original: await openConversation(page) };
}

/** Waits for the page to open a conversation other than `id` and its run to finish. */
async function forkOpened(page, id, runs) {
  await page.waitForFunction((old) => location.hash.startsWith('#/c/') && !location.hash.endsWith(old), id);
  await completed(page, runs);
  return openConversation(page);
}

describe('reagent UI, forks', () => {
  test('regenerate forks before the last turn and runs its query again', { timeout: SCENARIO_TIMEOUT }, async () => {
    const { page, original } = await twoTurns();
    const [firstRun, lastRun] = original.messages.filter((m) => m.kind === 'query').map((m) => m.run_id);
    // Only the last answer offers it.
    assert.equal(await page.locator('.run .regenerate').count(), 1);
    assert.equal(await page.locator('.run').last().locator('.regenerate').count(), 1);

    await page.click('.run .regenerate');
    const fork = await forkOpened(page, original.id, 2);
    assert.deepEqual(fork.forked_from, { conversation_id: original.id, run_id: firstRun });
    assert.deepEqual(queries(fork), ['What is 6*7?', 'reverse apple']);
    assert.notEqual(fork.messages.find((m) => m.content === 'reverse apple').run_id, lastRun);
    assert.equal(fork.title, `${original.title} (regenerated)`);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("elppa")');
    assert.equal(await page.textContent('#conv-title'), fork.title);

    // The fork's header link and the editor pass axe in both themes.
    await page.locator('.edit-query-button').first().click();
    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], colorScheme);
    }
    await page.keyboard.press('Escape');

    // The original is untouched, and the header links back to it.
    const again = await get(`/api/conversations/${original.id}`);
    assert.deepEqual(again.messages, original.messages);
    const link = page.locator('#conv-fork');
    await page.waitForFunction((title) => document.querySelector('#conv-fork')?.textContent.includes(title), original.title);
    assert.equal(await link.getAttribute('href'), `#/c/${original.id}`);
    await link.click();
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, original.id);
    await page.waitForFunction(() => document.querySelector('#conv-fork').hidden);
    await completed(page, 2);
    await page.close();
  });

  test('edit and resend forks before the edited turn and runs the new text', { timeout: SCENARIO_TIMEOUT }, async () => {
    const { page, original } = await twoTurns();
    const firstRun = original.messages.find((m) => m.kind === 'query').run_id;
    assert.equal(await page.locator('.query-actions .edit-query-button').count(), 2);

    // Escape leaves the editor without a change.
    await page.locator('.edit-query-button').nth(1).click();
    await page.waitForSelector('.edit-query textarea');
    assert.equal(await page.inputValue('.edit-query textarea'), 'reverse apple');
    assert.equal(await page.locator('.message.user.query:visible').count(), 1, 'the editor replaces the bubble');
    assert.equal(await page.locator('.edit-query-button:visible').count(), 1);
    await page.keyboard.press('Escape');
    await page.waitForSelector('.edit-query', { state: 'detached' });
    assert.deepEqual(await page.locator('.message.user.query:visible').allTextContents(), ['What is 6*7?', 'reverse apple']);

    // The second question, edited.
    await page.locator('.edit-query-button').nth(1).click();
    await page.fill('.edit-query textarea', 'reverse cherry');
    await page.click('.edit-query button[type="submit"]');
    const fork = await forkOpened(page, original.id, 2);
    assert.deepEqual(fork.forked_from, { conversation_id: original.id, run_id: firstRun });
    assert.deepEqual(queries(fork), ['What is 6*7?', 'reverse cherry']);
    assert.equal(fork.title, `${original.title} (edited)`);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("yrrehc")');
    assert.deepEqual(queries(await get(`/api/conversations/${original.id}`)), ['What is 6*7?', 'reverse apple']);

    // The first question of the fork, edited: a fork of the fork with no history, titled after
    // the original (one suffix).
    await page.locator('.edit-query-button').first().click();
    await page.fill('.edit-query textarea', 'reverse plum');
    await page.keyboard.press('Control+Enter');
    const second = await forkOpened(page, fork.id, 1);
    assert.deepEqual(second.forked_from, { conversation_id: fork.id, run_id: null });
    assert.deepEqual(queries(second), ['reverse plum']);
    assert.equal(second.title, `${original.title} (edited)`);
    await page.waitForSelector('.answer[data-complete="true"]:has-text("mulp")');
    assert.equal(await page.locator('.message.user.query').count(), 1);
    await page.close();
  });

  test('a long question\'s title ends with an ellipsis; its fork\'s suffix stays in sight', { timeout: SCENARIO_TIMEOUT }, async () => {
    const long = 'What is 6*7, and could you explain every single step of the reasoning in full detail?';
    const page = await ask(browser, server.base, long);
    await completed(page, 1);
    await page.waitForFunction(() => document.querySelector('#conv-title').textContent.endsWith('…'));
    const original = await openConversation(page);
    assert.equal([...original.title].length, 60, original.title);
    assert.ok(long.startsWith(original.title.slice(0, -1).trimEnd()), original.title);

    await page.click('.run .regenerate');
    const fork = await forkOpened(page, original.id, 1);
    assert.equal(fork.title, `${original.title} (regenerated)`);
    // The list is narrow: both titles are cut, the fork's before its suffix, which shows whole.
    const item = page.locator(`#conv-list .conv[data-id="${fork.id}"]`);
    await item.waitFor();
    const shown = await item.evaluate((b) => {
      const text = b.querySelector('.title-text');
      const suffix = b.querySelector('.title-suffix');
      const box = b.getBoundingClientRect();
      const end = suffix.getBoundingClientRect();
      return { suffix: suffix.textContent, inside: end.width > 0 && end.right <= box.right + 0.5, cut: text.scrollWidth > text.clientWidth };
    });
    assert.deepEqual(shown, { suffix: ' (regenerated)', inside: true, cut: true });
    const head = await page.evaluate(() => {
      const h = document.querySelector('#conv-title');
      const suffix = h.querySelector('.title-suffix');
      return [suffix?.textContent, suffix && suffix.getBoundingClientRect().right <= h.getBoundingClientRect().right + 0.5];
    });
    assert.deepEqual(head, [' (regenerated)', true]);
    await page.close();
  });

  test('regenerate and edit in a fork fork at its copied turns', { timeout: SCENARIO_TIMEOUT }, async () => {
    // Issue 51, item 5: the fork's copied first turn keeps the original's run id.
    const { page, original } = await twoTurns();
    const firstRun = original.messages.find((m) => m.kind === 'query').run_id;
    await page.click('.run .regenerate');
    const fork = await forkOpened(page, original.id, 2);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("elppa")');

    await page.click('.run .regenerate');
    const again = await forkOpened(page, fork.id, 2);
    assert.deepEqual(again.forked_from, { conversation_id: fork.id, run_id: firstRun });
    assert.deepEqual(queries(again), ['What is 6*7?', 'reverse apple']);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("elppa")');

    await page.locator('.edit-query-button').nth(1).click();
    await page.fill('.edit-query textarea', 'reverse lime');
    await page.click('.edit-query button[type="submit"]');
    const edited = await forkOpened(page, again.id, 2);
    assert.deepEqual(edited.forked_from, { conversation_id: again.id, run_id: firstRun });
    assert.deepEqual(queries(edited), ['What is 6*7?', 'reverse lime']);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("emil")');
    await page.close();
  });

  test('an edit whose fork fails keeps the editor and its text', { timeout: SCENARIO_TIMEOUT }, async () => {
    const { page, original } = await twoTurns();
    const refuse = (route) => route.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'unavailable', message: 'the database cannot write' } }),
    });
    await page.route('**/fork', refuse);
    await page.locator('.edit-query-button').nth(1).click();
    await page.fill('.edit-query textarea', 'reverse kiwi');
    await page.click('.edit-query button[type="submit"]');
    await page.waitForFunction(() => document.querySelector('#composer-status').textContent.includes('Could not resend'));
    assert.equal(await page.inputValue('.edit-query textarea'), 'reverse kiwi');
    assert.ok(await page.isEnabled('.edit-query button[type="submit"]'));

    // Sent again once the server takes it: the fork runs the edited text.
    await page.unroute('**/fork', refuse);
    await page.click('.edit-query button[type="submit"]');
    const fork = await forkOpened(page, original.id, 2);
    assert.deepEqual(queries(fork), ['What is 6*7?', 'reverse kiwi']);
    await page.waitForSelector('.run:last-of-type .answer[data-complete="true"]:has-text("iwik")');
    await page.close();
  });
});
