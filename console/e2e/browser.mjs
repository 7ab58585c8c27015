// Debian's chromium driven by playwright-core (no browser download): the flags of
// docs/console.md ("Its tests"), a fresh profile per launch, clipboard permissions so a test
// can read back what a Copy button wrote, and helpers the suites share.

import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A browser context on an empty profile; `close()` also removes the profile. */
export async function launch({ width = 1280, height = 900 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "console-e2e-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width, height },
    permissions: ["clipboard-read", "clipboard-write"],
  });
  const version = context.browser()?.version() ?? "(persistent context)";
  return {
    context,
    version,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Watches a page for what must never happen: a CSP violation, an uncaught error, a console
 * error. `problems` lists them; a test asserts it is empty.
 */
export function watch(page) {
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // A refused request is the test's to judge (it asserts statuses); anything else logged as
    // an error, a CSP refusal above all, is a problem.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  return problems;
}

/** Screenshots to DIR/<nn>-<page>.png (kept after the run: .local/e2e-console for the suite). */
export function screenshots(dir) {
  mkdirSync(dir, { recursive: true });
  let count = 0;
  return {
    dir,
    async take(page, name) {
      count += 1;
      const file = join(dir, `${String(count).padStart(2, "0")}-${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
  };
}

/** Every form control of the page that has no accessible name (Chromium's accessibility tree). */
export async function unnamedControls(page) {
  const controls = page.locator("input:not([type=hidden]), select, textarea, button");
  const missing = [];
  for (let index = 0; index < (await controls.count()); index += 1) {
    const control = controls.nth(index);
    if (!(await control.isVisible())) continue;
    const name = await control.evaluate((element) => {
      // The accessible name as the platform computes it for labels, aria-label(ledby), text.
      const labelled = element.getAttribute("aria-labelledby");
      if (labelled) return labelled.split(/\s+/).map((id) => document.getElementById(id)?.textContent ?? "").join(" ").trim();
      if (element.getAttribute("aria-label")) return element.getAttribute("aria-label");
      if (element.labels && element.labels.length > 0) return [...element.labels].map((label) => label.textContent).join(" ").trim();
      if (element.tagName === "BUTTON") return element.textContent.trim();
      return "";
    });
    if (!name) missing.push(await control.evaluate((element) => element.outerHTML.slice(0, 120)));
  }
  return missing;
}

/** Whether the page is wider than its viewport (it would scroll sideways). */
export async function scrollsSideways(page) {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}
