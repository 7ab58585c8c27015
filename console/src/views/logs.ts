// #/agents/{name}/logs?sessionId=&deploymentId=&query=&startTime=&endTime=&order=: the logs
// API's filters as a form (the route holds them, so a filtered view can be linked), newest
// first by default, refreshed every 5 s while the tab is visible unless paused.

import { api, type LogLine } from "../api";
import { announce, field, h, table, time } from "../dom";
import { go, link } from "../router";
import { errorBox, heading, poll, showError, type View } from "./common";

const FILTERS = ["sessionId", "deploymentId", "query", "startTime", "endTime", "order"] as const;

// datetime-local values (the reader's time) to and from the API's Unix seconds.
const toInput = (seconds: string | null): string => {
  if (!seconds) return "";
  const date = new Date(Number(seconds) * 1000);
  if (Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
};
const toSeconds = (local: string): string => (local ? String(Math.floor(new Date(local).getTime() / 1000)) : "");

export const logsView: View = async (main, route, signal) => {
  const name = route.path[1] ?? "";
  const errors = errorBox();
  const q = route.query;
  const sessionId = h("input", { name: "sessionId", value: q.get("sessionId") ?? "" });
  const deploymentId = h("input", { name: "deploymentId", value: q.get("deploymentId") ?? "" });
  const query = h("input", { name: "query", type: "search", value: q.get("query") ?? "" });
  const startTime = h("input", { name: "startTime", type: "datetime-local", step: 1, value: toInput(q.get("startTime")) });
  const endTime = h("input", { name: "endTime", type: "datetime-local", step: 1, value: toInput(q.get("endTime")) });
  const order = h("select", { name: "order" }, h("option", { value: "desc" }, "Newest first"), h("option", { value: "asc" }, "Oldest first"));
  order.value = q.get("order") === "asc" ? "asc" : "desc";
  const form = h("form", { class: "filters", "aria-label": "Filter lines" },
    field("Session", sessionId), field("Deployment", deploymentId), field("Contains", query),
    field("From", startTime), field("Until (exclusive)", endTime), field("Order", order),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go(link(["agents", name, "logs"], {
      sessionId: sessionId.value.trim(), deploymentId: deploymentId.value.trim(), query: query.value,
      startTime: toSeconds(startTime.value), endTime: toSeconds(endTime.value), order: order.value === "asc" ? "asc" : undefined,
    }));
  });
  let paused = false;
  const pause = h("button", { type: "button", "aria-pressed": "false" }, "Pause refresh");
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume refresh" : "Pause refresh";
    announce(paused ? "Refresh paused" : "Refresh resumed");
  });
  const results = h("div", { "aria-busy": "true" }, h("p", {}, "Loading…"));
  main.replaceChildren(
    heading(`Logs of ${name}`),
    h("p", {}, h("a", { href: link(["agents", name]) }, `Agent ${name}`)),
    form, h("p", {}, pause), errors, results);

  const filters: Record<string, string> = {};
  for (const name of FILTERS) {
    const value = q.get(name);
    if (value) filters[name] = value;
  }
  let first = true;
  poll(signal, async () => {
    if (!first && (paused || document.visibilityState !== "visible")) return 5_000;
    try {
      const page = await api.logs(name, filters);
      results.replaceChildren(linesTable(page.logs, `${page.total.value}${page.total.relation === "gte" ? " or more" : ""}`));
      results.setAttribute("aria-busy", "false");
      errors.replaceChildren();
      if (!first) announce(`Lines refreshed: ${page.logs.length} shown`);
    } catch (error) {
      // A failed refresh keeps the lines shown; a failed first read leaves nothing loading.
      if (first) {
        results.replaceChildren();
        results.setAttribute("aria-busy", "false");
      }
      showError(errors, error, form);
    }
    first = false;
    return 5_000;
  });
};

function linesTable(lines: LogLine[], total: string): Node {
  if (lines.length === 0) return h("p", {}, "No lines match.");
  return h("div", {},
    h("p", {}, `${total} lines match; ${lines.length} shown.`),
    table("Log lines", ["Time", "Session", "Line"], lines.map((line) => [
      time(line.timestamp),
      line.sessionId ? h("code", {}, line.sessionId) : "—",
      h("span", { class: "line" }, line.log),
    ])));
}
