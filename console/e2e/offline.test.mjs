// The console in Chromium against moto's Cognito and a fake /v1 (e2e/fake-api.mjs): every view,
// sign-in by keyboard, the key shown once, a secret never echoed, accessible names, no sideways
// scroll at 200 % zoom, no CSP violation. It needs no Rust stack (seconds, for working on the
// console); console.test.mjs runs the same paths against the real stack.
//
//   cd console && npm run build && node --test e2e/offline.test.mjs
//   (moto: MOTO_ENDPOINT=http://127.0.0.1:PORT, else it starts one with scripts/local.sh)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launch, watch, screenshots, unnamedControls, scrollsSideways } from "./browser.mjs";
import { makePool, makePerson, password } from "./cognito.mjs";
import { startFake } from "./fake-api.mjs";

const consoleDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(consoleDir, "..");
const dist = join(consoleDir, "dist");

let moto, motoPid, fake, openFake, browser, shots;
const email = "offline@example.test";
const secret = password();

before(async () => {
  assert.ok(existsSync(join(dist, "index.html")), "build the console first: npm run build");
  moto = process.env.MOTO_ENDPOINT;
  if (!moto) {
    const port = execFileSync(join(root, "scripts/local.sh"), ["free-port"]).toString().trim();
    motoPid = Number(execFileSync(join(root, "scripts/local.sh"), ["moto-start", port]).toString().trim().split("\n").pop());
    moto = `http://127.0.0.1:${port}`;
  }
  const { poolId, clientId } = await makePool(moto);
  await makePerson(moto, poolId, email, secret);
  const config = { apiBase: "/v1", region: "us-east-1", userPoolId: poolId, clientId, cognitoEndpoint: `${moto}/`, selfSignUp: false };
  fake = await startFake({ dist, config });
  // The same console and pool, as a stack with SelfSignUp=true serves them.
  openFake = await startFake({ dist, config: { ...config, selfSignUp: true } });
  browser = await launch();
  shots = screenshots(join(root, ".local", "e2e-console-offline"));
  console.log(`chromium ${browser.version}; screenshots in ${shots.dir}`);
});

after(async () => {
  await browser?.close();
  fake?.close();
  openFake?.close();
  if (motoPid) process.kill(motoPid);
});

async function signIn(page) {
  await page.goto(`${fake.url}/console/`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  // Keyboard only: the email field has focus; Tab to the password, Enter submits.
  await page.keyboard.type(email);
  await page.keyboard.press("Tab");
  await page.keyboard.type(secret);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Agents" }).waitFor();
}

test("every view, signed in by keyboard, under the CSP", async () => {
  const page = await browser.context.newPage();
  const problems = watch(page);
  const bodies = [];
  page.on("response", (response) => {
    if (new URL(response.url()).pathname.startsWith("/v1/")) bodies.push(response.text().catch(() => ""));
  });

  await page.goto(`${fake.url}/console/`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await shots.take(page, "sign-in");
  // A wrong password: the sentence, and the person stays on the form.
  await page.keyboard.type(email);
  await page.keyboard.press("Tab");
  await page.keyboard.type("Wrong-password-1");
  await page.keyboard.press("Enter");
  await page.getByRole("alert").filter({ hasText: "Incorrect email or password." }).waitFor();
  await page.reload();
  await signIn(page);
  await shots.take(page, "agents");

  // Agent page: not ready, then ready (the fake turns ready on its third read, the view polls 3 s).
  await page.getByRole("link", { name: "voice" }).click();
  await page.getByText("Ready: sessions can start.").waitFor({ timeout: 15_000 });
  await shots.take(page, "agent");
  await page.getByRole("link", { name: /^Lines of session/ }).click();
  await page.getByText("a line of the session (simulated)").waitFor();
  assert.match(page.url(), /logs\?sessionId=/);
  await shots.take(page, "logs");
  // The logs of an agent the account does not have: the sentence, and nothing left loading.
  await page.goto(`${fake.url}/console/#/agents/ghost/logs`);
  await page.getByRole("alert").filter({ hasText: "Not found" }).waitFor();
  assert.ok(!(await page.locator("main").innerText()).includes("Loading…"), "a failed first read leaves nothing loading");

  // Keys: created, shown once, copied, gone when the dialog closes; revoked after a confirm.
  await page.goto(`${fake.url}/console/#/settings/api-keys?tab=private`);
  await page.getByRole("heading", { name: "API keys" }).waitFor();
  await page.getByLabel("Name").fill("ci");
  await page.getByRole("button", { name: "Create private key" }).click();
  const shown = page.getByRole("dialog").getByLabel("Key");
  await shown.waitFor();
  const key = await shown.inputValue();
  assert.match(key, /^ahk_/);
  await shots.take(page, "key-created");
  await page.getByRole("button", { name: "Copy" }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
  await page.getByRole("button", { name: "Done" }).click();
  // The element itself, not its role: a closed <dialog> has no role at once, but leaves the page
  // (with the key it held) only in its close event.
  await page.locator("dialog").waitFor({ state: "detached" });
  await page.getByRole("table", { name: "Private keys" }).waitFor();
  assert.ok(!(await page.content()).includes(key), "the key is gone from the page once its dialog closed");
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Revoke ci" }).click();
  await page.getByRole("button", { name: "Revoke ci" }).waitFor({ state: "detached" });
  await shots.take(page, "key-revoked");
  // A name the API refuses: its sentence, and focus on the field it names.
  await page.getByLabel("Name").fill("x".repeat(64));
  await page.evaluate(() => document.querySelector("input[name=name]").removeAttribute("maxlength"));
  await page.getByLabel("Name").fill("x".repeat(65));
  await page.getByRole("button", { name: "Create private key" }).click();
  await page.getByRole("alert").filter({ hasText: "name must be 1 to 64 characters" }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("name")), "name");
  // A key's dialog closed as the person moves on (its close event comes after the move): they
  // stay where they went, and the keys read for the closed dialog change nothing there.
  await page.getByLabel("Name").fill("moving-on");
  await page.getByRole("button", { name: "Create private key" }).click();
  await page.getByRole("dialog").getByLabel("Key").waitFor();
  const keysRead = page.waitForResponse((response) => response.url().endsWith("/v1/keys"));
  await page.evaluate(() => {
    document.querySelector("dialog")?.close();
    location.hash = "#/secrets";
  });
  await keysRead;
  await page.getByRole("heading", { name: "Secrets", level: 1 }).waitFor();
  await page.getByRole("table", { name: "Secret sets" }).or(page.getByText("No secret sets")).first().waitFor();
  assert.match(page.url(), /#\/secrets$/);

  // Secrets: a value set in the console is in no answer the page received, nor in the page.
  const marker = `marker-${Math.random().toString(36).slice(2)}`;
  await page.goto(`${fake.url}/console/#/secrets`);
  await page.getByRole("heading", { name: "Secrets" }).waitFor();
  await page.getByLabel("Set name").fill("bot-secrets");
  await page.getByLabel("Key", { exact: true }).fill("OPENAI_API_KEY");
  await page.getByLabel("Value").fill(marker);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { name: "Secret set bot-secrets" }).waitFor();
  await page.getByRole("table", { name: "Keys" }).getByText("OPENAI_API_KEY").waitFor();
  await shots.take(page, "secret-set");
  assert.ok(fake.seen.bodies.some((body) => body.includes(marker)), "the value reached the API");
  assert.ok(!(await page.content()).includes(marker));
  await page.reload();
  await page.getByRole("table", { name: "Keys" }).waitFor();
  assert.ok(!(await page.content()).includes(marker));
  for (const body of await Promise.all(bodies)) assert.ok(!body.includes(marker), "no answer holds the value");

  await page.goto(`${fake.url}/console/#/settings/security`);
  await page.getByRole("button", { name: "Set up an authenticator app" }).click();
  await page.getByLabel("Code").waitFor();
  await shots.take(page, "security");

  // The CSP is enforced: an HTML string sink throws (Trusted Types with no policy).
  const refused = await page.evaluate(() => {
    try { document.body.insertAdjacentHTML("beforeend", "<b>x</b>"); return false; } catch { return true; }
  });
  assert.equal(refused, true, "Trusted Types refuse HTML strings");
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes("TrustedHTML")));
  assert.deepEqual(problems, []);
  await page.close();
});

test("accessible names on every control, no sideways scroll at 200 % zoom", async () => {
  const page = await browser.context.newPage();
  const problems = watch(page);
  await signIn(page);
  await page.setViewportSize({ width: 640, height: 900 }); // 1280 px at 200 %
  const routes = {
    "agents": "Agents", "agents/voice": "Agent voice", "agents/voice/logs": "Logs of voice",
    "secrets": "Secrets", "secrets/bot-secrets": "Secret set bot-secrets",
    "settings/api-keys?tab=private": "API keys", "settings/api-keys?tab=public": "API keys", "settings/security": "Security",
  };
  for (const [route, title] of Object.entries(routes)) {
    await page.goto(`${fake.url}/console/#/${route}`);
    await page.getByRole("heading", { name: title, level: 1 }).waitFor();
    await page.waitForFunction(() => !document.querySelector("main")?.textContent?.includes("Loading…"));
    assert.deepEqual(await unnamedControls(page), [], `controls without a name on #/${route}`);
    assert.equal(await scrollsSideways(page), false, `#/${route} scrolls sideways at 640 px`);
  }
  await shots.take(page, "narrow-logs-or-last");
  assert.deepEqual(problems, []);
  await page.close();
});

// moto confirms any code and never runs the pool's trigger (docs/people.md): this walks the
// console's side of self sign-up (the fake /v1 takes any token); the trigger has its own tests.
test("self sign-up: offered only when config.json says so; create, confirm, signed in", async () => {
  const page = await browser.context.newPage();
  const problems = watch(page);
  await page.goto(`${fake.url}/console/#/sign-up`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  assert.equal(await page.getByRole("link", { name: "Create an account" }).count(), 0);
  // Signed in from there, the person lands on their agents, not on the page not offered.
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(secret);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();

  const newcomer = `newcomer-${Date.now()}@example.test`;
  const chosen = password();
  await page.goto(`${openFake.url}/console/`);
  await page.getByRole("link", { name: "Create an account" }).click();
  await page.getByRole("heading", { name: "Create an account" }).waitFor();
  await shots.take(page, "sign-up");
  // Keyboard only, as sign-in: the email field has focus.
  await page.keyboard.type(newcomer);
  await page.keyboard.press("Tab");
  await page.keyboard.type("weak");
  await page.keyboard.press("Enter");
  await page.getByRole("alert").filter({ hasText: "does not meet the policy" }).waitFor();
  await page.getByLabel("Password").fill(chosen);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Confirm your email" }).waitFor();
  assert.deepEqual(await unnamedControls(page), []);
  await shots.take(page, "sign-up-confirm");
  await page.keyboard.type("123456");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Agents" }).waitFor();
  assert.ok(!(await page.content()).includes(chosen), "the password is in no page");

  // The same address again: Cognito's sentence, on the form.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.goto(`${openFake.url}/console/#/sign-up`);
  await page.getByLabel("Email").fill(newcomer);
  await page.getByLabel("Password").fill(chosen);
  await page.keyboard.press("Enter");
  await page.getByRole("alert").filter({ hasText: "already an account with this email" }).waitFor();
  assert.deepEqual(problems, []);
  await page.close();
});
