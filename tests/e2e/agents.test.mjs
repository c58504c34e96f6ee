// Choosing an agent (docs/protocols.md) in headless Chromium against the real binary: with several
// `[[agents]]` the sidebar offers them, a new conversation is created with the chosen one
// (stored, shown in the header, its run answered); with the implicit agent only, no menu.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ask, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

const AGENTS = `
[[agents]]
name = "researcher"
description = "Looks things up"
system_prompt = "Cite your sources."

[[agents]]
name = "writer"
description = "Writes things down"
max_iterations = 5
`;

let llm;
let browser;
let server;

before(async () => {
  llm = await startMockLlm();
  browser = await startBrowser();
  server = await startReagent(llm.base, {}, AGENTS);
});

after(async () => {
  await server?.stop();
  await browser?.close();
  await llm?.close();
});

describe('reagent UI, agents', () => {
  test('a new conversation uses the agent chosen in the sidebar', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator('#agent-pick').waitFor({ state: 'visible' });
    const options = await page.locator('#agent option').evaluateAll((els) => els.map((e) => [e.value, e.title]));
    assert.deepEqual(options, [['researcher', 'Looks things up'], ['writer', 'Writes things down']]);
    await page.selectOption('#agent', 'writer');
    await ask(browser, server.base, 'what is six times seven', page);
    await footer(page, 'completed');
    assert.equal(await page.locator('#conv-agent').textContent(), 'writer');
    const id = (await page.evaluate(() => location.hash)).split('/').at(-1);
    const conv = await page.evaluate(async (cid) => (await fetch(`/api/conversations/${cid}`)).json(), id);
    assert.equal(conv.agent, 'writer');
    assert.equal(conv.messages.at(-1).role, 'assistant');
    await page.close();
  });

  test('with one agent there is nothing to choose', { timeout: SCENARIO_TIMEOUT }, async () => {
    const single = await startReagent(llm.base);
    const page = await browser.context.newPage();
    try {
      await page.goto(`${single.base}/`);
      await page.waitForSelector('body[data-ready="true"]');
      assert.equal(await page.locator('#agent-pick').isVisible(), false);
      await ask(browser, single.base, 'what is six times seven', page);
      await footer(page, 'completed');
      assert.equal(await page.locator('#conv-agent').isVisible(), false);
    } finally {
      await page.close();
      await single.stop();
    }
  });
});
