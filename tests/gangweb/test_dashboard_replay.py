"""The dashboard's replay page: the latest `gang replay --plots` run's table and plots."""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image

from scheduler.replay.plots import write_plots
from scheduler.replay.report import ReplayConfig, run_replay
from tests.scheduler.replay.conftest import FIXTURE

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("replay")
    result = run_replay(ReplayConfig(trace=FIXTURE, hours=1, seed=5, policies=("gangweb", "legacy")))
    write_plots(result, folder)
    (folder / "replay.json").write_text(json.dumps(result.report))
    return folder


def test_the_page_shows_the_latest_table_and_its_plots(admin_client, settings, replay_dir):
    settings.DEMO = False
    settings.GANGWEB_REPLAY_DIR = replay_dir
    report = json.loads((replay_dir / "replay.json").read_text())
    html = admin_client.get("/replay/").content.decode()
    assert f"{report['nodes']} nodes, {report['gpus']} GPUs" in html
    for policy, figures in report["policies"].items():
        row = html[html.index(f'<tr data-policy="{policy}">') :]
        row = row[: row.index("</tr>")]
        assert f"<td>{figures['brokenGangs']}</td>" in row and f"<td>{figures['evictions']}</td>" in row
    for name in ("replay-utilisation.png", "replay-waits.png", "replay-lost.png"):
        assert f'src="/replay/{name}"' in html
        response = admin_client.get(f"/replay/{name}")
        assert response.status_code == 200 and response["Content-Type"] == "image/png"
        Image.open(BytesIO(b"".join(response.streaming_content))).verify()


def test_only_the_replay_plots_are_served(admin_client, settings, replay_dir):
    settings.DEMO = False
    settings.GANGWEB_REPLAY_DIR = replay_dir
    assert admin_client.get("/replay/replay.json").status_code == 404
    assert admin_client.get("/replay/..%2Fsecret.png").status_code == 404


def test_without_a_replay_the_page_says_how_to_make_one(admin_client, settings, tmp_path):
    settings.DEMO = False
    settings.GANGWEB_REPLAY_DIR = tmp_path / "none-yet"
    html = admin_client.get("/replay/").content.decode()
    assert "No replay yet" in html and "gang replay --hours 24 --plots $GANGWEB_REPLAY_DIR" in html
    # the dashboard's header and nav, the page's own link current; no server path, no literal backticks
    assert '<a href="/replay/" aria-current="page">Replay</a>' in html and 'id="theme-toggle"' in html
    assert str(tmp_path) not in html and "`" not in html.split("<main", 1)[1]


def test_the_page_needs_a_login_outside_the_demo(client, settings, replay_dir):
    settings.DEMO = False
    settings.GANGWEB_REPLAY_DIR = replay_dir
    assert client.get("/replay/").status_code == 302
    assert client.get("/replay/replay-lost.png").status_code == 403
