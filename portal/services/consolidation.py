"""Consolidation: learning from a finished conversation with the assistant's LLM.

`Consolidation` writes through `Memories`, as any other shell would. It never raises: every
outcome is a ConsolidationResult with a status, and each proposed write stands alone, so a refused
or failing fact never loses the others. The model sees masked text only, as data, and untrusted
tool output never reaches it. What it reads and shows the model (the transcript, the prompt) is
in `portal.services.transcript`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from portal.domain.apps import NO_MEMORY, TEMPORARY
from portal.domain.attributes import is_immutable, scope_of
from portal.domain.decisions import conversation_key
from portal.domain.errors import Conflict, InvalidWhere, NotFound, Refused
from portal.domain.extraction import Extraction, read_extraction
from portal.domain.options import new_id
from portal.domain.types import Holding, Memory, Place, Saved, Source, as_place
from portal.ports import Filters
from portal.services.context import Context
from portal.services.leases import Renewing
from portal.services.memories import Memories
from portal.services.transcript import (
    Message,
    is_explicit_fact,
    is_trusted,
    is_valid_ref,
    read_transcript,
    render_prompt,
    system_prompt,
)

log = logging.getLogger("portal.memory")


@dataclass
class ConsolidationResult:
    status: str
    added: int = 0
    corrected: int = 0
    refused: int = 0
    # Facts and corrections that said again what was kept already (nothing new, nothing changed).
    reinforced: int = 0
    summary: str | None = None
    reason: str | None = None
    failed: int = 0
    proposed: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    # The ids of the memories it added, corrected or said again (not answered: a job keeps them),
    # and what it did to each, in order ("added", "corrected" or "reinforced"; ids and codes only).
    taught: list[str] = field(default_factory=list)
    made: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status, "added": self.added, "corrected": self.corrected, "refused": self.refused,
            "reinforced": self.reinforced, "summary": self.summary,
        }
        if self.status == "failed" or self.reason:
            data.update(reason=self.reason, failed=self.failed, proposed=self.proposed)
        return data

    def kept_json(self) -> dict[str, Any]:
        """`to_json` with what it made, by id and code, never the words (a job's stored result; the
        mem0 event reads the words when it is asked)."""
        return {**self.to_json(), "made": [{"id": i, "event": what} for i, what in self.made]}


class Consolidation:
    def __init__(self, ctx: Context, memories: Memories) -> None:
        self.ctx = ctx
        self.memories = memories

    def consolidate(
        self, place: Any, transcript: Any, ref: Any, role: str | None = None, person_name: str | None = None,
        language: str | None = None, attributes: Any = None, temporary: bool = False, digested: bool = False,
    ) -> ConsolidationResult:
        """Learn from a finished conversation, once per `ref` of its app (`AppRefs`). Never raises. `attributes` go with
        each memory it adds (portal.domain.attributes; a host's agent, run, metadata...).
        `temporary`: a conversation that teaches nothing (`_temporary`): status `temporary`. What is
        kept of `ref` (its claim, the memories' sources) is its conversation key, the digest recall
        keeps of a conversation (`conversation_key`), never the reference; `digested`: `ref` is that
        key already (a background job's, `portal.services.jobs`).

        Statuses: done, already (this ref was consolidated), paused (marked done, nothing learnt,
        even after resume), empty (nothing to read), unavailable (no model, or the AI is off:
        reason `ai_disabled`), failed (reason model | unreadable | cut | store | invalid_where |
        error; the ref is released so the next run retries, and what was kept merges as
        duplicates). A model's answer that stopped half way is `done` with reason `cut` when it
        held whole facts before the cut (they are kept), and `failed` with reason `cut` when it
        held none. temporary (the host marked the conversation temporary: nothing learnt, nothing
        of it kept, see `_temporary`). The one exception: Refused `app_blocked`, for an app
        (`MemoryService.for_app`) the person blocked, checked before anything else.
        """
        try:
            place = as_place(place)
        except InvalidWhere:
            return ConsolidationResult("failed", reason="invalid_where")
        self.ctx.admit(place)
        if temporary:
            return self._temporary(place, transcript, ref)
        claimed = paused = False
        holder = new_id()  # this request's hold on the ref: a takeover or an erasure ends it
        try:
            shown = self._shown(place, transcript, ref)
            if isinstance(shown, ConsolidationResult):
                return shown
            ref = ref if digested else conversation_key(ref, self.ctx.store.words_secret)
            lease = self.ctx.options.lease_seconds
            claimed, paused = self._claim(place, ref, holder, lease)
            if not claimed:
                return ConsolidationResult("already")
            if paused:
                log.info("consolidate.paused place=%s", _pid(place))
                return ConsolidationResult("paused")
            with Renewing(lambda: self._renew(place, ref, holder), lease / 3, "ref"):
                result = self._learn(place, shown, ref, role, person_name, language, holder, attributes)
        except Exception as exc:  # the promise is "never raises": classify, release, report
            if isinstance(exc, Refused) and exc.code == "app_blocked":  # blocked since the check above
                raise

            log.warning("consolidate.error place=%s error=%s", _pid(place), type(exc).__name__)
            result = ConsolidationResult("failed", reason="error")
        if claimed and not paused:
            self._settle(place, ref, holder, result)
        log.info(
            "consolidate.%s place=%s added=%d corrected=%d refused=%d failed=%d reason=%s",
            result.status, _pid(place), result.added, result.corrected, result.refused, result.failed, result.reason,
        )
        return result

    def _temporary(self, place: Place, transcript: Any, ref: Any) -> ConsolidationResult:
        """A conversation the assistant marked temporary: nothing is learnt and nothing of it is
        kept. It is read only to check it is a conversation (`failed`/`error` otherwise, as any
        consolidation answers), never shown to the model, never kept in a job, and its `ref` is not
        claimed: a later consolidation of the same conversation, not temporary, is the host asking
        again and learns as if it were the first (one already learnt is neither learnt again nor
        taken back). With no model involved, neither the AI switch nor a missing model stops it.
        The person's pause and the app's pause answer `paused` (nothing claimed either) and a block
        `app_blocked`, as a consolidation does; otherwise it answers `temporary` and the app's use is counted,
        content-free (`TEMPORARY`, a use of no memory: no ref, no word), in one transaction."""
        try:
            if not is_valid_ref(ref) or read_transcript(transcript) is None:
                return ConsolidationResult("failed", reason="error")
            app = self.ctx.app
            with self.ctx.store.write(place) if app is not None else self.ctx.store.read(place) as tx:
                if tx.settings().paused:  # the person's, or the app's (AppTx)
                    log.info("consolidate.paused place=%s temporary=1", _pid(place))
                    return ConsolidationResult("paused")
                if app is not None:
                    tx.record_use(app.id, TEMPORARY, [NO_MEMORY], self.ctx.clock())
                    tx.commit()
        except Refused as exc:
            if exc.code == "app_blocked":  # blocked since the check before
                raise
            log.warning("consolidate.error place=%s error=%s", _pid(place), exc.code)
            return ConsolidationResult("failed", reason="error")
        except Exception as exc:  # the promise is "never raises"
            log.warning("consolidate.error place=%s error=%s", _pid(place), type(exc).__name__)
            return ConsolidationResult("failed", reason="error")
        log.info("consolidate.temporary place=%s", _pid(place))
        return ConsolidationResult("temporary")

    def _shown(self, place: Place, transcript: Any, ref: Any) -> list[Message] | ConsolidationResult:
        """The messages the model is to be shown, or the result when there is nothing to run:
        an unusable ref or transcript, the AI off or no model, nothing but tool output to read."""
        if not is_valid_ref(ref):
            return ConsolidationResult("failed", reason="error")
        messages = read_transcript(transcript)
        if messages is None:
            return ConsolidationResult("failed", reason="error")
        if not self.ctx.ai_enabled(place):
            return ConsolidationResult("unavailable", reason="ai_disabled")
        if self.ctx.llm is None:
            return ConsolidationResult("unavailable")
        shown = [m for m in messages if is_trusted(m, self.ctx.options.trusted_tools)]
        if not any(m.text.strip() for m in shown if m.role != "tool"):
            return ConsolidationResult("empty")
        return shown

    def _claim(self, place: Place, ref: str, holder: str, lease: float) -> tuple[bool, bool]:
        """Claim the ref for this request: (claimed, paused). Paused: the conversation is done at
        once and nothing is learnt, even after resume."""
        with self.ctx.store.write(place) as tx:
            paused = tx.settings().paused
            now = self.ctx.clock()
            claimed = tx.claim_ref(ref, now, None if paused else now + timedelta(seconds=lease), holder)
            tx.commit()
        return claimed, paused

    def _learn(
        self, place: Place, shown: list[Message], ref: str, role: str | None,
        person_name: str | None, language: str | None, holder: str, attributes: Any = None,
    ) -> ConsolidationResult:
        with self.ctx.store.read(place) as tx:  # the model corrects only what its scope holds (issue 39)
            known = [m for m in tx.list(Filters()) if scope_of(m.attributes) == scope_of(attributes)
                     and not is_immutable(m.attributes)]  # mem0's immutable: never shown to be corrected
        known.sort(key=lambda m: (not m.pinned, -m.importance, -m.last_useful_at.timestamp()))
        known = known[: self.ctx.options.known_max]
        system = system_prompt(self.ctx.options, language)
        prompt = render_prompt(self.ctx.options, self.ctx.mask, place, known, shown)
        try:
            assert self.ctx.llm is not None
            answer = self.ctx.llm.complete(system, prompt)
        except Exception as exc:
            log.warning("consolidate.model_failed place=%s error=%s", _pid(place), type(exc).__name__)
            return ConsolidationResult("failed", reason="model")
        extraction = read_extraction(answer)
        if extraction is None:
            return ConsolidationResult("failed", reason="unreadable")
        if extraction.cut and not extraction.facts and not extraction.corrections:
            return ConsolidationResult("failed", reason="cut")
        result = self._apply(place, extraction, known, shown, ref, role, person_name, holder, attributes)
        if extraction.cut and result.reason is None:
            result.reason = "cut"
        return result

    def _apply(
        self, place: Place, extraction: Extraction, known: list[Memory], shown: list[Message],
        ref: str, role: str | None, person_name: str | None, holder: str, attributes: Any = None,
    ) -> ConsolidationResult:
        """Write what the model proposed, each write on its own and each only while this request
        still holds the conversation's claim (checked inside the write: an erasure of the person,
        or of everything, while the model was thinking takes the claim away, and nothing lands).
        A fact that says word for word what a memory shown to the model said, which the person
        forgot meanwhile, is refused as `forgotten`."""
        result = ConsolidationResult("done", summary=extraction.summary)
        result.proposed = len(extraction.facts) + len(extraction.corrections)
        shown_ids = {m.id for m in known}
        holding = Holding(ref, holder, {m.words_key: m.id for m in known})
        for correction in extraction.corrections:
            if correction.id not in shown_ids:
                _refuse(result, "not_shown")
                continue
            outcome = _attempt(result, place, partial(
                self.memories.update, place, correction.id, text=correction.text, kind=correction.kind,
                importance=correction.importance, origin="inferred", sources=(Source("consolidation", ref),),
                person_name=person_name, holding=holding,
            ))
            if outcome is not None:
                _taught(result, outcome.memory.id, "reinforced" if outcome.reinforced else "corrected")
        for fact in extraction.facts:
            source = Source("consolidation", ref, tuple(i for i in fact.messages if any(m.index == i for m in shown)))
            outcome = _attempt(result, place, partial(
                self.memories.remember, place, fact.text, kind=fact.kind, importance=fact.importance, role=role,
                explicit=is_explicit_fact(fact, shown), origin="inferred", sources=(source,), channel="background",
                person_name=person_name, holding=holding, attributes=attributes,
            ))
            if outcome is not None:  # said again: nothing new learnt, nothing corrected
                _taught(result, outcome.memory.id,
                        "reinforced" if outcome.reinforced else "corrected" if outcome.replaced_id else "added")
        if result.failed:
            result.status, result.reason = "failed", "store"
        return result

    def _renew(self, place: Place, ref: str, holder: str) -> bool:
        with self.ctx.store.write(place) as tx:
            held = tx.renew_ref(ref, holder, self.ctx.clock() + timedelta(seconds=self.ctx.options.lease_seconds))
            tx.commit()
        return held

    def _settle(self, place: Place, ref: str, holder: str, result: ConsolidationResult) -> None:
        """After a claimed run: a failed one releases the ref for a retry, any other finishes it."""
        if result.status == "failed":
            self._release(place, ref)
        else:
            self._finish(place, ref, holder)

    def _finish(self, place: Place, ref: str, holder: str) -> None:
        try:
            with self.ctx.store.write(place) as tx:
                tx.finish_ref(ref, holder)
                tx.commit()
        except Exception as exc:
            log.warning("consolidate.finish_failed place=%s error=%s", _pid(place), type(exc).__name__)

    def _release(self, place: Place, ref: str) -> None:
        try:
            with self.ctx.store.write(place) as tx:
                tx.release_ref(ref)
                tx.commit()
        except Exception as exc:
            log.warning("consolidate.release_failed place=%s error=%s", _pid(place), type(exc).__name__)


def _attempt(result: ConsolidationResult, place: Place, write: Callable[[], Saved]) -> Saved | None:
    """One write of a consolidation: its outcome, or None once counted as refused (the service's
    refusal, a memory gone or changed since it was shown) or as failed (the store, logged by class)."""
    try:
        return write()
    except (Refused, NotFound, Conflict) as refused:
        _refuse(result, refused.code)
    except Exception as exc:
        log.warning("consolidate.write_failed place=%s error=%s", _pid(place), type(exc).__name__)
        result.failed += 1
    return None


def _taught(result: ConsolidationResult, memory_id: str, what: str) -> None:
    result.taught.append(memory_id)
    result.made.append((memory_id, what))
    setattr(result, what, getattr(result, what) + 1)


def _refuse(result: ConsolidationResult, code: str) -> None:
    result.refused += 1
    result.refusals[code] = result.refusals.get(code, 0) + 1


def _pid(place: Any) -> str:
    """A place for logs: ids only (and never a failure of its own while logging one)."""
    return f"{getattr(place, 'owner_id', '?')}/{getattr(place, 'scope', '?')}"
