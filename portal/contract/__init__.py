"""The store contract suite: what any `Store` must do, checked through the protocol only.

Ship-with-the-package tests, so a third party can prove its own adapter. Subclass `StoreContract`
in a test module and give it a `store` fixture returning a fresh, empty store:

    class TestMyStore(StoreContract):
        vector_dimensions = 384

        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path / "db")

Options are class attributes and methods to override: `new_id()` (ids the store accepts),
`make_owner(name, store)` and `make_scope(name, store)` (for stores whose owner and scope are
foreign keys: create the row and answer its key; the same name must give the same value within one
store) and `vector_dimensions` (test vectors are padded to it). A store with `searches_text`
False (text kept out of the database's reach, e.g. encrypted) is held to the same word search,
which it then answers in process.

The suite is a package of topic modules: `base` (the options, builders and checks), `places`
(places and isolation, transactions), `listing`, `searching` (words and vectors), `ranking`
(equal scores fall by id, through recall too), `writing`
(saves, revisions, tombstones), `receipts` (settings, refs, receipts), `retention` (purging and
pruning), `apps` (connected apps: controls, uses, and `AppStore`'s checks), `jobs` (background
consolidations), `decisions` (expiry, "don't use this", conversations' uses), `dates` (a period a query names) and
`scopes` (an agent, app or run id is part of what a memory is). Each holds one
mixin; `StoreContract` composes them. The mixins' names do not start with
`Test`, so pytest collects their tests only through a `Test*` subclass of `StoreContract`.

`RecordsContract` (`records`, with the audit log's part in `audit`) is the same for the records
around the memories (accounts, tenants, API keys, the audit log, erasure requests) and their unit
of work: subclass it with a `store` fixture and a `records` fixture over that store.

Only tests import this package; pytest is a test dependency, not a runtime one.
"""

from __future__ import annotations

try:
    import pytest  # noqa: F401 - checked before the topic modules, which all need it
except ImportError as exc:  # pragma: no cover - only without the test extras
    raise ImportError("portal.contract is a pytest suite: install pytest to use it") from exc

from portal.contract.apps import AppsContract
from portal.contract.dates import DatesContract
from portal.contract.decisions import DecisionsContract
from portal.contract.jobs import JobsContract
from portal.contract.listing import ListingContract
from portal.contract.places import PlacesContract
from portal.contract.ranking import RankingContract
from portal.contract.receipts import ReceiptsContract
from portal.contract.records import RecordsContract
from portal.contract.retention import RetentionContract
from portal.contract.scopes import ScopesContract
from portal.contract.searching import SearchingContract
from portal.contract.uses import UsesContract
from portal.contract.writing import WritingContract

__all__ = ["RecordsContract", "StoreContract"]


class StoreContract(
    PlacesContract, ListingContract, SearchingContract, RankingContract, WritingContract, ReceiptsContract,
    RetentionContract, AppsContract, JobsContract, DecisionsContract, UsesContract, DatesContract,
    ScopesContract,
):
    """Subclass with a `store` fixture; every `test_*` here then runs against that store."""
