// Measures what a long streamed answer costs the page: the mock provider streams a ~15,000
// character Markdown answer (support.mjs `longAnswer`, 6-character chunks) through the real
// binary, and a `longtask` PerformanceObserver in the page records every main-thread task over
// 50 ms until the footer says completed (or LIMIT_MS passes). Not a test (node --test skips it).
//
// Run: node tests/e2e/measure-streaming.mjs   (REAGENT_STATIC_DIR=<dir> to measure other UI files)

import { ask, startBrowser, startMockLlm, startReagent } from './support.mjs';

const llm = await startMockLlm();
const browser = await startBrowser();
const server = await startReagent(llm.base);
try {
  const page = await browser.context.newPage();
  await page.addInitScript(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto(`${server.base}/`);
  const started = Date.now();
  await ask(browser, server.base, 'long answer please', page);
  const limit = Number(process.env.LIMIT_MS || 120000);
  try {
    await page.waitForSelector('.run-footer[data-status="completed"]', { timeout: limit });
  } catch {
    console.log(`not completed within ${limit} ms`);
  }
  const tasks = await page.evaluate(() => window.__longTasks);
  const total = tasks.reduce((a, b) => a + b, 0);
  console.log(`page done after ${Date.now() - started} ms; long tasks: ${tasks.length}, ` +
    `max ${Math.max(0, ...tasks).toFixed(0)} ms, total ${total.toFixed(0)} ms`);
} finally {
  await browser.close();
  await server.stop();
  await llm.close();
}
