// What an answer shows (issue 44, items 3 and 6), in headless Chromium against the real binary:
// code blocks highlighted with a Copy button, the whole answer and a user's message copied, maths typeset
// by KaTeX (prices left alone, no link from `\href`), an image a tool produced shown as an
// image, and safeguard notes in the run: the same note repeated is one line with a count, every
// kind in words, the tool selection said only when it narrowed the tools (issue 51, item 7).
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/content.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ask, CODE_AND_MATHS, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

let llm;
let server;
let browser;

before(async () => {
  llm = await startMockLlm();
  server = await startReagent(llm.base);
  browser = await startBrowser();
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base });
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await llm?.close();
});

const clipboard = (page) => page.evaluate(() => navigator.clipboard.readText());

describe('reagent UI, answer content', () => {
  test('code is highlighted and its Copy button copies exactly the code', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, server.base, 'show me code and maths');
    await footer(page, 'completed');
    const code = page.locator('.answer .code-block pre code.language-python');
    await page.waitForSelector('.answer pre code.language-python[data-highlighted="yes"]');
    assert.ok(await code.locator('.hljs-keyword').count() >= 1, 'keywords are marked');
    assert.equal(await code.locator('.hljs-keyword').first().textContent(), 'def');
    // Coloured: a keyword is not in the text colour of the block.
    const colours = await code.evaluate((c) => [getComputedStyle(c).color, getComputedStyle(c.querySelector('.hljs-keyword')).color]);
    assert.notEqual(colours[0], colours[1]);
    await page.click('.answer .code-block .copy');
    await page.waitForSelector('.answer .code-block .copy:has-text("Copied")');
    assert.equal(await clipboard(page), 'def square(x):\n    return x * x  # squared\n');

    // The whole answer, as the Markdown the model wrote.
    await page.click('.answer-actions .copy');
    await page.waitForSelector('.answer-actions .copy:has-text("Copied")');
    assert.equal(await clipboard(page), CODE_AND_MATHS);
    await page.close();
  });

  test('a user message\'s Copy button copies exactly its text', { timeout: SCENARIO_TIMEOUT }, async () => {
    const text = 'What is 6*7?\n  Keep the <b>tags</b> and the indent.';
    const page = await ask(browser, server.base, text);
    await footer(page, 'completed');
    const copy = page.locator('.query-actions .copy');
    assert.equal(await copy.getAttribute('aria-label'), 'Copy this message');
    await copy.click();
    await page.waitForSelector('.query-actions .copy:has-text("Copied")');
    assert.equal(await clipboard(page), text.trim());
    await page.close();
  });

  test('maths is typeset with KaTeX; prices and \\href stay harmless text', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, server.base, 'again code and maths');
    await footer(page, 'completed');
    await page.waitForSelector('.answer .math[data-rendered] .katex');
    const inline = page.locator('.answer p .math:not(.math-display)').first();
    assert.equal(await inline.getAttribute('data-tex'), 'E = mc^2');
    assert.ok(await inline.locator('.katex-html').count(), 'rendered as HTML');
    assert.ok(await inline.locator('.katex-mathml math mi').count(), 'with MathML for screen readers');
    const display = page.locator('.answer div.math-display');
    await display.locator('.katex-display .katex-html').waitFor();
    assert.match(await display.getAttribute('data-tex'), /^\\int_0\^1 x\^2 .*\\frac\{1\}\{3\}$/);
    assert.ok(await display.locator('.katex-html .mfrac').count(), 'the fraction is typeset');
    // KaTeX's fonts load from the binary, not a CDN.
    await page.evaluate(() => document.fonts.ready);
    assert.ok(await page.evaluate(() => [...document.fonts].some((f) => f.family.includes('KaTeX') && f.status === 'loaded')));
    // "$5 or $10" is text, not maths; \href made no link.
    assert.match(await page.locator('.answer').textContent(), /costs \$5 or \$10\./);
    assert.equal(await page.locator('.answer a').count(), 0);
    await page.close();
  });

  test('an image a tool made is shown, and safeguard notes are in the run', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');
    await page.route('**/api/artifacts/*', (route) => route.fulfill({ status: 200, contentType: 'image/png', body: png }));
    await page.route('**/api/conversations/*/runs', (route) => {
      const conversation = route.request().url().split('/').at(-2);
      const events = [
        ['start', { run_id: '00000000-0000-4000-8000-000000000031', conversation_id: conversation, model: 'mock', mode: 'native' }],
        ['step', { type: 'tool_start', iteration: 1, call_id: 'c1', tool: 'peer__image', arguments: {} }],
        ['step', { type: 'tool_end', iteration: 1, call_id: 'c1', tool: 'peer__image', observation: '[image]', error: false, blocked: false, duration_ms: 1,
          artifacts: [{ id: 'a1', name: 'dot.png', mime_type: 'image/png', size: png.length, url: '/api/artifacts/00000000-0000-4000-8000-0000000000a1' }] }],
        ['step', { type: 'safeguard', iteration: 2, kind: 'cycle_warning', tool: 'peer__image' }],
        ['step', { type: 'safeguard', iteration: 3, kind: 'reflection' }],
        ['answer', { status: 'start' }],
        ['answer', { status: 'done', content: 'A dot.', fallback: false }],
        ['done', { status: 'completed', iterations: 3, tool_calls: 1, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, llm_calls: 3 }, elapsed_ms: 5, mode: 'native', answer: 'A dot.', unprocessed_interrupts: [] }],
      ];
      const body = events.map(([event, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
      return route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
    });
    await page.goto(`${server.base}/`);
    await ask(browser, server.base, 'draw a dot', page);
    await footer(page, 'completed');
    const image = page.locator('.tool-card .artifact img.artifact-image');
    await image.waitFor({ state: 'attached' });
    assert.equal(await image.getAttribute('alt'), 'dot.png');
    await page.waitForFunction(() => document.querySelector('.artifact-image')?.naturalWidth === 1);
    const notes = page.locator('.run-steps .safeguard-note');
    assert.deepEqual(await notes.evaluateAll((n) => n.map((x) => x.dataset.kind)), ['cycle_warning', 'reflection']);
    assert.match(await notes.first().textContent(), /repeating itself \(peer__image\)/);
    assert.match(await notes.nth(1).textContent(), /step back/);
    await page.close();
  });

  test('repeated safeguard notes fold into one line; a selection of every tool is not shown', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    let runs = 0;
    await page.route('**/api/conversations/*/runs', (route) => {
      runs += 1;
      const conversation = route.request().url().split('/').at(-2);
      const run = `00000000-0000-4000-8000-00000000004${runs}`;
      const names = Array.from({ length: 16 }, (_, i) => `tool_${i}`);
      const events = [['start', { run_id: run, conversation_id: conversation, model: 'mock', mode: 'native' }]];
      // The first run was offered every tool, the second four of them.
      const selected = runs === 1 ? names : names.slice(0, 4);
      events.push(['step', { type: 'selection', iteration: 0, total_tools: 16, selected, fallback: false }]);
      for (let i = 1; i <= 11; i += 1) {
        events.push(['step', { type: 'thinking', iteration: i, reasoning: '' }]);
        events.push(['step', { type: 'tool_start', iteration: i, call_id: `c${i}`, tool: 'calculator', arguments: { expression: '1+1' } }]);
        events.push(['step', { type: 'tool_end', iteration: i, call_id: `c${i}`, tool: 'calculator', observation: '2', error: false, blocked: false, duration_ms: 1, artifacts: [] }]);
        events.push(['step', { type: 'safeguard', iteration: i, kind: 'cycle_warning', tool: 'calculator' }]);
      }
      events.push(['step', { type: 'safeguard', iteration: 12, kind: 'cycle_stop' }]);
      events.push(['step', { type: 'safeguard', iteration: 12, kind: 'a_kind_from_a_newer_server' }]);
      events.push(['answer', { status: 'start' }]);
      events.push(['answer', { status: 'done', content: '2', fallback: false }]);
      events.push(['done', { status: 'completed', iterations: 12, tool_calls: 11, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, llm_calls: 12 }, elapsed_ms: 5, mode: 'native', answer: '2', unprocessed_interrupts: [] }]);
      const body = events.map(([event, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
      return route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
    });
    await page.goto(`${server.base}/`);
    await ask(browser, server.base, 'add up', page);
    await footer(page, 'completed');
    const notes = page.locator('.run-steps .safeguard-note');
    const seen = await notes.evaluateAll((n) => n.map((x) => [x.dataset.kind, x.textContent]));
    assert.deepEqual(seen.map(([kind]) => kind), ['cycle_warning', 'cycle_stop', 'a_kind_from_a_newer_server']);
    assert.equal(seen[0][1], 'the agent was warned that it is repeating itself (calculator) · 11 times');
    assert.equal(await notes.first().getAttribute('title'), 'iterations 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11');
    assert.match(seen[1][1], /^the agent kept repeating the same calls/);
    for (const [, text] of seen) assert.doesNotMatch(text, /safeguard:|_/, 'no raw label');
    assert.equal(await page.locator('.tool-card').count(), 11);
    assert.equal(await page.locator('.run-steps .thinking').count(), 0, 'no empty thinking step');
    assert.equal(await page.locator('.run-steps .selection').count(), 0, 'every tool: nothing to say');

    await ask(browser, server.base, 'add up again', page);
    await footer(page, 'completed');
    const selection = page.locator('.run-steps .selection');
    await selection.waitFor();
    assert.equal(await selection.textContent(), 'tools narrowed to 4 of 16');
    assert.equal(await selection.getAttribute('title'), 'tool_0, tool_1, tool_2, tool_3');
    await page.close();
  });
});
