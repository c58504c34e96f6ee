// Accessibility (issue 44): axe-core (pinned in package.json) finds no serious or critical
// violation on the main views — the chat with a finished run (tool cards, highlighted code,
// maths), the conversation list with its search, the Tools drawer, the settings dialog, the
// rename dialog, the new-conversation dialog, its agent editor (the list of agents and the form
// of one) and images attached to the composer — in the light and the dark theme, on a desktop
// and at phone width. Every button is on one of them (issue 51:
// the delete confirmation's Delete was red on blue, 1.25:1): the delete dialog, the Usage
// drawer, and a run waiting for an approval (Approve, Reject, Stop) too.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/a11y.test.mjs

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { ask, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

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

/** The serious and critical violations axe finds in the page as it is now, one line each. */
async function violations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}` +
        ` — ${v.nodes[0]?.failureSummary?.split('\n').slice(0, 2).join(' ')}`);
  });
  return found;
}

/**
 * A run that waits for an approval, streamed from a stand-in (the mock model calls no tool that
 * needs one) and left open: its Approve and Reject buttons and the composer's Stop button.
 */
async function approvalViolations(scheme, viewport) {
  const page = await browser.context.newPage();
  await page.emulateMedia({ colorScheme: scheme });
  await page.route('**/api/conversations/*/runs', (route) => {
    const conversation = route.request().url().split('/').at(-2);
    const events = [
      ['start', { run_id: '00000000-0000-4000-8000-000000000051', conversation_id: conversation, model: 'mock', mode: 'native' }],
      ['step', { type: 'approval_required', iteration: 1, approval_id: 'ap1', tool: 'send_mail', arguments: { to: 'ada@example.com' } }],
    ];
    const body = events.map(([event, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
    return route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
  });
  // The stream's resumption stays open: the run goes on waiting.
  await page.route('**/api/runs/*/events', () => {});
  await page.goto(`${server.base}/`);
  await ask(browser, server.base, 'send the mail', page);
  await page.setViewportSize(viewport);
  await page.waitForSelector('.approval button.approve:not([disabled])');
  await page.waitForSelector('#stop:not([hidden])');
  const found = await violations(page);
  await page.close();
  return found;
}

for (const scheme of ['light', 'dark']) {
  for (const [name, viewport] of [['desktop', { width: 1200, height: 820 }], ['phone', { width: 390, height: 844 }]]) {
    describe(`reagent UI accessibility, ${scheme}, ${name}`, () => {
      test('no serious or critical axe violation on the chat, the drawer and the dialogs', { timeout: SCENARIO_TIMEOUT }, async () => {
        const page = await browser.context.newPage();
        await page.emulateMedia({ colorScheme: scheme });
        await page.goto(`${server.base}/`);
        await ask(browser, server.base, 'show code and maths', page);
        await footer(page, 'completed');
        await page.setViewportSize(viewport);
        await page.waitForSelector('.answer .math[data-rendered]');
        await page.waitForSelector('.answer code[data-highlighted]');
        await page.locator('.tool-card summary').first().click();
        if (name === 'desktop') {
          await page.fill('#conv-search', 'code');
          await page.waitForSelector('#conv-list .conv.current');
        }
        const report = { chat: await violations(page) };

        if (name === 'phone') {
          await page.click('#toggle-sidebar');
          await page.fill('#conv-search', 'code');
          await page.waitForSelector('#conv-list .conv.current');
          report.sidebar = await violations(page);
          await page.click('#backdrop', { position: { x: 370, y: 400 } });
        }
        await page.click('#show-tools');
        await page.waitForSelector('#tools-body .tool-item');
        report.drawer = await violations(page);
        await page.click('#close-tools');

        // On a phone the settings button is in the conversations drawer.
        if (name === 'phone') await page.click('#toggle-sidebar');
        await page.click('#open-settings');
        await page.waitForSelector('dialog[open]');
        report.settings = await violations(page);
        await page.keyboard.press('Escape');
        if (name === 'phone') await page.click('#backdrop', { position: { x: 370, y: 400 } });

        await page.click('#rename-conv');
        await page.waitForSelector('dialog[open]');
        report.rename = await violations(page);
        await page.keyboard.press('Escape');

        // Two images in the composer's tray (pasted), then the new-conversation dialog.
        await page.evaluate(async () => {
          const transfer = new DataTransfer();
          for (const colour of ['#c33', '#36c']) {
            const canvas = Object.assign(document.createElement('canvas'), { width: 32, height: 32 });
            canvas.getContext('2d').fillStyle = colour;
            canvas.getContext('2d').fillRect(0, 0, 32, 32);
            const blob = await new Promise((r) => canvas.toBlob(r, 'image/png'));
            transfer.items.add(new File([blob], `${colour.slice(1)}.png`, { type: 'image/png' }));
          }
          document.querySelector('#input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
        });
        await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 2);
        report.attachments = await violations(page);

        if (name === 'phone') await page.click('#toggle-sidebar');
        await page.click('#new-conv');
        await page.waitForSelector('dialog.new-conversation[open]');
        report.newConversation = await violations(page);
        // The agent editor beside its picker: the list, then the form of a new agent.
        await page.click('#manage-agents');
        await page.waitForSelector('dialog.agents-editor[open] .agent-row');
        report.agentList = await violations(page);
        await page.click('#agents-new');
        await page.waitForSelector('#agent-name');
        report.agentForm = await violations(page);
        await page.keyboard.press('Escape');
        await page.waitForSelector('dialog.agents-editor', { state: 'detached' });
        await page.keyboard.press('Escape');

        // On a phone the conversations drawer may still cover the header.
        if (await page.locator('#backdrop').isVisible()) await page.click('#backdrop', { position: { x: 370, y: 400 } });
        await page.click('#delete-conv');
        await page.waitForSelector('dialog[open] button.danger');
        report.deleteDialog = await violations(page);
        await page.keyboard.press('Escape');

        await page.click('#show-usage');
        await page.waitForSelector('#usage-body .usage-chart');
        report.usage = await violations(page);
        await page.click('#close-usage');

        report.approval = await approvalViolations(scheme, viewport);

        for (const [view, found] of Object.entries(report)) {
          assert.deepEqual(found, [], `${scheme} ${name} ${view}:\n${found.join('\n')}`);
        }
        await page.close();
      });
    });
  }
}
