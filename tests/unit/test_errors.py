"""Every exception the package defines derives from one root, through the branch that
says how callers treat it (consumer/errors.py, docs/design.md "Errors")."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import consumer
from consumer.errors import MemdedupError, PermanentError, TransientError

# Neither retried with backoff nor a property of the input: what the caller does
# instead, by class.
NEITHER: dict[str, str] = {
    "consumer.errors.PartitionsLost": "the batch is abandoned to the partitions' next owner",
    "consumer.domain.chat.ChatFailed": "its callers fall back (no verdict, the merge fallback)",
    "consumer.domain.merge.MergeFailed": "the merge falls back to replace_with_newer at once",
    "consumer.domain.verifier._VerifyFailed": "the verifier falls back to no verdict",
}
BRANCHES = (TransientError, PermanentError)


def defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(consumer.__path__, "consumer."):
        if module_info.name.endswith(".__main__"):
            continue  # runs the command line
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_exception_derives_from_the_root_through_one_branch() -> None:
    exceptions = defined_exceptions()
    assert "consumer.settings.ConfigError" in exceptions  # the walk reached the modules
    outside_root = sorted(
        name for name, cls in exceptions.items() if not issubclass(cls, MemdedupError)
    )
    assert outside_root == []
    unplaced = []
    for name, cls in exceptions.items():
        if cls in (MemdedupError, *BRANCHES):
            continue
        branches = [branch for branch in BRANCHES if issubclass(cls, branch)]
        if (len(branches) == 1) == (name in NEITHER):
            unplaced.append(name)
    assert unplaced == []
    assert sorted(set(NEITHER) - set(exceptions)) == []  # no stale entry


def test_the_branches_keep_the_bases_callers_catch() -> None:
    from consumer.kafka.localbroker import BrokerError
    from consumer.observability.tracing import TracingUnavailable
    from consumer.settings import ConfigError

    assert issubclass(BrokerError, RuntimeError)
    assert issubclass(TracingUnavailable, RuntimeError)
    assert issubclass(TracingUnavailable, ConfigError)
    assert issubclass(ConfigError, PermanentError)
