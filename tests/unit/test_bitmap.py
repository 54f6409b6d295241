import pickle

import pytest

from nf3_hybrid.bitmap import (
    KEPT,
    NF3,
    HybridConfigError,
    LayerPlan,
    layer_index_from_name,
    parse_bit_map,
    parse_hybrid_spec,
)

BITS = [4, 3, 3, 4, 3, 3, 3, 4]


def test_plan_remap_and_local_maps():
    p = LayerPlan(5, tuple(BITS))
    assert p.kept == (0, 3, 7) and p.nf3 == (1, 2, 4, 5, 6)
    assert p.remap[3] == (KEPT, 1) and p.remap[4] == (NF3, 2)
    assert p.local_map(KEPT) == [0, -1, -1, 1, -1, -1, -1, 2]
    assert p.local_map(NF3) == [-1, 0, 1, -1, 2, 3, 4, -1]
    assert p.count(KEPT) == 3 and p.count(NF3) == 5


@pytest.mark.parametrize("layout", ["top", "nested"])
def test_both_config_layouts(layout):
    section = {"hybrid_bit_map": {"1": BITS, "2": BITS[::-1]}, "kept_format": "mxfp4_e8m0k32"}
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", **section} if layout == "top" else {
        "producer": {}, "quantization": {"quant_algo": "NVFP4", **section}}
    spec = parse_hybrid_spec(qc, num_experts=8)
    assert sorted(spec.bit_map) == [1, 2] and spec.kept_format == "mxfp4_e8m0k32"
    assert spec.plan_for(2, 8).bits == tuple(BITS[::-1])
    # a layer absent from the map (MTP) is all kept, and NVFP4 even with an MXFP4 kept format
    assert spec.plan_for(9, 8).kept == tuple(range(8)) and spec.kept_format_for(9) == "nvfp4"
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_non_hybrid_config_gives_none():
    assert parse_hybrid_spec({"quant_method": "modelopt", "quant_algo": "NVFP4"}) is None
    assert parse_hybrid_spec(None) is None


@pytest.mark.parametrize(
    "bit_map,num_experts,match",
    [
        ([4, 3], None, "must map layer indices"),
        ({}, None, "empty"),
        ({"x1": BITS}, None, r"key 'x1' is not a decoder layer index"),
        ({"3": "4343"}, None, "layer 3: expected a list"),
        ({"3": []}, None, "layer 3: empty"),
        ({"3": [4, 3, 2]}, None, "layer 3 expert 2: bits must be 4 .* or 3 .*got 2"),
        ({"3": [4, True]}, None, "layer 3 expert 1"),
        ({"3": [4, 3.0]}, None, "layer 3 expert 1"),
        ({"3": BITS[:-1]}, 8, "layer 3: lists 7 experts but the model has 8"),
        ({"3": BITS + [3]}, 8, "layer 3: lists 9 experts but the model has 8"),
        ({"1": BITS, "2": BITS[:4]}, None, r"disagree on the expert count \(layer 1: 8, layer 2: 4\)"),
    ],
)
def test_malformed_bit_maps_name_the_layer(bit_map, num_experts, match):
    with pytest.raises(HybridConfigError, match=match):
        parse_bit_map(bit_map, num_experts)


def test_duplicate_layer_keys():
    with pytest.raises(HybridConfigError, match="layer 3 is listed twice"):
        parse_bit_map({"3": BITS, 3: BITS})


@pytest.mark.parametrize(
    "extra,match",
    [
        ({"kept_format": "int4"}, "kept_format 'int4' is not supported"),
        ({"nf3_codebook": [1, 2, 3]}, "exactly 8 levels"),
        ({"nf3_codebook": [0, 1, 2, 3, 4, 5, 6, 6]}, "strictly increasing"),
    ],
)
def test_bad_hybrid_keys(extra, match):
    with pytest.raises(HybridConfigError, match=match):
        parse_hybrid_spec({"hybrid_bit_map": {"1": BITS}, **extra})


def test_plan_for_checks_expert_count():
    spec = parse_hybrid_spec({"hybrid_bit_map": {"1": BITS}})
    with pytest.raises(HybridConfigError, match="layer 1: has 8 entries but the model's MoE layer has 16"):
        spec.plan_for(1, 16)


def test_to_config_round_trip():
    qc = {"hybrid_bit_map": {"1": BITS}, "nf3_codebook": [-1, -0.5, -0.3, -0.1, 0.1, 0.3, 0.5, 1]}
    spec = parse_hybrid_spec(qc)
    assert parse_hybrid_spec(spec.to_config()) == spec


@pytest.mark.parametrize(
    "name,idx",
    [("model.layers.12.mlp.experts", 12), ("language_model.model.layers.3.mlp", 3), ("layers.0", 0),
     ("model.embed_tokens", None), ("model.xlayers.2.mlp", None)],
)
def test_layer_index_from_name(name, idx):
    assert layer_index_from_name(name) == idx
