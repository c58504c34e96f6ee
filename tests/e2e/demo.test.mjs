// The first minute of a new user, in headless Chromium: README's first command (`cargo run
// --release -- serve --demo`), run as the already built debug binary with the same arguments
// in an empty folder holding the checkout's config.toml, with no key and no model variable.
// The UI says it is a demo model, and a tool question gets its tool card and the right answer.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ask, footer, quickStartArgs, startAsUser, startBrowser } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;
const DEMO_ARGS = ['serve', '--demo'];

let browser;
let server;

before(async () => {
  browser = await startBrowser();
  server = await startAsUser(DEMO_ARGS);
});

after(async () => {
  await server?.stop();
  await browser?.close();
});

describe('reagent UI, the demo of the Quick start', () => {
  test("README's first command is the demo command this test runs", () => {
    assert.deepEqual(
      quickStartArgs(),
      DEMO_ARGS,
      "README's first command should be `cargo run --release -- serve --demo`",
    );
  });

  test('the start-up log says the answers are scripted', () => {
    const warning = server.log().split('\n').find((l) => l.includes('WARN') && l.includes('Demo model'));
    assert.ok(warning, server.log());
    assert.match(warning, /scripted answers, no real LLM/);
  });

  test('a tool question gets its tool card and the answer, under the demo label', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.locator('#demo-banner').waitFor({ state: 'visible' });
    assert.match(await page.locator('#demo-banner').textContent(), /Demo model: scripted answers, no real LLM/);
    assert.equal(await page.locator('#demo-badge').textContent(), 'demo');
    assert.equal(await page.locator('#key-hint').isVisible(), false, 'no key is needed');

    await ask(browser, server.base, 'What is 17 * 23?', page);
    await footer(page, 'completed');
    const card = page.locator('.tool-card');
    assert.equal(await card.count(), 1);
    assert.equal(await card.locator('.tool-name').textContent(), 'calculator');
    assert.equal(await card.getAttribute('data-state'), 'ok');
    assert.equal(await card.locator('.tool-observation').textContent(), '391');
    const answer = await page.locator('.answer').innerText();
    assert.match(answer, /17 \* 23 = 391/);
    await page.close();
  });
});
