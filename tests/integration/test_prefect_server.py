"""The lab's Prefect 3 server answers its API and serves the UI."""

import pytest

pytestmark = pytest.mark.integration


def test_prefect_api_and_ui_answer(prefect_server):
    assert prefect_server.healthy()
    assert prefect_server.ui_answers()
