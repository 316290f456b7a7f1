"""The local model server: started from a real GGUF file with llama.cpp, health-checked,
stopped; and every way it cannot start is one clear error before anything runs."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ledger.local_server import (
    LocalServer,
    LocalServerConfig,
    LocalServerError,
    check_config,
    model_alias,
    slots_for,
)
from ledger.services.profiles import all_profiles, seed_profiles
from tests.e2e.pitrun import free_port
from tests.fixtures.local_model import smollm2_path

pytestmark = pytest.mark.timeout(120)


def config(model: Path, **kw: Any) -> LocalServerConfig:
    values: dict[str, Any] = {
        "model": model,
        "port": free_port(),
        "slots": 1,
        "context": 2048,
        "max_tokens": 16,
        "threads": 1,
        "start_timeout_s": 90.0,
    }
    values.update(kw)
    return LocalServerConfig(**values)


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        # As the server binds it: a closed connection's TIME_WAIT does not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_real_model_is_served_answers_with_usage_and_stops(tmp_path: Path) -> None:
    server = LocalServer(config(smollm2_path()), tmp_path / "local-model.log").start()
    try:
        pid = server.pid()
        assert pid is not None and Path(f"/proc/{pid}").exists()
        body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}
        request = urllib.request.Request(  # noqa: S310 (our own server)
            server.api_base + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
            answer = json.loads(resp.read())
        usage = answer["usage"]
        assert usage["prompt_tokens"] > 0
        assert 0 < usage["completion_tokens"] <= 8
    finally:
        server.stop()
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert port_free(server.config.port)


def test_a_missing_file_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(
        LocalServerError, match=r"BEARPIT_LOCAL_MODEL: no such file .*nothing\.gguf"
    ):
        LocalServer(config(tmp_path / "nothing.gguf"), tmp_path / "log").start()
    assert not (tmp_path / "log").exists()


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(LocalServerError, match="is not a GGUF file"):
        check_config(config(fake))


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        with pytest.raises(
            LocalServerError, match=f"BEARPIT_LOCAL_PORT: 127.0.0.1:{taken} is in use"
        ):
            check_config(config(smollm2_path(), port=taken))


def test_a_model_llama_cpp_cannot_load_is_one_line_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    log = tmp_path / "local-model.log"
    with pytest.raises(LocalServerError) as caught:
        LocalServer(config(broken), log).start()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the local model server exited (2): llama.cpp could not serve")
    assert str(broken) in message and str(log) in message


def test_slots_are_one_per_agent_up_to_the_most_allowed(settings: Any) -> None:
    settings.BEARPIT_LOCAL_SLOTS = 0
    settings.BEARPIT_LOCAL_MAX_SLOTS = 4
    assert [slots_for(n) for n in (1, 3, 4, 9)] == [1, 3, 4, 4]
    assert slots_for(None) == 4  # a server for whatever realms come
    assert slots_for(0) == 1
    settings.BEARPIT_LOCAL_SLOTS = 2  # the operator's own number wins
    assert [slots_for(n) for n in (1, 9, None)] == [2, 2, 2]
    settings.BEARPIT_LOCAL_MODEL = str(smollm2_path())
    assert LocalServerConfig.from_settings(agents=7).slots == 2
    settings.BEARPIT_LOCAL_SLOTS = 0
    assert LocalServerConfig.from_settings(agents=3).slots == 3


def test_the_model_is_named_after_its_file() -> None:
    assert model_alias("/m/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1"
    assert model_alias("/m/plain") == "plain"


@pytest.mark.django_db
def test_the_local_profile_becomes_the_served_model(settings: Any) -> None:
    seed_profiles()
    before = all_profiles()["local"]
    assert before.api_base == "http://127.0.0.1:11434/v1"
    settings.BEARPIT_LOCAL_MODEL = str(smollm2_path())
    settings.BEARPIT_LOCAL_PORT = 18123
    settings.BEARPIT_LOCAL_CONTEXT = 4096
    settings.BEARPIT_LOCAL_MAX_TOKENS = 64
    served = all_profiles()["local"]
    assert served.api_base == "http://127.0.0.1:18123/v1"
    assert served.flat_rate
    assert served.min_turn_seconds == settings.BEARPIT_LOCAL_MIN_TURN_SECONDS
    for tier in served.categories.values():
        assert tier.model == "SmolLM2-135M-Instruct.Q4_1"
        assert tier.tool_mode == "json"
        assert tier.context_length == 4096
        assert tier.max_output_tokens == 64
        # The nominal prices stay, so a token cap still counts.
        assert tier.input_cost_per_token == before.categories["medium"].input_cost_per_token
    # Other profiles are untouched.
    assert all_profiles()["openai"].api_base == "https://api.openai.com/v1"
