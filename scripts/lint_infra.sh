#!/usr/bin/env bash
# Lints the deployment template (infra/template.yaml):
# 1. cfn-lint from .venv; any finding fails: errors, warnings and informational ones (which
#    cfn-lint only checks with `-c I`). cfn-lint validates SAM resources against SAM's schemas.
# 2. the project's own rules: no Allow statement grants a wildcard action or the resource "*";
#    object ARNs name a key prefix (bucket/prefix/..., never bucket/*); every function has its
#    own role (no SAM-generated policies) and sends SQS messages only to queues it consumes;
#    every queue a function consumes has a dead-letter queue, and its visibility timeout is at
#    least 6x the function's timeout plus the event source's longest batching window, for every
#    value the parameters allow (AWS's guidance: https://docs.aws.amazon.com/lambda/latest/dg/
#    services-sqs-configure.html, "Batch window"); an event source whose batch size may exceed
#    10 has a batching window of at least 1 s (Lambda refuses it otherwise).
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
import re
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
        for resource_arn in as_list(statement.get("Resource", [])):
            text = resource_arn.get("Fn::Sub") if isinstance(resource_arn, dict) else resource_arn
            if isinstance(text, list):
                text = text[0]
            # An object ARN must name a key prefix before any wildcard: bucket/prefix/*.
            if isinstance(text, str) and re.search(r"(\.Arn\}|:::[^/]+)/\*", text):
                failures.append(f"{where} {sid}: every object of a bucket ({text!r}) in an Allow")


def get_att_target(value):
    """The resource a {"Fn::GetAtt": [name, "Arn"]} (or "name.Arn") names, else None."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return target[0] if isinstance(target, list) else str(target).split(".")[0]
    return None


resources = template.get("Resources", {})
parameters = template.get("Parameters", {})


def choices(value):
    """Every value an integer setting can take: [n] for a literal, the AllowedValues of the
    parameter a {"Ref": name} names, else its [MinValue, MaxValue]; None when unbounded."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return [int(value)]
    if isinstance(value, dict) and set(value) == {"Ref"}:
        param = parameters.get(value["Ref"], {})
        if "AllowedValues" in param:
            return [int(v) for v in param["AllowedValues"]]
        if "MinValue" in param and "MaxValue" in param:
            return [int(param["MinValue"]), int(param["MaxValue"])]
    return None


def visibility_for(queue_props, timeout_ref, timeout):
    """The queue's visibility timeout when its function's timeout is `timeout`: a literal, or a
    Fn::FindInMap keyed by the same parameter as the function's Timeout."""
    value = queue_props.get("VisibilityTimeout")
    if isinstance(value, int):
        return value
    if isinstance(value, dict) and "Fn::FindInMap" in value:
        mapping, key, attribute = value["Fn::FindInMap"]
        if key == {"Ref": timeout_ref}:
            entry = template.get("Mappings", {}).get(mapping, {}).get(str(timeout), {})
            return entry.get(attribute)
    return None


for name, resource in resources.items():
    if resource.get("Type") != "AWS::Serverless::Function":
        continue
    props = resource.get("Properties", {})
    role = get_att_target(props.get("Role"))
    if role is None or resources.get(role, {}).get("Type") != "AWS::IAM::Role":
        failures.append(f"{name}: no role of its own (Role: !GetAtt <AWS::IAM::Role>.Arn)")
        continue
    if "Policies" in props:
        failures.append(f"{name}: SAM Policies instead of its own role's")
    users = [n for n, r in resources.items()
             if r.get("Type") == "AWS::Serverless::Function"
             and get_att_target(r.get("Properties", {}).get("Role")) == role]
    if users != [name]:
        failures.append(f"{role}: shared by {users}; each function has its own role")
    queues = set()
    for event_name, event in props.get("Events", {}).items():
        if event.get("Type") != "SQS":
            continue
        event_props = event.get("Properties", {})
        queue = get_att_target(event_props.get("Queue"))
        queues.add(queue)
        queue_props = resources.get(queue, {}).get("Properties", {})
        if "RedrivePolicy" not in queue_props:
            failures.append(f"{queue}: consumed by {name} but has no dead-letter queue (RedrivePolicy)")
        timeouts = choices(props.get("Timeout", 3))
        windows = choices(event_props.get("MaximumBatchingWindowInSeconds", 0))
        batch_sizes = choices(event_props.get("BatchSize", 10))
        if timeouts is None or windows is None or batch_sizes is None:
            failures.append(f"{name}.{event_name}: timeout, batch size or batching window is not bounded")
            continue
        if max(batch_sizes) > 10 and min(windows) < 1:
            failures.append(f"{name}.{event_name}: batch size up to {max(batch_sizes)} needs a batching window of at least 1 s")
        timeout_ref = props.get("Timeout", {}).get("Ref") if isinstance(props.get("Timeout"), dict) else None
        for timeout in timeouts:
            visibility = visibility_for(queue_props, timeout_ref, timeout)
            needed = 6 * timeout + max(windows)
            if not isinstance(visibility, int):
                failures.append(f"{queue}: visibility timeout for {name}'s timeout {timeout} cannot be checked")
            elif visibility < needed:
                failures.append(
                    f"{queue}: visibility timeout {visibility} < 6 x {name}'s timeout {timeout} + batching window {max(windows)} = {needed}"
                )
    for where, statement in statements(resources[role].get("Properties", {}), role):
        if statement.get("Effect") != "Allow":
            continue
        if "sqs:SendMessage" in as_list(statement.get("Action", [])):
            for target in as_list(statement.get("Resource", [])):
                if get_att_target(target) not in queues:
                    failures.append(f"{where}: {name} may send to {target!r}, which it does not consume")

if failures:
    sys.exit("\n".join([f"{path}:"] + failures))
PY
echo "$template: no findings (cfn-lint $("$venv/cfn-lint" --version | awk '{print $2}'), informational included; IAM, queue and timeout checks)"
