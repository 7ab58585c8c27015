// Hash routes (`#/agents/voice`): nothing to rewrite on S3, CloudFront or the dev gateway.

export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function current(): Route {
  const raw = location.hash.replace(/^#/, "") || "/agents";
  const at = raw.indexOf("?");
  const path = at < 0 ? raw : raw.slice(0, at);
  const query = new URLSearchParams(at < 0 ? "" : raw.slice(at + 1));
  const segments = path
    .split("/")
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
  return { path: segments, query };
}

/** `#/a/b?x=1` from segments (each encoded) and query members (empty ones left out). */
export function link(segments: string[], query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const search = params.toString();
  return `#/${segments.map(encodeURIComponent).join("/")}${search ? `?${search}` : ""}`;
}

export function go(target: string): void {
  if (location.hash === target) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = target;
}
