// The Tools drawer (docs/protocols.md) in headless Chromium against the real binary: tools listed by
// source, an MCP server (our Python peer, tests/peers/mcp_peer.py) ready with its tools, and a
// server that cannot start shown failed with its error.
//
// Run: cargo build && scripts/peers.sh && npm ci --prefix tests/e2e && node --test tests/e2e/

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REPO, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;
const PEERS = process.env.REAGENT_PEERS_DIR || path.join(os.homedir(), '.cache/reagent-peers');
const PYTHON = path.join(PEERS, 'venv/bin/python');

let llm;
let browser;
let server;

before(async () => {
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run scripts/peers.sh`);
  const config = [
    '[[mcp]]',
    'name = "peer"',
    `command = ${JSON.stringify(PYTHON)}`,
    `args = [${JSON.stringify(path.join(REPO, 'tests/peers/mcp_peer.py'))}]`,
    '',
    '[[mcp]]',
    'name = "broken"',
    'command = "/nonexistent/mcp-server"',
    '',
  ].join('\n');
  llm = await startMockLlm();
  browser = await startBrowser();
  server = await startReagent(llm.base, {}, config);
  // The servers connect in the background (the listener does not wait for them): the drawer
  // is read once both first attempts are over.
  await settled(server.base);
});

/** Polls /api/mcp until no server is still making its first attempt. */
async function settled(base) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const servers = await (await fetch(`${base}/api/mcp`)).json();
    if (servers.every((s) => s.state !== 'connecting')) return;
    assert.ok(Date.now() < deadline, `MCP servers still connecting: ${JSON.stringify(servers)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

after(async () => {
  await server?.stop();
  await browser?.close();
  await llm?.close();
});

describe('reagent UI, tools drawer', () => {
  test('lists tools by source with each MCP server state and last error', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await browser.context.newPage();
    await page.goto(server.base);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.locator('#tools-panel').isHidden(), true);
    await page.click('#show-tools');
    await page.waitForSelector('.mcp-server[data-server="peer"]');

    const builtin = page.locator('.tools-group', { hasText: 'Built-in' });
    assert.ok(await builtin.locator('.tool-item[data-tool="calculator"]').count() === 1);

    const peer = page.locator('.mcp-server[data-server="peer"]');
    assert.equal(await peer.getAttribute('data-state'), 'ready');
    assert.equal(await peer.locator('.tool-item[data-tool="peer__echo"]').count(), 1);
    assert.equal(await peer.locator('.mcp-error').count(), 0);

    const broken = page.locator('.mcp-server[data-server="broken"]');
    assert.match(await broken.getAttribute('data-state'), /failed|restarting/);
    assert.match(await broken.locator('.mcp-error').textContent(), /nonexistent/);

    await page.click('#close-tools');
    assert.equal(await page.locator('#tools-panel').isHidden(), true);
    await page.close();
  });
});
