// The agent editor (issue 55: Manage agents… beside the new-conversation dialog's picker) in
// headless Chromium against the real binary: an agent made in the form appears in the picker and
// a conversation runs with it (its prompt and tools reach the model); an edit makes version 2 with
// version 1 listed and viewable, and what is typed survives viewing it; delete asks first; a
// refusal (400 naming the nearest tool, a name that is no slug, a configured agent's name) is
// shown beside its field with the form kept and nothing stored; configured agents are view-only.
// By keyboard, with the focus kept in the editor; axe finds nothing serious light or dark; at
// phone width nothing overflows. Across a restart on the same database: the agents and every
// version are there (in the editor too), a conversation keeps its version, and an edit made
// while one of its runs works changes nothing in that run.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/agents-editor.test.mjs

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

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

async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
}

const getJson = async (path) => {
  const response = await fetch(`${server.base}${path}`);
  return { status: response.status, body: response.status === 200 ? await response.json() : null };
};

const postAgent = async (body) => {
  const response = await fetch(`${server.base}/api/agents`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  assert.equal(response.status, 201, await response.text());
};

/** A page with the UI, + New's dialog open, then the agent editor from Manage agents…. */
async function openEditor(page) {
  if (!page) {
    page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
  }
  await page.click('#new-conv');
  await page.waitForSelector('dialog.new-conversation[open]');
  await page.click('#manage-agents');
  await page.waitForSelector('dialog.agents-editor[open] .agent-row');
  return page;
}

const editor = 'dialog.agents-editor[open]';
const row = (name) => `${editor} .agent-row[data-agent="${name}"]`;
const pickerNames = (page) => page.locator('dialog.new-conversation input[name="new-agent"]').evaluateAll((r) => r.map((x) => x.value));

describe('reagent UI, the agent editor', () => {
  test('an agent made in the editor is in the picker and a conversation runs with it', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openEditor();
    await page.click('#agents-new');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'agent-name', 'the form opens on the name');
    // The models and tools offered are the server's.
    const models = (await getJson('/api/models')).body.map((m) => m.name);
    const offered = await page.locator('#agent-model option').evaluateAll((o) => o.map((x) => x.value).filter(Boolean));
    assert.deepEqual(offered, models);
    const tools = (await getJson('/api/tools')).body.map((t) => t.name);
    assert.deepEqual(await page.locator('input[name="agent-tool"]').evaluateAll((b) => b.map((x) => x.value)), tools);
    assert.ok(await page.locator('input[name="agent-tool"][value="calculator"]').isHidden(), 'every tool: nothing to tick');

    await page.fill('#agent-name', 'reviewer');
    await page.fill('#agent-description', 'Reviews answers');
    await page.fill('#agent-system-prompt', 'You are the reviewer agent.');
    await page.check('input[name="agent-tools-mode"][value="some"]');
    await page.check('input[name="agent-tool"][value="calculator"]');
    await page.check('input[name="agent-tool"][value="current_time"]');
    await page.selectOption('#agent-engine', 'react');
    await page.fill('#agent-max-iterations', '4');
    await page.click('#agent-save');
    await page.waitForSelector(`${editor} .agents-status:has-text("Saved reviewer, version 1.")`);
    assert.equal(await page.locator(`${row('reviewer')} .agent-badge`).textContent(), 'v1');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Edit reviewer', 'the focus is on what was saved');
    const stored = (await getJson('/api/agents/reviewer')).body;
    assert.equal(stored.source, 'api');
    assert.equal(stored.system_prompt, 'You are the reviewer agent.');
    assert.deepEqual(stored.tools, ['calculator', 'current_time']);
    assert.equal(stored.engine, 'react');
    assert.equal(stored.max_iterations, 4);
    // Opened again, the form shows what was stored.
    await page.click(`${row('reviewer')} .edit-agent`);
    await page.waitForSelector('.agent-version[data-version="1"]');
    assert.ok(await page.locator('input[name="agent-tools-mode"][value="some"]').isChecked());
    assert.deepEqual(await page.locator('input[name="agent-tool"]:checked').evaluateAll((b) => b.map((x) => x.value)), ['calculator', 'current_time']);
    assert.ok(await page.locator('input[name="agent-tool"][value="calculator"]').isVisible());
    assert.equal(await page.inputValue('#agent-tool-patterns'), '');
    assert.equal(await page.inputValue('#agent-engine'), 'react');
    assert.equal(await page.inputValue('#agent-max-iterations'), '4');
    assert.equal(await page.inputValue('#agent-description'), 'Reviews answers');
    await page.click(`${editor} .agents-back`);
    await page.waitForSelector(row('reviewer'));

    // Closed: the picker behind has it, chosen, with its description.
    await page.click('#agents-close');
    await page.waitForSelector('dialog.new-conversation input[name="new-agent"][value="reviewer"]');
    assert.deepEqual(await pickerNames(page), ['researcher', 'writer', 'reviewer']);
    assert.equal(await page.locator('dialog.new-conversation input[name="new-agent"]:checked').getAttribute('value'), 'reviewer');
    assert.ok(await page.locator('.agent-choice:has-text("Reviews answers")').isVisible());
    await page.click('dialog.new-conversation button[value="ok"]');
    await page.waitForSelector('#conv-agent:has-text("reviewer")');
    const seen = llm.requests.length;
    await page.fill('#input', 'what is six times seven');
    await page.press('#input', 'Enter');
    await footer(page, 'completed');
    const id = (await page.evaluate(() => location.hash)).split('/').at(-1);
    const conv = (await getJson(`/api/conversations/${id}`)).body;
    assert.equal(conv.agent, 'reviewer');
    assert.equal(conv.agent_version, 1);
    const asked = llm.requests.slice(seen);
    assert.ok(asked.some((r) => JSON.stringify(r.messages).includes('You are the reviewer agent.')), 'the agent’s prompt reached the model');
    const offeredTools = asked.find((r) => r.tools?.length)?.tools.map((t) => t.function.name).sort();
    assert.deepEqual(offeredTools, ['calculator', 'current_time']);
    await page.close();
  });

  test('an edit is a new version; the earlier one is listed and viewable, the form kept meanwhile', { timeout: SCENARIO_TIMEOUT }, async () => {
    await postAgent({ name: 'editable', description: 'First description', system_prompt: 'First prompt.' });
    const page = await openEditor();
    await page.click(`${row('editable')} .edit-agent`);
    await page.waitForSelector('#agent-name[readonly]');
    assert.equal(await page.inputValue('#agent-name'), 'editable');
    assert.equal(await page.inputValue('#agent-system-prompt'), 'First prompt.');
    assert.ok(await page.locator('input[name="agent-tools-mode"][value="all"]').isChecked());
    assert.deepEqual(await page.locator('.agent-version').evaluateAll((v) => v.map((x) => x.dataset.version)), ['1']);
    await page.fill('#agent-system-prompt', 'Second prompt.');
    await page.click('#agent-save');
    await page.waitForSelector(`${editor} .agents-status:has-text("Saved editable, version 2.")`);

    await page.click(`${row('editable')} .edit-agent`);
    await page.waitForSelector('.agent-version[data-version="2"]');
    assert.deepEqual(await page.locator('.agent-version').evaluateAll((v) => v.map((x) => x.dataset.version)), ['2', '1']);
    assert.match(await page.locator('.agent-version[data-version="2"]').textContent(), /current/);
    assert.equal(await page.inputValue('#agent-system-prompt'), 'Second prompt.');
    // Typed, not saved, then version 1 viewed (read-only) and back: still typed.
    await page.fill('#agent-description', 'Typed, not saved');
    await page.click('.agent-version[data-version="1"] .view-version');
    await page.waitForSelector(`${editor} .agent-summary`);
    const summary = await page.locator(`${editor} .agents-view`).textContent();
    assert.match(summary, /version 1/);
    assert.match(summary, /First prompt\./);
    assert.doesNotMatch(summary, /Second prompt/);
    assert.equal(await page.locator(`${editor} .agents-view input, ${editor} .agents-view textarea`).count(), 0, 'a version is not editable');
    await page.click(`${editor} .agents-back`);
    assert.equal(await page.inputValue('#agent-description'), 'Typed, not saved');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'View version 1');
    const versions = (await getJson('/api/agents/editable/versions')).body;
    assert.deepEqual(versions.map((v) => [v.version, v.system_prompt, v.description]),
      [[1, 'First prompt.', 'First description'], [2, 'Second prompt.', 'First description']]);
    await page.close();
  });

  test('delete asks first; the agent leaves the list and the picker', { timeout: SCENARIO_TIMEOUT }, async () => {
    await postAgent({ name: 'doomed', description: 'Soon gone' });
    const page = await openEditor();
    await page.click(`${row('doomed')} .delete-agent`);
    await page.waitForSelector('dialog[open]:has-text("Delete the agent “doomed”")');
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog[open]:has-text("Delete the agent")', { state: 'detached' });
    assert.ok(await page.locator(editor).isVisible(), 'Escape closed the confirmation only');
    assert.equal((await getJson('/api/agents/doomed')).status, 200);

    await page.click(`${row('doomed')} .delete-agent`);
    await page.click('dialog[open] button.danger[value="ok"]');
    await page.waitForSelector(`${editor} .agents-status:has-text("Deleted doomed.")`);
    assert.equal(await page.locator(row('doomed')).count(), 0);
    assert.equal((await getJson('/api/agents/doomed')).status, 404);
    await page.click('#agents-close');
    await page.waitForFunction(() => !document.querySelector('dialog.new-conversation input[name="new-agent"][value="doomed"]'));
    assert.ok(await page.locator('dialog.new-conversation[open]').isVisible(), 'the new-conversation dialog stays open');
    await page.close();
  });

  test('a refusal is shown beside its field, the form kept and nothing stored', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openEditor();
    await page.click('#agents-new');
    await page.fill('#agent-name', 'not a slug');
    await page.fill('#agent-description', 'Kept through errors');
    await page.fill('#agent-system-prompt', 'A prompt to keep.');
    await page.click('#agent-save');
    await page.waitForSelector('#agent-name-error:not([hidden])');
    assert.match(await page.locator('#agent-name-error').textContent(), /expected 1 to 64 letters/);
    assert.equal(await page.getAttribute('#agent-name', 'aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'agent-name', 'the focus is on the field refused');

    // An unknown tool: 400 naming the nearest, beside the tools; the name's error is gone.
    await page.fill('#agent-name', 'typo-agent');
    await page.check('input[name="agent-tools-mode"][value="some"]');
    await page.fill('#agent-tool-patterns', 'calculater');
    await page.click('#agent-save');
    await page.waitForSelector('#agent-tools-error:not([hidden])');
    assert.match(await page.locator('#agent-tools-error').textContent(), /"calculater" matches no tool \(did you mean "calculator"\?\)/);
    assert.ok(await page.locator('#agent-name-error').isHidden());
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'agent-tool-patterns');

    // A configured agent's name: 409, beside the name.
    await page.fill('#agent-tool-patterns', 'calculator');
    await page.fill('#agent-name', 'researcher');
    await page.click('#agent-save');
    await page.waitForSelector('#agent-name-error:not([hidden])');
    assert.match(await page.locator('#agent-name-error').textContent(), /configured in config\.toml and read-only/);
    for (const [field, value] of [['#agent-description', 'Kept through errors'], ['#agent-system-prompt', 'A prompt to keep.'], ['#agent-tool-patterns', 'calculator']]) {
      assert.equal(await page.inputValue(field), value, `${field} kept`);
    }
    const names = (await getJson('/api/agents')).body.map((a) => a.name);
    assert.ok(!names.includes('typo-agent') && !names.includes('not a slug'), 'nothing stored');
    assert.equal((await getJson('/api/agents/researcher')).body.source, 'config');

    await page.fill('#agent-name', 'typo-agent');
    await page.click('#agent-save');
    await page.waitForSelector(`${editor} .agents-status:has-text("Saved typo-agent, version 1.")`);
    assert.deepEqual((await getJson('/api/agents/typo-agent')).body.tools, ['calculator']);
    await page.close();
  });

  test('configured agents are view-only', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await openEditor();
    for (const name of ['researcher', 'writer']) {
      assert.equal(await page.getAttribute(row(name), 'data-source'), 'config');
      assert.equal(await page.locator(`${row(name)} .edit-agent, ${row(name)} .delete-agent`).count(), 0);
      assert.equal(await page.locator(`${row(name)} .agent-badge`).textContent(), 'configured');
    }
    await page.click(`${row('researcher')} .view-agent`);
    await page.waitForSelector(`${editor} .agent-summary`);
    const text = await page.locator(`${editor} .agent-summary`).textContent();
    assert.match(text, /config\.toml \(read-only\)/);
    assert.match(text, /Looks things up/);
    assert.match(text, /set on the server \(not shown\)/);
    assert.doesNotMatch(text, /Cite your sources/, 'a configured prompt stays on the server');
    assert.equal(await page.locator(`${editor} input, ${editor} textarea, ${editor} select`).count(), 0);
    await page.click(`${editor} .agents-back`);
    await page.waitForSelector(row('researcher'));
    await page.close();
  });

  test('by keyboard, the focus kept inside; axe light and dark; nothing overflows at phone width', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.focus('#new-conv');
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog.new-conversation[open]');
    assert.equal(await page.evaluate(() => document.activeElement?.name), 'new-agent', 'the dialog still opens on the agent');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'manage-agents');
    await page.keyboard.press('Enter');
    await page.waitForSelector(`${editor} .agent-row`);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'agents-new');
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Tab');
      assert.ok(await page.evaluate(() => Boolean(document.activeElement?.closest('dialog.agents-editor')) || document.activeElement === document.body),
        `Tab ${i + 1} stays in the editor`);
    }
    await page.focus('#agents-new');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#agent-name');
    for (const colorScheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme });
      assert.deepEqual(await violations(page), [], `form, ${colorScheme}`);
    }
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog.agents-editor', { state: 'detached' });
    assert.ok(await page.locator('dialog.new-conversation[open]').isVisible(), 'Escape closed the editor only');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'manage-agents', 'the focus is back on Manage agents…');

    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('#manage-agents');
    await page.waitForSelector(`${editor} .agent-row`);
    assert.deepEqual(await violations(page), [], 'list, dark, phone');
    const fits = () => page.evaluate((sel) => {
      const d = document.querySelector(sel);
      const box = d.getBoundingClientRect();
      return d.scrollWidth <= d.clientWidth + 1 && box.left >= 0 && box.right <= window.innerWidth;
    }, editor);
    assert.ok(await fits(), 'the list fits');
    await page.click(`${row('writer')} .view-agent`);
    await page.waitForSelector(`${editor} .agent-summary`);
    assert.ok(await fits(), 'a view fits');
    await page.click(`${editor} .agents-back`);
    await page.click('#agents-new');
    await page.waitForSelector('#agent-name');
    assert.ok(await fits(), 'the form fits');
    await page.locator('#agent-save').scrollIntoViewIfNeeded();
    assert.ok(await page.locator('#agent-save').isVisible());
    await page.check('input[name="agent-tools-mode"][value="some"]');
    assert.ok(await fits(), 'the form with its tools fits');
    await page.emulateMedia({ colorScheme: 'light' });
    assert.deepEqual(await violations(page), [], 'form with its tools, light, phone');
    await page.close();
  });
});

/** The requests the mock answered that carry `text` (a run's question). */
const requestsWith = (text) => llm.requests.filter((r) => JSON.stringify(r.messages).includes(text));

async function send(base, method, route, body) {
  const response = await fetch(`${base}${route}`, {
    method, headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** A run of `query` in conversation `id`; resolves with its whole SSE stream once it ends. */
const runStream = (base, id, query) => fetch(`${base}/api/conversations/${id}/runs`, {
  method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, body: JSON.stringify({ query }),
}).then((r) => r.text());

/** The `done` event of an SSE stream's text. */
const doneOf = (text) => text.split(/\n\n/).find((e) => /^event: done$/m.test(e)) || '';

describe('run-time agents across a restart', () => {
  test('agents and their versions survive a restart; a conversation keeps its version, even through an edit mid-run', { timeout: SCENARIO_TIMEOUT }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'reagent-e2e-agents-'));
    const env = { DATABASE_URL: `sqlite://${path.join(dir, 'reagent.db')}` };
    let instance = await startReagent(llm.base, env, AGENTS);
    try {
      const agent = (prompt) => ({ name: 'keeper', system_prompt: prompt, tools: ['calculator', 'current_time'] });
      assert.equal((await send(instance.base, 'POST', '/api/agents', agent('Prompt one.'))).status, 201);
      const conv = (await send(instance.base, 'POST', '/api/conversations', { agent: 'keeper' })).body;
      assert.equal(conv.agent_version, 1);

      // A slow run (the mock holds each reply 1.5 s); version 2 is saved while it works.
      const stream = runStream(instance.base, conv.id, 'slow question one');
      while (!requestsWith('slow question one').length) await new Promise((r) => setTimeout(r, 20));
      assert.equal((await send(instance.base, 'PUT', '/api/agents/keeper', agent('Prompt two.'))).status, 200);
      const editedAt = llm.requests.length;
      assert.match(doneOf(await stream), /"status":"completed"/);
      assert.ok(llm.requests.slice(editedAt).some((r) => JSON.stringify(r.messages).includes('slow question one')), 'the run called the model after the edit');
      for (const r of requestsWith('slow question one')) {
        const sent = JSON.stringify(r.messages);
        assert.ok(sent.includes('Prompt one.') && !sent.includes('Prompt two.'), 'the run kept its version');
      }

      await instance.stop();
      instance = await startReagent(llm.base, env, AGENTS);
      const versions = (await send(instance.base, 'GET', '/api/agents/keeper/versions')).body;
      assert.deepEqual(versions.map((v) => [v.version, v.system_prompt]), [[1, 'Prompt one.'], [2, 'Prompt two.']]);
      assert.match(doneOf(await runStream(instance.base, conv.id, 'question two')), /"status":"completed"/);
      assert.ok(JSON.stringify(requestsWith('question two').at(-1).messages).includes('Prompt one.'), 'still version 1 after the restart');

      // The editor after the restart: the agent at version 2, both versions listed.
      const page = await browser.context.newPage();
      await page.goto(`${instance.base}/`);
      await page.waitForSelector('body[data-ready="true"]');
      await openEditor(page);
      assert.equal(await page.locator(`${row('keeper')} .agent-badge`).textContent(), 'v2');
      await page.click(`${row('keeper')} .edit-agent`);
      await page.waitForSelector('.agent-version[data-version="1"]');
      assert.equal(await page.inputValue('#agent-system-prompt'), 'Prompt two.');
      await page.close();
    } finally {
      await instance.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
