#!/usr/bin/env bash
# The console on AWS (docs/console.md): build it, upload it to the stack's private bucket, write
# its config.json from the stack's outputs, and invalidate the two files CloudFront must not
# keep (the assets are content-hashed, so old ones may stay cached).
#
#   scripts/console.sh publish [STACK]   STACK: samconfig.toml's stack_name (agent-hosting-dev)
#   scripts/console.sh config [STACK]    print the config.json publish would write
#
# Needs node and npm (the build), the AWS CLI (installed under .local/awscli-venv when missing,
# as scripts/images.sh does), credentials allowed to read the stack, write the bucket and
# invalidate the distribution, and AWS_REGION (or a configured region).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

log() { printf '%s\n' "$*" >&2; }
die() { log "console: $*"; exit 1; }

ensure_aws_cli() {
  aws_cli=$("$root/scripts/local.sh" aws-cli)
}

region() {
  local value=${AWS_REGION:-${AWS_DEFAULT_REGION:-}}
  [ -n "$value" ] || value=$("$aws_cli" configure get region 2>/dev/null || true)
  [ -n "$value" ] || die "no region: set AWS_REGION"
  echo "$value"
}

# output STACK NAME: one output of the deployed stack.
output() {
  local value
  value=$("$aws_cli" cloudformation describe-stacks --region "$region" --stack-name "$1" \
    --query "Stacks[0].Outputs[?OutputKey=='$2'].OutputValue" --output text)
  [ -n "$value" ] && [ "$value" != None ] || die "stack $1 has no output $2 (deployed before the console?)"
  echo "$value"
}

# The console's config.json (its shape: docs/console.md, "Building and serving it"): the API
# on the same origin (CloudFront forwards /v1/*), Cognito's regional endpoint.
config_json() {
  local stack=$1
  python3 - "$region" "$(output "$stack" PeoplePoolId)" "$(output "$stack" PeopleClientId)" \
    "$(output "$stack" SelfSignUp)" <<'PY'
import json, sys
region, pool, client, self_sign_up = sys.argv[1:5]
print(json.dumps({"apiBase": "/v1", "region": region, "userPoolId": pool, "clientId": client,
                  "cognitoEndpoint": f"https://cognito-idp.{region}.amazonaws.com/",
                  "selfSignUp": self_sign_up == "true"}))
PY
}

publish() {
  local stack=$1 bucket distribution dist
  bucket=$(output "$stack" ConsoleBucketName)
  distribution=$(output "$stack" ConsoleDistributionId)
  dist=$("$root/scripts/local.sh" console)
  [ -n "$dist" ] || die "the build needs node and npm"
  config_file=$(mktemp)
  trap 'rm -f "$config_file"' EXIT
  config_json "$stack" >"$config_file"
  # Assets are named by their content: cached for a year, and the old ones kept (no --delete), so
  # a page loaded before the publish still finds its script. index.html and config.json:
  # revalidated on every load.
  "$aws_cli" s3 sync "$dist/assets" "s3://$bucket/console/assets" --region "$region" --only-show-errors \
    --cache-control "public, max-age=31536000, immutable"
  "$aws_cli" s3 sync "$dist" "s3://$bucket/console" --region "$region" --exclude "assets/*" \
    --exclude index.html --only-show-errors --cache-control "public, max-age=3600"
  "$aws_cli" s3 cp "$dist/index.html" "s3://$bucket/console/index.html" --region "$region" \
    --only-show-errors --cache-control no-cache --content-type "text/html; charset=utf-8"
  "$aws_cli" s3 cp "$config_file" "s3://$bucket/console/config.json" --region "$region" \
    --only-show-errors --cache-control no-cache --content-type application/json
  "$aws_cli" cloudfront create-invalidation --region "$region" --distribution-id "$distribution" \
    --paths /console/index.html /console/config.json /console/ --query Invalidation.Id --output text >&2
  log "published: $(output "$stack" ConsoleUrl)"
}

command=${1:-}
stack=${2:-agent-hosting-dev}
case "$command" in
  publish) ensure_aws_cli; region=$(region); publish "$stack" ;;
  config) ensure_aws_cli; region=$(region); config_json "$stack" ;;
  *) log "usage: $0 publish|config [STACK]"; exit 2 ;;
esac
