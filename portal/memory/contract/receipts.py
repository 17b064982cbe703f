"""The store contract on what a place keeps besides its memories: settings, claimed refs and
idempotency receipts (claimed, finished, dropped and redacted).
"""

from __future__ import annotations

from ..store import Settings, Store
from ..types import Receipt
from .base import ContractBase


class ReceiptsContract(ContractBase):
    """Settings, refs and receipts, each per place."""

    def test_settings_default_and_round_trip(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.read(here) as tx:
            assert tx.settings() == Settings() and tx.settings().paused is False
        for paused in (True, True, False, True):
            with store.write(here) as tx:
                tx.set_settings(Settings(paused=paused))
                tx.commit()
            with store.read(here) as tx:
                assert tx.settings().paused is paused
        with store.read(other) as tx:
            assert tx.settings().paused is False

    def test_a_ref_is_claimed_once_until_released(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(1)) is True
            assert tx.claim_ref("conv-1", self.at(2)) is False
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(3)) is False
            assert tx.release_ref("conv-2") is False
            assert tx.release_ref("conv-1") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(4)) is True
            tx.commit()
        with store.write(other) as tx:
            assert tx.claim_ref("conv-1", self.at(5)) is True
            tx.commit()

    def test_receipts_round_trip(self, store: Store) -> None:
        here = self.place(store)
        first, second = self.new_id(), self.new_id()
        receipt = Receipt(
            key="idem-1", request_hash="a" * 64, status=201,
            response={"memories": [{"id": first, "text": "Bonjour, ça va"}], "count": 2, "ok": True, "none": None},
            memory_ids=(first, second), created_at=self.at(5),
        )
        with store.write(here) as tx:
            assert tx.get_receipt("idem-1") is None
            tx.put_receipt(receipt)
            tx.put_receipt(Receipt(key="idem-2", request_hash="b" * 64, status=200, response=None,
                                   created_at=self.at(6)))
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_receipt("idem-1") == receipt
            empty = tx.get_receipt("idem-2")
            assert empty is not None and empty.response is None and empty.memory_ids == () and not empty.redacted
            assert tx.get_receipt("idem-3") is None

    def test_a_pending_receipt_is_claimed_once_then_finished_or_dropped(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        done = self.new_id()
        pending = Receipt(key="idem-p", request_hash="c" * 64, status=0, response=None, created_at=self.at(7))
        with store.write(here) as tx:
            assert tx.put_receipt(pending) is True
            assert tx.put_receipt(pending) is False  # a second writer with the same key learns it is taken
            tx.commit()
        with store.write(other) as tx:
            assert tx.put_receipt(pending) is True  # keys are per place
            assert tx.drop_receipt("idem-p") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.finish_receipt("idem-p", 201, {"id": done}, [done]) is True
            assert tx.finish_receipt("missing", 201, None, []) is False
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("idem-p")
            assert got is not None and (got.status, got.response, got.memory_ids) == (201, {"id": done}, (done,))
        with store.read(other) as tx:
            assert tx.get_receipt("idem-p") is None
        with store.write(here) as tx:
            assert tx.drop_receipt("idem-p") is True and tx.drop_receipt("idem-p") is False
            tx.commit()

    def test_redaction_touches_only_receipts_naming_the_memory(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        target, neighbour = self.new_id(), self.new_id()
        with store.write(here) as tx:
            tx.put_receipt(self.receipt("only", target))
            tx.put_receipt(self.receipt("both", neighbour, target))
            tx.put_receipt(self.receipt("neighbour", neighbour))
            tx.put_receipt(self.receipt("none"))
            tx.commit()
        with store.write(other) as tx:
            tx.put_receipt(self.receipt("only", target))
            tx.commit()
        with store.write(here) as tx:
            assert tx.redact_receipts(target) == 2
            assert tx.redact_receipts(target) == 0
            tx.commit()
        with store.read(here) as tx:
            for key in ("only", "both"):
                got = tx.get_receipt(key)
                assert got is not None and got.response is None and got.redacted, key
                assert got.status == 201 and target in got.memory_ids
            for key in ("neighbour", "none"):
                got = tx.get_receipt(key)
                assert got is not None and got.response is not None and not got.redacted, key
        with store.read(other) as tx:
            got = tx.get_receipt("only")
            assert got is not None and got.response is not None and not got.redacted
