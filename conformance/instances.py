"""Instances generated from each tool's canonical schema with hypothesis-jsonschema.

Usage: instances.py IN OUT COUNT
IN is a JSON list of {"tool": name, "schema": canonical schema}; OUT receives
{"tool": [instance, ...]} with COUNT distinct instances per tool (fewer only when the schema has
fewer). Generation is derandomized, so a run is repeatable; nothing is contacted.
"""

import json
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema


def instances(schema, count):
    found = []
    seen = set()

    @settings(
        max_examples=count * 3,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(from_schema(schema))
    def collect(value):
        key = json.dumps(value, sort_keys=True)
        if key not in seen and len(found) < count:
            seen.add(key)
            found.append(value)

    collect()
    return found


def main():
    source, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tools = json.loads(open(source, encoding="utf-8").read())
    out = {tool["tool"]: instances(tool["schema"], count) for tool in tools}
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(out, handle)


if __name__ == "__main__":
    main()
