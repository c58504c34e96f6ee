// The run footer links to the run's trace when tracing is on and REAGENT_TRACE_URL is set
// (docs/deployment.md, "Tracing"), and only then.
//
// Run: cargo build && npm ci --prefix tests/e2e && node --test tests/e2e/trace.test.mjs

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ask, footer, startBrowser, startMockLlm, startReagent } from './support.mjs';

const SCENARIO_TIMEOUT = 45000;

/** A local port nothing listens on: tracing on, its collector down. */
async function deadEndpoint() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

let llm;
let traced;
let plain;
let browser;

before(async () => {
  llm = await startMockLlm();
  const endpoint = await deadEndpoint();
  traced = await startReagent(llm.base, {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    REAGENT_TRACE_URL: 'http://tracing.example/trace/{trace_id}',
  });
  plain = await startReagent(llm.base, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await traced?.stop();
  await plain?.stop();
  await llm?.close();
});

const traceLinks = (page) =>
  page.$$eval('.run-footer a.trace-link', (links) => links.map((a) => [a.href, a.target, a.rel]));

describe('reagent UI, trace link', () => {
  test('the footer links to the trace with REAGENT_TRACE_URL', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, traced.base, 'What is 6*7?');
    await footer(page, 'completed');
    const links = await traceLinks(page);
    assert.equal(links.length, 1, JSON.stringify(links));
    assert.match(links[0][0], /^http:\/\/tracing\.example\/trace\/[0-9a-f]{32}$/);
    assert.equal(links[0][1], '_blank');
    assert.equal(links[0][2], 'noopener noreferrer');
  });

  test('no link without REAGENT_TRACE_URL', { timeout: SCENARIO_TIMEOUT }, async () => {
    const page = await ask(browser, plain.base, 'What is 6*7?');
    await footer(page, 'completed');
    assert.deepEqual(await traceLinks(page), []);
  });
});
