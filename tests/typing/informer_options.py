"""What mypy --strict must refuse at the informers' front door: a misspelled option, an
index function that is not one (a str, meaning ``by_field``) and shards as a selector's
text instead of a ShardSelector, through the factory and
through the manager and in an InformerOptions (one declaration of the options).
Checked by test_typing.py: the comment ``# expect [code]: message`` (continued on ``#   ``
lines) above a line is exactly the error mypy reports on it. Never run."""

from __future__ import annotations

from typing import Any

from aioinformer import InformerFactory, InformerOptions, Manager


def through_the_manager(api: Any) -> None:
    manager = Manager(api)
    # expect [call-arg]: Unexpected keyword argument "compactt" for "informer" of "Manager";
    #   did you mean "compact"?
    manager.informer("v1", "pods", compactt=True)
    # expect [dict-item]: Dict entry 0 has incompatible type "str": "str"; expected "str":
    #   "Callable[[KubeObject], Iterable[str]]"
    manager.informer("v1", "pods", indexers={"node": "spec.nodeName"})


def through_the_factory(api: Any) -> None:
    factory = InformerFactory(api)
    # expect [call-arg]: Unexpected keyword argument "compactt" for "informer" of
    #   "InformerFactory"; did you mean "compact"?
    factory.informer("v1", "pods", compactt=True)
    # expect [dict-item]: Dict entry 0 has incompatible type "str": "str"; expected "str":
    #   "Callable[[KubeObject], Iterable[str]]"
    factory.informer("v1", "pods", indexers={"node": "spec.nodeName"})
    # expect [arg-type]: Argument "shards" to "informer" of "InformerFactory" has
    #   incompatible type "str"; expected "ShardSelector | None"
    factory.informer("v1", "pods", shards="shardRange(object.metadata.uid, '0x0', '0x8')")


def as_options() -> InformerOptions:
    # expect [typeddict-unknown-key]: Extra key "compactt" for TypedDict "InformerOptions"
    return {"compactt": True}
