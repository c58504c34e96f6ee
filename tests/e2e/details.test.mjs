// The UI details a newcomer tripped over (issue 16, items 2 and 9), in headless Chromium against
// the real binary: tool cards stay separate when a provider repeats call ids across iterations,
// and calls after a follow-up are shown below it; "Stopping…" clears once the run is cancelled;
// the narrow-screen drawer closes on a tap beside it; the page loads without a failed request
// (favicon); no empty answer box before the first delta; the footer says what the agent is
// doing between LLM calls; the conversation list shows a time and the working dot beside
// ellipsised titles; a model failure is said once (issue 16 item 5).
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { ask, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

let llm;
let browser;
let server;

before(async () => {
  llm = await startMockLlm();
  browser = await startBrowser();
  server = await startReagent(llm.base);
});

after(async () => {
  await server?.stop();
  await browser?.close();
  await llm?.close();
});

/** An SSE body (docs/api.md) from `[event, data]` pairs, ids from 1. */
function sseBody(events) {
  return events.map(([event, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}

describe('reagent UI details', () => {
  test('cards stay separate when call ids repeat, and calls after a follow-up show below it', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    // The run's stream as a provider that reuses `call_1` in every iteration would produce it
    // (the server may rename repeats; the UI must not depend on it).
    await page.route('**/api/conversations/*/runs', (route) => {
      const conversation = route.request().url().split('/').at(-2);
      const step = (data) => ['step', data];
      const body = sseBody([
        ['start', { run_id: '00000000-0000-4000-8000-000000000001', conversation_id: conversation, model: 'mock', mode: 'native' }],
        step({ type: 'thinking', iteration: 1, reasoning: '' }),
        step({ type: 'tool_start', iteration: 1, call_id: 'call_1', tool: 'calculator', arguments: { expression: '6*7' } }),
        step({ type: 'tool_end', iteration: 1, call_id: 'call_1', tool: 'calculator', observation: '42', error: false, blocked: false, duration_ms: 1, artifacts: [] }),
        step({ type: 'interrupt', iteration: 1, ids: ['i-1'], contents: ['and the weekday?'] }),
        step({ type: 'thinking', iteration: 2, reasoning: '' }),
        step({ type: 'tool_start', iteration: 2, call_id: 'call_1', tool: 'current_time', arguments: { timezone: 'UTC' } }),
        step({ type: 'tool_end', iteration: 2, call_id: 'call_1', tool: 'current_time', observation: 'Tuesday', error: false, blocked: false, duration_ms: 1, artifacts: [] }),
        ['answer', { status: 'start' }],
        ['answer', { status: 'delta', content: '42, on a Tuesday.' }],
        ['answer', { status: 'done', content: '42, on a Tuesday.', fallback: false }],
        ['done', { status: 'completed', iterations: 3, tool_calls: 2, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, llm_calls: 3 }, elapsed_ms: 5, mode: 'native', answer: '42, on a Tuesday.', unprocessed_interrupts: [] }],
      ]);
      return route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
    });
    await page.goto(`${server.base}/`);
    await ask(browser, server.base, 'repeat my ids', page);
    await footer(page, 'completed');
    assert.deepEqual(await page.locator('.tool-card .tool-name').allTextContents(), ['calculator', 'current_time']);
    assert.deepEqual(await page.locator('.tool-card .tool-observation').allTextContents(), ['42', 'Tuesday']);
    const order = await page.locator('.run-steps > *').evaluateAll((els) =>
      els.map((e) => (e.classList.contains('tool-card') ? e.querySelector('.tool-name').textContent : e.className)));
    assert.deepEqual(order, ['calculator', 'interrupt drained', 'current_time']);
    await page.close();
  });

  test('a follow-up the run could not take becomes the next turn, which the page follows', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    const next = '00000000-0000-4000-8000-000000000022';
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, llm_calls: 1 };
    const answer = (text) => [['answer', { status: 'start' }], ['answer', { status: 'delta', content: text }], ['answer', { status: 'done', content: text, fallback: false }]];
    await page.route('**/api/conversations/*/runs', (route) => {
      const conversation = route.request().url().split('/').at(-2);
      const body = sseBody([
        ['start', { run_id: '00000000-0000-4000-8000-000000000021', conversation_id: conversation, model: 'mock', mode: 'native' }],
        ...answer('first answer'),
        ['done', { status: 'max_iterations', iterations: 1, tool_calls: 0, usage, elapsed_ms: 5, mode: 'native', answer: 'first answer', unprocessed_interrupts: [{ id: 'i-9', content: 'and one more thing' }], next_run_id: next }],
      ]);
      return route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
    });
    await page.route(`**/api/runs/${next}/events`, (route) => route.fulfill({
      status: 200,
      headers: { 'Content-Type': 'text/event-stream' },
      body: sseBody([
        ['start', { run_id: next, conversation_id: 'c', model: 'mock', mode: 'native' }],
        ...answer('second answer'),
        ['done', { status: 'completed', iterations: 1, tool_calls: 0, usage, elapsed_ms: 5, mode: 'native', answer: 'second answer', unprocessed_interrupts: [] }],
      ]),
    }));
    await page.goto(`${server.base}/`);
    await ask(browser, server.base, 'first question', page);
    await page.locator('section.run[data-state="completed"]').waitFor();
    const bubbles = await page.locator('.message.user.query').allTextContents();
    assert.deepEqual(bubbles.map((b) => b.trim()), ['first question', 'and one more thing']);
    const answers = await page.locator('.answer').allTextContents();
    assert.deepEqual(answers.map((a) => a.trim()), ['first answer', 'second answer']);
    await page.close();
  });

  test('a hint says what to set when the default model has no key', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    assert.equal(await page.locator('#key-hint').isVisible(), false, 'a key is set: no hint');
    const keyless = await startReagent('https://api.example.com/v1', { LLM_API_KEY: '' });
    try {
      await page.goto(`${keyless.base}/`);
      await page.locator('#key-hint').waitFor({ state: 'visible' });
      assert.match(await page.locator('#key-hint').textContent(), /LLM_API_KEY/);
    } finally {
      await keyless.stop();
      await page.close();
    }
  });

  test('a model failure is said once: the answer says what to set, the details stay folded', { timeout: SCENARIO_TIMEOUT }, async () => {
    // A provider that refuses every key, as a wrong LLM_API_KEY makes the real one do.
    const refusing = http.createServer((req, res) => {
      req.resume();
      res.writeHead(401, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided: sk-wrong', type: 'invalid_request_error' } }));
    });
    await new Promise((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const failing = await startReagent(`http://127.0.0.1:${refusing.address().port}/v1`);
    let page;
    try {
      page = await ask(browser, failing.base, 'hello');
      await footer(page, 'failed');
      const run = page.locator('section.run');
      assert.match(await run.locator('.answer').innerText(), /LLM_API_KEY/);
      const shown = await run.innerText();
      assert.equal(shown.split('refused the API key').length - 1, 1, shown);
      assert.ok(!shown.includes('Incorrect API key provided'), `provider details folded away: ${shown}`);
      await run.locator('.error-details summary').click();
      assert.match(await run.locator('.error-details .error').innerText(), /401[\s\S]*Incorrect API key provided/);
    } finally {
      await page?.close();
      await failing.stop();
      await new Promise((resolve) => refusing.close(resolve));
    }
  });

  test('"Stopping…" clears once the run is cancelled', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, server.base, 'slow: stop me');
    await page.waitForSelector('.run[data-run-id]');
    await page.click('#stop');
    await footer(page, 'cancelled');
    await page.waitForSelector('#stop', { state: 'hidden' });
    assert.equal(await page.locator('#composer-status').textContent(), '');
    await page.close();
  });

  test('the narrow-screen drawer closes on a tap beside it', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.click('#toggle-sidebar');
    await page.waitForSelector('body.show-sidebar');
    const box = await page.locator('#sidebar').boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width < 380, `drawer on screen: ${JSON.stringify(box)}`);
    await page.mouse.click(385, 600);
    await page.waitForFunction(() => !document.body.classList.contains('show-sidebar'));
    assert.ok((await page.locator('#sidebar').boundingBox()).x < 0, 'the drawer slid away');
    await page.close();
  });

  test('the page loads without a failed request, favicon included', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    const failed = [];
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    page.on('requestfailed', (r) => failed.push(`failed ${r.url()}`));
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.deepEqual(failed, []);
    // Headless Chromium does not fetch icons; a browser fetches the declared one (else
    // /favicon.ico, which was a 404 on every load).
    const href = await page.evaluate(() => document.querySelector('link[rel~="icon"]')?.href);
    assert.ok(href, 'an icon is declared');
    const icon = await page.request.get(href);
    assert.equal(icon.status(), 200);
    assert.match(icon.headers()['content-type'], /^image\//);
    await page.close();
  });

  test('no empty answer box before the first delta', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    const hidden = await page.evaluate(async () => {
      const { RunView } = await import('/run.js');
      const view = new RunView('r');
      view.apply({ id: 1, event: 'answer', data: { status: 'start' } });
      const before = view.answer.hidden;
      view.apply({ id: 2, event: 'answer', data: { status: 'delta', content: 'Hi' } });
      return [before, view.answer.hidden];
    });
    assert.deepEqual(hidden, [true, false]);
    await page.close();
  });

  test('between LLM calls the footer says what the agent is doing', { timeout: SCENARIO_TIMEOUT }, async () => {
    // The mock's first loop reply takes 1.5 s for a "slow" query.
    const page = await ask(browser, server.base, 'slow: show your work');
    await page.waitForSelector('.run-footer:has-text("iteration 1 · waiting for the model")');
    await page.waitForSelector('.run-footer:has-text("iteration 2 · waiting for the model")');
    await page.waitForSelector('.run-footer:has-text("writing the answer")');
    await footer(page, 'completed');
    await page.close();
  });

  test('the list shows a time beside each title and the working dot beside a long one', { timeout: SCENARIO_TIMEOUT }, async () => {
    const long = `slow: ${'a very long title that cannot fit the sidebar '.repeat(3)}`;
    const page = await ask(browser, server.base, long);
    const item = page.locator('#conv-list .conv.current.working');
    await item.waitFor();
    assert.match(await item.locator('.conv-time').textContent(), /\d{1,2}:\d{2}/);
    // The list re-renders as the run goes on (replaceChildren): a box read while its row is
    // being replaced is null, so read both again until they come from one row.
    let dot;
    let button;
    for (let tries = 0; tries < 50 && !(dot && button); tries += 1) {
      dot = await item.locator('.working-dot').boundingBox();
      button = await item.boundingBox();
      if (!(dot && button)) await page.waitForTimeout(50);
    }
    assert.ok(dot && dot.width > 0 && dot.x + dot.width <= button.x + button.width, 'the dot is inside the row, visible');
    await footer(page, 'completed');
    await page.close();
  });
});
