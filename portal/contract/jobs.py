"""The store contract on background consolidation jobs: kept in their place, their work as the
store keeps text, found by id for a worker, listed when left unfinished, erased with the person."""

from __future__ import annotations

from dataclasses import replace

from portal.contract.base import ContractBase
from portal.domain.jobs import DONE, QUEUED, RUNNING, Job
from portal.domain.types import Place
from portal.ports import Store


class JobsContract(ContractBase):
    def job(self, store: Store, owner: str = "owner-a", state: str = QUEUED, at: float = 1) -> Job:
        place = self.place(store, owner)
        return Job(self.new_id(), place.owner_id, place.scope, "conv-1", state, 0, self.at(at), self.at(at),
                   app_id="app-1", work={"transcript": [{"role": "user", "text": "I adopted a cat"}], "role": None})

    def test_a_job_is_kept_read_and_saved_in_its_place_only(self, store: Store) -> None:
        job = self.job(store)
        here, other_owner, other_scope = self.places3(store)
        with store.write(here) as tx:
            tx.put_job(job)
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_job(job.id) == job and tx.get_job("\x00") is None and tx.get_job(self.new_id()) is None
        for place in (other_owner, other_scope):
            with store.read(place) as tx:
                assert tx.get_job(job.id) is None
        assert store.job_place(job.id) == here and store.job_place(self.new_id()) is None
        done = replace(job, state=DONE, attempts=1, result={"status": "done", "added": 1}, work=None, updated_at=self.at(9))
        with store.write(here) as tx:
            assert tx.save_job(done) is True
            assert tx.save_job(replace(done, id=self.new_id())) is False
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_job(job.id) == done

    def test_a_job_id_two_places_hold_names_neither_place(self, store: Store) -> None:
        """Keys hold the owner, so nothing stops two places holding one job id (ids are random: it
        does not happen); a worker woken with it then runs neither rather than guessing."""
        job = self.job(store)
        theirs = replace(job, owner_id=self.place(store, "owner-b").owner_id)
        for one in (job, theirs):
            with store.write(Place(one.owner_id, one.scope)) as tx:
                tx.put_job(one)
                tx.commit()
        assert store.job_place(job.id) is None
        for one in (job, theirs):
            with store.read(Place(one.owner_id, one.scope)) as tx:
                assert tx.get_job(job.id) == one

    def test_unfinished_jobs_are_listed_oldest_first_and_erasure_takes_them(self, store: Store) -> None:
        old, running, recent = self.job(store, at=1), self.job(store, "owner-b", RUNNING, at=2), self.job(store, at=50)
        finished = self.job(store, state=DONE, at=1)
        for job in (old, running, recent, finished):
            with store.write(Place(job.owner_id, job.scope)) as tx:
                tx.put_job(job)
                tx.commit()
        assert store.unfinished_jobs(self.at(10), 10) == [old.id, running.id]
        assert store.unfinished_jobs(self.at(10), 1) == [old.id]
        counts = store.purge_owner(old.owner_id)
        assert counts.jobs == 3
        assert store.job_place(old.id) is None and store.unfinished_jobs(self.at(100), 10) == [running.id]

    def test_a_summary_is_kept_apart_from_the_result_and_the_result_holds_no_words(self, store: Store) -> None:
        """The result a store keeps is the counts and codes only, whatever it is handed (a summary
        that slipped into it is dropped); the summary is kept apart, as the store keeps text."""
        here = self.place(store)
        job = self.job(store)
        done = replace(job, state=DONE, result={"status": "done", "added": 2, "summary": "Talked about the cat"},
                       summary="Talked about the cat", work=None, updated_at=self.at(5))
        with store.write(here) as tx:
            tx.put_job(job)
            assert tx.save_job(done) is True
            tx.commit()
        with store.read(here) as tx:
            kept = tx.get_job(job.id)
            assert kept is not None and kept.result == {"status": "done", "added": 2}
            assert kept.summary == "Talked about the cat" and kept.work is None
            assert tx.jobs() == [kept]
        with store.write(here) as tx:
            assert tx.save_job(replace(done, summary=None)) is True
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_job(job.id) == replace(done, result={"status": "done", "added": 2}, summary=None)

    def test_summaries_never_read_are_cleared_and_old_jobs_pruned_in_every_place(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        jobs = {}
        for name, place, state, at in (("old", here, DONE, 1), ("other", other_owner, DONE, 2), ("scope", other_scope, DONE, 3),
                                       ("recent", here, DONE, 50), ("queued", here, QUEUED, 1)):
            job = Job(self.new_id(), place.owner_id, place.scope, "conv-1", state, 1, self.at(at), self.at(at),
                      app_id="app-1", result={"status": "done"} if state == DONE else None,
                      summary=f"summary {name}" if state == DONE else None, work=None if state == DONE else {"a": 1})
            jobs[name] = job
            with store.write(place) as tx:
                tx.put_job(job)
                tx.commit()
        assert store.expire_summaries(self.at(10)) == 3
        assert store.expire_summaries(self.at(10)) == 0
        for name, job in jobs.items():
            with store.read(Place(job.owner_id, job.scope)) as tx:
                kept = tx.get_job(job.id)
                assert kept is not None
                assert kept.summary == (job.summary if name in ("recent", "queued") else None), name
        assert store.prune_jobs(self.at(10)) == 3  # over before the cutoff; a queued job stays whatever its age
        assert sorted(store.unfinished_jobs(self.at(100), 10)) == [jobs["queued"].id]
        with store.read(here) as tx:
            assert [j.id for j in tx.jobs()] == [jobs["queued"].id, jobs["recent"].id]

    def test_forgetting_what_a_job_taught_erases_its_summary_in_the_same_transaction(self, store: Store) -> None:
        """A job's summary may say what it taught: it goes, in the transaction that erases any of it —
        a memory removed (forget, forget matching, undo, expiry), its earlier wordings erased, its
        wording overwritten in place or undone. Other jobs, and other places' jobs, keep theirs."""
        here, elsewhere = self.place(store), self.place(store, owner="owner-b")
        cat, run, tea, song, kept = self.add(store, here, "Has a cat", "Runs", "Likes tea", "Sings", "Reads")

        def done(place: Place, *taught: str) -> Job:
            job = replace(self.job(store), id=self.new_id(), owner_id=place.owner_id, scope=place.scope, state=DONE,
                          result={"status": "done"}, work=None, summary=f"Talked about {len(taught)} things",
                          taught=taught)
            with store.write(place) as tx:
                tx.put_job(job)
                tx.commit()
            return job

        def summary(place: Place, job: Job) -> str | None:
            with store.read(place) as tx:
                found = tx.get_job(job.id)
                assert found is not None and found.taught == job.taught
                return found.summary

        two, one, third, fourth, quiet = done(here, cat.id, kept.id), done(here, run.id), done(here, tea.id), \
            done(here, song.id), done(here, kept.id)
        theirs = done(elsewhere, cat.id, run.id, tea.id, song.id)
        with store.write(here) as tx:
            tx.remove([cat.id])
            assert tx.get_job(two.id).summary is None  # type: ignore[union-attr]
            # left without a commit: the summary is back with the memory
        assert summary(here, two) is not None
        with store.write(here) as tx:
            tx.remove([cat.id])
            tx.push_revision(self.revision(run, 1))
            tx.commit()
        with store.write(here) as tx:
            assert tx.erase_history(run.id) == 1
            assert tx.save(tea.copy(text="Likes green tea", revision=2, last_op="in_place"), 1)
            assert tx.save(song.copy(text="Sings in a choir", revision=2, last_op="undo"), 1)
            assert tx.save(kept.copy(text="Reads novels", revision=2, last_op="update"), 1)
            tx.commit()
        assert [summary(here, j) for j in (two, one, third, fourth)] == [None] * 4
        assert summary(here, quiet) == quiet.summary and summary(elsewhere, theirs) == theirs.summary
