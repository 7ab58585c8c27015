// The API, read relatively (`/v1/...` on the console's own origin: the dev gateway locally,
// CloudFront on AWS), with the person's access token. A 401 refreshes the token once and
// retries; a second 401 ends the session (the router shows sign-in).

import { accessToken, refresh, signOut } from "./auth";
import { config } from "./config";
import { go } from "./router";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Raised after the session ended (a 401 the refresh did not cure). */
export class SignedOut extends Error {}

type Query = Record<string, string | number | undefined>;

function url(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== "") params.set(name, String(value));
  }
  const search = params.toString();
  return `${config().apiBase}${path}${search ? `?${search}` : ""}`;
}

async function send(method: string, target: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${accessToken() ?? ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(target, {
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
    cache: "no-store",
  });
}

export async function request<T>(method: string, path: string, options: { query?: Query; body?: unknown } = {}): Promise<T> {
  const target = url(path, options.query);
  let response: Response;
  try {
    response = await send(method, target, options.body);
    if (response.status === 401 && (await refresh())) response = await send(method, target, options.body);
  } catch {
    throw new ApiError(0, "NETWORK", "The API could not be reached; try again.");
  }
  if (response.status === 401) {
    signOut();
    go("#/sign-in");
    throw new SignedOut("signed out");
  }
  const data = (await response.json().catch(() => null)) as Record<string, unknown> | null;
  if (!response.ok) {
    throw new ApiError(
      response.status,
      String(data?.code ?? ""),
      String(data?.error ?? `The API answered HTTP ${response.status}.`),
      typeof data?.field === "string" ? data.field : undefined,
    );
  }
  return data as T;
}

const seg = encodeURIComponent;

// The shapes the views read (openapi.yaml has them whole).
export interface AgentSummary {
  name: string;
  ready: boolean;
  activeDeploymentId: string;
  activeDeploymentReady: boolean;
  updatedAt: string;
}
export interface Agent extends AgentSummary {
  activeSessionCount: number;
  errors: { code: string; message: string }[];
  deployment: { id: string; manifest: unknown; createdAt: string } | null;
  currentRevision?: { phase?: string; readyReplicas?: number } | null;
}
export interface Session {
  sessionId: string;
  deploymentId: string;
  status: string;
  createdAt: string;
  endedAt: string | null;
  completionStatus: string | null;
}
export interface Total {
  value: number;
  relation: "eq" | "gte";
}
export interface LogLine {
  log: string;
  timestamp: string;
  deploymentId: string;
  sessionId?: string;
}
export interface SecretSetSummary {
  name: string;
  type: "secret" | "imagePullSecret";
  updatedAt: string;
}
export interface SecretSet extends SecretSetSummary {
  secrets?: { fieldName: string; updatedAt: string }[];
  host?: string;
}
export type KeyKind = "private" | "public";
export interface KeySummary {
  id: string;
  kind: KeyKind;
  name: string;
  hint: string;
  createdAt: string;
  revokedAt: string | null;
}

export const api = {
  agents: () => request<{ services: AgentSummary[] }>("GET", "/agents"),
  agent: (name: string) => request<Agent>("GET", `/agents/${seg(name)}`),
  sessions: (name: string, status: string) =>
    request<{ sessions: Session[]; total: Total }>("GET", `/agents/${seg(name)}/sessions`, {
      query: { status, limit: 50 },
    }),
  logs: (name: string, query: Query) =>
    request<{ logs: LogLine[]; total: Total }>("GET", `/agents/${seg(name)}/logs`, { query: { ...query, limit: 100 } }),
  secretSets: () => request<{ sets: SecretSetSummary[] }>("GET", "/secrets"),
  secretSet: (set: string) => request<SecretSet>("GET", `/secrets/${seg(set)}`),
  setSecret: (set: string, secretKey: string, secretValue: string) =>
    request<unknown>("PUT", `/secrets/${seg(set)}`, { body: { secretKey, secretValue } }),
  unsetSecret: (set: string, key: string) => request<unknown>("DELETE", `/secrets/${seg(set)}/${seg(key)}`),
  deleteSecretSet: (set: string) => request<unknown>("DELETE", `/secrets/${seg(set)}`),
  keys: () => request<{ keys: KeySummary[] }>("GET", "/keys"),
  createKey: (kind: KeyKind, name: string) =>
    request<KeySummary & { key: string }>("POST", "/keys", { body: { kind, name } }),
  revokeKey: (id: string) => request<{ id: string; revokedAt: string }>("DELETE", `/keys/${seg(id)}`),
};
