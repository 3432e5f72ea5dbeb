"""What printers share: label and selector strings, the Go zero-value accessors, docs."""

from __future__ import annotations

from kubesim.machinery.printing import (
    doc,
    format_label_selector,
    format_labels,
    int_of,
    label_selector_string,
    str_of,
)


def test_selectors_and_labels() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "t", "operator": "NotIn", "values": ["y", "x"]},
            {"key": "e", "operator": "Exists"},
        ],
    }
    assert label_selector_string(selector) == "a=1,b=2,e,t notin (x,y)"
    assert label_selector_string(None) == "" and format_label_selector(None) == "<none>"
    assert format_labels({"z": "1", "a": ""}) == "a=,z=1" and format_labels({}) == "<none>"


def test_zero_values_and_docs() -> None:
    assert int_of(True) == 0 and int_of("3") == 0 and int_of(3) == 3
    assert str_of(None) == "" and str_of("x") == "x"
    assert doc("ObjectMeta", "name").startswith("Name must be unique within a namespace.")
    service_type = doc("io.k8s.api.core.v1.ServiceSpec", "type")
    assert service_type.startswith("type determines how the Service is exposed.")
    assert "Possible enum values" not in service_type  # SwaggerDoc has no enum appendix
    assert doc("io.k8s.api.core.v1.PodSpec", "nope") == ""
