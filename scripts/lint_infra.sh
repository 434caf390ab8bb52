#!/usr/bin/env bash
# Lints the deployment template (infra/template.yaml):
# 1. cfn-lint from .venv; any finding fails: errors, warnings and informational ones (which
#    cfn-lint only checks with `-c I`). cfn-lint validates SAM resources against SAM's schemas.
# 2. the project's own rules: no Allow statement grants a wildcard action or the resource "*",
#    and the convert queue's visibility timeout is 6x the function timeout for every choice.
set -euo pipefail
cd "$(dirname "$0")/.."

template=infra/template.yaml
venv=.venv/bin
if [ ! -x "$venv/cfn-lint" ]; then
  echo "$venv/cfn-lint not found: install it into .venv (pip install cfn-lint)" >&2
  exit 1
fi
"$venv/cfn-lint" --include-checks I --non-zero-exit-code informational -- "$template"

"$venv/python" - "$template" <<'PY'
import sys
from cfnlint.decode import decode

path = sys.argv[1]
template, problems = decode(path)
if problems or template is None:
    sys.exit(f"{path}: cannot be read: {problems}")
failures = []


def statements(node, where):
    """Every IAM statement in any PolicyDocument/AssumeRolePolicyDocument below node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("PolicyDocument", "AssumeRolePolicyDocument") and isinstance(value, dict):
                found = value.get("Statement", [])
                for statement in found if isinstance(found, list) else [found]:
                    yield where, statement
            else:
                yield from statements(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from statements(value, f"{where}[{i}]")


def as_list(value):
    return value if isinstance(value, list) else [value]


for name, resource in template.get("Resources", {}).items():
    for where, statement in statements(resource.get("Properties", {}), name):
        if statement.get("Effect") != "Allow":
            continue
        sid = statement.get("Sid", "?")
        for action in as_list(statement.get("Action", [])):
            if isinstance(action, str) and "*" in action:
                failures.append(f"{where} {sid}: wildcard action {action!r} in an Allow")
        for resource_arn in as_list(statement.get("Resource", [])):
            if resource_arn == "*":
                failures.append(f"{where} {sid}: resource '*' in an Allow")
        if "NotAction" in statement or "NotResource" in statement:
            failures.append(f"{where} {sid}: NotAction/NotResource in an Allow")

timeouts = template["Parameters"]["FunctionTimeout"]["AllowedValues"]
visibility = template["Mappings"]["VisibilityTimeout"]
for timeout in timeouts:
    seconds = visibility.get(str(timeout), {}).get("Seconds")
    if seconds != 6 * int(timeout):
        failures.append(f"visibility timeout for a {timeout} s function is {seconds}, not {6 * int(timeout)}")

if failures:
    sys.exit("\n".join([f"{path}:"] + failures))
PY
echo "$template: no findings (cfn-lint $("$venv/cfn-lint" --version | awk '{print $2}'), informational included; IAM and timeout checks)"
