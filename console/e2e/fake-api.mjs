// A stand-in for the stack, for e2e/offline.test.mjs: the built console served as the dev
// gateway serves it (the CSP and headers of docs/console.md, "Building and serving it"), and an
// in-memory /v1 with the shapes of openapi.yaml (agents, sessions, logs, secrets, keys). It
// checks only that a Bearer credential of three segments is present: the real checks are the
// stack's.

import { createServer } from "node:http";
import { readFileSync, existsSync, statSync } from "node:fs";
import { join, normalize, extname } from "node:path";
import { randomBytes, randomUUID } from "node:crypto";

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png" };

export function csp(cognitoOrigin) {
  return [
    "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "font-src 'self'",
    `connect-src 'self' ${cognitoOrigin}`, "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    "object-src 'none'", "require-trusted-types-for 'script'", "trusted-types 'none'",
  ].join("; ");
}

export function startFake({ dist, config }) {
  const now = () => new Date().toISOString();
  const deploymentId = randomUUID();
  const sessionId = randomUUID();
  let agentReads = 0;
  const keys = [];
  const sets = new Map(); // name -> Map(key -> updatedAt); values are dropped on arrival
  const seen = { bodies: [] }; // every body the fake received, for the test's plaintext checks

  const send = (res, status, body, headers = {}) => {
    res.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store", ...headers });
    res.end(JSON.stringify(body));
  };
  const agent = () => {
    agentReads += 1;
    const ready = agentReads > 2;
    return { name: "voice", ready, activeDeploymentId: deploymentId, activeDeploymentReady: ready, updatedAt: now(), createdAt: now(),
      activeSessionCount: 0, errors: [], deployment: { id: deploymentId, createdAt: now(), manifest: { spec: { image: "example/agent:1" } } } };
  };

  const issued = new Map(); // key -> its summary: a live one is accepted as a key is
  const started = [];
  const api = (req, res, path, body) => {
    const credential = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    const person = /^[\w-]+\.[\w-]+\.[\w-]+$/.test(credential);
    const key = issued.get(credential);
    if (!person && (!key || key.revokedAt)) {
      return send(res, 401, { error: "Unauthorized", code: "UNAUTHORIZED" }, { "WWW-Authenticate": "Bearer" });
    }
    if (!person && path.startsWith("/keys")) return send(res, 403, { error: "API keys cannot manage keys; sign in to the console", code: "FORBIDDEN" });
    const m = req.method;
    if (m === "POST" && path === "/agents") return send(res, 201, agent());
    if (m === "POST" && path === "/public/voice/start") {
      const session = { sessionId: randomUUID(), deploymentId, status: "started", createdAt: now(), endedAt: null, completionStatus: null };
      started.unshift(session);
      return send(res, 200, { sessionId: session.sessionId, status: "started", deploymentId });
    }
    if (m === "GET" && path === "/agents") return send(res, 200, { services: [{ ...agent(), ready: agentReads > 2 }] });
    if (m === "GET" && path === "/agents/voice") return send(res, 200, agent());
    if (m === "GET" && path === "/agents/voice/sessions") {
      return send(res, 200, { total: { value: 1, relation: "eq" }, sessions: [...started, { sessionId, deploymentId, status: "ended", createdAt: now(), endedAt: now(), completionStatus: "completed" }] });
    }
    if (m === "GET" && path === "/agents/voice/logs") {
      return send(res, 200, { total: { value: 1, relation: "eq" }, logs: [{ log: "a line of the session (simulated)", timestamp: now(), deploymentId, sessionId }] });
    }
    if (m === "GET" && path === "/secrets") {
      return send(res, 200, { sets: [...sets.keys()].map((name) => ({ name, type: "secret", status: "ready", region: "us-east-1", createdAt: now(), updatedAt: now() })) });
    }
    let match = path.match(/^\/secrets\/([\w-]+)$/);
    if (match && m === "PUT") {
      const set = sets.get(match[1]) ?? new Map();
      set.set(body.secretKey, now());
      sets.set(match[1], set);
      return send(res, 200, { status: "OK", name: match[1], type: "secret", region: "us-east-1" });
    }
    if (match && m === "GET" && sets.has(match[1])) {
      return send(res, 200, { name: match[1], type: "secret", status: "ready", region: "us-east-1", createdAt: now(), updatedAt: now(),
        secrets: [...sets.get(match[1])].map(([fieldName, updatedAt]) => ({ fieldName, updatedAt })) });
    }
    if (match && m === "DELETE" && sets.delete(match[1])) return send(res, 200, { status: "OK" });
    match = path.match(/^\/secrets\/([\w-]+)\/(\w+)$/);
    if (match && m === "DELETE" && sets.get(match[1])?.delete(match[2])) return send(res, 200, { status: "OK" });
    if (m === "GET" && path === "/keys") return send(res, 200, { keys: [...keys].reverse(), public: [] });
    if (m === "POST" && path === "/keys") {
      if (typeof body.name !== "string" || body.name.length === 0 || body.name.length > 64) {
        return send(res, 400, { error: "name must be 1 to 64 characters", code: "GENERIC_BAD_REQUEST", field: "name" });
      }
      const key = `${body.kind === "public" ? "ahp_" : "ahk_"}${randomBytes(24).toString("base64url")}`;
      const summary = { id: randomBytes(6).toString("hex"), kind: body.kind, name: body.name, hint: key.slice(0, 8), createdAt: now(), revokedAt: null };
      keys.push(summary);
      issued.set(key, summary);
      return send(res, 201, { ...summary, key });
    }
    match = path.match(/^\/keys\/(\w+)$/);
    const found = match && keys.find((key) => key.id === match[1]);
    if (m === "DELETE" && found) {
      found.revokedAt ??= now();
      return send(res, 200, { id: found.id, revokedAt: found.revokedAt });
    }
    return send(res, 404, { error: "Not found", code: "NOT_FOUND" });
  };

  const headers = {
    "Content-Security-Policy": csp(new URL(config.cognitoEndpoint).origin),
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let raw = "";
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      if (url.pathname.startsWith("/v1/")) {
        let body = {};
        try { body = raw ? JSON.parse(raw) : {}; } catch { return send(res, 400, { error: "body is not JSON", code: "GENERIC_BAD_REQUEST" }); }
        if (raw) seen.bodies.push(raw);
        return api(req, res, url.pathname.slice(3), body);
      }
      if (url.pathname === "/console") { res.writeHead(308, { Location: "/console/" }); return res.end(); }
      if (url.pathname === "/console/config.json") {
        res.writeHead(200, { ...headers, "Content-Type": "application/json", "Cache-Control": "no-cache" });
        return res.end(JSON.stringify(config));
      }
      if (url.pathname.startsWith("/console/")) {
        const relative = url.pathname === "/console/" ? "index.html" : decodeURIComponent(url.pathname.slice("/console/".length));
        const file = normalize(join(dist, relative));
        if (file.startsWith(dist) && existsSync(file) && statSync(file).isFile()) {
          res.writeHead(200, { ...headers, "Content-Type": TYPES[extname(file)] ?? "application/octet-stream" });
          return res.end(readFileSync(file));
        }
      }
      send(res, 404, { error: "Not found", code: "NOT_FOUND" });
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}`, seen, close: () => server.close() })));
}
