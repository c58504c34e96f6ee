// The browser UI end to end: headless Chromium drives static/ served by the real
// reagent binary, whose only model is the mock provider of support.mjs. Scenarios: a run with
// two tool cards and a streamed Markdown answer; a DAG run (plan, nested cards, answer); an interrupt sent mid-run and shown drained;
// Stop; a reload mid-run that re-attaches and shows the answer exactly once; an XSS answer that
// does not execute; an API key asked once. `SCREENSHOT=1` also writes docs/screenshot*.png (desktop, dark, phone).
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  REPO, ask as askIn, footer, startBrowser, startMockLlm, startProxy, startReagent,
} from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

let llm;
let browser;

before(async () => {
  llm = await startMockLlm();
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await llm?.close();
});

const ask = (base, query, page) => askIn(browser, base, query, page);

describe('reagent UI, auth off', () => {
  let server;

  before(async () => {
    server = await startReagent(llm.base);
  });

  after(async () => {
    await server?.stop();
  });

  test('a run shows two tool cards, the streamed Markdown answer and the footer', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(server.base, 'What is 6*7 and what time is it?');
    await footer(page, 'completed');
    const cards = page.locator('.tool-card');
    assert.equal(await cards.count(), 2);
    assert.deepEqual(await page.locator('.tool-card .tool-name').allTextContents(), ['calculator', 'current_time']);
    assert.deepEqual(await page.locator('.tool-card').evaluateAll((els) => els.map((e) => e.dataset.state)), ['ok', 'ok']);
    const args = JSON.parse(await cards.nth(0).locator('.tool-args').textContent());
    assert.deepEqual(args, { expression: '6*7' });
    assert.match(await cards.nth(0).locator('.tool-observation').textContent(), /42/);
    assert.match(await cards.nth(1).locator('.tool-status').textContent(), /done · \d+/);

    // Markdown rendered, not shown as source.
    assert.equal(await page.locator('.answer h2').textContent(), 'Result');
    assert.equal(await page.locator('.answer strong').first().textContent(), '42');
    assert.equal(await page.locator('.answer li').count(), 2);
    assert.match(await page.locator('.answer').textContent(), /All done\./);

    const foot = await page.locator('.run-footer').textContent();
    assert.match(foot, /^completed · 2 iterations · 2 tool calls · \d+ tokens/);
    assert.match(foot, /\d+(\.\d)? m?s$/);

    // The conversation got its title from the query and is listed.
    await page.waitForSelector('#conv-list .conv:has-text("What is 6*7")');

    if (process.env.SCREENSHOT) {
      await cards.nth(0).locator('summary').click();
      await page.screenshot({ path: path.join(REPO, 'docs', 'screenshot.png') });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: path.join(REPO, 'docs', 'screenshot-dark.png') });
      await page.emulateMedia({ colorScheme: 'light' });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: path.join(REPO, 'docs', 'screenshot-narrow.png') });
    }
    await page.close();
  });

  test('a DAG run shows its plan, each step with its own tool cards, and the answer', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await askIn(browser, server.base, 'plan: compute 6*7 and tell the time', page, { engine: 'dag' });
    await footer(page, 'completed');
    assert.equal(await page.locator('.run').getAttribute('data-engine'), 'dag');
    const steps = page.locator('.dag-round[data-round="1"] .dag-step');
    assert.deepEqual(await steps.evaluateAll((els) => els.map((e) => e.dataset.stepId)), ['A', 'B', 'C']);
    assert.deepEqual(await steps.evaluateAll((els) => els.map((e) => e.dataset.status)), ['completed', 'completed', 'completed']);
    assert.match(await steps.nth(2).locator('.dag-step-deps').textContent(), /after A, B/);
    assert.equal(await steps.nth(0).locator('.dag-step-model').textContent(), 'default');
    assert.match(await steps.nth(0).locator('.dag-step-duration').textContent(), /\d+(\.\d)? m?s/);
    // Every tool card sits inside its step: two per step, none loose in the run.
    for (const id of ['A', 'B', 'C']) {
      const cards = page.locator(`.dag-step[data-step-id="${id}"] .tool-card`);
      assert.equal(await cards.count(), 2, `cards of ${id}`);
      assert.deepEqual(await cards.evaluateAll((els) => els.map((e) => e.dataset.state)), ['ok', 'ok']);
    }
    assert.equal(await page.locator('.run-steps > .tool-card').count(), 0);
    assert.match(await page.locator('.dag-analysis').textContent(), /goal achieved · confidence 0\.90/);
    assert.equal(await page.locator('.answer h2').textContent(), 'Result');
    assert.match(await page.locator('.run-footer').textContent(), /^completed · 1 round · /);
    // The conversation keeps its engine: reopened, the header shows it.
    await page.reload();
    await page.waitForSelector('.dag-step[data-status="completed"]');
    assert.equal(await page.locator('#conv-engine').textContent(), 'plan (DAG)');
    await page.close();
  });

  test('an interrupt sent mid-run is shown queued, then drained, and answered', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(server.base, 'slow: compute 6*7');
    // Mid-run: the first loop reply takes 1.5 s; the box now sends follow-ups.
    await page.waitForSelector('.run[data-run-id]');
    await page.waitForSelector('#stop:not([hidden])');
    await page.fill('#input', 'also tell me the weekday');
    await page.press('#input', 'Enter');
    const item = page.locator('.interrupt', { hasText: 'also tell me the weekday' });
    await item.waitFor();
    await page.waitForSelector('.interrupt.drained:has-text("also tell me the weekday")');
    await footer(page, 'completed');
    assert.equal(await page.locator('.interrupt').count(), 1, 'the follow-up is shown once');
    assert.match(await item.locator('.badge').textContent(), /read by the agent/);
    assert.match(await page.locator('.answer').textContent(), /Follow-up: handled your follow-up/);
    assert.equal(await page.locator('.run').count(), 1, 'the follow-up did not start a second run');
    await page.close();
  });

  test('Stop cancels the run and the footer says cancelled', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(server.base, 'slow: something to stop');
    await page.waitForSelector('.run[data-run-id]');
    await page.click('#stop');
    await footer(page, 'cancelled');
    assert.match(await page.locator('.run-footer').textContent(), /^cancelled/);
    await page.waitForSelector('#stop', { state: 'hidden' });
    await page.close();
  });

  test('a reload mid-run re-attaches and ends with the full answer exactly once', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(server.base, 'slow: reload me');
    // Reload while the answer is streaming (the mock sends a chunk every 300 ms).
    await page.waitForSelector('.answer:not([hidden])');
    const hash = await page.evaluate(() => location.hash);
    await page.reload();
    assert.equal(await page.evaluate(() => location.hash), hash);
    await footer(page, 'completed');
    assert.equal(await page.locator('.run').count(), 1);
    assert.equal(await page.locator('.tool-card').count(), 2);
    const text = await page.locator('.answer').textContent();
    assert.equal(text.match(/Six times seven is 42\./g)?.length, 1, text);
    assert.equal(text.match(/All done\./g)?.length, 1, text);
    assert.equal(await page.locator('.message.user').count(), 1);
    await page.close();
  });

  test('a dropped connection resumes from the last event id without duplicating text', { timeout: SCENARIO_TIMEOUT }, async () => {
    // The page talks to reagent through a proxy that the test can cut.
    const proxy = await startProxy(server.base);
    try {
      const page = await ask(proxy.base, 'slow: survive a network drop');
      // Cut while the answer is streaming (a chunk every 300 ms).
      await page.waitForSelector('.answer:not([hidden])');
      assert.ok(proxy.dropAll() > 0, 'the stream was open');
      await page.waitForSelector('body[data-resumes]', { state: 'attached' });
      await footer(page, 'completed');
      assert.equal(await page.locator('.tool-card').count(), 2);
      const text = await page.locator('.answer').textContent();
      assert.equal(text.match(/Six times seven is 42\./g)?.length, 1, text);
      assert.equal(text.match(/All done\./g)?.length, 1, text);
      await page.close();
    } finally {
      await proxy.close();
    }
  });

  test('HTML in the answer is sanitised and never executes', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(server.base, 'xss please');
    await footer(page, 'completed');
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal(await page.locator('img[onerror]').count(), 0);
    assert.equal(await page.locator('.answer script').count(), 0);
    // The Markdown table around it still renders.
    assert.equal(await page.locator('.answer table td').first().textContent(), 'calculator');
    await page.close();
  });
});

describe('reagent UI, auth on', () => {
  let server;

  before(async () => {
    server = await startReagent(llm.base, { REAGENT_API_KEYS: 'ui:secret' });
  });

  after(async () => {
    await server?.stop();
  });

  test('the page asks for the API key once, then works', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('#auth:not([hidden])');
    await page.fill('#api-key', 'secret');
    await page.click('#auth-submit');
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector('#auth', { state: 'hidden' });
    await ask(server.base, 'What is 6*7?', page);
    await footer(page, 'completed');
    // Every request of the page (list, create, rename, run, events) went through one prompt.
    assert.equal(await page.evaluate(() => document.body.dataset.authPrompts), '1');
    assert.equal(await page.locator('.tool-card').count(), 2);
    // The key is remembered: a reload opens without asking.
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await footer(page, 'completed');
    assert.equal(await page.locator('#auth').isHidden(), true);
    assert.equal(await page.evaluate(() => document.body.dataset.authPrompts), undefined);
    await page.close();
  });
});
