// A run that waits for an API client's own tools (docs/api.md "Caller tools"), seen in the
// browser UI (headless Chromium, the real binary, the mock LLM): an API client starts a run with
// `client_tools`, the model calls one, the run ends `requires_action`; the page shows the pending
// call (name, arguments) as a card saying the caller must answer it. Once the client sends the
// output, the page shows the card answered and the continuation's answer after it.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/caller.test.mjs

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const CONFIRM = {
  type: 'function',
  function: {
    name: 'confirm',
    description: 'Ask the user to confirm',
    parameters: { type: 'object', properties: { question: { type: 'string' } } },
  },
};

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

async function call(method, path, body) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: body && JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
  return response.json();
}

/** Waits until run `id` has `status`. */
async function runStatus(id, status) {
  for (let i = 0; i < 200; i += 1) {
    const run = await call('GET', `/api/runs/${id}`);
    if (run.status === status) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${id} never reached ${status}`);
}

async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
}

describe('reagent UI, caller tools', () => {
  test('a run waiting for the caller shows its pending calls, then the continuation', { timeout: SCENARIO_TIMEOUT }, async () => {
    const conv = await call('POST', '/api/conversations', { title: 'Train booking' });
    const started = await call('POST', `/api/conversations/${conv.id}/runs`, { query: 'Book the 9:40 train', client_tools: [CONFIRM] });
    await runStatus(started.run_id, 'requires_action');

    const page = await browser.context.newPage();
    await page.goto(`${server.base}/#/c/${conv.id}`);
    await footer(page, 'requires_action');
    const card = page.locator(`.run[data-run-id="${started.run_id}"] .caller-calls`);
    assert.equal(await card.count(), 1, 'one card, from the step and the done event together');
    assert.equal(await card.getAttribute('data-state'), 'pending');
    assert.match(await card.locator('h3').textContent(), /Waiting for the caller/);
    assert.match(await card.locator('.caller-note').textContent(), new RegExp(`API client .* must answer .*/api/runs/${started.run_id}/tool_outputs`));
    assert.deepEqual(await card.locator('.caller-call-name').allTextContents(), ['confirm']);
    assert.equal(await card.locator('.caller-call').getAttribute('data-call-id'), 'call_confirm');
    assert.deepEqual(JSON.parse(await card.locator('.caller-call-args').textContent()), { question: 'Book the 9:40 train?' });
    assert.match(await page.locator('.run-footer').textContent(), /^waiting for the caller’s tool outputs · /);
    assert.equal(await page.locator('.run .answer:not([hidden])').count(), 0, 'no answer was written');
    // The page offers nothing to answer it with.
    assert.equal(await card.locator('button, input, textarea').count(), 0);
    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], colorScheme);
    }

    // The API client answers; the continuation runs; the reopened page shows both.
    const next = await call('POST', `/api/runs/${started.run_id}/tool_outputs`, { outputs: [{ call_id: 'call_confirm', output: 'yes' }] });
    await runStatus(next.run_id, 'completed');
    await page.reload();
    await page.waitForSelector(`.run[data-run-id="${next.run_id}"] .run-footer[data-status="completed"]`);
    await page.waitForSelector(`.run[data-run-id="${started.run_id}"] .caller-calls[data-state="answered"]`);
    assert.equal(await page.locator('.message.user.query').count(), 1, 'the continuation has no question of its own');
    assert.match(await page.locator(`.run[data-run-id="${next.run_id}"] .run-meta`).textContent(), /continued with the caller’s tool outputs/);
    assert.match(await page.locator(`.run[data-run-id="${next.run_id}"] .answer`).textContent(), /All done\./);
    await page.close();
  });
});
