"""Schemathesis against the live server's own /openapi.json: no input may produce a 5xx."""
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer

KEY = "fuzz-key"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    require_node_toolchain()
    srv = LiveServer(tmp_path_factory.mktemp("fuzz"), env={"BOTGRPO_API_KEY": KEY, "BOTGRPO_RESULT_TIMEOUT_S": "30"})
    yield srv
    srv.stop()


def test_no_input_produces_a_server_error(live):
    """Every operation, with and without the API key, on generated (mostly invalid) input.

    Driven through hypothesis directly: schemathesis's pytest plugin does not load on pytest 9.
    """
    schema = schemathesis.openapi.from_url(live.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def no_server_error(case):
            for headers in ({"Authorization": f"Bearer {KEY}"}, {}):
                response = case.call_and_validate(base_url=live.url, headers=headers, checks=[not_a_server_error],
                                                  timeout=60)
                assert response.status_code < 500, response.text[:500]

        no_server_error()
