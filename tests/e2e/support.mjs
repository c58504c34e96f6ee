// Fixtures for the UI end-to-end test: a deterministic mock of an OpenAI-compatible provider,
// the real `reagent` binary started against it, and headless Chromium (Debian's
// /usr/bin/chromium driven by playwright-core). Everything binds 127.0.0.1:0 and every wait is
// on a real signal (a log line, a DOM state), never a fixed sleep.

import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// ---- mock LLM -----------------------------------------------------------------------------

/**
 * A long Markdown answer (about 15,000 characters) that uses every block the UI renders:
 * headings, paragraphs with inline marks and links, lists, tables, fenced code and quotes.
 */
export function longAnswer() {
  const sections = [];
  for (let i = 1; sections.join('').length < 15000; i += 1) {
    sections.push(
      `## Section ${i}\n\n`,
      `Paragraph ${i} explains **step ${i}** with \`code_${i}()\` and a [link](https://example.com/${i}). ` +
        'It goes on long enough to wrap across a few lines of the thread, like a real answer would.\n\n',
      `- item ${i}.a with *emphasis*\n- item ${i}.b\n  - nested ${i}\n\n`,
      `1. first of ${i}\n2. second of ${i}\n\n`,
      `| key | value |\n|---|---|\n| n | ${i} |\n| square | ${i * i} |\n\n`,
      `\`\`\`js\nfunction f${i}(x) {\n  return x * ${i};\n}\n\`\`\`\n\n`,
      `> A quoted remark about section ${i}.\n\n`,
    );
  }
  return sections.join('');
}

/** `text` in pieces of `size` characters, as a provider streams tokens. */
export function chunked(text, size) {
  const pieces = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** How the mock streams a long answer: 6-character chunks, `LONG_BURST` of them every 10 ms. */
const LONG_CHUNK = 6;
const LONG_BURST = 8;

/** An answer with a code block and maths (and prices, which are not maths), for `code and maths`. */
export const CODE_AND_MATHS = [
  'Here is the function:\n\n',
  '```python\ndef square(x):\n    return x * x  # squared\n```\n\n',
  'Energy is $E = mc^2$, and it costs $5 or $10.\n\n',
  '$$\n\\int_0^1 x^2 \\, dx = \\frac{1}{3}\n$$\n\n',
  'Not a link: $\\href{javascript:alert(1)}{click}$.\n',
].join('');

/** The streamed (synthesis) answer for a query, in the chunks the mock sends. */
export function answerChunks(query, followUp) {
  if (/long answer/.test(query)) return chunked(longAnswer(), LONG_CHUNK);
  if (/code and maths/.test(query)) return chunked(CODE_AND_MATHS, 7);
  // `reverse <word>`: the answer holds the word backwards, a text found in no question.
  const reverse = /reverse (\w+)/.exec(query);
  if (reverse) return ['Backwards: ', [...reverse[1]].reverse().join(''), '.'];
  const chunks = ['## Result\n\n', 'Six times seven is ', '**42**.', '\n\n- calculator: 42\n', '- current_time: UTC\n'];
  if (/xss/.test(query)) {
    chunks.push(
      '\n<img src=x onerror="window.__xss=1">',
      '\n<script>window.__xss=2</script>\n\n',
      '| tool | result |\n|---|---|\n| calculator | 42 |\n',
    );
  }
  if (followUp) chunks.push('\n**Follow-up:** handled your follow-up as well.\n');
  chunks.push('\nAll done.');
  return chunks;
}

function textOf(message) {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) return message.content.map((p) => p.text || '').join('');
  return '';
}

const usage = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 };

/**
 * POST /v1/chat/completions. Keyed on the run's query (the last user message that is not an
 * injected interrupt): tool-loop requests (with tools) and no tool result yet → two tool calls;
 * otherwise a streamed request (the loop's reply under synthesis "auto", or the synthesis)
 * gets the Markdown answer in chunks and a plain one a short final text. Streamed or not as
 * the request asks. `slow` in the query slows both so a test can act mid-run.
 */
export function startMockLlm() {
  // Every request body it answered, parsed, for tests that check what reached the model.
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      let request;
      try {
        request = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      requests.push(request);
      const messages = request.messages || [];
      const users = messages.filter((m) => m.role === 'user');
      const queryIndex = messages.findLastIndex(
        (m) => m.role === 'user' && !textOf(m).startsWith('[USER INTERRUPT]'),
      );
      const query = queryIndex >= 0 ? textOf(messages[queryIndex]) : '';
      const slow = /slow/.test(query);
      const timers = [];
      res.on('close', () => timers.forEach(clearTimeout));
      const later = (ms, fn) => timers.push(setTimeout(fn, ms));

      const gap = slow ? 300 : /long answer/.test(query) ? 10 : 20;
      const burst = /long answer/.test(query) ? LONG_BURST : 1;
      const reply = (message) => sendMessage(res, later, request, message, { delay: slow ? 1500 : 0, gap, burst });

      const forced = request.tool_choice?.function?.name;
      if (forced) {
        reply(structuredMessage(forced, query));
        return;
      }
      const hasTools = Array.isArray(request.tools) && request.tools.length > 0;
      const sawTool = messages.slice(queryIndex + 1).some((m) => m.role === 'tool');
      // A caller's tool (`confirm`, declared by an API client) is called instead of the agent's.
      const callerTool = (request.tools || []).some((t) => t.function?.name === 'confirm');
      if (callerTool && !sawTool) {
        reply({
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_confirm', type: 'function', function: { name: 'confirm', arguments: '{"question":"Book the 9:40 train?"}' } }],
        });
        return;
      }
      if (hasTools && !sawTool) {
        reply({
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_calc', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } },
            { id: 'call_time', type: 'function', function: { name: 'current_time', arguments: '{"timezone":"UTC"}' } },
          ],
        });
        return;
      }
      const interrupt = users.find((m) => textOf(m).startsWith('[USER INTERRUPT]'));
      if (request.stream) {
        // A streamed reply is the answer: the loop's reply (synthesis "auto") or the synthesis.
        const followUp = Boolean(interrupt) || /Follow-up noted/.test(query);
        sendMessage(res, later, request, { role: 'assistant', content: answerChunks(query, followUp) }, { gap, burst });
        return;
      }
      const extra = interrupt ? ` Follow-up noted: ${textOf(interrupt).replace(/\s+/g, ' ')}` : '';
      reply({ role: 'assistant', content: `6*7 is 42.${extra}` });
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ base: `http://127.0.0.1:${port}/v1`, requests, close: () => closeServer(server) });
    });
  });
}

/**
 * DAG mode's structured calls, answered through the function they force: the plan
 * (A and B independent, C after both), the analysis (achieved), the router (`dag` when the
 * query says "plan").
 */
function structuredMessage(name, query) {
  const args = {
    create_plan: {
      steps: [
        { id: 'A', task: 'Compute 6*7', dependencies: [], tool_hint: 'calculator' },
        { id: 'B', task: 'Tell the time', dependencies: [], tool_hint: 'current_time' },
        { id: 'C', task: 'Combine both results', dependencies: ['A', 'B'] },
      ],
    },
    analyse_results: { achieved: true, confidence: 0.9, reasoning: 'Both parts are answered.' },
    choose_engine: { engine: /plan/.test(query) ? 'dag' : 'react', reasoning: 'mock' },
  }[name] || {};
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `call_${name}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  };
}

/**
 * Sends `message` as the request asked: one JSON body, or (`stream`) chunks `gap` ms apart,
 * `burst` at a time. `content` may be an array: the chunks of a streamed text.
 */
export function sendMessage(res, later, request, message, { delay = 0, gap = 20, burst = 1 } = {}) {
  const finish = message.tool_calls ? 'tool_calls' : 'stop';
  const pieces = Array.isArray(message.content) ? message.content : message.content ? [message.content] : [];
  if (!request.stream) {
    const body = JSON.stringify({
      id: 'chatcmpl-mock',
      object: 'chat.completion',
      model: request.model,
      choices: [{ index: 0, message: { ...message, content: message.content === null ? null : pieces.join('') }, finish_reason: finish }],
      usage,
    });
    later(delay, () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(body);
    });
    return;
  }
  const send = (delta, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, ...extra }], ...(extra.finish_reason ? { usage } : {}) })}\n\n`);
  later(delay, () => res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' }));
  pieces.forEach((content, i) => later(delay + gap * (Math.floor(i / burst) + 1), () => send({ content })));
  const end = delay + gap * (Math.ceil(pieces.length / burst) + 1);
  later(end, () => {
    if (message.tool_calls) {
      send({ role: 'assistant', tool_calls: message.tool_calls.map((c, index) => ({ index, ...c })) });
    }
    send({}, { finish_reason: finish });
    res.end('data: [DONE]\n\n');
  });
}

function closeServer(server) {
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

// ---- reagent --------------------------------------------------------------------------------

function binaryPath() {
  if (process.env.REAGENT_BIN) return process.env.REAGENT_BIN;
  const target = process.env.CARGO_TARGET_DIR
    ? path.resolve(REPO, process.env.CARGO_TARGET_DIR)
    : path.join(REPO, 'target');
  return path.join(target, 'debug', 'reagent');
}

/**
 * Starts `reagent serve` in a temp dir (cleared env, temp SQLite). It serves the UI compiled
 * into the binary, as shipped; `REAGENT_STATIC_DIR=static` in the environment tests the files
 * of the checkout instead, without a rebuild (UI development).
 */
export async function startReagent(llmBase, extraEnv = {}, configText = '') {
  const dir = mkdtempSync(path.join(tmpdir(), 'reagent-e2e-'));
  const config = path.join(dir, 'config.toml');
  writeFileSync(config, configText);
  return spawnReagent(['serve'], dir, {
    REAGENT_CONFIG: config,
    DATABASE_URL: `sqlite://${path.join(dir, 'reagent.db')}`,
    LLM_BASE_URL: llmBase,
    LLM_API_KEY: 'x',
    LLM_MAX_RETRIES: '0',
    RUST_LOG: 'info',
    ...extraEnv,
  });
}

/**
 * The arguments of README's first command, `cargo run --release -- <arguments>` (the first
 * line of README's first code block), or null when it is not of that form.
 */
export function quickStartArgs() {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const block = readme.match(/^```[a-z]*\n([^\n]*)/m);
  const m = block && block[1].trim().match(/^cargo run --release -- (.+)$/);
  return m ? m[1].split(/\s+/) : null;
}

/**
 * Runs the built binary with `args` in `dir` the way a new user would from a fresh clone: the
 * checkout's config.toml copied in, no variables but `env` (and a free port), the database
 * where the defaults put it.
 */
export async function startAsUser(args, env = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'reagent-e2e-user-'));
  copyFileSync(path.join(REPO, 'config.toml'), path.join(dir, 'config.toml'));
  return spawnReagent(args, dir, env);
}

/** `reagent <args>` in `dir` with only `env` (plus REAGENT_BIND=127.0.0.1:0), once listening. */
async function spawnReagent(args, dir, env) {
  const bin = binaryPath();
  if (!existsSync(bin)) throw new Error(`${bin} not found: run \`cargo build\` first`);
  const staticDir = process.env.REAGENT_STATIC_DIR
    ? { REAGENT_STATIC_DIR: path.resolve(REPO, process.env.REAGENT_STATIC_DIR) }
    : {};
  const child = spawn(bin, args, {
    cwd: dir,
    env: { ...staticDir, REAGENT_BIND: '127.0.0.1:0', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reagent did not start:\n${log}`)), 20000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      // eslint-disable-next-line no-control-regex
      const m = log.replace(/\x1b\[[0-9;]*m/g, '').match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`reagent exited (${code}) before listening:\n${log}`));
    });
  });
  return {
    base,
    dir,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---- browser --------------------------------------------------------------------------------

/** Headless Chromium; `options` adds to the context's (e.g. `hasTouch`, `isMobile`, `viewport`). */
export async function startBrowser(options = {}) {
  const profile = mkdtempSync(path.join(tmpdir(), 'reagent-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // Containers often have a tiny /dev/shm; Chromium then crashes without this.
      '--disable-dev-shm-usage',
    ],
    viewport: { width: 1200, height: 820 },
    ...options,
  });
  context.setDefaultTimeout(20000);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

// ---- a TCP proxy that can cut connections --------------------------------------------------

/**
 * Forwards 127.0.0.1:<port> to `target` (`http://host:port`); `dropAll()` destroys every open
 * connection, which is what a flaky network or a restarted reverse proxy does to an SSE stream.
 */
export function startProxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        base: `http://127.0.0.1:${server.address().port}`,
        dropAll() {
          const n = sockets.size;
          for (const s of sockets) s.destroy();
          return n;
        },
        close() {
          for (const s of sockets) s.destroy();
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}

// ---- page helpers ---------------------------------------------------------------------------

/**
 * + New, then the new-conversation dialog: picks `agent` and `engine` and types `systemPrompt`
 * when given, creates, and waits for the new conversation to open.
 */
export async function newConversation(page, { agent, engine, systemPrompt } = {}) {
  const before = await page.evaluate(() => location.hash);
  await page.click('#new-conv');
  await page.waitForSelector('dialog.new-conversation[open]');
  if (agent) await page.check(`dialog[open] input[name="new-agent"][value="${agent}"]`);
  if (engine) await page.selectOption('#new-engine', engine);
  if (systemPrompt) await page.fill('#new-system-prompt', systemPrompt);
  await page.click('dialog[open] button[value="ok"]');
  await page.waitForFunction((old) => location.hash.startsWith('#/c/') && location.hash !== old, before);
  await page.waitForSelector('#delete-conv:not([disabled])');
}

/** Opens the UI (unless `page` already shows it), starts a conversation, sends `query`. */
export async function ask(browser, base, query, page, options) {
  if (!page) {
    page = await browser.context.newPage();
    await page.goto(`${base}/`);
  }
  await page.waitForSelector('body[data-ready="true"]');
  await newConversation(page, options);
  await page.fill('#input', query);
  await page.press('#input', 'Enter');
  await page.waitForSelector('.run');
  return page;
}

/** Waits for the run footer to show `status`. */
export const footer = (page, status) => page.waitForSelector(`.run-footer[data-status="${status}"]`);
