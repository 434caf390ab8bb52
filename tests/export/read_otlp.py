#!/usr/bin/env python3
"""An independent reader of OTLP profiles (opentelemetry-proto v1.10/v1.11), with
OpenTelemetry's own Python bindings (PyPI ``opentelemetry-proto`` >= 1.43, which has the
v1.10 field numbers) and protobuf's runtime; it shares no code with proflake.

``totals(path, json=False)`` reads one ``ExportProfilesServiceRequest`` (binary protobuf, or
OTLP/JSON with ``json=True``; gzipped or not) and returns
``{(sample_type, unit, (function, ...root first)): summed_value}``:

* every ``Profile`` of every resource and scope, its ``sample_type`` naming the series;
* a sample's stack from ``dictionary.stack_table`` (leaf first in OTLP, reversed here);
* one name per location, as proflake's tables and the pprof readers name a frame: the
  function of ``lines[0]`` (the innermost; later lines are the functions it was inlined
  into), its ``name`` else its ``system_name``; without lines
  ``<mapping file name>!0x<address>`` (``?`` without a mapping file); ``<unknown>`` when the
  location has neither lines nor an address;
* a sample's value: the sum of its ``values``, or one per timestamp when it has only
  timestamps (OTLP's "each point has value 1");
* stacks whose values sum to 0 are left out.

OTLP/JSON differs from protobuf's JSON mapping in one way that matters here: ``traceId``,
``spanId`` and ``profileId`` are hex, not base64. They are turned into base64 before
``google.protobuf.json_format`` parses the document; unknown fields are ignored, as OTLP
requires of readers.

Usage: read_otlp.py [--json] REQUEST  (prints the totals as JSON: a list of
{"sample_type", "unit", "stack", "value"} objects, sorted). ``--json`` is implied by a
``.json`` file name.
"""

import base64
import collections
import gzip
import json as jsonlib
import re
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2

_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})*$")


def _hex_to_base64(obj, keys=("traceId", "spanId", "profileId", "trace_id", "span_id", "profile_id")):
    """Rewrites OTLP/JSON's hex ids as the base64 protobuf's JSON parser expects, in place."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys and isinstance(v, str) and _HEX.match(v):
                obj[k] = base64.b64encode(bytes.fromhex(v)).decode("ascii")
            else:
                _hex_to_base64(v, keys)
    elif isinstance(obj, list):
        for item in obj:
            _hex_to_base64(item, keys)


def load(path, json=False):
    """The request in `path`, parsed with the upstream bindings."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    request = profiles_service_pb2.ExportProfilesServiceRequest()
    if json:
        doc = jsonlib.loads(data.decode("utf-8"))
        _hex_to_base64(doc)
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    else:
        request.ParseFromString(data)
    return request


def _location_names(d):
    strings = list(d.string_table)

    def string(i):
        return strings[i] if 0 <= i < len(strings) else ""

    def function_name(index):
        f = d.function_table[index]
        return string(f.name_strindex) or string(f.system_name_strindex)

    names = []
    for loc in d.location_table:
        name = function_name(loc.lines[0].function_index) if loc.lines else ""
        if not name and loc.address:
            path = ""
            if loc.mapping_index:
                path = string(d.mapping_table[loc.mapping_index].filename_strindex)
            image = path.replace("\\", "/").rsplit("/", 1)[-1] or "?"
            name = f"{image}!{loc.address:#x}"
        names.append(name or "<unknown>")
    return names


def totals(path, json=False):
    """{(sample_type, unit, (function names root first)): summed value}."""
    request = load(path, json)
    d = request.dictionary
    strings = list(d.string_table)
    names = _location_names(d)
    stacks = [tuple(names[i] for i in reversed(s.location_indices)) for s in d.stack_table]
    out = collections.defaultdict(int)
    for rp in request.resource_profiles:
        for sp in rp.scope_profiles:
            for profile in sp.profiles:
                st = profile.sample_type
                sample_type, unit = strings[st.type_strindex], strings[st.unit_strindex]
                for sample in profile.samples:
                    value = sum(sample.values) if sample.values else len(sample.timestamps_unix_nano)
                    out[(sample_type, unit, stacks[sample.stack_index])] += value
    return {k: v for k, v in out.items() if v != 0}


def main(argv):
    args = [a for a in argv if a != "--json"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    path = args[0]
    json = "--json" in argv or path.endswith(".json")
    rows = [
        {"sample_type": t, "unit": u, "stack": list(stack), "value": v}
        for (t, u, stack), v in sorted(totals(path, json=json).items())
    ]
    print(jsonlib.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
