"""A local OTLP/HTTP receiver for `toolbox/tests/telemetry.rs`: it decodes every export with the
official OpenTelemetry protobuf definitions (the `opentelemetry-proto` package) and writes what it
read, one JSON object a line, to OUT.

    python otlp_receiver.py OUT

Prints `listening on http://127.0.0.1:PORT` once it accepts connections (a free port). Each span
is written as {"signal": "span", "service", "name", "kind", "trace_id", "span_id", "parent_span_id",
"links", "attributes", "events", "status"} (`events` a list of {"name", "attributes"}, `status` the
status's description); each metric as {"signal": "metric", "service", "name", "unit", "bounds"}.
The body of every export, as it came, is appended to OUT.raw, so that a test can look for a string
in everything that was sent. Exits 3 when the package is missing. Stops when its standard input
closes.
"""

import json
import sys
import threading

from local_http import Quiet, serve

try:
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError as error:
    print(f"no opentelemetry-proto ({error})", file=sys.stderr)
    sys.exit(3)

OUT = open(sys.argv[1], "a", encoding="utf-8")
RAW = open(sys.argv[1] + ".raw", "ab")
LOCK = threading.Lock()
KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def service_of(resource):
    for attribute in resource.attributes:
        if attribute.key == "service.name":
            return value_of(attribute.value)
    return None


def write(record):
    with LOCK:
        OUT.write(json.dumps(record) + "\n")
        OUT.flush()


class Receiver(Quiet):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with LOCK:
            RAW.write(body)
            RAW.flush()
        if self.path == "/v1/traces":
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                service = service_of(resource_spans.resource)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        write({
                            "signal": "span",
                            "service": service,
                            "name": span.name,
                            "kind": KINDS.get(span.kind, str(span.kind)),
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "links": [link.span_id.hex() for link in span.links],
                            "attributes": {a.key: value_of(a.value) for a in span.attributes},
                            "events": [
                                {"name": event.name, "attributes": {a.key: value_of(a.value) for a in event.attributes}}
                                for event in span.events
                            ],
                            "status": span.status.message,
                        })
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        elif self.path == "/v1/metrics":
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource_metrics in request.resource_metrics:
                service = service_of(resource_metrics.resource)
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        bounds = []
                        if metric.WhichOneof("data") == "histogram" and metric.histogram.data_points:
                            bounds = list(metric.histogram.data_points[0].explicit_bounds)
                        write({"signal": "metric", "service": service, "name": metric.name, "unit": metric.unit, "bounds": bounds})
            answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


if __name__ == "__main__":
    serve(Receiver)
