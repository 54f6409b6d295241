"""`nf3-hybrid bench --report`: the README's table read back cell by cell against the
benchmark rows it was made from."""
import json

import pytest

from nf3_hybrid import bench, cli

CONTENDERS = [c for c, _ in bench.REPORT_COLUMNS]


def _result(device, inters, tokens, skip=(), copy=3000.0):
    rows = []
    for i in inters:
        for m in tokens:
            for n, c in enumerate(CONTENDERS):
                if c not in skip:
                    rows.append(dict(shape="glm5.2", inter=i, tokens=m, contender=c, us=round(10.0 + i / 7 + 3.3 * m + 17 * n, 2)))
    return dict(device=device, copy_gbs=copy, rows=rows)


def _cells(text):
    """{(I, tokens): [cells after the tokens column]} of the markdown table."""
    out = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) > 3 and parts[0] == "glm5.2":
            out[(int(parts[1]), int(parts[2]))] = parts[3:]
    return out


def test_the_table_holds_every_row_of_every_file_and_the_hybrid_ratio():
    a = _result("H", (512, 2048), (1, 16, 4096))
    b = _result("H", (1024,), (1, 16, 4096), skip=("vllm_bf16",), copy=2950.0)
    text = bench.report([a, b])
    assert "2950" in text.splitlines()[0] and "3000" in text.splitlines()[0]
    cells = _cells(text)
    assert sorted(cells) == [(i, m) for i in (512, 1024, 2048) for m in (1, 16, 4096)]
    for res in (a, b):
        got = {}
        for r in res["rows"]:
            got.setdefault((r["inter"], r["tokens"]), {})[r["contender"]] = r["us"]
        for key, us in got.items():
            row = cells[key]
            for j, c in enumerate(CONTENDERS):
                assert row[j] == (f"{us[c]:.0f}" if c in us else "—"), (key, c)
            assert row[-1] == f"{us['vllm_nvfp4'] / us['ours_hybrid']:.2f}×"


def test_an_ours_only_run_has_no_ratio():
    text = bench.report([_result("H", (512,), (8,), skip=("vllm_nvfp4", "vllm_nvfp4_nf3set", "vllm_nvfp4_keptset",
                                                         "vllm_bf16"))])
    assert _cells(text)[(512, 8)][-1] == "—"


def test_mixed_devices_and_repeated_rows_are_refused():
    with pytest.raises(ValueError, match="one device per table"):
        bench.report([_result("H100", (512,), (1,)), _result("H200", (2048,), (1,))])
    with pytest.raises(ValueError, match=r"\('glm5.2', 512, 1, 'ours_nf3_tier'\) is in more than one"):
        bench.report([_result("H", (512,), (1,)), _result("H", (512,), (1,))])


def test_the_cli_prints_it_without_a_gpu(tmp_path, capsys):
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_result("H", (512,), (2,))))
    assert cli.main(["bench", "--report", str(f)]) == 0
    assert (512, 2) in _cells(capsys.readouterr().out)


def test_a_file_that_is_not_a_benchmark_result_is_named(tmp_path, capsys):
    notjson, other = tmp_path / "a.json", tmp_path / "b.json"
    notjson.write_text("{")
    other.write_text(json.dumps({"rows": []}))
    assert cli.main(["bench", "--report", str(notjson)]) == 2
    assert f"{notjson}: not JSON" in capsys.readouterr().err
    assert cli.main(["bench", "--report", str(other)]) == 2
    assert f"{other}: not a benchmark result (no device, copy_gbs" in capsys.readouterr().err
