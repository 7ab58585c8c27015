// /console/config.json, served beside the built files and never built in: the same build runs
// locally (moto) and on AWS (Cognito), only this file differs.

export interface Config {
  apiBase: string;
  region: string;
  userPoolId: string;
  clientId: string;
  cognitoEndpoint: string;
  selfSignUp: boolean;
}

let loaded: Config | undefined;

export async function loadConfig(): Promise<Config> {
  const response = await fetch(`${import.meta.env.BASE_URL}config.json`, { cache: "no-cache" });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  const value = (await response.json()) as Partial<Config>;
  for (const name of ["apiBase", "clientId", "cognitoEndpoint"] as const) {
    if (typeof value[name] !== "string" || value[name] === "") {
      throw new Error(`config.json: ${name} is missing`);
    }
  }
  loaded = value as Config;
  return loaded;
}

export function config(): Config {
  if (!loaded) throw new Error("config.json was not loaded");
  return loaded;
}
