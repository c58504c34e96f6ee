// The Usage drawer (docs/api.md, Budgets and usage) in headless Chromium against the real binary:
// a tenant that ran on two priced models sees this window's spend against its daily budget and
// the tokens and cost by day and by model as inline SVG charts and a table; a single day of
// usage is a bar, not a block.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/usage.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

let llm;
let browser;
let server;

before(async () => {
  llm = await startMockLlm();
  browser = await startBrowser();
  const model = (name, input, output) =>
    [
      '[[models]]',
      `name = "${name}"`,
      `base_url = "${llm.base}"`,
      `model = "mock"`,
      `price = { input = ${input}, output = ${output} }`,
      '',
    ].join('\n');
  const config = [
    'default_model = "small"',
    model('small', 1, 2),
    model('large', 10, 20),
    '[[budgets]]',
    'tenant = "*"',
    'window = "day"',
    'tokens = 100000',
    '',
  ].join('\n');
  server = await startReagent(llm.base, {}, config);
});

after(async () => {
  await server?.stop();
  await browser?.close();
  await llm?.close();
});

/** Runs `query` in a new conversation on `model` and waits for its end. */
async function runOn(model, query) {
  const post = (path, body) =>
    fetch(`${server.base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const conv = await post('/api/conversations', { model });
  const { run_id: run } = await post(`/api/conversations/${conv.id}/runs`, { query });
  const deadline = Date.now() + 20000;
  for (;;) {
    const state = await (await fetch(`${server.base}/api/runs/${run}`)).json();
    if (state.status !== 'running') return state;
    assert.ok(Date.now() < deadline, `run ${run} still running`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('reagent UI, usage drawer', () => {
  test('shows the spend against the budget and charts by day and by model', { timeout: SCENARIO_TIMEOUT }, async () => {
    const small = await runOn('small', 'What is 6 * 7?');
    const large = await runOn('large', 'What is 6 * 7?');
    assert.equal(small.status, 'completed');
    assert.equal(large.status, 'completed');
    assert.ok(large.usage.cost_usd > small.usage.cost_usd, JSON.stringify([small.usage, large.usage]));

    const page = await browser.context.newPage();
    await page.goto(server.base);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.locator('#usage-panel').isHidden(), true);
    await page.click('#show-usage');
    await page.waitForSelector('.usage-budget[data-window="day"]');

    // Every call of both runs counts against the day's budget.
    const usage = await (await fetch(`${server.base}/api/usage`)).json();
    const spent = usage.budgets[0].spent_tokens;
    assert.ok(spent > 0);
    const line = await page.locator('.usage-budget[data-window="day"] .usage-line[data-kind="tokens"]').textContent();
    assert.equal(line, `tokens: ${spent.toLocaleString('en-US')} of ${(100000).toLocaleString('en-US')}`);
    const meter = page.locator('.usage-budget[data-window="day"] [role="meter"]');
    assert.equal(await meter.getAttribute('aria-valuenow'), String(spent));

    // Today's bar in the daily charts, one bar per model, and the table by model.
    const today = new Date().toISOString().slice(0, 10);
    assert.equal(await page.locator(`.usage-chart svg rect[data-key="${today}"]`).count(), 2);
    for (const name of ['small', 'large']) {
      assert.equal(await page.locator(`.usage-chart svg rect[data-key="${name}"]`).count(), 1);
      assert.equal(await page.locator(`.usage-table tr[data-model="${name}"]`).count(), 1);
    }
    // A single day of usage is one thin bar among the month's days, not a block across the
    // chart (issue 51); two models are two bars of a bar's width.
    for (const bar of await page.locator(`.usage-chart svg rect[data-key="${today}"]`).all()) {
      assert.ok(Number(await bar.getAttribute('width')) <= 10, await bar.getAttribute('width'));
      assert.ok(Number(await bar.getAttribute('x')) > 240, 'today is at the right end');
    }
    const first = await page.locator('.usage-chart svg .usage-chart-label').first().textContent();
    assert.equal(first, new Date(Date.now() - 30 * 86400000).toISOString().slice(0, 10));
    for (const name of ['small', 'large']) {
      const width = Number(await page.locator(`.usage-chart svg rect[data-key="${name}"]`).getAttribute('width'));
      assert.ok(width <= 24, `${name}: ${width}`);
    }
    const largeBar = Number(await page.locator('.usage-chart svg rect[data-key="large"]').getAttribute('height'));
    const smallBar = Number(await page.locator('.usage-chart svg rect[data-key="small"]').getAttribute('height'));
    assert.ok(largeBar > smallBar, `${largeBar} > ${smallBar}`);
    await page.close();
  });
});
