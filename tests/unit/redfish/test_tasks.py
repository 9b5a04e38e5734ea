"""Following Tasks and Dell Jobs to the end: the state decides, never the status code."""

from __future__ import annotations

import time

import pytest

from bringup.errors import RedfishTaskError, RedfishTimeoutError
from bringup.redfish.session import Reply
from bringup.redfish.task import follow


class Scripted:
    """A session whose GETs answer a script of (status, body) replies, the last one forever."""

    name = "BMC test"

    def __init__(self, *replies: tuple[int, object]) -> None:
        self.replies = list(replies)
        self.gets = 0

    def call(self, method, path, **kw):
        self.gets += 1
        status, body = self.replies[0] if len(self.replies) == 1 else self.replies.pop(0)
        return Reply(status, body, {"retry-after": "0"})


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda s: None)


def running(state="Running"):
    return {"TaskState": state, "Id": "7", "Messages": [{"Message": "still going"}]}


def test_a_task_answered_200_while_running_is_polled_until_completed():
    s = Scripted((200, running()), (200, running()), (200, running("Completed")))
    assert follow(s, "/redfish/v1/TaskService/Tasks/7", "insert", 10).state == "Completed" and s.gets == 3


def test_a_monitor_202_then_204_is_done():
    s = Scripted((202, running()), (204, None))
    assert follow(s, "/m", "insert", 10).state == "Completed" and s.gets == 2


def test_a_failed_task_raises_with_its_message():
    s = Scripted((200, running()), (200, {"TaskState": "Exception", "Messages": [{"Message": "image unreachable"}]}))
    with pytest.raises(RedfishTaskError, match="Exception: image unreachable"):
        follow(s, "/t", "insert media", 10)


def test_a_dell_job_runs_to_completed_or_failed():
    s = Scripted((200, {"JobState": "Scheduled"}), (200, {"JobState": "Running"}),
                 (200, {"JobState": "Completed", "Message": "Job completed successfully."}))
    out = follow(s, "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_1", "bios job", 10)
    assert out.state == "Completed" and out.messages == ["Job completed successfully."]
    s = Scripted((200, {"JobState": "Failed", "Message": "PR21"}))
    assert follow(s, "/j", "bios job", 10, raise_on_failure=False).failed


def test_a_job_waiting_for_a_reset_can_be_left_there():
    s = Scripted((200, {"JobState": "Scheduled"}))
    assert follow(s, "/j", "bios job", 10, until_scheduled=True).state == "Scheduled"


def test_the_wait_is_bounded(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(time, "sleep", lambda s: now.__setitem__(0, now[0] + 1))
    with pytest.raises(RedfishTimeoutError, match="still running after 5s"):
        follow(Scripted((200, running())), "/t", "insert media", 5)
