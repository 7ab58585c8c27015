// Wires the console: loads config.json, restores the session of this tab, and renders the view
// of each hash route into <main>, aborting the previous view's timers.

import "./style.css";
import { accessToken, refresh, signOut, signedInEmail } from "./auth";
import { config, loadConfig } from "./config";
import { announce, h } from "./dom";
import { current, go, link } from "./router";
import { agentView } from "./views/agent";
import { agentsView } from "./views/agents";
import { heading, type View } from "./views/common";
import { keysView } from "./views/keys";
import { logsView } from "./views/logs";
import { secretSetView, secretsView } from "./views/secrets";
import { securityView } from "./views/security";
import { signinView } from "./views/signin";
import { signupView } from "./views/signup";

const main = document.getElementById("main") as HTMLElement;
const top = document.getElementById("top") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;

const NAV: [string, string[], string][] = [
  ["Agents", ["agents"], "agents"],
  ["Secrets", ["secrets"], "secrets"],
  ["API keys", ["settings", "api-keys"], "api-keys"],
  ["Security", ["settings", "security"], "security"],
];

// Where a person was going when sign-in interrupted them.
let wanted = "#/agents";
let running: AbortController | undefined;

const notFound: View = async (main) => {
  main.replaceChildren(heading("Not found"), h("p", {}, "No page here. ", h("a", { href: link(["agents"]) }, "Agents")));
};

function viewOf(path: string[]): View {
  const [first, second, third] = path;
  if (path.length === 0 || (first === "agents" && path.length === 1)) return agentsView;
  if (first === "agents" && second && path.length === 2) return agentView;
  if (first === "agents" && second && third === "logs" && path.length === 3) return logsView;
  if (first === "secrets" && path.length === 1) return secretsView;
  if (first === "secrets" && path.length === 2) return secretSetView;
  if (first === "settings" && second === "api-keys" && path.length === 2) return keysView;
  if (first === "settings" && second === "security" && path.length === 2) return securityView;
  return notFound;
}

function renderNav(path: string[]): void {
  const signOutButton = h("button", { type: "button", class: "link" }, "Sign out");
  signOutButton.addEventListener("click", () => {
    signOut();
    go("#/sign-in");
  });
  const section = path[0] === "settings" ? path[1] : path[0] ?? "agents";
  nav.replaceChildren(
    h("ul", {},
      NAV.map(([text, segments, key]) =>
        h("li", {}, h("a", { href: link(segments), "aria-current": key === section ? "page" : null }, text))),
      h("li", { class: "who" }, signedInEmail()),
      h("li", {}, signOutButton)),
  );
}

async function render(): Promise<void> {
  running?.abort();
  const controller = new AbortController();
  running = controller;
  const route = current();
  announce(""); // what the last page said does not belong to this one
  // #/sign-up is the sign-in page when the stack offers no sign-up, never a page to come back to.
  const signingIn = route.path[0] === "sign-in" || route.path[0] === "sign-up";
  const signingUp = route.path[0] === "sign-up" && config().selfSignUp;
  if (!accessToken()) {
    if (!signingIn) {
      wanted = location.hash || "#/agents";
      go("#/sign-in");
      return;
    }
    top.hidden = true;
    const view = signingUp
      ? signupView((step) => go(step.kind === "done" ? wanted : "#/sign-in"))
      : signinView(() => go(wanted));
    await view(main, route, controller.signal);
    return;
  }
  if (signingIn) {
    go(wanted);
    return;
  }
  top.hidden = false;
  renderNav(route.path);
  await viewOf(route.path)(main, route, controller.signal);
  if (!controller.signal.aborted) main.querySelector<HTMLElement>("h1")?.focus();
}

async function start(): Promise<void> {
  try {
    await loadConfig();
  } catch (error) {
    main.replaceChildren(heading("Console unavailable"), h("p", { role: "alert" }, String(error)));
    return;
  }
  await refresh(); // a reload of a signed-in tab keeps its session
  window.addEventListener("hashchange", () => void render());
  await render();
}

void start();
