"""The message catalog: refusal codes and tool outcomes in the person's language.

The service answers codes, never sentences (DESIGN §3); this module turns a code into words. It is
plain dictionaries with no web framework, so the portal, the JSON API and the model tools share
one set of texts. Keys are `refused.<code>` for refusals and the outcome code itself
(`memory_saved`, `memories_found`, ...) for what went well.

`message(key, language, **values)` answers the text, or None when the catalog has no text for
that key or does not speak that language at all. An unknown language is not answered in English:
the caller asked for a language we lack and should decide for itself what to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .catalog_fr import FR

DEFAULT_LANGUAGE = "en"
REFUSED = "refused"

# An entry is a plain text, or plural forms: "zero", "one", "other" chosen by `count`, and "bare"
# when no count is given.
Entry = str | Mapping[str, str]

_EN: dict[str, Entry] = {
    # what a content rule refuses when the catalog has no text for its code
    "refused": "This cannot be kept in memory.",
    "refused.empty": "There is nothing to remember: the text is empty.",
    "refused.too_long": {
        "bare": "This is too long to remember. Please make it shorter.",
        "one": "This is too long to remember: at most {count} character. Please make it shorter.",
        "other": "This is too long to remember: at most {count} characters. Please make it shorter.",
    },
    "refused.invalid_text": "This text holds characters that cannot be kept (a NUL or a broken character).",
    "refused.invalid_kind": "This kind of memory is not known.",
    "refused.kind_not_allowed": "This kind of memory cannot be kept here.",
    "refused.other_person": "This is about someone else. Only what concerns you can be kept.",
    "refused.paused": "Memory is paused: nothing is learnt or changed until you resume it.",
    "refused.app_blocked": "The person has blocked this app: it can neither read nor change their memory.",
    "refused.queue_unavailable": "Learning in the background is not available here: send it again to be learnt at once.",
    "refused.invalid_ref": "A conversation needs a reference of 1 to 200 characters.",
    "refused.invalid_transcript": "This conversation cannot be read: send a text or a list of turns.",
    "refused.forbidden": "This key is not allowed to do that.",
    "refused.person_decides": ("Only the person can change this, in their privacy portal: learning they paused stays "
                               "paused until they resume it."),
    "refused.invalid_app": "There is no such app.",
    "refused.wrong_app": "This key acts as its own app only: name that app in the address.",
    "refused.invalid_control": "An app can be paused, blocked or resumed.",
    "refused.not_found": "This memory does not exist (any more).",
    "refused.conflict": "This memory was changed in the meantime. Reload it and try again.",
    "refused.nothing_to_undo": "There is nothing to undo.",
    "refused.ai_disabled": ("The assistant's AI is switched off for this organisation: it learns nothing from conversations "
                            "and its memory tools are off."),
    "refused.not_shown": "This correction is about a memory that was not part of the conversation.",
    "refused.erased": "This was not kept: the person's memories were erased in the meantime.",
    "refused.forgotten": "This was not kept: the person asked for it to be forgotten.",
    "refused.invalid_limit": "The number of results asked for is out of range.",
    "refused.invalid_time": "A time needs its time zone (for example 2026-05-01T09:00:00Z).",
    "refused.invalid_expiry": ("When to forget needs a date and time with its time zone "
                               "(for example 2027-05-01T00:00:00Z)."),
    "refused.expiry_in_past": "When to forget must be later than now.",
    "refused.expired": "Its time to be forgotten had come: it was not brought back.",
    "refused.invalid_learnt_days": "Forgetting what the assistant learns takes a number of days from 0 (never) to 36500.",
    "refused.invalid_conversation_ref": "A conversation reference is 1 to 200 printable characters.",
    "refused.withheld_from_every_app": "No app may use this memory: allow every app first.",
    "refused.invalid_use": "Say whether apps may use this memory (true or false).",
    "refused.invalid_cursor": "This page link is no longer valid. Start again from the first page.",
    "refused.invalid_state": "This list filter is not known.",
    "refused.invalid_format": "This format is not known.",
    "refused.invalid_ids": "The list of memories is not valid.",
    "refused.invalid_portrait": "The summary settings are not valid.",
    "refused.invalid_on_duplicate": "The way to handle a repeated memory is not known.",
    "refused.invalid_where": "No person was given.",
    "refused.invalid_idempotency_key": "The request's idempotency key is not valid.",
    "refused.invalid_arguments": "The request was incomplete or malformed.",
    "refused.unknown_tool": "This action is not available.",
    # the requests of the JSON API and the MCP server (a problem's `detail`, an MCP error's message)
    "refused.unauthorized": "This key is unknown or was revoked: ask for a new one.",
    "refused.rate_limited": "Too many requests for this key. Wait a moment and try again.",
    "refused.invalid_owner": "That person's id is not valid.",
    "refused.invalid_id": "That memory id is not valid.",
    "refused.invalid_if_match": 'The revision to check against is not valid (If-Match takes the ETag, like "3").',
    "refused.bad_request": "The request could not be understood.",
    "refused.invalid_request": "The request is not valid: a field is missing or has the wrong type.",
    "refused.malformed_json": "The request is not valid JSON.",
    "refused.malformed_arguments": "The arguments are not valid JSON.",
    "refused.json_too_deep": "The request's JSON is nested too deeply.",
    "refused.body_too_large": "The request is too large.",
    "refused.no_stream": "This conversation with the memory server has ended: connect again.",
    "refused.too_many_streams": "The memory server has as many open connections as it can take. Try again in a moment.",
    "refused.uri_too_long": "The address of the request is too long.",
    "refused.unsupported_media_type": "The request must be sent as JSON.",
    "refused.method_not_allowed": "This action is not available here.",
    "refused.idempotency_key_reused": "This request's idempotency key was already used for another request.",
    "refused.idempotency_in_progress": "The same request is still being handled. Try again in a moment.",
    "refused.database_unavailable": "The memory is unavailable for a moment. Try again shortly.",
    # mem0's routes (portal.api.mem0)
    "refused.user_id_required": "Every memory belongs to a person: name them with user_id.",
    "refused.one_person": "A request reads or changes one person's memories: give one user_id.",
    "refused.invalid_filters": "These filters cannot be read: user_id, AND, OR, in, and dates with gte, gt, lte or lt.",
    "refused.unsupported_filter": "Memories are filtered by person, agent, app, run, categories, metadata and date only.",
    "refused.unsupported_field": "This server does not take this field (the request names it in its detail).",
    "refused.invalid_attributes": ("What is kept with a memory is too large or malformed (ids, metadata up to 2 KB, "
                                   "20 categories, a date)."),
    "refused.invalid_messages": "messages is a text or a list of {role, content}.",
    "refused.too_many_messages": "An add takes at most 100 messages: send the conversation in parts.",
    "refused.not_served": "This server does not serve this endpoint.",
    "refused.no_graph": "This server keeps no graph memory: enable_graph must be false.",
    # why a consolidation did not learn (its `reason`), said to the host that sent it
    "consolidation.model": "The model did not answer: is it running, and does MEMORY_LLM_BASE_URL point at it?",
    "consolidation.unreadable": "The model's answer could not be read as facts.",
    "consolidation.cut": "The model's answer stopped half way: the whole facts before the cut were kept.",
    "consolidation.error": "Something went wrong while learning; it was logged, without the conversation.",
    "consolidation.ai_disabled": "The assistant's AI is switched off for this organisation: nothing is learnt.",
    "consolidation.unavailable": "No model is set up (MEMORY_LLM_BASE_URL): nothing is learnt.",
    "consolidation.temporary": "The conversation was temporary: nothing was learnt from it and nothing of it was kept.",
    "refused.error": "Something went wrong on our side. It was logged; try again later.",
    # support staff and admins
    "refused.reason_required": "Choose why you need to see the memories.",
    "refused.invalid_ticket": "A ticket reference is letters, digits and - _ # / . : only.",
    "refused.confirmation_mismatch": "That is not the person's e-mail or owner id: nothing was erased.",
    "refused.already_completed": "This request is already completed.",
    "refused.received_in_future": "The date received cannot be in the future.",
    "refused.tenant_exists": "A tenant with that name exists already.",
    "refused.invalid_name": "Give a name.",
    "refused.invalid_role": "Choose staff or admin.",
    "refused.not_staff": "This is a person's account: it goes with their data, through an erasure request.",
    "refused.own_account": "You cannot do this to your own account.",
    "refused.no_account": "There is no account with that e-mail address.",
    "refused.owner_shared": "Several accounts share this owner id: export each one from the support console.",
    "refused.import_too_large": "This file is too large to import (at most 5 MB and 5,000 memories).",
    "refused.import_unreadable": "This file cannot be read: it is not our export, mem0's JSON or plain text (UTF-8).",
    "refused.import_unknown_version": "This export is of a version this portal does not read.",
    "refused.import_empty": "This file holds no memory to import.",
    "refused.import_too_large_here": "This file is too large to import here (at most 600 KB). Split it, or ask support.",
    # forget everything about a subject (portal.services.subject)
    "refused.invalid_subject": "Say what to forget about in a few words (at most 500 characters).",
    "refused.invalid_preview": "Forgetting by subject needs a valid preview: preview again (a preview is valid for 30 minutes).",
    "refused.not_previewed": "Only memories the preview listed can be forgotten this way. Preview again.",
    "refused.invalid_email": "That is not an e-mail address.",
    "refused.email_taken": "An account with that e-mail exists already.",
    "refused.password_too_short": "The password needs at least 10 characters.",
    "refused.unknown_tenant": "Choose a tenant.",
    "refused.invalid_api_key": "Choose a tenant and at least one permission.",
    "refused.invalid_language": "This language is not available.",
    "refused.invalid_owner_id": "That owner id is not valid.",
    "memory_saved": "Saved to memory.",
    "memories_found": {
        "zero": "No memories found.",
        "one": "Found {count} memory.",
        "other": "Found {count} memories.",
        "bare": "Memories found.",
    },
    "memory_corrected": "Memory corrected.",
    "memory_forgotten": "Memory erased.",
    "memory_undone": "Undone.",
}

CATALOGS: dict[str, dict[str, Entry]] = {"en": _EN, "fr": FR}

REFUSAL_CODES: tuple[str, ...] = tuple(k.split(".", 1)[1] for k in _EN if k.startswith(REFUSED + "."))
OUTCOME_CODES: tuple[str, ...] = ("memory_saved", "memories_found", "memory_corrected", "memory_forgotten", "memory_undone")


def _one_en(n: int) -> bool:
    return n == 1


def _one_fr(n: int) -> bool:
    return n in (0, 1)


_PLURAL_ONE = {"en": _one_en, "fr": _one_fr}


def languages() -> tuple[str, ...]:
    """The languages the catalog speaks, as primary language subtags ("en", "fr")."""
    return tuple(sorted(CATALOGS))


def resolve_language(language: str | None) -> str | None:
    """The catalog language for a language tag: "fr-FR", "fr_CA" and "FR" give "fr".

    No language (None or blank) means no preference: the default language. A tag the catalog does
    not speak gives None."""
    if language is None:
        return DEFAULT_LANGUAGE
    if not isinstance(language, str):
        return None
    tag = language.strip().replace("_", "-").lower()
    if not tag:
        return DEFAULT_LANGUAGE
    if tag in CATALOGS:
        return tag
    primary = tag.split("-", 1)[0]
    return primary if primary in CATALOGS else None


def message(code: str, language: str | None, **values: Any) -> str | None:
    """The text for `code` in `language`, or None when there is none.

    `code` is a catalog key: `refused.<code>` or an outcome (`memories_found`, ...); a bare refusal
    code the catalog knows (`"paused"`) is read as `refused.paused`. A `refused.<code>` the catalog
    has no text for (a content rule's own code) gets the language's generic refusal. `values` fill
    the text's placeholders; `count` also chooses the plural form.
    """
    lang = resolve_language(language)
    if lang is None or not isinstance(code, str):
        return None
    texts = CATALOGS[lang]
    entry = texts.get(code)
    if entry is None and not code.startswith(REFUSED + ".") and f"{REFUSED}.{code}" in texts:
        entry = texts[f"{REFUSED}.{code}"]
    if entry is None and code.startswith(REFUSED + "."):
        entry = texts[REFUSED]
    if entry is None:
        return None
    return _render(entry, lang, values)


def has_text(code: str) -> bool:
    """Whether the catalog has words of its own for the refusal `code` (a content rule's own code
    has only the generic refusal)."""
    return isinstance(code, str) and f"{REFUSED}.{code}" in CATALOGS[DEFAULT_LANGUAGE]


def _plural_form(entry: Mapping[str, str], lang: str, count: Any) -> str:
    """Which plural form `count` takes in `lang`; "bare" without a count."""
    if not isinstance(count, int) or isinstance(count, bool):
        return "bare"
    if count == 0 and "zero" in entry:
        return "zero"
    return "one" if _PLURAL_ONE.get(lang, _one_en)(count) else "other"


def _render(entry: Entry, lang: str, values: dict[str, Any]) -> str:
    if isinstance(entry, str):
        template = entry
    else:
        form = _plural_form(entry, lang, values.get("count"))
        template = entry.get(form) or entry.get("bare") or entry.get("other") or ""
    try:
        return template.format_map(values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        # A placeholder without its value: the plain form rather than a broken sentence.
        if not isinstance(entry, str) and "bare" in entry:
            return entry["bare"]
        return template


__all__ = ["CATALOGS", "DEFAULT_LANGUAGE", "OUTCOME_CODES", "REFUSAL_CODES", "has_text", "languages", "message",
           "resolve_language"]
