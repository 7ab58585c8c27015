// The console against a running stack (scripts/e2e.sh watch console): issue 35's Show list in
// order (docs/console.md, "The walk"). What a person's token may reach through the API
// (tenancy, API keys refused on /v1/keys, expired and forged tokens) is the people suite's
// (tests/e2e/people.rs), on this stack and through sam's authorizer.
// Needs the stack's variables (STACK_API_URL, STACK_CONSOLE_URL, EXAMPLE_IMAGE: its data plane
// runs the example agent on the Docker Engine) and the operator command (scripts/admin.sh
// invite-person) on the stack's store and pool.
// Screenshots: .local/e2e-console/<nn>-<page>.png, kept.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launch, watch, screenshots, unnamedControls, scrollsSideways } from "./browser.mjs";
import { password } from "./cognito.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const env = (name) => {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run this suite through scripts/e2e.sh watch console`);
  return value;
};
const api = env("STACK_API_URL").replace(/\/$/, "");
const consoleUrl = env("STACK_CONSOLE_URL").replace(/\/?$/, "/");
// The example agent's image, which the stack's data plane runs as real containers.
const image = env("EXAMPLE_IMAGE");

const run = Date.now().toString(36);
const a = { account: `acct-a-${run}`, email: `a-${run}@example.test`, password: password() };
// What the steps learn, for the later ones.
const state = {};
let browser, page, problems, shots;
const bodies = [];
const unanswered = new Map();

// A bounded wait for a condition the stack reaches in its own time (no timed assertion: the
// bound only stops a hung run).
async function until(what, check, { tries = 60, pause = 1000 } = {}) {
  for (let attempt = 0; attempt < tries; attempt += 1) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
  assert.fail(`${what}: not after ${tries} tries`);
}

const call = (method, path, credential, body) =>
  fetch(`${api}${path}`, {
    method,
    headers: { Authorization: `Bearer ${credential}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

function invite(person) {
  const out = execFileSync(join(root, "scripts", "admin.sh"),
    ["invite-person", person.account, person.email, "--create-account", "--password", person.password],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const match = out.match(/\(person ([^)]+)\)/);
  assert.ok(match, `invite-person printed its person: ${out}`);
  return match[1];
}

async function createKeyInConsole(kind, name) {
  await page.goto(`${consoleUrl}#/settings/api-keys?tab=${kind}`);
  await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
  await page.getByLabel("Name").fill(name);
  await page.getByRole("button", { name: `Create ${kind} key` }).click();
  const shown = page.getByRole("dialog").getByLabel("Key");
  await shown.waitFor();
  return shown.inputValue();
}

async function closeKeyDialog() {
  await page.getByRole("dialog").getByRole("button", { name: "Done" }).click();
  // The element itself, not its role: a closed <dialog> has no role at once, but leaves the page
  // (with the key it held) only in its close event.
  await page.locator("dialog").waitFor({ state: "detached" });
}

before(async () => {
  rmSync(join(root, ".local", "e2e-console"), { recursive: true, force: true });
  shots = screenshots(join(root, ".local", "e2e-console"));
  invite(a);
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  page.on("response", (response) => {
    if (new URL(response.url()).pathname.startsWith("/v1/")) bodies.push(response.text().catch(() => ""));
  });
  // The API's requests still unanswered at the end, said then: what a page stuck on "Loading…"
  // waited for.
  page.on("request", (request) => {
    const { pathname } = new URL(request.url());
    if (pathname.startsWith("/v1/")) unanswered.set(request, `${request.method()} ${pathname} sent ${new Date().toISOString()}`);
  });
  // Every API answer that was slow or refused, as it comes: what a stuck page's log starts from.
  page.on("requestfinished", async (request) => {
    const sent = unanswered.get(request);
    unanswered.delete(request);
    const response = await request.response().catch(() => null);
    const { responseEnd } = request.timing();
    if (sent && (responseEnd > 3000 || (response?.status() ?? 0) >= 400)) {
      console.log(`answered ${response?.status()} after ${Math.round(responseEnd)} ms: ${sent}`);
    }
  });
  page.on("requestfailed", (request) => {
    console.log(`failed (${request.failure()?.errorText}): ${unanswered.get(request)}`);
    unanswered.delete(request);
  });
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame()) console.log(`navigated ${new Date().toISOString()}: ${frame.url()}`);
  });
  console.log(`chromium ${browser.version}; screenshots in ${shots.dir}`);
});

// A failed step's page as it was: its screenshot, its address, what its <main> said and which
// buttons it had.
async function diagnose(name) {
  const text = await page.locator("main").innerText().catch((error) => `(unread: ${error})`);
  const buttons = await page.getByRole("button").allInnerTexts().catch(() => []);
  const dialogs = await page.locator("dialog").count().catch(() => -1);
  console.log(`step "${name}" failed at ${new Date().toISOString()} on ${page.url()}`);
  console.log(`buttons: ${JSON.stringify(buttons)}; dialogs: ${dialogs}\n${text}`);
  await shots.take(page, "failed");
}

/** A step of the walk; a failed one says what its page showed (diagnose). */
function step(name, body) {
  test(name, async () => {
    try {
      await body();
    } catch (error) {
      await diagnose(name);
      throw error;
    }
  });
}

after(async () => {
  for (const request of unanswered.values()) console.log(`never answered: ${request}`);
  await browser?.close();
});

step("1. sign in by keyboard only, to the agents page", async () => {
  await page.goto(consoleUrl);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await shots.take(page, "sign-in");
  await page.keyboard.type(a.email);
  await page.keyboard.press("Tab");
  await page.keyboard.type(a.password);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
  await shots.take(page, "agents");
});

step("2. a private key shown once, copied, working, then revoked", async () => {
  const key = await createKeyInConsole("private", "ci");
  assert.match(key, /^ahk_/);
  await shots.take(page, "key-created");
  await page.getByRole("button", { name: "Copy" }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
  await closeKeyDialog();
  await page.getByRole("table", { name: "Private keys" }).waitFor();
  assert.ok(!(await page.content()).includes(key), "the key is gone from the page once its dialog closed");
  assert.equal((await call("GET", "/agents", key)).status, 200);
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Revoke ci" }).click();
  await page.getByRole("button", { name: "Revoke ci" }).waitFor({ state: "detached" });
  await shots.take(page, "key-revoked");
  // Locally at once (no authorizer cache); on AWS within the 60 s cache: 65 tries a second.
  await until("the revoked key refused", async () => (await call("GET", "/agents", key)).status === 401, { tries: 65 });
});

step("3. keys for an agent, its readiness, a session and its lines", async () => {
  state.deploy = await createKeyInConsole("private", "deploy");
  await closeKeyDialog();
  state.web = await createKeyInConsole("public", "web");
  assert.match(state.web, /^ahp_/);
  await closeKeyDialog();
  await page.getByRole("table", { name: "Public keys" }).getByText("web").waitFor();
  await shots.take(page, "keys");

  const created = await call("POST", "/agents", state.deploy, {
    serviceName: "voice", image, autoScaling: { minAgents: 1, maxAgents: 2 },
  });
  assert.equal(created.status, 201, await created.text());
  await page.goto(`${consoleUrl}#/agents/voice`);
  await page.getByRole("heading", { name: "Readiness" }).waitFor();
  const first = await page.locator("[data-ready]").getAttribute("data-ready");
  console.log(`agent page first showed ready=${first}`);
  await shots.take(page, "agent-first");
  await page.locator('[data-ready="true"]').waitFor({ timeout: 60_000 });
  await shots.take(page, "agent-ready");

  // A real session: the replica's agent holds it for a minute and writes its own lines.
  const started = await call("POST", "/public/voice/start", state.web, { body: { durationSeconds: 60 } });
  const startedBody = await started.text();
  assert.equal(started.status, 200, startedBody);
  state.sessionId = JSON.parse(startedBody).sessionId;
  const sessionLink = page.getByRole("link", { name: `Lines of session ${state.sessionId}` });
  await until("the session on the agent page", async () => {
    await page.reload();
    await page.getByRole("heading", { name: "Sessions" }).waitFor();
    return (await sessionLink.count()) > 0;
  }, { tries: 20 });
  await shots.take(page, "agent-session");
  await sessionLink.click();
  await page.getByRole("heading", { name: "Logs of voice", level: 1 }).waitFor();
  // The agent's own line, read from its container's log: "session started transport=…".
  await until("the agent's own session line on the logs page", async () => {
    await page.reload();
    await page.getByRole("heading", { name: "Logs of voice", level: 1 }).waitFor();
    return (await page.getByText(`${state.sessionId} - session started`).count()) > 0;
  }, { tries: 30 });
  await shots.take(page, "session-lines");
});

step("4. a secret set in the console is never sent back", async () => {
  const marker = `marker-${run}-${Math.random().toString(36).slice(2)}`;
  await page.goto(`${consoleUrl}#/secrets`);
  await page.getByRole("heading", { name: "Secrets", level: 1 }).waitFor();
  await page.getByLabel("Set name").fill("bot-secrets");
  await page.getByLabel("Key", { exact: true }).fill("OPENAI_API_KEY");
  await page.getByLabel("Value").fill(marker);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { name: "Secret set bot-secrets" }).waitFor();
  await page.getByRole("table", { name: "Keys" }).getByText("OPENAI_API_KEY").waitFor();
  await shots.take(page, "secret-set");
  assert.ok(!(await page.content()).includes(marker));
  await page.reload();
  await page.getByRole("table", { name: "Keys" }).waitFor();
  await shots.take(page, "secret-reloaded");
  assert.ok(!(await page.content()).includes(marker));
  for (const body of await Promise.all(bodies)) assert.ok(!body.includes(marker), "no answer holds the value");
});

step("5. accessible names everywhere; no sideways scroll at 200 % zoom", async () => {
  await page.setViewportSize({ width: 640, height: 900 }); // 1280 px wide at 200 %
  const routes = {
    "agents": "Agents", "agents/voice": "Agent voice", [`agents/voice/logs?sessionId=${state.sessionId}`]: "Logs of voice",
    "secrets": "Secrets", "secrets/bot-secrets": "Secret set bot-secrets",
    "settings/api-keys?tab=private": "API keys", "settings/api-keys?tab=public": "API keys", "settings/security": "Security",
  };
  for (const [route, title] of Object.entries(routes)) {
    await page.goto(`${consoleUrl}#/${route}`);
    await page.getByRole("heading", { name: title, level: 1 }).waitFor();
    await page.waitForFunction(() => !document.querySelector("main")?.textContent?.includes("Loading…"));
    assert.deepEqual(await unnamedControls(page), [], `controls without a name on #/${route}`);
    assert.equal(await scrollsSideways(page), false, `#/${route} scrolls sideways at 640 px`);
  }
  await shots.take(page, "narrow");
  // The page refuses HTML strings (the CSP's Trusted Types): served with the console's headers.
  const refused = await page.evaluate(() => {
    try { document.body.insertAdjacentHTML("beforeend", "<b>x</b>"); return false; } catch { return true; }
  });
  assert.equal(refused, true, "Trusted Types refuse HTML strings");
  assert.deepEqual(problems.filter((problem) => !problem.includes("TrustedHTML")), [], "no CSP violation or page error");
});
