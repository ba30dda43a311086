"""Instances generated from each tool's canonical schema with hypothesis-jsonschema.

Usage: instances.py IN OUT COUNT
IN is a JSON list of {"tool": name, "schema": canonical schema}; OUT receives
{"tool": [instance, ...]} with COUNT distinct instances per tool (fewer only when the schema has
fewer). Generation is derandomized, so a run is repeatable; nothing is contacted.

Each tool first gets COUNT * 5 / 4 examples, which gives COUNT distinct ones for every standard
tool, and is tried again with COUNT * 3 only when that falls short; the tools are generated in
parallel, one process per core.
"""

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema


def instances(schema, count):
    found = generate(schema, count, count + count // 4)
    if len(found) < count:
        found = generate(schema, count, count * 3)
    return found


def generate(schema, count, examples):
    found = []
    seen = set()

    @settings(
        max_examples=examples,
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
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = pool.map(instances, [tool["schema"] for tool in tools], [count] * len(tools))
        out = {tool["tool"]: values for tool, values in zip(tools, found)}
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(out, handle)


if __name__ == "__main__":
    main()
