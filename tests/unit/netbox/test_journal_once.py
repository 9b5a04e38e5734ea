"""A journal entry is written once even when NetBox's answer to its POST is lost
(bringup/netbox/journal_once.py): the records layer's retry finds the entry that landed
instead of writing it again; a POST that never reached NetBox is simply sent again."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
import requests
from urllib3.exceptions import NewConnectionError

from bringup.errors import NetBoxUnavailable
from bringup.netbox.adapter import NetBox
from bringup.netbox.journal_once import CLOCK_MARGIN, SETTLE_S, JournalOnce, maybe_taken
from bringup.netbox.records import NetBoxRecords

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)


def refused() -> requests.ConnectionError:
    try:
        raise NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")
    except NewConnectionError as cause:
        try:
            raise requests.ConnectionError("HTTPConnectionPool(host='nb', port=80): Max retries exceeded") from cause
        except requests.ConnectionError as exc:
            return exc


class Journal:
    """NetBox's journal entries of one node; ``lose`` answers: the entry lands, the answer
    is lost (NetBox stopped with the POST queued, then continued)."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now                            # NetBox's clock: an entry's `created`
        self.entries: list[tuple[int, str, datetime]] = []
        self.lose: list[BaseException] = []     # one per POST to come, in order
        self.land = True                          # a lost answer's entry lands
        self.posts = self.reads = 0
        self.since: list[datetime] = []
        self.deleted: list[int] = []
        self.slept: list[float] = []
        self.late: list[str] = []                 # texts of lost POSTs NetBox takes only later

    def post(self, node_id: int, comments: str, kind: str) -> int:
        self.posts += 1
        error = self.lose.pop(0) if self.lose else None
        if error is None or (self.land and maybe_taken(error)):
            self.entries.append((len(self.entries) + 1, comments, self.now))
        if error is not None:
            raise error
        return len(self.entries)

    def delete(self, entry_id: int) -> None:
        self.deleted.append(entry_id)
        self.entries = [e for e in self.entries if e[0] != entry_id]

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.late:   # the stalled NetBox takes the queued POST now
            self.entries.append((len(self.entries) + 1 + len(self.deleted), self.late.pop(0), self.now))

    def created_since(self, node_id: int, since: datetime):
        self.reads += 1
        self.since.append(since)
        return [(i, c) for i, c, at in self.entries if at >= since]


def lost(text: str, *, land: bool = True, node: int = 7) -> tuple[Journal, JournalOnce]:
    """A write of ``text`` whose answer was lost (a read timeout); ``land``: NetBox took it."""
    j = Journal()
    j.lose, j.land = [requests.ReadTimeout("read timed out")], land
    once = JournalOnce(lambda n, c, k: j.post(n, c, k), j.created_since, j.delete, clock=lambda: T0,
                       sleep=j.sleep)
    with pytest.raises(requests.ReadTimeout):
        once.write(node, text, "info")
    return j, once


def test_a_lost_answer_whose_entry_landed_is_found_not_written_again():
    j, once = lost("kind=burnin part=1/1")
    assert once.unsure == 1
    assert once.write(7, "kind=burnin part=1/1", "info") == 1      # the retry
    assert (j.posts, j.reads, len(j.entries), once.unsure) == (1, 1, 1, 0)
    assert j.since == [T0 - CLOCK_MARGIN]


def test_a_lost_answer_whose_entry_did_not_land_is_written_on_the_retry():
    j = Journal()
    j.lose, j.land = [requests.ConnectionError("Connection aborted: RemoteDisconnected")], False
    once = JournalOnce(j.post, j.created_since, j.delete, clock=lambda: T0, sleep=j.sleep)
    with pytest.raises(requests.ConnectionError):
        once.write(7, "held in install", "warning")
    assert once.write(7, "held in install", "warning") == 1
    # looked twice (at once, and after NetBox had time to settle), wrote, looked for a late twin
    assert (j.posts, j.reads, j.slept, len(j.entries), once.unsure) == (2, 3, [SETTLE_S], 1, 0)


def test_a_lost_post_that_lands_after_the_first_look_is_found_on_the_second():
    j = Journal()
    j.lose, j.land = [requests.ReadTimeout("read timed out")], False
    j.late = ["kind=burnin part=1/1"]          # NetBox still working through its queue
    once = JournalOnce(j.post, j.created_since, j.delete, clock=lambda: T0, sleep=j.sleep)
    with pytest.raises(requests.ReadTimeout):
        once.write(7, "kind=burnin part=1/1", "info")
    assert once.write(7, "kind=burnin part=1/1", "info") == 1
    assert (j.posts, j.reads, j.slept, len(j.entries)) == (1, 2, [SETTLE_S], 1)


def test_a_lost_post_that_lands_after_the_new_one_is_deleted_keeping_the_first():
    j, once = lost("text", land=False)
    real_post = j.post

    def post_while_the_lost_one_lands(node_id, comments, kind):
        j.entries.append((1, comments, j.now))     # the lost POST, taken just now
        return real_post(node_id, comments, kind)
    j.post = post_while_the_lost_one_lands
    assert once.write(7, "text", "info") == 1
    assert j.deleted == [2] and [c for _, c, _ in j.entries] == ["text"] and once.unsure == 0


def test_a_post_that_never_reached_netbox_is_sent_again_without_a_read():
    j = Journal()
    j.lose = [refused(), requests.ConnectTimeout("connect timed out")]
    once = JournalOnce(j.post, j.created_since, j.delete, clock=lambda: T0, sleep=j.sleep)
    for _ in range(2):
        with pytest.raises(requests.ConnectionError):
            once.write(7, "text", "info")
    assert once.unsure == 0
    assert once.write(7, "text", "info") == 1
    assert (j.posts, j.reads, len(j.entries)) == (3, 0, 1)


def test_the_same_text_on_another_node_or_another_text_is_not_taken_for_it():
    j, once = lost("a")
    assert once.write(8, "a", "info") == 2 and j.reads == 0   # another node: a write of its own
    assert once.write(7, "b", "info") == 3 and j.reads == 0
    assert once.write(7, "a", "info") == 1 and j.reads == 1


# --- through the adapter and the records layer: one entry after a stall --------------------
class Entries:
    """pynetbox's journal_entries endpoint over a Journal."""

    def __init__(self, journal: Journal) -> None:
        self.j = journal

    def create(self, body):
        return SimpleNamespace(id=self.j.post(body["assigned_object_id"], body["comments"], body["kind"]))

    def filter(self, **kw):
        assert kw["assigned_object_type"] == "dcim.device"
        since = datetime.fromisoformat(kw["created_after"])
        return [SimpleNamespace(id=i, comments=c) for i, c in self.j.created_since(kw["assigned_object_id"], since)]


def test_a_records_journal_call_through_a_stall_leaves_one_entry():
    j = Journal(now=datetime.now(UTC))      # the adapter's clock is the real one
    # NetBox stopped: the POST's answer never comes, then the read on the retry times out
    # too; it runs again and the second retry finds the entry the first POST left
    j.lose = [requests.ReadTimeout("read timed out")]
    api = SimpleNamespace(extras=SimpleNamespace(journal_entries=Entries(j)), token="t", base_url="http://nb/api")
    nb = NetBox(api, graphql=False)
    reads = []
    real = j.created_since

    def stalled_once(node_id, since):
        reads.append(since)
        if len(reads) == 1:
            raise requests.ReadTimeout("read timed out")
        return real(node_id, since)
    j.created_since = stalled_once
    records = NetBoxRecords(SimpleNamespace(netbox=nb), outage_s=60, sleep=lambda s: None)
    records.journal(SimpleNamespace(id=7, name="n1"), "install: ok", kind="info")
    assert [c for _, c, _ in j.entries] == ["install: ok"] and j.posts == 1 and len(reads) == 2


def test_the_adapter_says_unavailable_for_a_lost_answer():
    j = Journal(now=datetime.now(UTC))
    j.lose = [requests.ReadTimeout("read timed out")]
    api = SimpleNamespace(extras=SimpleNamespace(journal_entries=Entries(j)), token="t", base_url="http://nb/api")
    with pytest.raises(NetBoxUnavailable, match="did not answer in time"):
        NetBox(api, graphql=False).journal(7, "x")


@pytest.mark.parametrize("status,raises", [(204, None), (404, None), (503, NetBoxUnavailable)])
def test_the_adapter_deletes_a_late_twin_by_id_and_a_twin_gone_already_is_fine(status, raises):
    sent = []

    def request(method, url, json=None, params=None, headers=None):
        sent.append((method, url, headers["Authorization"]))
        return SimpleNamespace(ok=status < 300, status_code=status, text="")
    api = SimpleNamespace(http_session=SimpleNamespace(request=request), token="nbt_k.s", base_url="http://nb/api")
    delete = NetBox(api, graphql=False)._delete_journal
    if raises:
        with pytest.raises(raises):
            delete(12)
    else:
        delete(12)
    assert sent == [("DELETE", "http://nb/api/extras/journal-entries/12/", "Bearer nbt_k.s")]
