// Cognito's JSON API from node (moto locally): what the suites need to make people and sign
// them in outside the browser. moto checks no signature; it tells the service from the
// credential scope of the Authorization header.

const SCOPE = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/cognito-idp/aws4_request, SignedHeaders=host, Signature=0";

export async function cognito(endpoint, operation, body, { signed = true } = {}) {
  const headers = {
    "Content-Type": "application/x-amz-json-1.1",
    "X-Amz-Target": `AWSCognitoIdentityProviderService.${operation}`,
  };
  if (signed) headers.Authorization = SCOPE;
  const response = await fetch(endpoint.replace(/\/?$/, "/"), { method: "POST", headers, body: JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(`${operation}: HTTP ${response.status} ${JSON.stringify(data)}`);
  return data;
}

/** A pool and app client shaped as template.yaml's (email usernames, password policy, flows). */
export async function makePool(endpoint) {
  const { UserPool } = await cognito(endpoint, "CreateUserPool", {
    PoolName: `console-e2e-${Date.now()}`,
    UsernameAttributes: ["email"],
    MfaConfiguration: "OPTIONAL",
    Policies: { PasswordPolicy: { MinimumLength: 12, RequireUppercase: true, RequireLowercase: true, RequireNumbers: true, RequireSymbols: false } },
  });
  const { UserPoolClient } = await cognito(endpoint, "CreateUserPoolClient", {
    UserPoolId: UserPool.Id,
    ClientName: "console",
    GenerateSecret: false,
    ExplicitAuthFlows: ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
  });
  return { poolId: UserPool.Id, clientId: UserPoolClient.ClientId };
}

/** A confirmed person with a permanent password; their `sub`. */
export async function makePerson(endpoint, poolId, email, password) {
  const { User } = await cognito(endpoint, "AdminCreateUser", {
    UserPoolId: poolId,
    Username: email,
    MessageAction: "SUPPRESS",
    UserAttributes: [{ Name: "email", Value: email }, { Name: "email_verified", Value: "true" }],
  });
  await cognito(endpoint, "AdminSetUserPassword", { UserPoolId: poolId, Username: email, Password: password, Permanent: true });
  return User.Attributes.find((attribute) => attribute.Name === "sub").Value;
}

/** An access token, as the console gets one (unsigned InitiateAuth). */
export async function accessToken(endpoint, clientId, email, password) {
  const answer = await cognito(endpoint, "InitiateAuth", {
    AuthFlow: "USER_PASSWORD_AUTH",
    ClientId: clientId,
    AuthParameters: { USERNAME: email, PASSWORD: password },
  }, { signed: false });
  return answer.AuthenticationResult.AccessToken;
}

/** A password the pool's policy takes, random per run. */
export function password() {
  return `Pw-${Math.random().toString(36).slice(2, 10)}A1${Math.random().toString(36).slice(2, 8)}`;
}
