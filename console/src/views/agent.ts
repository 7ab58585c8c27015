// #/agents/{name}: readiness (polled every 3 s until ready, then every 10 s), the active
// deployment with its errors and manifest, and the agent's sessions (newest first), each
// linking to its log lines.

import { api, type Agent, type Session } from "../api";
import { announce, field, h, table, time } from "../dom";
import { link } from "../router";
import { errorBox, heading, poll, showError, type View } from "./common";

export const agentView: View = async (main, route, signal) => {
  const name = route.path[1] ?? "";
  const errors = errorBox();
  const readiness = h("section", { "aria-labelledby": "readiness-h" });
  const deployment = h("section", { "aria-labelledby": "deployment-h" });
  const sessions = h("div", {});
  const status = h("select", { name: "status" },
    h("option", { value: "all" }, "All"), h("option", { value: "active" }, "Active"), h("option", { value: "ended" }, "Ended"));
  status.value = route.query.get("status") ?? "all";
  main.replaceChildren(
    heading(`Agent ${name}`),
    h("p", {}, h("a", { href: link(["agents"]) }, "All agents"), " · ", h("a", { href: link(["agents", name, "logs"]) }, "Logs")),
    errors,
    readiness,
    deployment,
    h("section", { "aria-labelledby": "sessions-h" }, h("h2", { id: "sessions-h" }, "Sessions"), field("Show sessions", status), sessions),
  );
  let wasReady: boolean | undefined;
  let lastDeployment = "";
  const refreshSessions = async (): Promise<void> => {
    const page = await api.sessions(name, status.value);
    sessions.replaceChildren(sessionsTable(name, page.sessions, `${page.total.value}${page.total.relation === "gte" ? "+" : ""}`));
  };
  status.addEventListener("change", () => {
    void refreshSessions().catch((error: unknown) => showError(errors, error));
  });
  poll(signal, async () => {
    try {
      const agent = await api.agent(name);
      readiness.replaceChildren(...readinessOf(agent));
      const deploymentKey = `${agent.deployment?.id ?? ""}|${JSON.stringify(agent.errors)}`;
      if (deploymentKey !== lastDeployment) {
        deployment.replaceChildren(...deploymentOf(agent));
        lastDeployment = deploymentKey;
      }
      if (wasReady !== undefined && wasReady !== agent.ready) announce(agent.ready ? `${name} is ready` : `${name} is not ready`);
      wasReady = agent.ready;
      await refreshSessions();
      errors.replaceChildren();
      return agent.ready ? 10_000 : 3_000;
    } catch (error) {
      showError(errors, error);
      return 10_000;
    }
  });
};

function readinessOf(agent: Agent): Node[] {
  return [
    h("h2", { id: "readiness-h" }, "Readiness"),
    h("p", { class: agent.ready ? "ok" : "pending", "data-ready": String(agent.ready) },
      agent.ready ? "Ready: sessions can start." : "Not ready yet."),
    h("p", {}, `Active sessions: ${agent.activeSessionCount}`),
  ];
}

function deploymentOf(agent: Agent): Node[] {
  const nodes: Node[] = [h("h2", { id: "deployment-h" }, "Active deployment")];
  if (!agent.deployment) return [...nodes, h("p", {}, "None.")];
  nodes.push(h("p", {}, h("code", {}, agent.deployment.id), " created ", time(agent.deployment.createdAt)));
  if (agent.errors.length > 0) {
    nodes.push(h("ul", { class: "errors-list", "aria-label": "Deployment errors" },
      agent.errors.map((error) => h("li", {}, h("strong", {}, error.code), ": ", error.message))));
  }
  nodes.push(h("details", {}, h("summary", {}, "Manifest"), h("pre", { tabindex: 0 }, JSON.stringify(agent.deployment.manifest, null, 2))));
  return nodes;
}

function sessionsTable(name: string, sessions: Session[], total: string): Node {
  if (sessions.length === 0) return h("p", {}, "No sessions.");
  return table(
    `Sessions (${total})`,
    ["Session", "Status", "Started", "Ended", "Completion"],
    sessions.map((session) => [
      h("a", { href: link(["agents", name, "logs"], { sessionId: session.sessionId }), "aria-label": `Lines of session ${session.sessionId}` },
        h("code", {}, session.sessionId)),
      session.status,
      time(session.createdAt),
      time(session.endedAt),
      session.completionStatus ?? "—",
    ]),
  );
}
