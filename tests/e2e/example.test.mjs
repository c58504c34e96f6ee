// The AG-UI example page (examples/ag-ui) in headless Chromium, served the way its README says
// (a plain static file server on another origin) against the real binary run with the example's
// own config.toml (its CORS origins pointed at that server) and a mock LLM: a question that uses
// a tool shows the tool call and the streamed answer; a deployment waits for approval, is
// approved, runs and is answered; another is rejected. `SCREENSHOT=1` also writes the final page
// to docs/example-ag-ui.png (the example's README shows it).
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/example.test.mjs

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { REPO, sendMessage, startBrowser, startReagent } from './support.mjs';

const EXAMPLE = path.join(REPO, 'examples', 'ag-ui');
const SCREENSHOT = path.join(REPO, 'docs', 'example-ag-ui.png');

function listen(server) {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

function close(server) {
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** What `python3 -m http.server --directory examples/ag-ui` does: files by path, nothing else. */
function startStatic() {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css', '.json': 'application/json' };
  const server = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/$/, '/index.html');
    const file = path.join(EXAMPLE, path.normalize(name));
    try {
      if (!file.startsWith(EXAMPLE)) throw new Error('outside');
      const body = readFileSync(file);
      res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return listen(server).then((base) => ({ base, close: () => close(server) }));
}

/** The run's question: the last user message of the request. */
function questionOf(messages) {
  const user = messages.findLast((m) => m.role === 'user');
  return typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content ?? '');
}

/** The answer the mock gives once the tools have run, from what the request holds. */
function answerOf(text) {
  if (/rejected/.test(text)) return ['The deployment to ', 'production was rejected, ', 'so nothing was deployed.'];
  if (/deployed\\?": ?true/.test(text)) return ['Deployed to ', 'staging: ', 'the build is live.'];
  return ['Six times seven ', 'is 42, ', 'by the calculator.'];
}

/**
 * An OpenAI-compatible mock: a loop request without a tool result yet calls `deploy`
 * (production or staging, as the question says) or `calculator`; with one it answers, streamed
 * or not as the request asks.
 */
function startLlm() {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const request = JSON.parse(body || '{}');
      const messages = request.messages || [];
      const question = questionOf(messages);
      const asked = messages.findLastIndex((m) => m.role === 'user');
      const ran = messages.slice(asked + 1).some((m) => m.role === 'tool');
      let message;
      if (request.tools?.length && !ran) {
        const call = /deploy/i.test(question)
          ? { name: 'deploy', arguments: JSON.stringify({ environment: /production/i.test(question) ? 'production' : 'staging' }) }
          : { name: 'calculator', arguments: '{"expression":"6*7"}' };
        message = { role: 'assistant', content: null, tool_calls: [{ id: `call_${call.name}`, type: 'function', function: call }] };
      } else {
        message = { role: 'assistant', content: answerOf(body) };
      }
      sendMessage(res, (ms, fn) => setTimeout(fn, ms), request, message, { gap: 0 });
    });
  });
  return listen(server).then((base) => ({ base: `${base}/v1`, close: () => close(server) }));
}

let llm;
let site;
let reagent;
let browser;

before(async () => {
  llm = await startLlm();
  site = await startStatic();
  // The example's own config, with its page origin and tool URL at the test's static server.
  const config = readFileSync(path.join(EXAMPLE, 'config.toml'), 'utf8').replaceAll('http://127.0.0.1:8000', site.base);
  reagent = await startReagent(llm.base, {}, config);
  browser = await startBrowser({ viewport: { width: 900, height: 1000 } });
});

after(async () => {
  await browser?.close();
  await reagent?.stop();
  await site?.close();
  await llm?.close();
});

async function ask(page, question) {
  await page.fill('#question', question);
  await page.press('#question', 'Enter');
}

test('the example page runs an agent with tool calls, a streamed answer and approvals', { timeout: 60000 }, async () => {
  const page = await browser.context.newPage();
  const failed = [];
  page.on('pageerror', (e) => failed.push(String(e)));
  await page.goto(`${site.base}/?server=${encodeURIComponent(reagent.base)}&agent=assistant`);
  await page.waitForSelector('body[data-state="idle"]');

  // A question that uses a tool: its call (arguments and result) and the streamed answer.
  await ask(page, 'What is 6 times 7?');
  const calc = page.locator('.assistant').nth(0);
  await calc.locator('.tool[data-status="done"]').waitFor();
  await page.waitForSelector('body[data-state="idle"]');
  assert.equal(await calc.locator('.tool .name').textContent(), 'calculator');
  assert.match(await calc.locator('.tool .args').textContent(), /6\*7/);
  assert.match(await calc.locator('.tool .result').textContent(), /42/);
  assert.equal(await calc.locator('.answer').textContent(), 'Six times seven is 42, by the calculator.');

  // A deployment waits for approval; approved, it runs and the answer follows in the same block.
  await ask(page, 'Deploy to staging');
  const staging = page.locator('.assistant').nth(1);
  await staging.locator('.approval').waitFor();
  await page.waitForSelector('body[data-state="waiting"]');
  assert.match(await staging.locator('.approval').textContent(), /deploy/);
  await staging.locator('.approval .approve').click();
  await staging.locator('.tool[data-status="done"] .result').waitFor();
  await page.waitForSelector('body[data-state="idle"]');
  assert.match(await staging.locator('.tool .result').textContent(), /deployed/);
  assert.equal(await staging.locator('.answer').textContent(), 'Deployed to staging: the build is live.');

  // Rejected, the call does not run and the agent says so.
  await ask(page, 'Deploy to production');
  const production = page.locator('.assistant').nth(2);
  await production.locator('.approval .reject').click();
  await production.locator('.tool[data-status="failed"]').waitFor();
  await production.locator('.answer').waitFor();
  await page.waitForSelector('body[data-state="idle"]');
  assert.equal(await production.locator('.approval').getAttribute('data-answer'), 'rejected');
  assert.match(await production.locator('.tool .result').textContent(), /reject/i);
  assert.match(await production.locator('.answer').textContent(), /was rejected/);

  assert.deepEqual(failed, []);
  if (process.env.SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
});
