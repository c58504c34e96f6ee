// Dialogs and settings (issue 44, item 6), in headless Chromium against the real binary: rename
// and delete use the page's own dialogs (no window.prompt/confirm); the theme chosen in the
// settings applies at once and after a reload; the saved API key can be replaced and forgotten;
// the Tools drawer lists the open conversation's agent's tools. (The new-conversation dialog,
// with the agents' descriptions on screen, is newconv.test.mjs.)
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/settings.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ask, footer, newConversation, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;
const AGENTS = [
  '[[agents]]',
  'name = "clock"',
  'description = "Tells the time anywhere"',
  'tools = ["current_*"]',
  '',
  '[[agents]]',
  'name = "maths"',
  'description = "Does sums"',
  'tools = ["calculator"]',
].join('\n');

let llm;
let server;
let browser;

before(async () => {
  llm = await startMockLlm();
  server = await startReagent(llm.base, {}, AGENTS);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await llm?.close();
});

async function openUi() {
  const page = await browser.context.newPage();
  // Native dialogs are dismissed and counted: the page must use its own.
  page.native = [];
  page.on('dialog', (dialog) => {
    page.native.push(dialog.type());
    dialog.dismiss();
  });
  await page.goto(`${server.base}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

const background = (page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

describe('reagent UI, dialogs and settings', () => {
  test('rename and delete ask in the page, and Cancel changes nothing', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    await ask(browser, server.base, 'What is 6*7?', page);
    await footer(page, 'completed');
    await page.click('#rename-conv');
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    assert.equal(await dialog.locator('h2').textContent(), 'Rename conversation');
    // The title is selected: typing replaces it; Enter saves.
    assert.equal(await page.evaluate(() => document.activeElement.type), 'text');
    await page.keyboard.type('Sums');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('conv-title').textContent === 'Sums');
    await page.waitForSelector('#conv-list .conv.current .conv-title:has-text("Sums")');

    await page.click('#delete-conv');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog', { state: 'detached' });
    assert.equal(await page.locator('#delete-conv').isDisabled(), false, 'Escape cancelled the delete');
    await page.click('#delete-conv');
    await dialog.locator('button:has-text("Delete")').click();
    await page.waitForSelector('#delete-conv[disabled]');
    await page.waitForFunction(() => !document.querySelector('#conv-list .conv-title')?.textContent.includes('Sums'));
    assert.deepEqual(page.native, []);
    await page.close();
  });

  test('the theme applies at once and is kept after a reload', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    await page.emulateMedia({ colorScheme: 'light' });
    const light = await background(page);
    await page.click('#open-settings');
    await page.check('dialog[open] input[name="theme"][value="dark"]');
    const dark = await background(page);
    assert.notEqual(dark, light, 'dark applies at once');
    await page.keyboard.press('Escape');
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await background(page), dark, 'dark after a reload, while the OS says light');
    // Back to the system's choice.
    await page.click('#open-settings');
    await page.check('dialog[open] input[name="theme"][value="system"]');
    assert.equal(await background(page), light);
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await background(page), dark);
    await page.close();
  });

  test('the saved API key can be replaced and forgotten', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    await page.click('#open-settings');
    assert.match(await page.locator('#key-state').textContent(), /keeps no API key/);
    assert.ok(await page.locator('#forget-key').isDisabled());
    await page.fill('#new-key', 'secret-1');
    await page.click('#save-key');
    assert.match(await page.locator('#key-state').textContent(), /keeps an API key/);
    assert.equal(await page.evaluate(() => localStorage.getItem('reagent.apiKey')), 'secret-1');
    // The next request carries it.
    const sent = page.waitForRequest((r) => r.url().includes('/api/conversations'));
    await page.keyboard.press('Escape');
    await newConversation(page);
    assert.equal((await sent).headers().authorization, 'Bearer secret-1');
    await page.click('#open-settings');
    await page.click('#forget-key');
    assert.match(await page.locator('#key-state').textContent(), /keeps no API key/);
    assert.equal(await page.evaluate(() => localStorage.getItem('reagent.apiKey')), null);
    await page.close();
  });

  test('the Tools drawer lists the open conversation\'s agent\'s tools', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openUi();
    await newConversation(page, { agent: 'clock' });
    await page.waitForSelector('#conv-agent:has-text("clock")');
    await page.click('#show-tools');
    await page.waitForSelector('#tools-body .tools-scope');
    assert.deepEqual(await page.locator('#tools-body .tool-item-name').allTextContents(), ['current_time']);
    // All of them on request.
    await page.check('#all-tools');
    await page.waitForSelector('#tools-body .tool-item[data-tool="calculator"]');
    await page.uncheck('#all-tools');
    await page.waitForFunction(() => document.querySelectorAll('#tools-body .tool-item').length === 1);
    // Another conversation, another agent: the open drawer follows.
    await newConversation(page, { agent: 'maths' });
    await page.waitForSelector('#conv-agent:has-text("maths")');
    await page.waitForFunction(() => [...document.querySelectorAll('#tools-body .tool-item-name')].map((n) => n.textContent).join() === 'calculator');
    await page.close();
  });
});
