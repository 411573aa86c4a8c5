"""Chapter 13 (layers that see position differently): the schedule read from a
config.json against transformers' own models and config classes, proportional RoPE
against the registry and a float64 reference, the temperature against its formula and
in what Llama 4's NoPE layer does, every planted bug caught, the bad inputs rejected
with a message, the experiment's building blocks, and the exercise checks. The tracer
is Chapter 12's (name:position_tracer): taken from there, and tested there."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import (
    Gemma3TextConfig,
    GptOssConfig,
    Llama4TextConfig,
    LlamaConfig,
    Olmo3Config,
    SmolLM3Config,
)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from bookkit.testing import load_chapter

pytestmark = pytest.mark.unit
CH = load_chapter("13_per_layer_positions")
CH12 = load_chapter(
    "12_debugging_rope"
)  # the tracer lives there (name:position_tracer)
U32 = 2.0**-24
TOKENS = torch.arange(3, 23)[None]
POSITIONS = torch.arange(20)


# --- the schedule against transformers' models -------------------------------------


def layer_facts(name: str, config: dict) -> list[dict]:
    """What the transformers model built from `config` does per layer, read from its
    own modules (independent of the chapter's schedule)."""
    model = CH.tiny_model(name, config)
    layers = [m for m in model.modules() if type(m).__name__.endswith("Attention")]
    rotary = next(
        m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")
    )
    types = getattr(model.config, "layer_types", None) or ["full_attention"] * len(
        layers
    )
    facts = []
    for layer, kind in zip(layers, types, strict=True):
        if hasattr(layer, "use_rope"):
            rotates = bool(layer.use_rope)
        elif name == "Cohere2":
            rotates = layer.sliding_window is not None
        else:
            rotates = True
        prefix = f"{kind}_" if hasattr(rotary, f"{kind}_inv_freq") else ""
        facts.append(
            {
                "type": kind,
                "rotates": rotates,
                "window": getattr(layer, "sliding_window", None),
                "chunk": (
                    model.config.attention_chunk_size
                    if kind == "chunked_attention"
                    else None
                ),
                "inv_freq": getattr(rotary, f"{prefix}inv_freq"),
                "factor": getattr(rotary, f"{prefix}attention_scaling"),
            }
        )
    return facts


def variants() -> list[tuple[str, dict]]:
    """Tiny configurations of every type, and variants with legacy and default keys."""
    tiny = CH.TINY_CONFIGS
    out = [(name, config) for name, config in tiny.items()]
    gemma = {
        k: v
        for k, v in tiny["Gemma 3"].items()
        if k not in ("layer_types", "rope_parameters")
    }
    out += [
        (
            "Gemma 3",
            {
                **gemma,
                "num_hidden_layers": 7,
                "sliding_window_pattern": 3,
                "rope_theta": 5e5,
                "rope_local_base_freq": 2e4,
                "rope_scaling": {"rope_type": "linear", "factor": 4.0},
            },
        ),
        (
            "Gemma 3",
            {
                **gemma,
                "rope_scaling": {"rope_type": "linear", "factor": 2.0},
                "num_hidden_layers": 6,
            },
        ),
        (
            "Llama 4",
            {
                **tiny["Llama 4"],
                "no_rope_layers": None,
                "no_rope_layer_interval": 2,
                "num_hidden_layers": 6,
                "attention_chunk_size": 5,
            },
        ),
        (
            "Llama 4",
            {
                **tiny["Llama 4"],
                "rope_theta": 1e4,
                "rope_scaling": {"rope_type": "linear", "factor": 2.0},
            },
        ),
        (
            "Cohere2",
            {k: v for k, v in tiny["Cohere2"].items() if k != "layer_types"}
            | {"sliding_window_pattern": 2, "rope_theta": 5e4},
        ),
        (
            "SmolLM3",
            {
                **tiny["SmolLM3"],
                "use_sliding_window": True,
                "sliding_window": 6,
                "no_rope_layers": [0, 1, 1, 0],
            },
        ),
        (
            "OLMo 3",
            {k: v for k, v in tiny["OLMo 3"].items() if k != "rope_parameters"}
            | {
                "rope_theta": 2e4,
                "rope_scaling": {"rope_type": "linear", "factor": 3.0},
            },
        ),
        ("gpt-oss", {**tiny["gpt-oss"], "num_hidden_layers": 5}),
        (
            "Gemma 4",
            {
                **tiny["Gemma 4"],
                "global_head_dim": 64,
                "rope_parameters": {
                    "sliding_attention": {"rope_type": "default", "rope_theta": 2e4},
                    "full_attention": {
                        "rope_type": "proportional",
                        "rope_theta": 1e6,
                        "partial_rotary_factor": 0.5,
                        "factor": 2.0,
                    },
                },
            },
        ),
        ("DeepSeek-V3", {**tiny["DeepSeek-V3"], "rope_interleave": False}),
    ]
    return out


@pytest.mark.parametrize(
    ("name", "config"),
    variants(),
    ids=[f"{n}-{i}" for i, (n, _) in enumerate(variants())],
)
def test_schedule_matches_the_model(name: str, config: dict) -> None:
    plans = CH.layer_schedule(config)
    facts = layer_facts(name, config)
    assert len(plans) == len(facts)
    for plan, fact in zip(plans, facts, strict=True):
        assert plan.layer_type == fact["type"]
        assert plan.rotates == fact["rotates"], plan.index
        assert plan.window == fact["window"], plan.index
        assert plan.chunk == fact["chunk"], plan.index
        if plan.rotates:
            inv_freq, factor = CH.plan_frequencies(
                plan, config.get("max_position_embeddings", 4096)
            )
            # the same float32 operations on the same values: exact
            assert torch.equal(inv_freq, fact["inv_freq"]), plan.index
            assert factor == fact["factor"]


@pytest.mark.parametrize(
    ("name", "config"),
    variants(),
    ids=[f"{n}-{i}" for i, (n, _) in enumerate(variants())],
)
def test_tracer_finds_no_problem_in_the_models(name: str, config: dict) -> None:
    trace = CH12.trace_positions(CH.tiny_model(name, config), input_ids=TOKENS)
    problems = CH.schedule_problems(
        trace,
        CH.layer_schedule(config),
        POSITIONS,
        config.get("max_position_embeddings", 4096),
    )
    assert problems == {}


def test_default_bases_are_the_config_classes() -> None:
    assert CH.DEFAULT_BASE["gemma3_text"] == {
        "full_attention": Gemma3TextConfig.default_theta["global"],
        "sliding_attention": Gemma3TextConfig.default_theta["local"],
    }
    for kind, cls in (
        ("olmo3", Olmo3Config),
        ("llama4_text", Llama4TextConfig),
        ("smollm3", SmolLM3Config),
        ("gpt_oss", GptOssConfig),
    ):
        assert CH.DEFAULT_BASE[kind] == cls.default_theta


@pytest.mark.parametrize("name", list(CH.CONFIG_CLASSES))
def test_default_configurations_read_like_transformers(name: str) -> None:
    config_class, _ = CH.CONFIG_CLASSES[name]
    config = config_class()
    plans = CH.layer_schedule(config.to_dict())
    types = getattr(config, "layer_types", None) or ["full_attention"] * len(plans)
    assert [p.layer_type for p in plans] == list(types)
    if hasattr(config, "no_rope_layers"):
        assert [p.rotates for p in plans] == [bool(f) for f in config.no_rope_layers]


@pytest.mark.parametrize("cls", [Gemma3TextConfig, Olmo3Config])
def test_old_type_spelling_is_dropped_by_transformers(cls) -> None:
    """Why layer_schedule refuses it: transformers keeps rope_type 'default'."""
    config = cls(
        num_hidden_layers=6,
        hidden_size=64,
        num_attention_heads=4,
        head_dim=16,
        rope_scaling={"type": "linear", "factor": 4.0},
    )
    assert config.rope_parameters["full_attention"]["rope_type"] == "default"


def test_olmo3_legacy_theta_reaches_only_the_full_layers() -> None:
    legacy = {
        "model_type": "olmo3",
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "rope_theta": 3e4,
    }
    bases = {p.layer_type: p.base for p in CH.layer_schedule(legacy)}
    theirs = Olmo3Config(**{k: v for k, v in legacy.items() if k != "model_type"})
    assert bases == {t: p["rope_theta"] for t, p in theirs.rope_parameters.items()}


# --- proportional RoPE and the temperature -----------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    half=st.integers(1, 256),
    base=st.floats(10.0, 1e7),
    fraction=st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0]) | st.floats(0, 1),
    factor=st.sampled_from([1.0, 2.0, 8.0]) | st.floats(1.0, 64.0),
)
def test_proportional_matches_the_registry(half, base, fraction, factor) -> None:
    d = 2 * half
    config = LlamaConfig(
        hidden_size=2 * d,
        num_attention_heads=2,
        head_dim=d,
        rope_parameters={
            "rope_type": "proportional",
            "rope_theta": base,
            "factor": factor,
            "partial_rotary_factor": fraction,
        },
    )
    theirs, a = ROPE_INIT_FUNCTIONS["proportional"](config)
    ours = CH.proportional_inv_freq(d, base, fraction, factor)
    assert torch.equal(ours, theirs) and a == 1.0
    # float64 reference written here: b**(-2j/d)/s on the first floor(p d/2) pairs
    rotated = int(fraction * d // 2)
    ref = torch.tensor(
        [base ** (-2 * j / d) / factor if j < rotated else 0.0 for j in range(half)],
        dtype=torch.float64,
    )
    # exponent, power (2 ulp), reciprocal and division: relative (ln b + 6) u
    bound = (math.log(base) + 6) * U32 * ref
    assert ((ours.double() - ref).abs() <= bound).all()


def test_temperature_formula() -> None:
    positions = [0, 3, 4, 7, 8, 100, 8190, 8191, 16383, 10**6]
    for floor_scale, alpha in ((8192.0, 0.1), (4.0, 0.3)):
        got = CH.temperature_scale(positions, floor_scale, alpha)
        ref = [
            1 + alpha * math.log(math.floor((m + 1) / floor_scale) + 1)
            for m in positions
        ]
        assert got.tolist() == pytest.approx(ref, rel=1e-15, abs=0)


def test_llama4_nope_layer_scales_its_queries_by_the_temperature() -> None:
    trace = CH12.trace_positions(CH.tiny_model("Llama 4"), input_ids=TOKENS)
    scale, misfit = CH12.query_scale(trace.layers["layers.3.self_attn"])
    ref = torch.tensor(
        [1 + 0.1 * math.log(math.floor((m + 1) / 4) + 1) for m in range(20)],
        dtype=torch.float64,
    )
    assert misfit < 1e-10
    assert (scale - ref).abs().max() < 64 * U32  # float32 product and the fit


def test_angle_tolerance_and_wrapping_by_hand() -> None:
    assert CH.angle_tolerance(10.0) == (4 * 10.0 + 32) * U32
    angles = torch.tensor(
        [0.0, math.pi, -math.pi, 1.5 * math.pi, 7.0], dtype=torch.float64
    )
    want = [0.0, -math.pi, -math.pi, -0.5 * math.pi, 7.0 - 2 * math.pi]
    assert CH.wrapped(angles).tolist() == pytest.approx(want, abs=1e-15)


# --- the planted bugs --------------------------------------------------------------


def test_bug_scaled_table_in_the_sliding_layers_is_caught() -> None:
    true = CH.TINY_CONFIGS["OLMo 3"]["rope_parameters"]["full_attention"]
    port = CH.nested_copy(
        CH.TINY_CONFIGS["OLMo 3"],
        rope_parameters={"sliding_attention": true, "full_attention": true},
    )
    found = CH.port_problems("OLMo 3", port)
    assert sorted(found) == [0, 1, 2]
    assert all(any("amplitude" in p for p in v) for v in found.values())


def test_bug_global_layer_unscaled_is_caught() -> None:
    port = CH.nested_copy(
        CH.TINY_CONFIGS["Gemma 3"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            "full_attention": {"rope_type": "default", "rope_theta": 1e6},
        },
    )
    assert sorted(CH.port_problems("Gemma 3", port)) == [3]


@pytest.mark.parametrize("name", ["Llama 4", "SmolLM3"])
def test_bug_inverted_no_rope_layers_is_caught(name: str) -> None:
    port = CH.nested_copy(CH.TINY_CONFIGS[name], no_rope_layers=[0, 0, 0, 1])
    found = CH.port_problems(name, port)
    assert sorted(found) == [0, 1, 2, 3]
    assert any("NoPE layer" in p for p in found[3])


def test_bug_rotation_in_a_nope_layer_is_caught() -> None:
    model = CH.tiny_model("Cohere2")
    model.layers[3].self_attn.sliding_window = 4096
    trace = CH12.trace_positions(model, input_ids=TOKENS)
    found = CH.schedule_problems(
        trace, CH.layer_schedule(CH.TINY_CONFIGS["Cohere2"]), POSITIONS
    )
    assert list(found) == [3]


def test_bug_legacy_key_lost_in_migration_is_caught() -> None:
    lost = CH.schedule_differences(
        CH.layer_schedule(CH.GEMMA3_LEGACY),
        CH.layer_schedule(CH.naive_migration(CH.GEMMA3_LEGACY)),
    )
    assert sorted(lost) == [0, 1, 2, 3, 4, 6, 7]
    assert all(any(d.startswith("rope:") for d in v) for v in lost.values())
    port = CH.nested_copy(CH.TINY_CONFIGS["SmolLM3"], rope_theta=1e4)
    assert sorted(CH.port_problems("SmolLM3", port)) == [0, 1, 2]


def test_bug_missing_temperature_and_missing_window_are_caught() -> None:
    cold = CH.nested_copy(CH.TINY_CONFIGS["Llama 4"], attn_temperature_tuning=False)
    assert list(CH.port_problems("Llama 4", cold)) == [3]
    wide = CH.nested_copy(CH.TINY_CONFIGS["Gemma 3"], sliding_window=64)
    found = CH.port_problems("Gemma 3", wide)
    assert sorted(found) == [0, 1, 2] and all("keys" in v[0] for v in found.values())


# --- bad input ---------------------------------------------------------------------


BAD_CONFIGS = [
    (
        {**CH.TINY_CONFIGS["Gemma 3"], "layer_types": ["full_attention"] * 3},
        "layer_types needs one entry per layer",
    ),
    (
        {**CH.TINY_CONFIGS["Cohere2"], "layer_types": ["local"] * 4},
        "not a layer type transformers knows",
    ),
    (
        {**CH.TINY_CONFIGS["Llama 4"], "no_rope_layers": [1, 2, 1, 0]},
        "1 means the layer ROTATES",
    ),
    (
        {**CH.TINY_CONFIGS["Llama 4"], "no_rope_layers": [True, True, True, False]},
        "one 0 or 1 per layer",
    ),
    ({**CH.TINY_CONFIGS["SmolLM3"], "no_rope_layers": [3]}, "one 0 or 1 per layer"),
    (
        {
            **CH.TINY_CONFIGS["Gemma 3"],
            "rope_parameters": {"full_attention": {"rope_type": "default"}},
        },
        "no entry for 'sliding_attention'",
    ),
    (
        {**CH.TINY_CONFIGS["OLMo 3"], "rope_parameters": {"rope_type": "default"}},
        "reads rope_parameters per layer type",
    ),
    (
        {
            **CH.TINY_CONFIGS["gpt-oss"],
            "rope_parameters": {"sliding_attention": {"rope_type": "default"}},
        },
        "one flat rope_parameters",
    ),
    (
        {
            k: v
            for k, v in CH.TINY_CONFIGS["Cohere2"].items()
            if k != "num_hidden_layers"
        },
        "'num_hidden_layers' as a positive integer",
    ),
    (
        {**CH.GEMMA3_LEGACY, "rope_scaling": {"type": "linear", "factor": 8.0}},
        "write 'rope_type' instead",
    ),
    (
        {**CH.TINY_CONFIGS["gpt-oss"], "max_position_embeddings": None},
        "'max_position_embeddings'",
    ),
]


@pytest.mark.parametrize(("config", "message"), BAD_CONFIGS)
def test_bad_configs_are_rejected(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        CH.layer_schedule(config)


def test_other_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="parsed config.json"):
        CH.layer_schedule(["not", "a", "dict"])
    for args, word in (
        ((15, 1e4), "even integer"),
        ((16, -1.0), "base"),
        ((16, 1e4, 1.5), r"\[0, 1\]"),
        ((16, 1e4, 0.5, 0), "factor"),
    ):
        with pytest.raises(ValueError, match=word):
            CH.proportional_inv_freq(*args)
    with pytest.raises(ValueError, match="floor_scale"):
        CH.temperature_scale([0, 1], 0.0, 0.1)
    nope = CH.layer_schedule(CH.TINY_CONFIGS["Cohere2"])[3]
    with pytest.raises(ValueError, match="rotating layer"):
        CH.plan_frequencies(nope)
    trace = CH12.trace_positions(CH.tiny_model("Cohere2"), input_ids=TOKENS)
    with pytest.raises(ValueError, match="attention layers"):
        CH.schedule_problems(
            trace, CH.layer_schedule(CH.TINY_CONFIGS["Gemma 3"])[:2], POSITIONS
        )
    with pytest.raises(ValueError, match="1-D tensor"):
        CH.schedule_problems(
            trace, CH.layer_schedule(CH.TINY_CONFIGS["Cohere2"]), POSITIONS[None]
        )
    with pytest.raises(ValueError, match="same model"):
        CH.schedule_differences(CH.layer_schedule(CH.TINY_CONFIGS["Cohere2"]), [])
    with pytest.raises(ValueError, match="name must be one of"):
        CH.tiny_model("Llama 2")
    with pytest.raises(ValueError, match="window must be a positive integer"):
        CH.SlidingWindow(CH.NoPE(), 0)
    with pytest.raises(ValueError, match="floor_scale > 0"):
        CH.QueryTemperature(0, 0.1)
    with pytest.raises(ValueError, match="attn_scale >= 0"):
        CH.QueryTemperature(16, -1.0)


# --- the experiment's building blocks ----------------------------------------------


def test_sliding_window_hides_keys_beyond_the_window() -> None:
    config = CH.MixedConfig(vocab_size=17, n_layers=1, window=3)
    torch.manual_seed(0)
    model = CH.MixedTransformer(config).eval()
    assert isinstance(model.position, CH.SlidingWindow)
    tokens = torch.randint(0, 16, (1, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        base = model(tokens)[0, 9]
        far, near = tokens.clone(), tokens.clone()
        far[0, 6] = (far[0, 6] + 1) % 16  # offset 3 = W: outside the window
        near[0, 7] = (near[0, 7] + 1) % 16  # offset 2: inside
        assert torch.equal(model(far)[0, 9], base)
        assert (model(near)[0, 9] - base).abs().max() > 1e-4


def test_query_temperature_scales_queries_only() -> None:
    q = torch.randn(2, 4, 40, 8, dtype=torch.float64)
    k = torch.randn(2, 4, 40, 8, dtype=torch.float64)
    got_q, got_k = CH.QueryTemperature(16, 0.5).rotate(q, k, torch.arange(40))
    ref = torch.tensor(
        [1 + 0.5 * math.log(math.floor((m + 1) / 16) + 1) for m in range(40)],
        dtype=torch.float64,
    )
    assert torch.equal(got_k, k)
    assert torch.allclose(got_q, q * ref[:, None], rtol=8 * U32, atol=0)


def test_mixed_stack_slots() -> None:
    config = CH.MixedConfig(vocab_size=17, window=8, nope_layers=(1,), upper_base=1e6)
    model = CH.MixedTransformer(config)
    assert isinstance(model.position.inner, CH.RoPE)
    assert isinstance(model.no_position, CH.RoPE)
    assert model.no_position.inv_freq[1].item() == pytest.approx(
        1e6 ** (-1 / 8), rel=1e-6
    )


def test_train_mixed_is_train_models_for_a_plain_config() -> None:
    train = CH.TrainConfig(steps=3)
    config = CH.MixedConfig(vocab_size=17, scheme="rope")
    ours = CH.train_mixed(config, "copy", train, (0, 1))
    theirs = CH.train_models(config, "copy", train, (0, 1))
    assert all(isinstance(m, CH.MixedTransformer) for m in ours)
    for a, b in zip(ours, theirs, strict=True):
        for (name, p), (_, r) in zip(
            a.named_parameters(), b.named_parameters(), strict=True
        ):
            assert torch.equal(p, r), name  # the same operations on the same values


# --- the exercise checks -----------------------------------------------------------


def migrate(legacy: dict) -> dict:
    """An independent migration of Gemma 3's legacy keys."""
    if "rope_parameters" in legacy:
        raise ValueError("rope_parameters already present")
    out = {
        k: v
        for k, v in legacy.items()
        if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling")
    }
    scaling = {
        ("rope_type" if k == "type" else k): v
        for k, v in (legacy.get("rope_scaling") or {}).items()
    }
    out["rope_parameters"] = {
        "full_attention": {
            "rope_type": "default",
            "rope_theta": legacy.get("rope_theta", 1e6),
        }
        | scaling,
        "sliding_attention": {
            "rope_type": "default",
            "rope_theta": legacy.get("rope_local_base_freq", 1e4),
        },
    }
    return out


def test_migrate_check_passes_a_correct_migration(capsys) -> None:
    CH.check_migrate_gemma3(migrate)
    assert "checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("scaling everywhere", "copied to the sliding layers"),
        ("local base lost", "lost rope_local_base_freq"),
        ("flat", "not nested"),
        ("legacy kept", "legacy keys are still there"),
    ],
)
def test_migrate_check_names_the_mistake(mistake: str, words: str) -> None:
    def wrong(legacy: dict) -> dict:
        out = migrate(legacy)
        full = out["rope_parameters"]["full_attention"]
        if mistake == "scaling everywhere":
            out["rope_parameters"]["sliding_attention"] = dict(
                full, rope_theta=legacy.get("rope_local_base_freq", 1e4)
            )
        elif mistake == "local base lost":
            out["rope_parameters"]["sliding_attention"]["rope_theta"] = full[
                "rope_theta"
            ]
        elif mistake == "flat":
            out["rope_parameters"] = full
        else:
            out["rope_theta"] = legacy.get("rope_theta", 1e6)
        return out

    with pytest.raises(AssertionError, match=words):
        CH.check_migrate_gemma3(wrong)


def visible(n_tokens, window=None, chunk=None):
    """An independent mask: loops, numpy-free."""
    for name, value in (("window", window), ("chunk", chunk)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be positive")
    if window is not None and chunk is not None:
        raise ValueError("window or chunk, not both")
    return [
        [
            n <= m
            and (window is None or m - n < window)
            and (chunk is None or m // chunk == n // chunk)
            for n in range(n_tokens)
        ]
        for m in range(n_tokens)
    ]


def test_visible_check_passes_a_correct_mask(capsys) -> None:
    CH.check_visible_mask(visible)
    assert "checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("off by one", "off-by-one window"),
        ("no causal", "causal mask forgotten"),
        ("sliding chunks", "chunks counted from each query"),
        ("transposed", "rows and columns swapped"),
    ],
)
def test_visible_check_names_the_mistake(mistake: str, words: str) -> None:
    def wrong(n_tokens, window=None, chunk=None):
        if mistake == "off by one" and window is not None:
            window += 1
        mask = visible(
            n_tokens,
            window=None if mistake == "sliding chunks" and chunk else window,
            chunk=None if mistake == "sliding chunks" else chunk,
        )
        m_n = [[(m, n) for n in range(n_tokens)] for m in range(n_tokens)]
        if mistake == "no causal" and window is not None:
            return [[abs(m - n) < window for m, n in row] for row in m_n]
        if mistake == "sliding chunks" and chunk is not None:
            return [[0 <= m - n < chunk for m, n in row] for row in m_n]
        if mistake == "transposed":
            return [list(col) for col in zip(*mask, strict=True)]
        return mask

    with pytest.raises(AssertionError, match=words):
        CH.check_visible_mask(wrong)
