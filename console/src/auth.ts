// Sign-in against Cognito's JSON API over fetch (InitiateAuth USER_PASSWORD_AUTH and its
// challenges): no SDK, no Amplify. The access and ID tokens live in memory only; the refresh
// token in sessionStorage (this tab only, gone when it closes) so a reload keeps the session.

import { config } from "./config";

const REFRESH_KEY = "console.refreshToken";

interface Tokens {
  accessToken: string;
  email: string;
}

let tokens: Tokens | undefined;

export class AuthError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** What a sign-in step asks for next. */
export type Step =
  | { kind: "done" }
  | { kind: "newPassword"; session: string; username: string }
  | { kind: "totp"; session: string; username: string };

interface AuthResult {
  AccessToken: string;
  IdToken?: string;
  RefreshToken?: string;
}

interface InitiateAnswer {
  AuthenticationResult?: AuthResult;
  ChallengeName?: string;
  Session?: string;
  ChallengeParameters?: Record<string, string>;
}

// Sentences for what a person can act on; anything else shows Cognito's own message.
const SENTENCES: Record<string, string> = {
  NotAuthorizedException: "Incorrect email or password.",
  UserNotFoundException: "Incorrect email or password.",
  CodeMismatchException: "That code is not right; try the current one.",
  InvalidPasswordException: "That password does not meet the policy: at least 12 characters, with upper and lower case letters and a number.",
  TooManyRequestsException: "Too many attempts; wait a minute and try again.",
  UsernameExistsException: "There is already an account with this email; sign in instead.",
  ExpiredCodeException: "That code has expired; send a new one.",
  LimitExceededException: "Too many attempts; wait a few minutes and try again.",
};

async function cognito<T>(operation: string, body: object): Promise<T> {
  let response: Response;
  try {
    response = await fetch(config().cognitoEndpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": `AWSCognitoIdentityProviderService.${operation}`,
      },
      body: JSON.stringify(body),
    });
  } catch {
    throw new AuthError("Network", "The sign-in service could not be reached; try again.");
  }
  const data = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) {
    const type = String(data.__type ?? "").split("#").pop() ?? "";
    const message = SENTENCES[type] ?? String(data.message ?? `Sign-in failed (HTTP ${response.status}).`);
    throw new AuthError(type, message);
  }
  return data as T;
}

function payload(jwt: string | undefined): Record<string, unknown> {
  try {
    const part = (jwt ?? "").split(".")[1] ?? "";
    return JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function keep(result: AuthResult, email?: string): void {
  const claims = payload(result.IdToken);
  tokens = {
    accessToken: result.AccessToken,
    email: String(claims.email ?? email ?? tokens?.email ?? ""),
  };
  if (result.RefreshToken) sessionStorage.setItem(REFRESH_KEY, result.RefreshToken);
}

function next(answer: InitiateAnswer, username: string): Step {
  if (answer.AuthenticationResult) {
    keep(answer.AuthenticationResult, username);
    return { kind: "done" };
  }
  const session = answer.Session ?? "";
  const user = answer.ChallengeParameters?.USER_ID_FOR_SRP ?? username;
  if (answer.ChallengeName === "NEW_PASSWORD_REQUIRED") return { kind: "newPassword", session, username: user };
  if (answer.ChallengeName === "SOFTWARE_TOKEN_MFA") return { kind: "totp", session, username: user };
  throw new AuthError("Challenge", `Sign-in needs ${answer.ChallengeName ?? "a step"} this console does not offer.`);
}

export async function signIn(email: string, password: string): Promise<Step> {
  const answer = await cognito<InitiateAnswer>("InitiateAuth", {
    AuthFlow: "USER_PASSWORD_AUTH",
    ClientId: config().clientId,
    AuthParameters: { USERNAME: email, PASSWORD: password },
  });
  return next(answer, email);
}

export async function answerNewPassword(step: { session: string; username: string }, password: string): Promise<Step> {
  const answer = await cognito<InitiateAnswer>("RespondToAuthChallenge", {
    ChallengeName: "NEW_PASSWORD_REQUIRED",
    ClientId: config().clientId,
    Session: step.session,
    ChallengeResponses: { USERNAME: step.username, NEW_PASSWORD: password },
  });
  return next(answer, step.username);
}

export async function answerTotp(step: { session: string; username: string }, code: string): Promise<Step> {
  const answer = await cognito<InitiateAnswer>("RespondToAuthChallenge", {
    ChallengeName: "SOFTWARE_TOKEN_MFA",
    ClientId: config().clientId,
    Session: step.session,
    ChallengeResponses: { USERNAME: step.username, SOFTWARE_TOKEN_MFA_CODE: code },
  });
  return next(answer, step.username);
}

// Self sign-up (config selfSignUp, the stack's SelfSignUp): Cognito e-mails a code, and its
// confirmation runs the pool's trigger, which gives the person an account of their own
// (docs/people.md). Then the person signs in as anyone does.

/** Starts a sign-up; true when Cognito e-mailed a code to confirm (false: confirmed already). */
export async function signUp(email: string, password: string): Promise<boolean> {
  const answer = await cognito<{ UserConfirmed?: boolean }>("SignUp", {
    ClientId: config().clientId,
    Username: email,
    Password: password,
    UserAttributes: [{ Name: "email", Value: email }],
  });
  return !answer.UserConfirmed;
}

export async function confirmSignUp(email: string, code: string): Promise<void> {
  await cognito("ConfirmSignUp", { ClientId: config().clientId, Username: email, ConfirmationCode: code });
}

export async function resendCode(email: string): Promise<void> {
  await cognito("ResendConfirmationCode", { ClientId: config().clientId, Username: email });
}

/** New access token from the refresh token of this tab; false when there is none or it failed. */
export async function refresh(): Promise<boolean> {
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  if (!refreshToken) return false;
  try {
    const answer = await cognito<InitiateAnswer>("InitiateAuth", {
      AuthFlow: "REFRESH_TOKEN_AUTH",
      ClientId: config().clientId,
      AuthParameters: { REFRESH_TOKEN: refreshToken },
    });
    if (!answer.AuthenticationResult) return false;
    keep(answer.AuthenticationResult);
    return true;
  } catch {
    return false;
  }
}

export function accessToken(): string | undefined {
  return tokens?.accessToken;
}

export function signedInEmail(): string {
  return tokens?.email ?? "";
}

export function signOut(): void {
  const token = tokens?.accessToken;
  tokens = undefined;
  sessionStorage.removeItem(REFRESH_KEY);
  // Ends the refresh token on Cognito's side too; the access token still verifies until it
  // expires (15 minutes), as any JWT does. Best effort: the local state is gone either way.
  if (token) void cognito("GlobalSignOut", { AccessToken: token }).catch(() => undefined);
}

// Settings → Security: the optional authenticator app (TOTP).
export interface MfaState {
  enabled: boolean;
}

export async function mfaState(): Promise<MfaState> {
  const user = await cognito<{ UserMFASettingList?: string[] }>("GetUser", { AccessToken: accessToken() });
  return { enabled: (user.UserMFASettingList ?? []).includes("SOFTWARE_TOKEN_MFA") };
}

export async function associateTotp(): Promise<string> {
  const answer = await cognito<{ SecretCode: string }>("AssociateSoftwareToken", { AccessToken: accessToken() });
  return answer.SecretCode;
}

export async function verifyTotp(code: string): Promise<void> {
  const answer = await cognito<{ Status?: string }>("VerifySoftwareToken", {
    AccessToken: accessToken(),
    UserCode: code,
    FriendlyDeviceName: "console",
  });
  if (answer.Status !== "SUCCESS") throw new AuthError("CodeMismatchException", SENTENCES.CodeMismatchException!);
  await setTotp(true);
}

export async function setTotp(enabled: boolean): Promise<void> {
  await cognito("SetUserMFAPreference", {
    AccessToken: accessToken(),
    SoftwareTokenMfaSettings: { Enabled: enabled, PreferredMfa: enabled },
  });
}
