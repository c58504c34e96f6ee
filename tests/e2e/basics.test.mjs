// Chat basics a new user meets first (issue 44's walk): the header title stays readable at
// phone width, Enter on a touch keyboard types a new line (only Send sends), the message box
// has the focus on load, an error line goes with the conversation it was about, and the Send
// button and the sidebar times reach WCAG AA contrast (4.5:1) in light and dark.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/basics.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ask, footer, newConversation, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;
const TITLE = 'What is 6*7 and what time is it?';

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

/** A conversation titled TITLE with one finished run, open in a new page. */
async function finishedConversation() {
  const page = await ask(browser, server.base, TITLE);
  await footer(page, 'completed');
  await page.waitForFunction((t) => document.getElementById('conv-title').textContent === t, TITLE);
  return page;
}

describe('reagent UI, chat basics', () => {
  test('at phone width the header keeps the title readable', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await finishedConversation();
    await page.setViewportSize({ width: 390, height: 844 });
    const title = await page.locator('#conv-title').evaluate((h) => {
      // The first words: the box of the title's text up to the end of its third word.
      const range = document.createRange();
      const text = h.querySelector('.title-text').firstChild;
      range.setStart(text, 0);
      range.setEnd(text, text.textContent.split(' ').slice(0, 3).join(' ').length);
      const words = range.getBoundingClientRect();
      const box = h.getBoundingClientRect();
      return { width: box.width, wordsEnd: words.right, boxEnd: box.right };
    });
    assert.ok(title.width >= 150, `the title is ${title.width}px wide`);
    assert.ok(title.wordsEnd <= title.boxEnd, `"What is 6*7" is cut: ${JSON.stringify(title)}`);
    // The actions are still on screen and nothing scrolls sideways.
    for (const id of ['#show-tools', '#rename-conv', '#delete-conv']) {
      const box = await page.locator(id).boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${id} is off screen: ${JSON.stringify(box)}`);
    }
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390));
    await page.close();
  });

  test('the message box has the focus when the page has loaded', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input');
    // Typing goes straight in, and on a desktop Shift+Enter is a new line while Enter sends.
    await page.keyboard.type('first line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    assert.equal(await page.inputValue('#input'), 'first line\nsecond line');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.run');
    await footer(page, 'completed');
    // So does a new conversation, started from the sidebar.
    await newConversation(page);
    await page.waitForSelector('.empty');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input');
    await page.close();
  });

  test('deleting a conversation clears the error line shown for it', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await finishedConversation();
    // The rename fails (the server is made to refuse it), which leaves an error line.
    await page.route('**/api/conversations/*', (route) => (route.request().method() === 'PATCH'
      ? route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'internal', message: 'refused for the test' } }),
      })
      : route.fallback()));
    await page.click('#rename-conv');
    await page.fill('dialog[open] input', 'A new title');
    await page.press('dialog[open] input', 'Enter');
    await page.waitForSelector('#composer-status.error:has-text("Could not rename")');
    await page.unroute('**/api/conversations/*');
    await page.click('#delete-conv');
    await page.click('dialog[open] button:has-text("Delete")');
    await page.waitForSelector('#delete-conv[disabled]');
    assert.equal(await page.locator('#composer-status').textContent(), '');
    assert.equal(await page.locator('#composer-status.error').count(), 0);
    await page.close();
  });

  for (const scheme of ['light', 'dark']) {
    test(`${scheme}: the Send button and the sidebar times reach 4.5:1 contrast`, { timeout: SCENARIO_TIMEOUT }, async () => {
      const page = await finishedConversation();
      await page.emulateMedia({ colorScheme: scheme });
      // A second conversation, so that the list has a current item (the new one) and another.
      await newConversation(page);
      await page.waitForSelector('#conv-list .conv.current .conv-time');
      await page.waitForSelector('#conv-list .conv:not(.current) .conv-time');
      await page.mouse.move(600, 400);
      const ratios = await page.evaluate(contrastRatios, [
        ['Send', '#send'],
        ['New', '#new-conv'],
        ['current conversation time', '#conv-list .conv.current .conv-time'],
        ['other conversation time', '#conv-list .conv:not(.current) .conv-time'],
      ]);
      for (const [name, ratio] of ratios) {
        assert.ok(ratio >= 4.5, `${scheme}: ${name} has a contrast of ${ratio.toFixed(2)}:1`);
      }
      await page.close();
    });
  }
});

describe('reagent UI, touch screen', () => {
  let phone;

  before(async () => {
    phone = await startBrowser({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  });

  after(async () => {
    await phone?.close();
  });

  test('Enter types a new line and only the Send button sends', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await phone.context.newPage();
    await page.goto(`${server.base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.evaluate(() => matchMedia('(pointer: coarse)').matches), true);
    await page.tap('#input');
    await page.keyboard.type('first line');
    await page.keyboard.press('Enter');
    await page.keyboard.type('second line');
    assert.equal(await page.inputValue('#input'), 'first line\nsecond line');
    assert.equal(await page.locator('.run').count(), 0, 'Enter sent the message');
    assert.doesNotMatch(await page.getAttribute('#input', 'placeholder'), /Enter sends/);
    await page.tap('#send');
    await page.waitForSelector('.message.user.query:has-text("second line")');
    await footer(page, 'completed');
    await page.close();
  });
});

/**
 * In the page: for each [name, selector], the WCAG contrast ratio of the element's text colour
 * against the first opaque background behind it (its own or an ancestor's, else white).
 */
function contrastRatios(items) {
  const rgb = (css) => {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return { r, g, b, a };
  };
  const luminance = ({ r, g, b }) => [r, g, b]
    .map((c) => c / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c.a === 255) return c;
    }
    return { r: 255, g: 255, b: 255 };
  };
  return items.map(([name, selector]) => {
    const el = document.querySelector(selector);
    if (!el) return [`${name} (${selector} missing)`, 0];
    const [hi, lo] = [luminance(rgb(getComputedStyle(el).color)), luminance(background(el))].sort((x, y) => y - x);
    return [name, (hi + 0.05) / (lo + 0.05)];
  });
}
