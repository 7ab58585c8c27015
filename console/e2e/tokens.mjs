// Tokens the suite makes itself: one signed with moto's own key but expired (its private half
// ships in moto's package, with n, e and d only: no CRT parameters, so node's crypto cannot load
// it; RSASSA-PKCS1-v1_5 is computed here with BigInt) and one forged with a fresh key under the
// same kid. Both must be refused (401), as an unknown key is.

import { createHash, generateKeyPairSync, createSign } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { join } from "node:path";

const b64url = (value) => Buffer.from(value).toString("base64url");
const bigint = (b64) => BigInt(`0x${Buffer.from(b64, "base64url").toString("hex")}`);

function motoPrivateJwk(root) {
  const lib = join(root, ".local", "moto-venv", "lib");
  const python = readdirSync(lib).find((name) => name.startsWith("python3"));
  const file = join(lib, python, "site-packages", "moto", "cognitoidp", "resources", "jwks-private.json.gz");
  return JSON.parse(gunzipSync(readFileSync(file)).toString());
}

function modPow(base, exponent, modulus) {
  let result = 1n;
  base %= modulus;
  while (exponent > 0n) {
    if (exponent & 1n) result = (result * base) % modulus;
    exponent >>= 1n;
    base = (base * base) % modulus;
  }
  return result;
}

function signWithNd(jwk, input) {
  const n = bigint(jwk.n);
  const length = Buffer.from(jwk.n, "base64url").length;
  // EMSA-PKCS1-v1_5 with SHA-256's DigestInfo prefix (RFC 8017 section 9.2).
  const digestInfo = Buffer.concat([Buffer.from("3031300d060960864801650304020105000420", "hex"), createHash("sha256").update(input).digest()]);
  const encoded = Buffer.concat([Buffer.from([0, 1]), Buffer.alloc(length - digestInfo.length - 3, 0xff), Buffer.from([0]), digestInfo]);
  const signature = modPow(BigInt(`0x${encoded.toString("hex")}`), bigint(jwk.d), n);
  return Buffer.from(signature.toString(16).padStart(length * 2, "0"), "hex");
}

function claims({ poolId, clientId, sub, region = "us-east-1", exp }) {
  const now = Math.floor(Date.now() / 1000);
  return { sub, iss: `https://cognito-idp.${region}.amazonaws.com/${poolId}`, client_id: clientId, token_use: "access",
    scope: "aws.cognito.signin.user.admin", auth_time: now - 7200, iat: now - 7200, exp, jti: `e2e-${now}`, username: sub };
}

/** Good signature (moto's key), expired an hour ago. */
export function expiredToken(root, person) {
  const jwk = motoPrivateJwk(root);
  const input = `${b64url(JSON.stringify({ kid: jwk.kid, alg: "RS256" }))}.${b64url(JSON.stringify(claims({ ...person, exp: Math.floor(Date.now() / 1000) - 3600 })))}`;
  return `${input}.${signWithNd(jwk, input).toString("base64url")}`;
}

/** Valid claims, signed by another key that claims moto's kid. */
export function forgedToken(person) {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const input = `${b64url(JSON.stringify({ kid: "dummy", alg: "RS256" }))}.${b64url(JSON.stringify(claims({ ...person, exp: Math.floor(Date.now() / 1000) + 3600 })))}`;
  return `${input}.${createSign("RSA-SHA256").update(input).sign(privateKey).toString("base64url")}`;
}
