"""`kubesched replay --parquet FILE`: one row per pod, recorded beside replayed, and the summary in the
file's metadata, written by the sweep's Parquet writer."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.sweep.replay_table import SUMMARY_KEY

LOG = Path(__file__).parent / "data" / "kube-apiserver-1.28.7-audit.log"
OPENB = Path(__file__).parent / "data" / "openb"


def test_the_per_pod_table_and_the_summary_are_the_json_documents(tmp_path: Path) -> None:
    path = tmp_path / "replay.parquet"
    result = CliRunner().invoke(cli, ["replay", str(LOG), "--disable-preemption", "-o", "json", "--parquet", str(path)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    table = pq.read_table(path)
    rows = table.to_pylist()
    assert [r["pod"] for r in rows] == [p["pod"] for p in document["pods"]]
    web1 = next(r for r in rows if r["pod"] == "default/web-1")
    # recorded: bound on n1 after 1.946 s; replayed without preemption: never bound
    assert web1["recorded.node"] == "n1" and abs(web1["recorded.waited"] - 1.94603) < 1e-4
    assert web1["replay.bound"] is None and web1["replay.node"] is None and web1["differs"] is True
    # the 8 pods whose outcome differs, as the table output counts them
    assert sum(r["differs"] for r in rows) == 8
    assert str(table.schema.field("replay.evicted").type) == "double"  # typed even where every value is null
    summary = json.loads(table.schema.metadata[SUMMARY_KEY.encode()])
    assert summary["summary"] == document["summary"] and summary["byClass"] == document["byClass"]
    assert "pods" not in summary and summary["changes"] == ["disable preemption"]


def test_an_openb_replay_has_no_recorded_nodes_but_its_times_to_bind(tmp_path: Path) -> None:
    path = tmp_path / "openb.parquet"
    result = CliRunner().invoke(cli, ["replay", str(OPENB), "--parquet", str(path)])
    assert result.exit_code == 0, result.output
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == 200 and all(r["recorded.node"] is None for r in rows)
    assert sum(r["recorded.bound"] is not None for r in rows) == sum(r["recorded.waited"] is not None for r in rows) > 180
    assert {r["priorityClass"] for r in rows} <= {"openb-ls", "openb-be", "openb-burstable", "openb-guaranteed"}
