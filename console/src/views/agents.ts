// #/agents: the account's agents.

import { api } from "../api";
import { h, table, time } from "../dom";
import { link } from "../router";
import { errorBox, heading, showError, type View } from "./common";

export const agentsView: View = async (main) => {
  const errors = errorBox();
  const body = h("div", {}, h("p", {}, "Loading…"));
  main.replaceChildren(heading("Agents"), errors, body);
  try {
    const { services } = await api.agents();
    if (services.length === 0) {
      body.replaceChildren(h("p", {}, "No agents yet. Deploy one with the API or the CLI (docs/api.md)."));
      return;
    }
    body.replaceChildren(
      table(
        "Agents",
        ["Name", "Status", "Ready", "Active deployment", "Updated"],
        services.map((agent) => [
          h("a", { href: link(["agents", agent.name]) }, agent.name),
          agent.activeDeploymentReady ? "Deployed" : "Deploying",
          agent.ready ? "Ready" : "Not ready",
          h("code", {}, agent.activeDeploymentId),
          time(agent.updatedAt),
        ]),
      ),
    );
  } catch (error) {
    body.replaceChildren();
    showError(errors, error);
  }
};
