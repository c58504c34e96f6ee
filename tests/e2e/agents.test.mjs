// The new-conversation dialog (issue 44: agent with its description visible, system prompt,
// engine) in headless Chromium against the real binary: with several `[[agents]]` it offers
// them with their descriptions, and the conversation is created with the choices (stored, shown
// in the header, its run answered), by keyboard alone; axe-core finds nothing serious in it,
// light or dark. With the implicit agent only, there is no agent to choose.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { ask, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
}

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
  test('the new-conversation dialog: agents with their descriptions, instructions, engine', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    const count = async () => (await (await fetch(`${server.base}/api/conversations`)).json()).items.length;
    const before = await count();

    // By keyboard: Enter on + New opens it, the agents are radio buttons with their
    // descriptions on screen, Escape cancels and creates nothing.
    await page.focus('#new-conv');
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog.new-conversation[open]');
    const choices = page.locator('dialog[open] .agent-choice');
    assert.deepEqual(await choices.locator('.agent-choice-name').allTextContents(), ['researcher', 'writer']);
    assert.deepEqual(await choices.locator('.agent-choice-desc').allTextContents(), ['Looks things up', 'Writes things down']);
    assert.ok(await choices.locator('.agent-choice-desc').first().isVisible());
    assert.equal(await page.evaluate(() => document.activeElement?.value), 'researcher', 'the focus starts on the agent');
    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], `dialog, ${colorScheme}`);
    }
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog.new-conversation', { state: 'detached' });
    assert.equal(await count(), before);

    // Again: the arrow picks the next agent, Tab reaches the instructions and the engine,
    // Enter on Create creates it with all three.
    await page.focus('#new-conv');
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog.new-conversation[open]');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-system-prompt');
    await page.keyboard.type('Answer in French.');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-engine');
    await page.selectOption('#new-engine', 'react');
    await page.focus('dialog[open] button[value="ok"]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#conv-agent:has-text("writer")');
    assert.equal(await page.locator('#conv-engine').textContent(), 'ReAct (tool loop)');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input', 'then the message box has the focus');
    const id = (await page.evaluate(() => location.hash)).split('/').at(-1);
    const conv = await (await fetch(`${server.base}/api/conversations/${id}`)).json();
    assert.equal(conv.agent, 'writer');
    assert.equal(conv.engine, 'react');
    assert.equal(conv.system_prompt, 'Answer in French.');

    // A question typed with no conversation open starts one with the last agent chosen.
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#input', 'what is six times seven');
    await page.press('#input', 'Enter');
    await footer(page, 'completed');
    assert.equal(await page.locator('#conv-agent').textContent(), 'writer');
    await page.close();
  });

  test('with one agent there is nothing to choose', { timeout: SCENARIO_TIMEOUT }, async () => {
    const single = await startReagent(llm.base);
    const page = await browser.context.newPage();
    try {
      await page.goto(`${single.base}/`);
      await page.waitForSelector('body[data-ready="true"]');
      await page.click('#new-conv');
      await page.waitForSelector('dialog.new-conversation[open]');
      assert.equal(await page.locator('dialog[open] input[name="new-agent"]').count(), 0);
      await page.keyboard.press('Escape');
      await ask(browser, single.base, 'what is six times seven', page);
      await footer(page, 'completed');
      assert.equal(await page.locator('#conv-agent').isVisible(), false);
    } finally {
      await page.close();
      await single.stop();
    }
  });
});
