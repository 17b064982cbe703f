"""Logs carry ids, codes and counts: never a person's words."""

from __future__ import annotations

import logging

from ..expect import refused
from .conftest import FailingEmbedder

SECRET_WORDS = ("Zanzibar", "hepatitis", "Quetzalcoatl")


def test_no_words_in_logs_across_every_operation(make_service, place, caplog):
    caplog.set_level(logging.DEBUG)
    service = make_service()
    text = "Travelled to Zanzibar after hepatitis, named the dog Quetzalcoatl"
    saved = service.remember(place, text)
    service.remember(place, text + "!")  # a duplicate replacement
    service.update(place, saved.memory.id, text="Travelled to Zanzibar twice")
    service.undo(place, saved.memory.id)
    service.recall(place, "Zanzibar hepatitis")
    service.portrait(place, min_importance=1)
    with refused("empty"):  # a refusal
        service.remember(place, "")
    broken = make_service(embedder=FailingEmbedder())
    broken.remember(place, "Quetzalcoatl is the dog")  # the embedder fails: logged, by class name
    broken.recall(place, "Quetzalcoatl")
    service.forget(place, saved.memory.id)
    service.purge_owner(place.owner_id)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "memory.remember" in logged and "embedder.failed" in logged  # the logs do say what happened
    for word in SECRET_WORDS:
        assert word.lower() not in logged.lower()
