"""bench/suite.py (the model-shape suite runner) and tilekit.interp, without a GPU: the suite
file's parsing, the layouts, the figures (geometric means, causal pairs), and whole interpreter
runs of small cases against a float64 reference (NumPy; PyTorch CPU where importable)."""

import importlib.util
import json
import math
import pathlib

import pytest

import tilekit

ROOT = pathlib.Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"


def _load_suite_module():
    spec = importlib.util.spec_from_file_location("suite", BENCH / "suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


suite = _load_suite_module()


def gemm_case(**kw):
    c = {"op": "gemm", "name": "g", "m": 16, "n": 64, "k": 64, "layout": "nt"}
    c.update(kw)
    return c


# ---- parsing -----------------------------------------------------------------------------------


def test_parse_normalises_cases_and_defaults_to_bf16():
    cases = suite.parse_suite({"cases": [gemm_case(), {"op": "softmax", "m": 2, "n": 3,
                                                       "dtype": "f32"}]})
    assert cases[0]["dtype"] == "bf16" and cases[0]["layout"] == "nt" and cases[0]["model"] == ""
    assert cases[1]["name"] == "softmax 1" and cases[1]["dtype"] == "f32"


@pytest.mark.parametrize("doc, words", [
    ({"cases": {}}, "a list"),
    ({"cases": [{"op": "conv"}]}, "op 'conv'"),
    ({"cases": [{"op": "softmax", "m": 2}]}, "needs field 'n'"),
    ({"cases": [gemm_case(layout="nx")]}, "layout 'nx'"),
    ({"cases": [gemm_case(m=0)]}, "m must be a positive integer"),
    ({"cases": [gemm_case(k=64.0)]}, "k must be a positive integer"),
    ({"cases": [gemm_case(n=True)]}, "n must be a positive integer"),
    ({"cases": [gemm_case(dtype="f8")]}, "dtype 'f8'"),
    ({"cases": [{"op": "attention", "name": "a", "b": 1, "sq": 1, "sk": 2, "h": 6, "hk": 4,
                 "d": 64, "causal": False}]}, "hk 4 does not divide h 6"),
    ({"cases": [{"op": "attention", "name": "a", "b": 1, "sq": 1, "sk": 2, "h": 4, "hk": 4,
                 "d": 64, "causal": 1}]}, "causal must be true or false"),
])
def test_parse_refuses_bad_cases_naming_case_and_field(doc, words):
    with pytest.raises(suite.SuiteError, match=words.replace("(", r"\(")):
        suite.parse_suite(doc, "f.json")


def test_the_public_suite_and_the_small_one_parse():
    about, cases = suite.load_suite(BENCH / "model-shapes.json")
    assert "bottom-right" in about and len(cases) == 72
    fams = {f: sum(1 for c in cases if suite.family(c) == f) for f in suite.FAMILIES}
    assert fams["gemm"] == 33 and fams["softmax"] == 12 and fams["row_sum"] == 4
    assert fams["attention"] + fams["decode"] == 23 and fams["decode"] == 11
    _, small = suite.load_suite(BENCH / "suite-small.json")
    assert {c["op"] for c in small} == set(suite.OPS)
    assert {c["layout"] for c in small if c["op"] == "gemm"} == set(suite.GEMM_LAYOUTS)


def test_a_file_that_is_not_json_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert suite.main([str(bad), "--backend", "interp"]) == 2
    assert "not JSON" in capsys.readouterr().err


# ---- layouts and figures -----------------------------------------------------------------------


@pytest.mark.parametrize("layout, a_stored, b_stored", [
    ("nn", (5, 7), (7, 3)), ("nt", (5, 7), (3, 7)), ("tn", (7, 5), (7, 3)),
    ("tt", (7, 5), (3, 7)),
])
def test_gemm_storage_follows_the_blas_letters(layout, a_stored, b_stored):
    (sa, at), (sb, bt) = suite.gemm_storage(layout, 5, 3, 7)
    assert (sa, at, sb, bt) == (a_stored, layout[0] == "t", b_stored, layout[1] == "t")


@pytest.mark.parametrize("layout", suite.GEMM_LAYOUTS)
def test_gemm_views_are_transposed_views_not_copies(layout):
    np = pytest.importorskip("numpy")
    stored = []

    def make(shape):
        stored.append(np.zeros(shape, dtype=np.float32))
        return stored[-1]

    a, b = suite.gemm_views(layout, 5, 3, 7, make)
    assert a.shape == (5, 7) and b.shape == (7, 3)
    assert np.shares_memory(a, stored[0]) and np.shares_memory(b, stored[1])
    assert a.flags.c_contiguous == (layout[0] == "n")
    assert b.flags.c_contiguous == (layout[1] == "n")


def test_geomean_and_the_family_summary():
    assert suite.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert suite.geomean([None, 8.0]) == pytest.approx(8.0)
    assert suite.geomean([]) is None
    with pytest.raises(ValueError):
        suite.geomean([0.0])
    rows = [
        {"name": "a", "family": "gemm", "status": "ok", "ratio": 0.5},
        {"name": "b", "family": "gemm", "status": "ok", "ratio": 2.0},
        {"name": "c", "family": "gemm", "status": "ok", "ratio": 0.89},
        {"name": "d", "family": "gemm", "status": "refused"},
        {"name": "e", "family": "softmax", "status": "mismatch", "ratio": 1.5, "of_copy": 0.8},
    ]
    s = suite.summarize(rows)
    g = s["gemm"]
    assert g["cases"] == 4 and g["timed"] == 3 and g["refused"] == 1
    assert g["geomean"] == pytest.approx((0.5 * 2.0 * 0.89) ** (1 / 3))
    assert g["min"] == 0.5 and g["min_case"] == "a" and g["under_0.90"] == 2
    assert s["softmax"]["mismatch"] == 1 and s["softmax"]["of_copy_min"] == 0.8
    assert "attention" not in s


def test_causal_pairs_are_bottom_right_aligned():
    assert suite.attention_pairs(4, 4, True) == 10
    assert suite.attention_pairs(4, 4, False) == 16
    assert suite.attention_pairs(1, 100, True) == 100      # decode: the query sees every key
    assert suite.attention_pairs(2, 5, True) == 4 + 5
    assert suite.attention_pairs(5, 2, True) == 0 + 0 + 0 + 1 + 2  # rows without keys
    c = {"op": "attention", "b": 2, "sq": 4, "sk": 4, "h": 3, "hk": 1, "d": 64, "causal": True,
         "dtype": "bf16"}
    assert suite.case_flops(c) == 4 * 2 * 3 * 64 * 10
    assert suite.case_bytes(c) == 2 * (2 * 2 * 4 * 3 * 64 + 2 * 2 * 4 * 1 * 64)
    assert suite.family(c) == "decode" and suite.family(dict(c, sq=9)) == "attention"
    assert suite.memory_bound(c) and not suite.memory_bound(dict(c, sq=9))


def test_tolerances_are_stated_per_op():
    rtol, atol = suite.tolerance(gemm_case(dtype="bf16", k=400))
    assert rtol == 1e-2 and atol == pytest.approx(1e-3 * 20)
    assert suite.tolerance({"op": "softmax", "dtype": "f32", "n": 3}) == (1e-4, 1e-7)


# ---- tilekit.interp and whole interpreter runs -------------------------------------------------


def test_bits_round_floats_to_nearest_even_bf16():
    np = pytest.importorskip("numpy")
    from tilekit.interp import Bits

    x = np.array([1.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -2.5, np.nan], dtype=np.float32)
    b = Bits.bf16(x)
    assert b.bits.dtype == np.uint16 and b.shape == (5,)
    got = b.float()
    assert list(got[:4]) == [1.0, 1.0, 1.0 + 2.0 ** -6, -2.5]  # ties to even both ways
    assert np.isnan(got[4])
    assert b.T.shape == (5,)


def test_interp_gemm_reads_a_transposed_weight_in_place_and_matches_numpy():
    np = pytest.importorskip("numpy")
    from tilekit import interp

    rng = np.random.default_rng(1)
    a = interp.Bits.bf16(rng.standard_normal((16, 32)))
    w = interp.Bits.bf16(rng.standard_normal((24, 32)))     # an (N, K) weight
    c = interp.gemm(a, w.T)                                   # f32 result
    want = a.float().astype(np.float64) @ w.float().astype(np.float64).T
    assert c.dtype == np.float32 and c.shape == (16, 24)
    assert np.abs(c - want).max() < 1e-3
    c16 = interp.gemm(a, w.T, out_dtype="bf16")
    assert isinstance(c16, interp.Bits)
    assert np.abs(c16.float() - want).max() <= 1e-2 * np.abs(want).max()


def test_interp_softmax_row_sum_and_copy_of_views():
    np = pytest.importorskip("numpy")
    from tilekit import interp

    x = np.random.default_rng(2).standard_normal((6, 50)).astype(np.float32)
    y = interp.softmax(x[:, 3:40])                       # a strided slice: made contiguous
    e = np.exp(x[:, 3:40] - x[:, 3:40].max(-1, keepdims=True))
    assert np.allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert np.allclose(interp.row_sum(x.T), x.T.astype(np.float64).sum(-1), atol=1e-4)
    assert np.array_equal(interp.copy(x.T), x.T)


def test_interp_refusals_are_typed_errors():
    np = pytest.importorskip("numpy")
    from tilekit import interp

    q = interp.Bits.bf16(np.zeros((1, 2, 1, 32)))
    with pytest.raises(tilekit.ShapeError, match="head dim"):
        interp.attention(q, q, q)
    with pytest.raises(tilekit.DTypeError, match="int8"):
        interp.copy(np.zeros(3, dtype=np.int8))
    with pytest.raises(tilekit.ShapeError, match="gemm takes"):
        interp.gemm(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))


def test_interp_takes_cpu_torch_tensors():
    torch = pytest.importorskip("torch")
    from tilekit import interp

    a = torch.randn(16, 32).bfloat16()
    w = torch.randn(8, 32).bfloat16()
    c = interp.gemm(a, w.t(), out_dtype="bf16")
    assert c.dtype == torch.bfloat16 and c.shape == (16, 8)
    torch.testing.assert_close(c.double(), a.double() @ w.double().t(), rtol=1e-2, atol=1e-2)
    q = torch.randn(1, 3, 4, 64).bfloat16()
    k = torch.randn(1, 9, 2, 64).bfloat16()
    o, lse = interp.attention(q, k, k, causal=True, return_lse=True)
    assert o.shape == q.shape and lse.shape == (1, 4, 3) and lse.dtype == torch.float32


def test_the_runner_on_the_interpreter_checks_and_reports(tmp_path, capsys):
    pytest.importorskip("numpy")
    doc = {"about": "t", "cases": [
        gemm_case(name="nt ok", m=16, n=24, k=32),
        {"op": "softmax", "name": "sm", "m": 2, "n": 300},
        {"op": "attention", "name": "d32 is refused", "b": 1, "sq": 2, "sk": 3, "h": 1, "hk": 1,
         "d": 32, "causal": False},
        {"op": "row_sum", "name": "too big", "m": 200, "n": 200},
    ]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out.json"
    args = [str(path), "--backend", "interp", "--reference", "numpy", "--max-work", "20000",
            "--json", str(out)]
    assert suite.main(args) == 0
    text = capsys.readouterr().out
    assert "refused: ShapeError" in text and "NumPy float64" in text
    rows = {r["name"]: r for r in json.loads(out.read_text())["cases"]}
    assert rows["nt ok"]["status"] == "ok" and "of tol" in rows["nt ok"]["check"]
    assert rows["sm"]["status"] == "ok"
    assert rows["d32 is refused"]["status"] == "refused"
    assert "head dim" in rows["d32 is refused"]["error"]
    assert rows["too big"]["status"] == "skipped"
    assert suite.main(args + ["--strict"]) == 1


def test_the_svg_plot_is_written(tmp_path):
    rows = [{"name": "a", "family": "gemm", "status": "ok", "ratio": 0.5},
            {"name": "b", "family": "gemm", "status": "ok", "ratio": 1.3},
            {"name": "c", "family": "softmax", "status": "refused"}]
    path = tmp_path / "p.svg"
    suite.write_svg(str(path), {"device": "X", "commit": "abc", "date": "2026-12-06"}, rows)
    svg = path.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "refused" in svg and "{BOTTOM}" not in svg and math.isfinite(len(svg))
